"""Batched attention with explicit bmm: y = softmax(Q @ K^T * scale, dim=-1) @ V.

Unfused, the (seq x seq) score matrix is written and read several times and dominates the
traffic; fused (flash-attention style), scores stay on chip with an online softmax.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.bmm(q, k.transpose(1, 2)) * self.scale
        return torch.bmm(torch.softmax(scores, dim=-1), v)


batch_heads = 64
seq_len = 1024
head_dim = 64
scale = 0.25

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_heads": 4, "seq_len": 64, "head_dim": 32}


def get_inputs():
    q = torch.randn(batch_heads, seq_len, head_dim)
    k = torch.randn(batch_heads, seq_len, head_dim)
    v = torch.randn(batch_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return [scale]
