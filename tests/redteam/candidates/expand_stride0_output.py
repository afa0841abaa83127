"""HACKS.md #29 (broadcast / stride tricks): expanded stride-0 output.

Sums only the first batch element and returns it expanded to the full batch (stride 0 along the
batch dim): one row of work, a tensor of the right shape.
"""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        row = x[0].sum(dim=self.dim - 1)
        return row.unsqueeze(0).expand(x.shape[0], -1)
