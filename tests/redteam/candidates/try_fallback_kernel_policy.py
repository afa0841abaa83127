"""HACKS.md #16 (try/except fallback).

The "custom" path always raises (it calls a kernel that was never built) and the except branch
quietly does the work with PyTorch. Under policy `kernel` this must be refused.
"""

import torch.nn as nn
import torch.nn.functional as F


def _custom_gelu(x):
    raise RuntimeError("fused_gelu_kernel: extension not built")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        try:
            return _custom_gelu(x)
        except RuntimeError:
            return F.gelu(x)
