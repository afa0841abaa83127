"""Running a task's reference model: fp32 as written, and an fp64 twin for the ground truth.

Used by the judge process and by task hygiene checks; never by candidate code.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn

from cudal1.evaluate.compare import flatten_outputs
from cudal1.tasks import TaskModule

ModuleMode = Literal["eval", "train"]


def to_double(value: Any) -> Any:
    """Floating tensors to float64; integer tensors and everything else unchanged."""
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(to_double(v) for v in value)
    return value


def prepare(model: nn.Module, device: torch.device | str, mode: ModuleMode) -> nn.Module:
    model = model.to(device)
    return model.train() if mode == "train" else model.eval()


def double_model(
    task_module: TaskModule, init_seed: int, device: torch.device | str, mode: ModuleMode
) -> nn.Module:
    """The fp64 twin of `task_module.make_model(init_seed)`: built afresh from the same seed (a
    deep copy would keep closures such as minGPT's `lambda x: m.c_proj(...)` pointing at the fp32
    modules), then parameters, floating buffers and floating tensors kept as plain attributes
    (KernelBench's RNN tasks hold their initial states that way) to float64."""
    twin = prepare(task_module.make_model(init_seed), device, mode).double()
    for module in twin.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                setattr(module, name, value.double())
    return twin


@torch.no_grad()
def run(model: nn.Module, inputs: list[Any]) -> list[torch.Tensor]:
    """Forward under no_grad (as KernelBench does), outputs flattened to a list of tensors."""
    return flatten_outputs(model(*inputs))[0]


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
