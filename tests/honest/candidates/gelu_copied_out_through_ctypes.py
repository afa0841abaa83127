"""L1_20 GELU copied into its output with ctypes.memmove: raw memory calls into the
candidate's own tensors (as CUDA-L1's L2_57 uses ctypes for a `__constant__` symbol's address)
do nothing a compiled extension could not, and are judged by what they write."""

import ctypes

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x)
        out = torch.empty_like(x)
        ctypes.memmove(out.data_ptr(), y.data_ptr(), y.numel() * y.element_size())
        return out
