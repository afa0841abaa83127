"""HACKS.md #34 (process tricks): os.fork in forward.

Forks a child that computes the answer into shared memory while the parent returns the shared
buffer at once (work outside the measured process and after the return).
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x).share_memory_()
        if os.fork() == 0:
            out.copy_(F.gelu(x))
            os._exit(0)
        return out
