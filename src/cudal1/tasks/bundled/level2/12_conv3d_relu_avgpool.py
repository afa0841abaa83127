"""Conv3d + ReLU + AvgPool3d: y = avg_pool3d(relu(conv3d(x)), 2).

A 3x3x3 volumetric convolution (27 taps per input channel, compute-bound) whose ReLU and
2x2x2 average pool fuse into the epilogue, writing an 8x smaller output.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.AvgPool3d(pool_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.conv(x)))


batch_size = 16
in_channels = 32
out_channels = 64
depth = 32
height = 64
width = 64
kernel_size = 3
pool_size = 2

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {
    "batch_size": 2,
    "in_channels": 4,
    "out_channels": 8,
    "depth": 8,
    "height": 16,
    "width": 16,
}


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
