"""L1_20 exact GELU as a Triton elementwise kernel: 0.5 * x * (1 + erf(x / sqrt(2))) with
tl.erf (libdevice erff), 1024 elements per program, masked tail."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        y = torch.empty_like(xc)
        n = xc.numel()
        if n > 0:
            block = 1024
            _gelu_kernel[(triton.cdiv(n, block),)](xc, y, n, BLOCK=block, num_warps=4)
        return y
