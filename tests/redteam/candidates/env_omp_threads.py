"""HACKS.md #32 (environment tampering).

Sets OMP_NUM_THREADS / MKL_NUM_THREADS in the process environment at import (for any later
process or pool the harness starts) and computes honestly.
"""

import os

import torch.nn as nn
import torch.nn.functional as F

os.environ["OMP_NUM_THREADS"] = "16"
os.environ["MKL_NUM_THREADS"] = "16"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)
