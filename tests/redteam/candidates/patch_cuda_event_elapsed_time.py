"""HACKS.md #4 (monkey-patching the timer): CUDA events.

Replaces torch.cuda.Event.elapsed_time with a version that returns 1/100 of the true value (the
classic gpu-mode #162 exploit). On the CPU device the events are unused, but the patch alone
must be refused.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

_real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) / 100


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)
