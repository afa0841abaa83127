"""HACKS.md #6 (cross-call batching / super-batching).

A benchmark loop calls the kernel N times on the same buffer. This candidate keeps the last input
buffer and its output: when it is called again with the same buffer, it assumes the problem is
the one it already solved in the "batch" and hands back the pre-filled result without computing.
"""

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last_input = None
        self.last_output = None

    def forward(self, x):
        if self.last_input is not None and x is self.last_input:
            return self.last_output.clone()
        self.last_input = x
        self.last_output = F.gelu(x)
        return self.last_output.clone()
