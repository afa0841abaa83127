"""Contrastive prompts (CUDA-L1 stage 3): the reference, N earlier candidates with their measured
speedups, and the three-part answer the model must give. Templates are editable Markdown files
(`templates/` here, or a directory of your own with the same file names).

Two styles:
- `paper`: CUDA-L1's prompt (the reference file, exemplars with scores, rules, and a three-part
  answer: performance analysis, algorithm design, code).
- `compact`: for small models (the embedded 135M one), which lose the thread in a long prompt and
  do not write the three parts: the reference `Model` class with its imports, the earlier correct
  candidates with their speedups (a short few-shot from the exemplar database), and an answer
  *prefilled* with the start of the code: a ```python fence, the reference's imports and the
  header `class ModelNew(...):` (without its newline). The model writes everything after it; the prefill is
  part of the answer the policy returns (`Completion.prefilled` says how much of it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalResult
from cudal1.exemplars import Exemplar
from cudal1.tasks import Task

TEMPLATE_FILES = (
    "system.md",
    "contrastive.md",
    "exemplar.md",
    "feedback.md",
    "compact.md",
    "compact_exemplar.md",
)
STYLES = ("paper", "compact")
COMPACT_SYSTEM = "You write fast, correct PyTorch code."
COMPACT_DEVICE = {"cuda": "an NVIDIA GPU", "cpu": "the CPU"}
DEVICE_DESCRIPTION = {
    "cuda": "an NVIDIA GPU (CUDA; Hopper-class, sm_90)",
    "cpu": "a CPU (PyTorch CPU tensors; C++ through load_inline(cpp_sources=...))",
}
FULL_PRECISION = (
    "Keep full precision: compute fp32 problems in fp32 (no fp16/bf16/TF32/fp8 and no fast-math "
    "approximations); results are compared against a float64 run with a tolerance set by fp32's "
    "own rounding error."
)
LOW_PRECISION = (
    "Lower precision (TF32, bf16, fp16 with fp32 accumulation) is allowed if the result stays "
    "within atol = rtol = 1e-2 of the reference."
)


@dataclass(frozen=True)
class Prompt:
    task_id: str
    messages: list[dict[str, str]]
    exemplar_ids: list[int] = field(default_factory=list)
    prefill: str = ""
    """The start of the assistant's answer: the model continues it, and the answer a policy
    returns begins with it (empty: the model writes the whole answer)."""

    def with_turn(self, answer: str, feedback: str) -> Prompt:
        """The conversation extended by the model's answer and the evaluator's feedback."""
        messages = [
            *self.messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": feedback},
        ]
        return Prompt(self.task_id, messages, self.exemplar_ids, self.prefill)


def load_templates(directory: str | Path | None = None) -> dict[str, str]:
    if directory is None:
        root = resources.files("cudal1.policy") / "templates"
        return {name: (root / name).read_text() for name in TEMPLATE_FILES}
    directory = Path(directory)
    missing = [n for n in TEMPLATE_FILES if not (directory / n).is_file()]
    if missing:
        raise Cudal1Error(f"template directory {directory} lacks {', '.join(missing)}")
    return {name: (directory / name).read_text() for name in TEMPLATE_FILES}


class ChatTokenizer(Protocol):
    """What `chat_text` needs of a transformers tokenizer."""

    bos_token: str | None
    bos_token_id: int | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def __call__(self, text: str, **kwargs: Any) -> Any: ...


def chat_text(tokenizer: ChatTokenizer, prompt: Prompt) -> str:
    """The prompt as the text a local model continues, for the tokenizer's plain call: the
    chat with a new assistant turn that starts with the prefill, left open. (A prefill passed
    to a trainer as a last assistant message is rendered closed, with a new turn after it.)
    The plain call adds the tokenizer's own special tokens, so a leading BOS the template wrote
    as well is dropped, not doubled."""
    messages = [*prompt.messages]
    if prompt.prefill:
        messages.append({"role": "assistant", "content": prompt.prefill})
    text = str(
        tokenizer.apply_chat_template(
            messages,
            continue_final_message=bool(prompt.prefill),
            add_generation_prompt=not prompt.prefill,
            tokenize=False,
        )
    )
    bos = tokenizer.bos_token
    adds_bos = tokenizer("")["input_ids"][:1] == [tokenizer.bos_token_id]
    if bos and adds_bos and text.startswith(bos):
        text = text[len(bos) :]
    return text


def contrastive_prompt(
    task: Task,
    exemplars: list[Exemplar],
    *,
    device: str = "cuda",
    low_precision: bool = False,
    templates: dict[str, str] | None = None,
    style: str = "paper",
) -> Prompt:
    """The paper's prompt: reference, exemplars with scores (slowest first), three-part answer.
    With no exemplars (plain GRPO, or stage 1) the section says only the reference exists.
    `style="compact"`: the prompt for small models (module docstring)."""
    t = templates or load_templates()
    if style == "compact":
        return _compact_prompt(task, exemplars, device, t)
    if style != "paper":
        raise Cudal1Error(f"unknown prompt style {style!r}: choose one of {', '.join(STYLES)}")
    blocks = []
    for i, e in enumerate(exemplars, start=1):
        if e.is_reference:
            blocks.append(
                f"## Implementation {i} (speedup 1.00)\n\nThe reference itself, shown above."
            )
        else:
            blocks.append(
                t["exemplar.md"].format(
                    index=i, speedup=f"{e.speedup or 0.0:.2f}", code=e.code.strip()
                )
            )
    shown = "\n\n".join(blocks) if blocks else "None yet besides the reference (speedup 1.00)."
    user = t["contrastive.md"].format(
        device_description=DEVICE_DESCRIPTION.get(device, device),
        reference_code=task.source.strip(),
        exemplars=shown,
        precision_rule=LOW_PRECISION if low_precision else FULL_PRECISION,
    )
    messages = [
        {"role": "system", "content": t["system.md"].strip()},
        {"role": "user", "content": user},
    ]
    return Prompt(task.id, messages, [e.id for e in exemplars])


def _compact_prompt(
    task: Task, exemplars: list[Exemplar], device: str, t: dict[str, str]
) -> Prompt:
    imports, model_class, base = _reference_parts(task)
    shown = [
        t["compact_exemplar.md"].format(speedup=f"{e.speedup or 0.0:.2f}", code=e.code.strip())
        for e in exemplars
        if not e.is_reference  # the reference is shown in full above
    ]
    user = t["compact.md"].format(
        device_description=COMPACT_DEVICE.get(device, device),
        reference_code=f"{imports}\n\n\n{model_class}",
        exemplars="".join(shown),
    )
    if "torch.nn.functional" not in imports:
        imports += "\nimport torch.nn.functional as F"
    messages = [
        {"role": "system", "content": COMPACT_SYSTEM},
        {"role": "user", "content": user.strip()},
    ]
    # No newline after the colon: the tokenizer joins a newline with the next line's indent, so
    # a prefill ending in a bare newline splits a token where the model never saw one split.
    prefill = f"```python\n{imports}\n\n\nclass ModelNew({base}):"
    return Prompt(task.id, messages, [e.id for e in exemplars], prefill)


def _reference_parts(task: Task) -> tuple[str, str, str]:
    """The task's import lines, its `class Model` source, and Model's base class as written."""
    tree = ast.parse(task.source)
    imports = [
        ast.get_source_segment(task.source, n)
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise Cudal1Error(f"{task.origin}: the task defines no class Model")
    base = ", ".join(ast.get_source_segment(task.source, b) or "" for b in model.bases)
    lines = task.source.splitlines()
    start = min([model.lineno, *(d.lineno for d in model.decorator_list)])
    model_src = "\n".join(lines[start - 1 : model.end_lineno])
    return "\n".join(i for i in imports if i), model_src, base or "nn.Module"


def feedback(
    result: EvalResult | None, parse_error: str | None, templates: dict[str, str] | None = None
) -> str:
    """The evaluator's verdict in words, for the multi-turn extension."""
    t = templates or load_templates()
    details: list[str] = []
    if parse_error:
        status, speedup = "no usable code", "-"
        details.append(f"- problem: {parse_error}")
    else:
        assert result is not None
        status = result.status
        speedup = f"{result.speedup:.3f}" if result.speedup else "-"
        details += [f"- reason: {r}" for r in result.reasons[:4]]
        notable = [f for f in result.flags if not f.startswith(("cuda_kernel", "triton_kernel"))]
        if notable:
            details.append(f"- flags: {'; '.join(notable[:6])}")
        if result.status in ("compile_error", "runtime_error") and result.log_tail:
            details.append("- log (end):\n```\n" + result.log_tail[-1500:].strip() + "\n```")
        if result.timing is not None:
            details.append(
                f"- timing: candidate {result.timing.candidate.median_ms:.4f} ms, "
                f"reference {result.timing.reference.median_ms:.4f} ms"
            )
    return t["feedback.md"].format(status=status, speedup=speedup, details="\n".join(details))
