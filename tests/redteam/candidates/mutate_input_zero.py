"""HACKS.md #23 (input mutation to fool the reference).

Computes the right answer, then zeroes the input in place: a reference run afterwards on the same
buffer would compute gelu(0) = 0 everywhere, and a harness comparing against it might be fooled.
"""

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = F.gelu(x)
        x.zero_()
        return y
