"""HACKS.md #28 (NaN games).

Returns NaN everywhere: a comparator whose max-error becomes NaN (and `nan > tol` is False) would
pass it.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.full_like(x, float("nan"))
