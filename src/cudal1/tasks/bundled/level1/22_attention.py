"""Causal attention: softmax(Q K^T / sqrt(D) + causal mask) V via F.scaled_dot_product_attention.

Compute-bound at this size; a FlashAttention-style kernel tiles over keys with an online
softmax, never materializes the S x S score matrix, and skips fully masked tiles.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 8
num_heads = 16
seq_len = 1024
head_dim = 64

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "num_heads": 4, "seq_len": 128, "head_dim": 32}


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
