"""Conv3d: 3-D convolution with a 3x3x3 kernel (stride 1, padding 1, with bias) on NCDHW input.

Compute-bound with 27 taps per input channel; data reuse across the depth dimension
is what separates a good kernel from a naive one.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(
            in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 32
out_channels = 64
kernel_size = 3
depth = 16
height = 64
width = 64

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {
    "batch_size": 2,
    "in_channels": 4,
    "out_channels": 8,
    "depth": 8,
    "height": 8,
    "width": 8,
}


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
