"""MaxPool2d: 3x3 max pooling with stride 2 and padding 1 on NCHW input.

Memory-bound; overlapping windows mean each input element is read by several outputs,
so coalescing and caching of the shared rows matter.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 48
channels = 128
height = 112
width = 112
kernel_size = 3
stride = 2
padding = 1

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "channels": 8, "height": 32, "width": 32}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
