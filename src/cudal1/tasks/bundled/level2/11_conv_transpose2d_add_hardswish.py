"""ConvTranspose2d + add + HardSwish: h = conv_transpose2d(x) + skip; y = h * hardswish(h).

A stride-2 transposed conv (upsampling) whose epilogue reads a second full-resolution tensor
and applies a gated HardSwish; memory traffic of the skip input and output dominates.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=kernel_size // 2,
            output_padding=stride - 1,
        )

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        h = self.conv_t(x) + skip
        return h * F.hardswish(h)


batch_size = 64
in_channels = 128
out_channels = 64
height = 64
width = 64
kernel_size = 3
stride = 2

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "in_channels": 16, "out_channels": 8, "height": 8, "width": 8}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    skip = torch.randn(batch_size, out_channels, height * stride, width * stride)
    return [x, skip]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride]
