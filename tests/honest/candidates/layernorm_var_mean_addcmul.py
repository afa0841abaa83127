"""L1_13 LayerNorm in one statistics pass: torch.var_mean (single-pass Welford) gives mean and
biased variance per row, then (x - mean) * rsqrt(var + eps) and the affine transform fused as
torch.addcmul(bias, xhat, weight)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
        xhat = (x - mean) * torch.rsqrt(var + self.norm.eps)
        return torch.addcmul(self.norm.bias, xhat, self.norm.weight)
