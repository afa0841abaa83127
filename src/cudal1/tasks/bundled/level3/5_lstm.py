"""LSTM: a 2-layer nn.LSTM (batch_first, zero initial state) over a sequence; returns all outputs.

The input projections of a layer are one big GEMM, but the recurrence is a chain of small
dependent GEMMs plus gate math; a persistent kernel keeping the recurrent weights on chip wins.
"""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)
        # 3x the default init range, so the outputs are O(0.1) rather than O(0.01).
        bound = 3.0 / math.sqrt(hidden_size)
        with torch.no_grad():
            for p in self.lstm.parameters():
                p.uniform_(-bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


batch_size = 64
seq_len = 128
input_size = 256
hidden_size = 512
num_layers = 2

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 4, "seq_len": 16, "input_size": 32, "hidden_size": 64}


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
