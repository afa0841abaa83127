"""Parsing a model's answer into its three parts and the final `ModelNew` code.

Models format loosely: headings with or without `#`, fences with or without a language tag,
`~~~` fences, prose after the code, a fence left open when generation stopped. The code is the
last fenced block that defines `ModelNew` (earlier blocks are often snippets); when nothing is
fenced, the whole answer is tried as code. A clear reason comes back when there is no usable
`ModelNew`, because that reason is fed back to the model in multi-turn runs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_FENCE = re.compile(
    r"^(?P<fence>```|~~~)[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)(?:^(?P=fence)[ \t]*$|\Z)",
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
    blocks = [m.group("body") for m in _FENCE.finditer(text)]
    if not blocks and "class ModelNew" in text:
        blocks = [text]
    if not blocks:
        return ParsedAnswer(analysis, design, None, "the answer contains no code block")
    with_model = [b for b in blocks if re.search(r"^\s*class\s+ModelNew\b", b, re.M)]
    if not with_model:
        return ParsedAnswer(analysis, design, None, "no code block defines class ModelNew")
    code = with_model[-1].strip() + "\n"
    try:
        ast.parse(code)
    except SyntaxError as e:
        return ParsedAnswer(
            analysis, design, None, f"the code block does not parse: line {e.lineno}: {e.msg}"
        )
    return ParsedAnswer(analysis, design, code, None)


def _sections(text: str) -> dict[str, str]:
    """Heading name -> text up to the next known heading (code fences are not headings)."""
    masked = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    marks = [(m.start(), m.end(), m.group(1).lower()) for m in _HEADING.finditer(masked)]
    out: dict[str, str] = {}
    for i, (_, end, name) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        out.setdefault(name, text[end:stop])
    return out
