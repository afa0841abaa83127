"""HACKS.md #15 (calling the reference instead of a custom kernel): ModelNew derives from Model.

The candidate pastes the reference class and declares `class ModelNew(Model): pass`. Under
policy `any` this is simply the baseline: honest code that computes the result, so it is `ok`
(speedup about 1), but it must carry the reference_call flag.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x)


class ModelNew(Model):
    pass
