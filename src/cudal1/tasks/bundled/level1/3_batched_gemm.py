"""Batched GEMM: C[b] = A[b] @ B[b] for a batch of (M, K) x (K, N) fp32 matrices.

Compute-bound; one launch must cover all batch entries (strided-batched GEMM) to fill the GPU.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 32
M = 1024
K = 512
N = 1024

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 4, "M": 64, "K": 32, "N": 64}


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return []
