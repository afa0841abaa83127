"""Sum reduction: sum over the middle dim of a (batch_size, dim1, dim2) tensor.

Memory-bound; the reduced dim is strided (not contiguous), so threads should own
contiguous dim2 columns and accumulate down dim1 for coalesced loads.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 128
dim1 = 1024
dim2 = 768
reduce_dim = 1

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 8, "dim1": 256, "dim2": 64}


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
