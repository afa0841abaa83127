"""MLP: three Linear layers with ReLU between them, y = L3(relu(L2(relu(L1(x))))).

Three back-to-back compute-bound GEMMs; bias+ReLU fuse into each GEMM epilogue, and the
intermediate activations can stay in a low-precision or L2-resident layout.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )
        # He init keeps activations (and the output) O(1) through the ReLU layers.
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


batch_size = 2048
input_size = 4096
hidden_size = 4096
output_size = 1024

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 64, "input_size": 128, "hidden_size": 256, "output_size": 32}


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
