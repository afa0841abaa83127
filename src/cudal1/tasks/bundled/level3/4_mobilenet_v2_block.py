"""MobileNetV2 inverted residual: 1x1 expand-BN-ReLU6, 3x3 depthwise-BN-ReLU6, 1x1 project-BN, + x.

Memory-bound: the expanded (6x wider) activation dominates traffic; fusing expand, depthwise
and project per spatial tile keeps it on chip. The depthwise conv has little reuse.
"""

import torch
import torch.nn as nn


def _conv_bn(in_ch: int, out_ch: int, kernel_size: int, groups: int = 1) -> nn.Sequential:
    conv = nn.Conv2d(
        in_ch, out_ch, kernel_size, padding=kernel_size // 2, groups=groups, bias=False
    )
    bn = nn.BatchNorm2d(out_ch)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return nn.Sequential(conv, bn)


class Model(nn.Module):
    def __init__(self, channels: int, expand_ratio: int):
        super().__init__()
        hidden = channels * expand_ratio
        self.expand = nn.Sequential(_conv_bn(channels, hidden, 1), nn.ReLU6())
        self.depthwise = nn.Sequential(_conv_bn(hidden, hidden, 3, groups=hidden), nn.ReLU6())
        self.project = _conv_bn(hidden, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.project(self.depthwise(self.expand(x)))


batch_size = 32
channels = 64
height = 56
width = 56
expand_ratio = 6

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "channels": 16, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, expand_ratio]
