"""Conv2d + GroupNorm + scale: y = group_norm(conv2d(x)) * scale (learned, per channel).

GroupNorm reduces over (channels of a group, H, W) per sample, which spans many conv output
tiles; fusing needs a cross-tile reduction, then the affine maps and scale fold together.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(num_groups, out_channels)
        self.scale = nn.Parameter(torch.empty(out_channels, 1, 1).uniform_(0.5, 2.0))
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x)) * self.scale


batch_size = 32
in_channels = 32
out_channels = 128
height = 128
width = 128
kernel_size = 3
num_groups = 16

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {
    "batch_size": 2,
    "in_channels": 8,
    "out_channels": 16,
    "height": 16,
    "width": 16,
    "num_groups": 4,
}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
