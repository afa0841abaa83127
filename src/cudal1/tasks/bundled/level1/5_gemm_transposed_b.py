"""GEMM with transposed B: C = A @ B.T with A of shape (M, K) and B of shape (N, K).

Compute-bound; the "NT" layout (both operands K-contiguous, as in nn.Linear) changes how
tiles are loaded into shared memory compared to a plain row-major GEMM.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 4096
N = 6144
K = 2048

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"M": 256, "N": 192, "K": 128}


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
