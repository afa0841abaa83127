"""L2_7 conv2d (no bias) + per-channel bias + ReLU with the bias passed into F.conv2d (added in
the convolution's epilogue instead of a separate broadcast add) and an in-place ReLU on the
fresh conv output."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.conv.weight, self.bias.view(-1))
        return y.clamp_min_(0.0)
