"""L2_15 sum(sigmoid(h) - 0.5) rewritten with the identity sigmoid(h) - 0.5 = 0.5 * tanh(h / 2):
no cancellation against 0.5, one fewer elementwise pass; the GEMM is one addmm with the bias
fused in."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return torch.tanh(h.mul_(0.5)).sum(dim=1).mul_(0.5)
