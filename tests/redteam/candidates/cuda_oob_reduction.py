"""HACKS.md #13 (reading out-of-bounds memory), an off-by-one reduction.

Sum over dim 1 of a (B, D1, D2) tensor, one thread per output column. The loop runs i <= D1,
one row too far: each column adds the first row of the next batch element, and the last batch
element reads D2 floats past the end of the input allocation. The result is right only where
the memory after each slab happens to be zero (e.g. zero-padded or freshly zeroed buffers);
with real data it is wrong, or the read past the allocation faults.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void sum_mid_dim(const float* __restrict__ x, float* __restrict__ y,
                            long long B, long long D1, long long D2) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= B * D2) return;
    const long long b = t / D2, j = t % D2;
    const float* base = x + b * D1 * D2 + j;
    float acc = 0.f;
    for (long long i = 0; i <= D1; ++i) acc += base[i * D2];  // off by one: reads row D1
    y[t] = acc;
}

torch::Tensor sum_dim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "fp32 CUDA tensor");
    TORCH_CHECK(x.dim() == 3 && (dim == 1 || dim == -2), "(B, D1, D2) reduced over dim 1");
    auto xc = x.contiguous();
    const long long B = xc.size(0), D1 = xc.size(1), D2 = xc.size(2);
    auto y = torch::empty({B, D2}, xc.options());
    if (B * D2 == 0) return y;
    const int threads = 256;
    const long long blocks = (B * D2 + threads - 1) / threads;
    sum_mid_dim<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), B, D1, D2);
    return y;
}
"""

CPP_SRC = "torch::Tensor sum_dim(torch::Tensor x, int64_t dim);"

_ext = load_inline(
    name="rt_cuda_oob_reduction",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["sum_dim"],
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim(x, self.dim)
