"""HACKS.md #15 (PyTorch compute passed off as a kernel), hidden from the op log.

The harness logs the aten ops forward runs with a TorchDispatchMode. The candidate runs
F.gelu inside torch.utils._python_dispatch._disable_current_modes(), which pops every active
Python dispatch mode for the duration: the op log stays empty and the forward looks like it ran
no PyTorch compute. Under policy `kernel` it must still be refused.
"""

import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        with _disable_current_modes():
            return F.gelu(x)
