"""HACKS.md #7 (phase detection: behave differently when timed), by counting calls.

The first 12 calls (enough to cover a harness's warm-up and correctness trials) compute GELU
honestly; every later call returns the output of call 12 without computing anything, betting
that timed calls are never checked.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

HONEST_CALLS = 12


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.saved = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls <= HONEST_CALLS or self.saved is None or self.saved.shape != x.shape:
            self.saved = F.gelu(x)
            return self.saved
        return self.saved
