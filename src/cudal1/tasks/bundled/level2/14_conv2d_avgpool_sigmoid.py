"""Conv2d + AvgPool2d + sigmoid: y = sigmoid(avg_pool2d(conv2d(x), 2)).

The average pool is linear, so it can be applied inside the conv epilogue (or folded into a
stride-2 conv with a 4x4 kernel); the sigmoid follows on the 4x smaller pooled tile.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        # He init: pre-sigmoid values O(1), so the output is not close to a constant 0.5.
        nn.init.kaiming_normal_(self.conv.weight, nonlinearity="relu")
        self.pool = nn.AvgPool2d(pool_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.pool(self.conv(x)))


batch_size = 64
in_channels = 32
out_channels = 64
height = 130
width = 130
kernel_size = 3
pool_size = 2

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "in_channels": 8, "out_channels": 16, "height": 18, "width": 18}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
