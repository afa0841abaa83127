"""HACKS.md #15 (calling the reference / PyTorch instead of a custom kernel), "PyTorch wrap".

ModelNew claims a custom kernel but forward just instantiates an nn.GELU and calls it (plus a
few cosmetic reshapes). Under policy `kernel` the PyTorch compute op must be seen and refused.
"""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = nn.GELU()  # "our fused kernel"

    def forward(self, x):
        flat = x.reshape(-1)
        return self.kernel(flat).view_as(x)
