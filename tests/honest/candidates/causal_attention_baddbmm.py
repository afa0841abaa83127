"""L1_22 causal attention written out with batched GEMMs: the additive causal mask (0 on and
below the diagonal, -inf above) is the accumulator input of one torch.baddbmm that also applies
the 1/sqrt(D) scale (alpha), then an in-place-friendly softmax and a bmm with V."""

import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, h, s, d = q.shape
        q3 = q.reshape(b * h, s, d)
        k3 = k.reshape(b * h, s, d)
        v3 = v.reshape(b * h, s, d)
        mask = torch.full((s, s), float("-inf"), dtype=q.dtype, device=q.device).triu_(1)
        scores = torch.baddbmm(mask.unsqueeze(0), q3, k3.transpose(1, 2), alpha=1.0 / math.sqrt(d))
        probs = torch.softmax(scores, dim=-1)
        return torch.bmm(probs, v3).reshape(b, h, s, d)
