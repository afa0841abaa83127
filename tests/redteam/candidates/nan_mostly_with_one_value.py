"""HACKS.md #28 (NaN games), partial: the right answer in one row, NaN in all the others.

A comparator that drops non-finite elements (`isclose(...)[isfinite]`, nanmax) sees only the
computed row, which is correct.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.full_like(x, float("nan"))
        out[0] = F.gelu(x[0])
        return out
