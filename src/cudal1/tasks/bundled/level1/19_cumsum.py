"""Cumsum: inclusive prefix sum along the last dim of a (batch_size, dim) matrix.

Memory-bound scan; a warp/block-level scan (with decoupled look-back for long rows)
reads and writes each element once.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 16384
dim = 3072
scan_dim = 1

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 64, "dim": 1024}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scan_dim]
