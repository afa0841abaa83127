"""Conv2d + bias + ReLU: y = relu(conv2d(x, W) + bias), bias a learned per-channel tensor.

A compute-bound 3x3 convolution (implicit GEMM) whose per-channel bias and ReLU fuse into
the epilogue; unfused, each costs a full pass over the large activation.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x) + self.bias)


batch_size = 32
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "in_channels": 8, "out_channels": 16, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
