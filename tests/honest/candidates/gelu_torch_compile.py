"""L1_20 GELU through torch.compile (Inductor generates one Triton kernel). CUDA-L1's L2_72,
L2_85 and L2_91 do this: Inductor must compile in the candidate's own process (no pool of
compile workers left running) and the two threads it parks are a library's, not deferred work."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.gelu = torch.compile(_gelu)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gelu(x)
