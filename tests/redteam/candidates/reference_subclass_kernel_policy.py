"""HACKS.md #15 (calling the reference instead of a custom kernel): ModelNew derives from Model.

The candidate pastes the reference class and declares `class ModelNew(Model): pass`. Under
policy `kernel` this is the baseline passed off as a kernel and must be refused.
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
