"""L1_17 sum over one dim as a Triton kernel: the input is viewed as (outer, reduced, inner); each
program owns BLOCK_I contiguous inner columns of one outer slice and sweeps the reduced dim in
(BLOCK_R, BLOCK_I) tiles, keeping a 2-D fp32 accumulator that is reduced over rows once at the
end. Any dim, any sizes."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_dim_kernel(x_ptr, y_ptr, red, inner, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    o = tl.program_id(0).to(tl.int64)
    pid_i = tl.program_id(1)
    offs_i = pid_i * BLOCK_I + tl.arange(0, BLOCK_I)
    offs_r = tl.arange(0, BLOCK_R)
    base = x_ptr + o * red * inner
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
    for r0 in range(0, red, BLOCK_R):
        rs = r0 + offs_r
        mask = (rs[:, None] < red) & (offs_i[None, :] < inner)
        acc += tl.load(base + rs[:, None] * inner + offs_i[None, :], mask=mask, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + o * inner + offs_i, total, mask=offs_i < inner)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        d = self.dim % xc.dim()
        outer = math.prod(xc.shape[:d])
        red = xc.shape[d]
        inner = math.prod(xc.shape[d + 1:])
        out_shape = xc.shape[:d] + xc.shape[d + 1:]
        y = torch.empty(out_shape, device=xc.device, dtype=xc.dtype)
        if outer * inner == 0:
            return y
        if red == 0:
            return y.zero_()
        block_i = 64
        grid = (outer, triton.cdiv(inner, block_i))
        _sum_dim_kernel[grid](xc, y, red, inner, BLOCK_R=32, BLOCK_I=block_i, num_warps=4)
        return y
