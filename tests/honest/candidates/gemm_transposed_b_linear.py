"""L1_5 C = A @ B.T computed by F.linear(A, B): the NT layout is exactly nn.Linear's, so the
BLAS call consumes B as stored without a transposed copy."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return F.linear(A, B)
