"""L2_4 (x W^T + b + x)^2 with the bias and the residual folded into the GEMM's accumulator
input: torch.addmm(x + b, x, W^T), then an in-place square of that fresh tensor."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(x + self.linear.bias, x, self.linear.weight.t())
        return y.mul_(y)
