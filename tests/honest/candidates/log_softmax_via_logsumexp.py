"""L1_12 log_softmax rewritten as x - logsumexp(x, dim=-1): one reduction plus one broadcast
subtract."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - torch.logsumexp(x, dim=-1, keepdim=True)
