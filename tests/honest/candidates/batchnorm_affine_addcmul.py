"""L1_15 BatchNorm2d in eval mode as a per-channel affine map: scale = gamma / sqrt(var + eps)
and shift = beta - mean * scale are computed once at init, and forward is a single fused
torch.addcmul(shift, x, scale) over broadcast (1, C, 1, 1) views."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            scale = self.bn.weight.double() / torch.sqrt(self.bn.running_var.double() + self.bn.eps)
            shift = self.bn.bias.double() - self.bn.running_mean.double() * scale
        self.register_buffer("scale", scale.float().view(1, -1, 1, 1))
        self.register_buffer("shift", shift.float().view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.shift, x, self.scale)
