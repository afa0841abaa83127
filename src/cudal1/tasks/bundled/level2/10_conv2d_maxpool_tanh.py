"""Conv2d + MaxPool2d + tanh: y = tanh(max_pool2d(conv2d(x), 2)).

The 2x2 max pool and tanh fuse into the conv epilogue when a tile holds whole pooling
windows, so only the 4x smaller pooled output goes to memory.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool2d(pool_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.pool(self.conv(x)))


batch_size = 64
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
pool_size = 2

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "in_channels": 8, "out_channels": 16, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
