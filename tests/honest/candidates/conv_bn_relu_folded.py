"""L2_8 conv2d + BatchNorm(eval) + ReLU with the BatchNorm folded into the convolution at init:
W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta (computed in
float64, stored as float32), so forward is one conv2d plus an in-place ReLU. The module mirrors
the reference's __init__ exactly (same layers, same in-place randomisation) so the secret-seeded
parameters match."""

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
            scale = self.bn.weight.double() / torch.sqrt(self.bn.running_var.double() + self.bn.eps)
            w = self.conv.weight.double() * scale.view(-1, 1, 1, 1)
            b = (self.conv.bias.double() - self.bn.running_mean.double()) * scale + self.bn.bias.double()
        self.register_buffer("w_folded", w.float())
        self.register_buffer("b_folded", b.float())
        self.padding = kernel_size // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.w_folded, self.b_folded, padding=self.padding)
        return y.clamp_min_(0.0)
