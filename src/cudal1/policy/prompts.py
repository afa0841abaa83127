"""Contrastive prompts (CUDA-L1 stage 3): the reference, N earlier candidates with their measured
speedups, and the three-part answer the model must give. Templates are editable Markdown files
(`templates/` here, or a directory of your own with the same file names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalResult
from cudal1.exemplars import Exemplar
from cudal1.tasks import Task

TEMPLATE_FILES = ("system.md", "contrastive.md", "exemplar.md", "feedback.md")
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

    def with_turn(self, answer: str, feedback: str) -> Prompt:
        """The conversation extended by the model's answer and the evaluator's feedback."""
        messages = [
            *self.messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": feedback},
        ]
        return Prompt(self.task_id, messages, self.exemplar_ids)


def load_templates(directory: str | Path | None = None) -> dict[str, str]:
    if directory is None:
        root = resources.files("cudal1.policy") / "templates"
        return {name: (root / name).read_text() for name in TEMPLATE_FILES}
    directory = Path(directory)
    missing = [n for n in TEMPLATE_FILES if not (directory / n).is_file()]
    if missing:
        raise Cudal1Error(f"template directory {directory} lacks {', '.join(missing)}")
    return {name: (directory / name).read_text() for name in TEMPLATE_FILES}


def contrastive_prompt(
    task: Task,
    exemplars: list[Exemplar],
    *,
    device: str = "cuda",
    low_precision: bool = False,
    templates: dict[str, str] | None = None,
) -> Prompt:
    """The paper's prompt: reference, exemplars with scores (slowest first), three-part answer.
    With no exemplars (plain GRPO, or stage 1) the section says only the reference exists."""
    t = templates or load_templates()
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
