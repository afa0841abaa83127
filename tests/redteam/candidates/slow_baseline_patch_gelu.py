"""HACKS.md #10 (slowing the baseline), plain monkeypatch.

The reference (nn.GELU) calls torch.nn.functional.gelu; the candidate replaces it with a version
that computes the answer three times, and computes its own output through the private op.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

_gelu = torch._C._nn.gelu


def _slow_gelu(x, approximate="none"):
    for _ in range(2):
        _gelu(x, approximate=approximate)
    return _gelu(x, approximate=approximate)


torch.nn.functional.gelu = _slow_gelu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _gelu(x)


assert F is not None
