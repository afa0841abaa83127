"""Depthwise Conv2d: 3x3 convolution with groups == channels (stride 1, padding 1, with bias).

Memory-bound (9 FMAs per element): unlike a dense conv there is no GEMM to hide behind,
so the kernel must tile the image in shared memory and read each input element once.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
channels = 128
kernel_size = 3
height = 112
width = 112

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "channels": 8, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
