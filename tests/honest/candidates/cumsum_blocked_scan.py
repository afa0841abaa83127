"""L1_19 inclusive prefix sum as a two-level blocked scan: the scan dim is padded to a multiple of
a block length, each block is scanned independently (reshape to (..., nblocks, block) and cumsum
the last dim), the block totals are scanned, and the exclusive block offsets are added back.
Works for any dim and length; the result is sliced back to the original length."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BLOCK = 128


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xt = x.movedim(self.dim, -1)
        n = xt.shape[-1]
        pad = (-n) % BLOCK
        if pad:
            xt = F.pad(xt, (0, pad))
        blocks = xt.reshape(*xt.shape[:-1], -1, BLOCK)
        local = torch.cumsum(blocks, dim=-1)
        totals = local[..., -1]
        offsets = torch.cumsum(totals, dim=-1) - totals
        scanned = (local + offsets.unsqueeze(-1)).reshape(*xt.shape)
        if pad:
            scanned = scanned[..., :n]
        return scanned.movedim(-1, self.dim).contiguous()
