"""GEMM + bias + ReLU: y = relu(x @ W^T + b).

Compute-bound GEMM whose epilogue (bias add, ReLU) fuses into the output tile store;
unfused, the epilogue costs an extra read and write of y.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 8192
in_features = 4096
out_features = 4096

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 64, "in_features": 128, "out_features": 96}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
