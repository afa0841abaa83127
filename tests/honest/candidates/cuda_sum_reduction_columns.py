"""L1_17 sum over one dim as a CUDA kernel: the input is viewed as (outer, reduced, inner); each
block owns 32 consecutive inner columns of one outer slice (warps read 128-byte coalesced rows)
and 8 thread rows split the reduced dim, their partial sums combined in shared memory. Works for
any dim and sizes."""

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

#define TX 32
#define TY 8

__global__ void __launch_bounds__(TX * TY) sum_dim_kernel(
        const float* __restrict__ x, float* __restrict__ y, int64_t red, int64_t inner,
        int64_t inner_tiles) {
    __shared__ float part[TY][TX + 1];
    const int64_t tile = blockIdx.x;
    const int64_t o = tile / inner_tiles;
    const int64_t i = (tile % inner_tiles) * TX + threadIdx.x;
    float acc = 0.0f;
    if (i < inner) {
        const float* base = x + o * red * inner + i;
        for (int64_t k = threadIdx.y; k < red; k += TY) acc += base[k * inner];
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float s = 0.0f;
#pragma unroll
        for (int r = 0; r < TY; ++r) s += part[r][threadIdx.x];
        y[o * inner + i] = s;
    }
}

torch::Tensor sum_dim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "float32 CUDA tensor expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    const int64_t nd = xc.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "bad dim");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t red = xc.size(dim);
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < nd; ++d) if (d != dim) shape.push_back(xc.size(d));
    auto y = torch::empty(shape, xc.options());
    if (outer * inner == 0) return y;
    const int64_t inner_tiles = (inner + TX - 1) / TX;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    sum_dim_kernel<<<(unsigned)(outer * inner_tiles), dim3(TX, TY), 0, stream>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), red, inner, inner_tiles);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

CPP_SRC = "torch::Tensor sum_dim(torch::Tensor x, int64_t dim);"

_ext = load_inline(
    name="honest_cuda_sum_reduction_columns",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["sum_dim"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim(x, self.dim)
