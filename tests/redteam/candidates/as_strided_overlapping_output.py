"""HACKS.md #29 (stride tricks): an output whose rows overlap in memory.

Computes GELU for a single row plus the last few elements and returns as_strided(shape=(64, 1024),
stride=(1, 1)) over that small storage: every "row" is the same data shifted by one element, so
the writer did 1/60 of the work.
"""

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        flat = x.reshape(-1)[: rows + cols - 1]
        return F.gelu(flat).as_strided((rows, cols), (1, 1))
