"""L2_7 conv2d + bias + ReLU: the convolution itself is F.conv2d without bias (cuDNN, full fp32
as the harness configures it), and the bias add and ReLU are fused into one in-place CUDA
epilogue kernel over the fresh conv output (one read, one write, instead of two elementwise
passes and a temporary)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
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

__global__ void bias_relu_inplace_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                         int64_t total, int64_t hw, int C) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int c = (int)((i / hw) % C);
        const float v = y[i] + bias[c];
        y[i] = v < 0.0f ? 0.0f : v;
    }
}

torch::Tensor bias_relu_inplace(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == at::kFloat && y.dim() == 4, "float32 NCHW expected");
    TORCH_CHECK(y.is_contiguous(), "conv output must be contiguous");
    const int64_t C = y.size(1);
    TORCH_CHECK(bias.numel() == C, "bias size mismatch");
    const c10::cuda::CUDAGuard guard(y.device());
    auto bc = bias.contiguous();
    const int64_t total = y.numel();
    if (total == 0) return y;
    const int64_t hw = y.size(2) * y.size(3);
    const int threads = 256;
    const int64_t blocks = std::min((total + threads - 1) / threads, (int64_t)65535 * 8);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    bias_relu_inplace_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
        y.data_ptr<float>(), bc.data_ptr<float>(), total, hw, (int)C);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

CPP_SRC = "torch::Tensor bias_relu_inplace(torch::Tensor y, torch::Tensor bias);"

_ext = load_inline(
    name="honest_cuda_conv_bias_relu_epilogue",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["bias_relu_inplace"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.conv.weight).contiguous()
        return _ext.bias_relu_inplace(y, self.bias)
