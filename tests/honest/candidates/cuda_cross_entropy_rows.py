"""L1_23 per-sample cross-entropy as one CUDA kernel: one 256-thread block per sample computes
the row max and sum of expf(x - max) (warp shuffles + shared memory) and writes
logf(sum) + max - x[target]; a target equal to ignore_index (-100) gives 0 as in
F.cross_entropy. Logits are read once for the max and once for the sum; int64 targets."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#define THREADS 256

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide reductions (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    const int nw = blockDim.x >> 5;
    if (wid == 0) {
        float t = lane < nw ? sh[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) sh[32] = t;
    }
    __syncthreads();
    const float r = sh[32];
    __syncthreads();
    return r;
}

__device__ float block_max(float v, float* sh) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    const int nw = blockDim.x >> 5;
    if (wid == 0) {
        float t = lane < nw ? sh[lane] : -INFINITY;
        t = warp_max(t);
        if (lane == 0) sh[32] = t;
    }
    __syncthreads();
    const float r = sh[32];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(THREADS) cross_entropy_rows_kernel(
        const float* __restrict__ x, const int64_t* __restrict__ targets, float* __restrict__ out,
        int64_t cols) {
    __shared__ float sh[33];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        const int64_t t = targets[row];
        if (t == -100) {
            out[row] = 0.0f;
        } else if (t < 0 || t >= cols) {
            out[row] = NAN;
        } else {
            out[row] = logf(s) + m - xr[t];
        }
    }
}

torch::Tensor cross_entropy_rows(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && targets.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(logits.scalar_type() == at::kFloat && logits.dim() == 2, "float32 (N, C) logits expected");
    TORCH_CHECK(targets.scalar_type() == at::kLong && targets.numel() == logits.size(0), "int64 (N,) targets expected");
    const c10::cuda::CUDAGuard guard(logits.device());
    auto xc = logits.contiguous();
    auto tc = targets.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    if (rows == 0) return out;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    cross_entropy_rows_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(
        xc.data_ptr<float>(), tc.data_ptr<int64_t>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor cross_entropy_rows(torch::Tensor logits, torch::Tensor targets);"

_ext = load_inline(
    name="honest_cuda_cross_entropy_rows",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["cross_entropy_rows"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return _ext.cross_entropy_rows(logits, targets)
