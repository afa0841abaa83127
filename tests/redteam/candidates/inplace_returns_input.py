"""HACKS.md #14 (returning an input or an alias of it).

Computes GELU in place into the input buffer and returns that very tensor: no output allocation,
a correct-looking result, but the output aliases (and overwrites) the input.
"""

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.copy_(F.gelu(x))
