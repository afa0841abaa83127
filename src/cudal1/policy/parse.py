"""Parsing a model's answer into its three parts and the final `ModelNew` code.

Models format loosely: headings with or without `#`, fences with or without a language tag,
`~~~` fences, prose after the code, a fence left open when generation stopped. The code is the
last fenced block that defines `ModelNew` (earlier blocks are often snippets); when nothing is
fenced, the whole answer is tried as code. A clear reason comes back when there is no usable
`ModelNew`, because that reason is fed back to the model in multi-turn runs.

Code that was cut off (its fence never closed: the answer ran out of tokens, or trailed into
prose) and does not parse is shortened, line by line from the end, to the longest start that
parses and still gives `ModelNew` a `forward`. Nothing is ever added: the code stays the
model's own text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_FENCE = re.compile(
    r"^(?P<fence>```|~~~)[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)"
    r"(?:^(?P<close>(?P=fence))[ \t]*$|\Z)",
    re.M | re.S,
)
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*)?\s*(?:\d+[.)]\s*)?(performance analysis|algorithm design|code)\b[:*\s]*$",
    re.I | re.M,
)


@dataclass(frozen=True)
class ParsedAnswer:
    analysis: str
    design: str
    code: str | None
    error: str | None
    """Why there is no usable code (None when `code` is usable)."""

    @property
    def ok(self) -> bool:
        return self.code is not None


def parse_answer(text: str) -> ParsedAnswer:
    sections = _sections(text)
    analysis = sections.get("performance analysis", "").strip()
    design = sections.get("algorithm design", "").strip()
    # (code, cut off): a block whose fence never closed was cut off
    blocks = [(m.group("body"), m.group("close") is None) for m in _FENCE.finditer(text)]
    if not blocks and "class ModelNew" in text:
        blocks = [(text, True)]
    if not blocks:
        return ParsedAnswer(analysis, design, None, "the answer contains no code block")
    with_model = [b for b in blocks if re.search(r"^\s*class\s+ModelNew\b", b[0], re.M)]
    if not with_model:
        return ParsedAnswer(analysis, design, None, "no code block defines class ModelNew")
    body, cut_off = with_model[-1]
    code = body.strip() + "\n"
    try:
        ast.parse(code)
    except SyntaxError as e:
        shortened = _longest_parsing_start(code) if cut_off else None
        if shortened is None:
            return ParsedAnswer(
                analysis, design, None, f"the code block does not parse: line {e.lineno}: {e.msg}"
            )
        code = shortened
    if not _has_forward(ast.parse(code)):
        return ParsedAnswer(analysis, design, None, "class ModelNew defines no forward method")
    return ParsedAnswer(analysis, design, code, None)


def _longest_parsing_start(code: str) -> str | None:
    """The longest run of whole lines from the start that parses and has `ModelNew.forward`."""
    lines = code.splitlines()
    for end in range(len(lines) - 1, 0, -1):
        candidate = "\n".join(lines[:end]).rstrip() + "\n"
        try:
            tree = ast.parse(candidate)
        except SyntaxError:
            continue
        if _has_forward(tree):
            return candidate
        return None  # shorter starts only lose more of the class
    return None


def _has_forward(tree: ast.Module) -> bool:
    """The last top-level `class ModelNew` defines `forward`, or has a base other than
    `nn.Module` to inherit it from (nn.Module's own forward only raises)."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    if not classes:
        return False
    cls = classes[-1]
    if any(
        isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name == "forward"
        for f in cls.body
    ):
        return True
    bases = [ast.unparse(b) for b in cls.bases]
    return any(b not in ("nn.Module", "torch.nn.Module", "Module") for b in bases)


def _sections(text: str) -> dict[str, str]:
    """Heading name -> text up to the next known heading (code fences are not headings)."""
    masked = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    marks = [(m.start(), m.end(), m.group(1).lower()) for m in _HEADING.finditer(masked)]
    out: dict[str, str] = {}
    for i, (_, end, name) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        out.setdefault(name, text[end:stop])
    return out
