"""GRU cell loop: nn.GRUCell unrolled over T steps from a zero state; returns the final hidden.

Launch-bound in eager mode (a few small kernels per step); the input GEMMs of all steps can
be batched up front, and the recurrent part run as one persistent kernel.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)
        self.hidden_size = hidden_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (seq_len, batch, input_size)
        h = x.new_zeros(x.shape[1], self.hidden_size)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
        return h


seq_len = 64
batch_size = 128
input_size = 512
hidden_size = 1024

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"seq_len": 16, "batch_size": 4, "input_size": 32, "hidden_size": 64}


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
