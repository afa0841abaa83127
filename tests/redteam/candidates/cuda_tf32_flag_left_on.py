"""HACKS.md #32 (global flag tampering) with #31: TF32 switched on and left on, hidden from the
static store check.

Like cuda_tf32_global_flag.py, but the store goes through a local alias of
torch.backends.cuda.matmul, so the static `global_flags` rule does not fire (only the
`precision` attribute flag, non-rejecting under policy "any"). The flag stays on for the rest
of the process; the snapshot of global settings taken before the candidate was imported must
show the change (and the TF32 result fails the calibrated tolerance as well).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        mm = torch.backends.cuda.matmul
        mm.allow_tf32 = True
        return torch.matmul(A, B)
