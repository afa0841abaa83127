"""Task hygiene: a task whose "null answers" pass the comparison is degenerate, whatever the kernel.

For each task, on the given device: the reference runs on a secret-free fixed draw, and these
answers must all FAIL the comparison (HACKS.md #18, #20, #36):
- `zeros`: all zeros;
- `constant`: each output filled with the mean of the reference output on a *different* input
  draw (an answer that ignores the inputs; near-constant problems such as a mean over millions of
  iid values fail here);
- `passthrough`: the first input returned as it is (when shapes allow);
- `ignores input i`: the reference output computed with input i redrawn and the others kept (a
  problem whose output does not depend on some input).
The calibrated tolerance gates; the KernelBench tolerance (atol = rtol = 1e-2) is reported too,
since a task that passes null answers under it is easy to game in papers that use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from cudal1.evaluate.compare import ToleranceMode, calibrate, compare
from cudal1.evaluate.reference import (
    double_model,
    generate_inputs,
    prepare,
    run,
    to_double,
)
from cudal1.tasks import SizeProfile, Task

INIT_SEED = 1234
DRAW_SEEDS = (1, 2)


@dataclass
class HygieneReport:
    task_id: str
    ok: bool
    """Every null answer fails under the calibrated tolerance."""
    passed_nulls: dict[str, list[str]] = field(default_factory=dict)
    """Per tolerance mode, the null answers that (wrongly) passed."""
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)


def check_task(task: Task, device: str = "cpu", sizes: SizeProfile | None = None) -> HygieneReport:
    sizes = sizes or ("cpu" if device == "cpu" else "full")
    tm = task.load(sizes)
    model = prepare(tm.make_model(INIT_SEED), device, "eval")
    model64 = double_model(tm, INIT_SEED, device, "eval")
    inputs = generate_inputs(tm, DRAW_SEEDS[0], device)
    other = generate_inputs(tm, DRAW_SEEDS[1], device)
    y32, y64 = run(model, inputs), run(model64, to_double(inputs))
    other_y = run(model, other)

    nulls: dict[str, list[torch.Tensor]] = {
        "zeros": [torch.zeros_like(y) for y in y32],
        "constant": [_constant_like(y, o) for y, o in zip(y32, other_y, strict=True)],
    }
    first = inputs[0] if inputs else None
    if isinstance(first, torch.Tensor) and len(y32) == 1:
        nulls["passthrough"] = [first]
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            redrawn = list(inputs)
            redrawn[i] = other[i]
            nulls[f"ignores input {i}"] = run(model, redrawn)

    report = HygieneReport(task.id, True, output_shapes=[tuple(y.shape) for y in y32])
    modes: tuple[ToleranceMode, ...] = ("calibrated", "kernelbench")
    for mode in modes:
        tols = calibrate(y32, y64, mode)
        passed = [name for name, ans in nulls.items() if compare(ans, y32, y64, tols).ok]
        report.passed_nulls[mode] = passed
        if mode == "calibrated" and passed:
            report.ok = False
    return report


def _constant_like(y: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    if y.is_floating_point():
        return torch.full_like(y, float(other.double().mean()))
    return torch.full_like(y, int(other.flatten()[0]))
