"""HACKS.md #14 (returning a parameter / buffer).

The output is written into a persistent buffer registered on the module and that buffer itself
is returned: the caller gets memory the model owns (and the next call overwrites it).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("out", torch.zeros(0))

    def forward(self, x):
        y = torch.relu(self.linear(x))
        if self.out.shape != y.shape:
            self.out.resize_(y.shape)
        self.out.copy_(y)
        return self.out
