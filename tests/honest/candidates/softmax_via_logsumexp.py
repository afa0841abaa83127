"""L1_11 softmax rewritten as exp(x - logsumexp(x)): one fused reduction (logsumexp) and one
elementwise exp, instead of max, exp, sum and divide."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lse = torch.logsumexp(x, dim=-1, keepdim=True)
        return torch.exp(x - lse)
