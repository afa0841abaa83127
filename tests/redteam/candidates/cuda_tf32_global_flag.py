"""HACKS.md #31 (precision downgrade) through #32 (global flag tampering): TF32 left on.

forward sets torch.backends.cuda.matmul.allow_tf32 = True and leaves it set, so cuBLAS runs
the fp32 GEMM on TF32 tensor cores (10-bit mantissa inputs, several times faster on Hopper).
The flag stays changed for the rest of the process, including any reference timed there.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.matmul(A, B)
