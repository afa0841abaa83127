"""Conv2d + Mish + residual: y = mish(conv2d(x)) + x, with a shape-preserving 3x3 conv.

The Mish epilogue (x * tanh(softplus(x))) and the residual add fuse into the conv store;
the residual re-reads input tiles the conv has already staged.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(self.conv(x)) + x


batch_size = 32
channels = 64
height = 128
width = 128
kernel_size = 3

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "channels": 16, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
