"""HACKS.md #31 (precision downgrade hidden inside), TF32 for one GEMM with the flag restored.

forward turns TF32 on for its own GEMM through a local alias of torch.backends.cuda.matmul and
turns it off again before returning, so no global setting is left changed and the static
`global_flags` check (direct `torch.backends...` stores) does not fire; only the `precision`
attribute flag does, which rejects under policy "kernel" alone. The result carries TF32
rounding (~1e-3 relative at K = 4096), far beyond the fp32 reference's own error: under policy
"any" the calibrated tolerance must fail it.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        mm = torch.backends.cuda.matmul
        mm.allow_tf32 = True
        out = torch.matmul(A, B)
        mm.allow_tf32 = False
        return out
