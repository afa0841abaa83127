"""HACKS.md #10 (slowing the baseline) with the patch hidden from the AST rules.

The reference nn.GELU looks up torch.nn.functional.gelu at every call; the candidate swaps it,
through the module's __dict__ (a subscript store, not an attribute store), for a version that
sleeps 20 ms first: far above the reference's own time even on a loaded 2-core machine (the
3 ms version of this case failed once in a full local test run and passed alone; the CPU check
rejects only past 3x the clean reference's upper bound). Its own forward calls the private op
directly. The output is right; only the reference timed beside the candidate gets slower.
"""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_gelu = torch._C._nn.gelu


def _slow_gelu(x, approximate="none"):
    time.sleep(0.02)
    return _gelu(x, approximate=approximate)


F.__dict__["gelu"] = _slow_gelu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _gelu(x)
