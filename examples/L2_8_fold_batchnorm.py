"""Honest candidate for bundled task L2_8 (conv2d + BatchNorm + ReLU, eval mode).

In eval mode BatchNorm is a per-channel affine map, so it folds into the convolution's weights
and bias once, at construction: forward runs one convolution and a ReLU instead of three passes.
Parameters are created exactly as the reference creates them (same modules, same order, same
in-place initialisation), so the evaluator's shared seed gives both the same weights.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            scale = self.bn.weight / torch.sqrt(self.bn.running_var + self.bn.eps)
            folded_w = self.conv.weight * scale[:, None, None, None]
            folded_b = (self.conv.bias - self.bn.running_mean) * scale + self.bn.bias
        self.register_buffer("folded_weight", folded_w)
        self.register_buffer("folded_bias", folded_b)
        self.padding = kernel_size // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(F.conv2d(x, self.folded_weight, self.folded_bias, padding=self.padding))
