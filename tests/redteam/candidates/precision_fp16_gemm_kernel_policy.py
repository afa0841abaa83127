"""HACKS.md #31 (precision downgrade) under the strict policy.

A square GEMM computed in float16 (inputs cast down, product cast back to float32). Under policy
`kernel` (own kernels, full precision) a precision change is refused outright.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.half(), B.half()).float()
