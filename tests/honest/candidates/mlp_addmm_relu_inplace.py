"""L3_1 three-layer MLP with each layer as one torch.addmm (bias fused into the GEMM) followed
by an in-place ReLU on the freshly allocated layer output; the layers mirror the reference's
nn.Sequential and its He init exactly."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        l1, l2, l3 = self.net[0], self.net[2], self.net[4]
        h = torch.addmm(l1.bias, x, l1.weight.t()).clamp_min_(0.0)
        h = torch.addmm(l2.bias, h, l2.weight.t()).clamp_min_(0.0)
        return torch.addmm(l3.bias, h, l3.weight.t())
