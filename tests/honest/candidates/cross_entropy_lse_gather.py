"""L1_23 per-sample cross-entropy as logsumexp(logits) - logits[target]: one row reduction and a
gather instead of a full log_softmax tensor. Targets equal to the default ignore_index (-100)
give 0, as F.cross_entropy does."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        ignore = targets == -100
        safe = targets.masked_fill(ignore, 0)
        picked = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
        loss = torch.logsumexp(logits, dim=1) - picked
        return loss.masked_fill(ignore, 0.0)
