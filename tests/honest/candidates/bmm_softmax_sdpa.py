"""L2_13 bmm -> scale -> softmax -> bmm replaced by one F.scaled_dot_product_attention call with
the task's scale (a fused attention kernel on 3-D (batch*heads, seq, dim) inputs, no mask)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, scale=self.scale)
