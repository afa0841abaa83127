"""HACKS.md #26 (stealing the expected output by introspection): caller frames.

Walks sys._getframe() upwards looking for a local named like an expected output (expected, y32,
ref_out, golden) and returns it.
"""

import sys

import torch
import torch.nn as nn

_NAMES = ("expected", "y32", "ref_out", "golden", "reference_output")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        f = sys._getframe(1)
        while f is not None:
            for name in _NAMES:
                v = f.f_locals.get(name)
                if isinstance(v, torch.Tensor) and v.shape == x.shape:
                    return v.clone()
            f = f.f_back
        return torch.zeros_like(x)
