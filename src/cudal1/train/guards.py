"""A training step whose gradient is not finite is skipped, not applied.

GRPO with LoRA in bf16 now and then gets a NaN gradient with a finite loss (seen on the H100 at
the learning curve's step 48; others report it at 7B, not reproducible with the same seed).
The trainer's clipping multiplies every gradient by the NaN norm, the optimiser writes NaN into
every adapter weight, and the next generation dies on a device-side assert ("probability tensor
contains either inf, nan or element < 0"), losing the steps since the last checkpoint. This
guard sees each trainable gradient as backward leaves it, before clipping mixes them, so it can
name the tensors that went bad; at the optimiser step it drops every gradient instead, so the
weights and the optimiser's moments stay as they were, and the step is recorded as skipped.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from transformers import TrainerCallback


class NonFiniteGradGuard(TrainerCallback):
    """Skips the optimiser step of any step whose gradient holds a NaN or an infinity.

    `skipped` maps each skipped step to the names of the parameters whose gradient was not
    finite before clipping (the shallowest layers first, as named by the model)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.flags: dict[str, torch.Tensor] = {}
        self.skipped: dict[int, list[str]] = {}
        for name, p in self.params.items():
            p.register_post_accumulate_grad_hook(self._hook(name))

    def _hook(self, name: str) -> Any:
        def seen(p: torch.Tensor) -> None:  # a flag on the device: no sync inside backward
            self.flags[name] = torch.isfinite(p.grad).all()

        return seen

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.flags.clear()

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if not self.flags:
            return
        names = list(self.flags)
        finite = torch.stack([self.flags[n] for n in names]).cpu()  # one sync a step
        if bool(finite.all()):
            return
        failed = {n for n, ok in zip(names, finite.tolist(), strict=True) if not ok}
        bad = [n for n in self.params if n in failed]  # in the model's order
        step = state.global_step + 1  # the step this update would end
        self.skipped[step] = bad
        for p in self.params.values():
            p.grad = None  # the optimiser passes over parameters without a gradient
        print(
            f"step {step}: the gradient of {len(bad)} of {len(self.params)} trainable tensors "
            f"is not finite (first {bad[0]}); its update is skipped",
            file=sys.stderr,
            flush=True,
        )
