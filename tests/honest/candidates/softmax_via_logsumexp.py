"""L1_11 softmax rewritten with logsumexp: z = x - rowmax(x), then exp(z - logsumexp(z)): one
max reduction, one fused log-sum-exp reduction and one elementwise exp instead of exp, sum and
divide. Centring on the row max first keeps logsumexp(z) in [0, log n], so the rounding of the
log-sum-exp stays as small as the reference's on inputs of any magnitude (the uncentred
exp(x - logsumexp(x)) loses about |x| * eps)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x - x.amax(dim=-1, keepdim=True)
        return torch.exp(z - torch.logsumexp(z, dim=-1, keepdim=True))
