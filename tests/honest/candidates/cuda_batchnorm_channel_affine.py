"""L1_15 BatchNorm2d in eval mode as a per-channel affine map in CUDA: a tiny kernel turns the
running stats and affine parameters into scale = gamma / sqrtf(var + eps) and
shift = beta - mean * scale (recomputed every call, so it always follows the module's current
buffers), then a grid-stride streaming kernel writes fmaf(x, scale[c], shift[c])."""

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

__global__ void bn_prepare_kernel(const float* __restrict__ w, const float* __restrict__ b,
                                  const float* __restrict__ mean, const float* __restrict__ var,
                                  float* __restrict__ scale, float* __restrict__ shift,
                                  int C, float eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) {
        const float sc = w[c] / sqrtf(var[c] + eps);
        scale[c] = sc;
        shift[c] = b[c] - mean[c] * sc;
    }
}

__global__ void bn_apply_kernel(const float* __restrict__ x, float* __restrict__ y,
                                const float* __restrict__ scale, const float* __restrict__ shift,
                                int64_t total, int64_t hw, int C) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int c = (int)((i / hw) % C);
        y[i] = fmaf(x[i], scale[c], shift[c]);
    }
}

torch::Tensor bn_eval(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor mean,
                      torch::Tensor var, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() >= 2,
                "float32 (N, C, ...) CUDA tensor expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    const int64_t C = xc.size(1);
    TORCH_CHECK(w.numel() == C && b.numel() == C && mean.numel() == C && var.numel() == C,
                "parameter size mismatch");
    auto y = torch::empty_like(xc);
    const int64_t total = xc.numel();
    if (total == 0) return y;
    const int64_t hw = total / (xc.size(0) * C);
    auto params = torch::empty({2, C}, xc.options());
    float* scale = params.data_ptr<float>();
    float* shift = scale + C;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    bn_prepare_kernel<<<(unsigned)((C + 255) / 256), 256, 0, stream>>>(
        w.contiguous().data_ptr<float>(), b.contiguous().data_ptr<float>(),
        mean.contiguous().data_ptr<float>(), var.contiguous().data_ptr<float>(), scale, shift,
        (int)C, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int threads = 256;
    const int64_t blocks = std::min((total + threads - 1) / threads, (int64_t)65535 * 8);
    bn_apply_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), scale, shift, total, hw, (int)C);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

CPP_SRC = "torch::Tensor bn_eval(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor mean, torch::Tensor var, double eps);"

_ext = load_inline(
    name="honest_cuda_batchnorm_channel_affine",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["bn_eval"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        return _ext.bn_eval(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.eps)
