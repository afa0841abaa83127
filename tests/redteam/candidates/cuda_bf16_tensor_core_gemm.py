"""HACKS.md #31 (precision downgrade hidden inside): bf16 tensor-core GEMM returned as fp32.

Inputs are cast to bfloat16, multiplied on tensor cores (fp32 accumulation) and the result is
cast back to float32, so dtype, shape and layout all look right. bf16 keeps 8 mantissa bits:
about 4e-3 relative error per input, ~1e-3 relative on the outputs at K = 4096, which a 1e-2
tolerance accepts and a tolerance calibrated on the fp32 reference rejects.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return (A.bfloat16() @ B.bfloat16()).float()
