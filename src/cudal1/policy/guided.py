"""Guided decoding for a local model that continues a prefilled `class ModelNew(...):` line.

Small models lose the shape of the code more often than its content: they close the code block
before writing `forward`, write `forward` at column 0 (outside the class), or forget to indent
after `def ...:`. `ClassGrammar` removes those choices while decoding. At each step, for each
sequence, it gives no probability to a token that would
- close the code (any token holding a backtick) or end the text, before a `forward` with a whole
  `return` line is written;
- start a line at column 0, or hold a tab, before that (the class body is not finished, and
  it is indented with spaces);
- start the line after one ending in `:` at no deeper indentation than that line, or any other
  line deeper than the one before it (outside open brackets).
It only takes choices away: every token of an answer is still the model's own pick, sampled from
its own (renormalised) distribution. `Looping` stops a sequence that repeats a cycle of lines.

Indentation is tracked from the text: tokenizers join a newline with the spaces after it
(SmolLM2: "\\n   " then " def"), so each token's text is split at its newlines and the spaces
that lead each part are counted, once per vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

FORWARD_DONE = re.compile(r"def forward\([^\n]*\n(?:[^\n]*\n)*?[ \t]+return\b[^\n]*\n")
"""A `forward` whose body has reached a whole `return` line."""


@dataclass(frozen=True)
class TokenShapes:
    """Per vocabulary entry: does it close code, hold a newline, and where its text starts."""

    closing: Any
    """bool[vocab]: holds a backtick, or is the end of text / padding."""
    tab: Any
    """bool[vocab]: holds a tab (the class is indented with spaces, like its prefill)."""
    newline: Any
    first_text: Any
    """bool[vocab]: the part before its first newline has a non-space character."""
    first_lead: Any
    """int[vocab]: spaces leading that part."""
    last_text: Any
    """bool[vocab]: the part after its last newline has a non-space character."""
    last_lead: Any

    @classmethod
    def of(cls, tok: Any) -> TokenShapes:
        import torch

        texts = [tok.decode([i]) for i in range(len(tok))]
        ends = {i for i in (tok.eos_token_id, tok.pad_token_id) if i is not None}
        first = [t.split("\n")[0] for t in texts]
        last = [t.split("\n")[-1] for t in texts]

        def lead(s: str) -> int:
            return len(s) - len(s.lstrip(" "))

        return cls(
            closing=torch.tensor([("`" in t) or (i in ends) for i, t in enumerate(texts)]),
            tab=torch.tensor(["\t" in t for t in texts]),
            newline=torch.tensor(["\n" in t for t in texts]),
            first_text=torch.tensor([bool(s.strip()) for s in first]),
            first_lead=torch.tensor([lead(s) for s in first]),
            last_text=torch.tensor([bool(s.strip()) for s in last]),
            last_lead=torch.tensor([lead(s) for s in last]),
        )


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _code(line: str) -> str:
    """The line without its comment (a `#` inside a string is taken for one: rare, and then
    the rule is only stricter than Python)."""
    return line.split("#", 1)[0].rstrip()


_STRING = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")


def _open_brackets(text: str) -> bool:
    """Brackets left open at the end of the code (strings and comments left out, roughly)."""
    code = _STRING.sub("", "\n".join(_code(line) for line in text.split("\n")))
    return sum(code.count(c) for c in "([{") > sum(code.count(c) for c in ")]}")


def opens_block(line: str) -> bool:
    return _code(line).endswith(":")


class ClassGrammar:
    """A logits processor for sequences that continue `prefill` (which ends inside a class)."""

    def __init__(self, tok: Any, prompt_len: int, prefill: str, shapes: TokenShapes) -> None:
        self.tok, self.prompt_len, self.prefill, self.shapes = tok, prompt_len, prefill, shapes
        self.free: set[int] = set()  # rows that have written forward

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        for row in range(input_ids.shape[0]):
            text = self.tok.decode(input_ids[row, self.prompt_len :], skip_special_tokens=True)
            if row not in self.free and FORWARD_DONE.search(text):
                self.free.add(row)
            ban = self.banned(self.prefill + text, row in self.free)
            width = min(len(ban), scores.shape[-1])  # a tokenizer and its model may differ
            scores[row, :width][ban[:width]] = float("-inf")
        return scores

    def banned(self, text: str, free: bool) -> Any:
        """bool[vocab]: the tokens that may not follow `text`."""
        s = self.shapes
        lines = text.split("\n")
        cur = lines[-1]
        base = 0 if free else 1  # before forward, text stays inside the class
        ban = (s.closing | s.tab) if not free else s.closing.new_zeros(s.closing.shape)
        if cur.strip():  # inside a line: only a newline can start the next one
            low, high = self._indents(cur, text, base)
            ban |= s.newline & s.last_text & ((s.last_lead < low) | (s.last_lead > high))
            return ban
        # at the start of a line, `cur` being the indentation written so far
        prev = next((line for line in reversed(lines[:-1]) if _code(line)), "")
        low, high = self._indents(prev, text, base)
        if opens_block(prev):  # the block's first line: no blank lines before it
            ban |= s.newline & ~s.first_text
        first = len(cur) + s.first_lead
        ban |= s.first_text & ((first < low) | (first > high))
        after_blank = s.newline & ~s.first_text & s.last_text
        ban |= after_blank & ((s.last_lead < low) | (s.last_lead > high))
        ban |= s.newline & s.first_text & s.last_text & (s.last_lead < base)
        return ban

    @staticmethod
    def _indents(prev: str, text: str, base: int) -> tuple[int, float]:
        """The indentation a new line after `prev` may have: deeper after a colon, no deeper
        otherwise (Python's "unexpected indent"), anything inside open brackets."""
        if _open_brackets(text):
            return base, float("inf")
        if opens_block(prev):
            return indent(prev) + 1, float("inf")
        return base, indent(prev)


class Looping:
    """A stopping criterion: a sequence whose last lines are one line, or a cycle of two or
    three lines, repeated three times (or four blank lines) has fallen into a loop (small models
    do); generating more of it only costs time."""

    def __init__(self, tok: Any, prompt_len: int) -> None:
        self.tok, self.prompt_len = tok, prompt_len

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = []
        for row in input_ids:
            text = self.tok.decode(row[self.prompt_len :], skip_special_tokens=True)
            done.append(looping(text.split("\n")[:-1]))  # whole lines only
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def looping(lines: list[str], repeats: int = 3) -> bool:
    """The last lines are a cycle of 1 to 3 non-blank lines repeated `repeats` times, or
    `repeats + 1` blank ones."""
    if len(lines) > repeats and not any(line.strip() for line in lines[-repeats - 1 :]):
        return True
    for period in (1, 2, 3):
        tail = lines[-period * repeats :]
        if (
            len(tail) == period * repeats
            and all(line.strip() for line in tail)
            and all(tail[i] == tail[i + period] for i in range(len(tail) - period))
        ):
            return True
    return False
