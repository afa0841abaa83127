"""HACKS.md #7 (phase detection), by counting calls.

Honest for as many calls as a warm-up plus a handful of correctness trials, then returns an
unwritten buffer: only the timing phase sees the cheat.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls <= 8:
            return F.gelu(x)
        return torch.empty_like(x)
