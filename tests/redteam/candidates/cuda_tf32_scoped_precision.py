"""HACKS.md #31 (precision downgrade hidden inside), with the global setting restored.

forward switches fp32 matmuls to TF32 with torch.set_float32_matmul_precision("high") for its
own GEMM only and puts "highest" back before returning, so a snapshot of global flags taken
after the call sees nothing changed. The result carries TF32 rounding (about 1e-3 relative at
K = 4096), far beyond the fp32 reference's own error.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")
        out = torch.matmul(A, B)
        torch.set_float32_matmul_precision(before)
        return out
