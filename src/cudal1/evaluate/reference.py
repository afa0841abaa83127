"""Running a task's reference model: fp32 as written, and an fp64 twin for the ground truth.

Used by the judge process and by task hygiene checks; never by candidate code.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Literal

import torch
from torch import nn

from cudal1.evaluate.compare import flatten_outputs
from cudal1.tasks import TaskModule

ModuleMode = Literal["eval", "train"]


def to_device(value: Any, device: torch.device | str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def to_double(value: Any) -> Any:
    """Floating tensors (and Python floats) to float64; integers and the rest unchanged."""
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(to_double(v) for v in value)
    return value


def prepare(model: nn.Module, device: torch.device | str, mode: ModuleMode) -> nn.Module:
    model = model.to(device)
    return model.train() if mode == "train" else model.eval()


def double_twin(model: nn.Module) -> nn.Module:
    """An fp64 copy of the model: parameters and floating buffers to float64."""
    return copy.deepcopy(model).double()


@torch.no_grad()
def run(model: nn.Module, inputs: list[Any]) -> list[torch.Tensor]:
    """Forward under no_grad (as KernelBench does), outputs flattened to a list of tensors."""
    return flatten_outputs(model(*inputs))[0]


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)


def reference_outputs(
    task_module: TaskModule,
    *,
    init_seed: int,
    input_seed: int,
    device: torch.device | str,
    mode: ModuleMode = "eval",
) -> tuple[list[Any], list[torch.Tensor], list[torch.Tensor]]:
    """Inputs drawn with `input_seed`, the fp32 outputs and the fp64 ground truth for them."""
    model = prepare(task_module.make_model(init_seed), device, mode)
    inputs = generate_inputs(task_module, input_seed, device)
    y32 = run(model, inputs)
    y64 = run(double_twin(model), to_double(inputs))
    return inputs, y32, y64


def generate_inputs(
    task_module: TaskModule, seed: int, device: torch.device | str, scale: float = 1.0
) -> list[Any]:
    """The task's own `get_inputs()`, seeded, with tensors created directly on `device`.

    Creating on the device (a `torch.device` context) makes drawing fresh inputs for every timed
    call cheap; the same seed on the same kind of device gives the same values in any process.
    `scale` multiplies floating inputs: the stress trial's wider range catches code that is
    exact only for the task's usual input distribution (HACKS.md #20).
    """
    with torch.device(device):
        inputs = task_module.make_inputs(seed)
    if scale != 1.0:
        inputs = [
            x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs
        ]
    return inputs


def output_bytes(outputs: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in outputs)


def rms(t: torch.Tensor) -> float:
    t = t.double()
    return math.sqrt(float(t.pow(2).mean())) if t.numel() else 0.0
