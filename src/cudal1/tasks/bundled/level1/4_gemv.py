"""GEMV: y = A @ x for an (M, K) matrix A and a length-K vector x.

Purely memory-bound (2 FLOPs per matrix element loaded); the goal is to stream A once
at full HBM bandwidth with coalesced loads and a fast per-row reduction.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


M = 12288
K = 8192

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"M": 512, "K": 256}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []
