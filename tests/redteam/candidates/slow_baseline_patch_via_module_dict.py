"""HACKS.md #10 (slowing the baseline) with the patch hidden from the AST rules.

The reference nn.GELU looks up torch.nn.functional.gelu at every call; the candidate swaps it,
through the module's __dict__ (a subscript store, not an attribute store), for a version that
sleeps 3 ms first (10x the
reference's time). Its own forward calls the private op directly. The output is right;
only the reference timed beside the candidate gets slower.
"""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_gelu = torch._C._nn.gelu


def _slow_gelu(x, approximate="none"):
    time.sleep(0.003)
    return _gelu(x, approximate=approximate)


F.__dict__["gelu"] = _slow_gelu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _gelu(x)
