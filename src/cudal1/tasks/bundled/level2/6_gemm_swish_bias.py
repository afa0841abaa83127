"""GEMM + Swish + bias: h = x @ W^T + b; y = h * sigmoid(h) + extra_bias.

Compute-bound GEMM with an elementwise epilogue and a second per-column bias vector;
everything after the GEMM fuses into the output store.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.extra_bias = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        return h * torch.sigmoid(h) + self.extra_bias


batch_size = 4096
in_features = 4096
out_features = 8192

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 64, "in_features": 128, "out_features": 160}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
