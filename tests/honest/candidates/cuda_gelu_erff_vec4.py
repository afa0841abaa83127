"""L1_20 exact GELU as a CUDA kernel: 0.5 * x * (1 + erff(x / sqrt(2))) in float, with 128-bit
float4 loads and stores over the aligned bulk of the tensor and a scalar loop for the tail (or
for unaligned inputs). Grid-stride loops, 64-bit indexing, launched on PyTorch's current stream."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cstdint>

__device__ __forceinline__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
}

__global__ void gelu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = gelu_erf(v.x);
        v.y = gelu_erf(v.y);
        v.z = gelu_erf(v.z);
        v.w = gelu_erf(v.w);
        y[i] = v;
    }
}

__global__ void gelu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   int64_t start, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = gelu_erf(x[i]);
    }
}

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "float32 CUDA tensor expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const float* px = xc.data_ptr<float>();
    float* py = y.data_ptr<float>();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const int64_t max_blocks = 65535;
    const bool aligned = (reinterpret_cast<uintptr_t>(px) % 16 == 0) &&
                         (reinterpret_cast<uintptr_t>(py) % 16 == 0);
    int64_t done = 0;
    if (aligned) {
        const int64_t n4 = n / 4;
        if (n4 > 0) {
            const int64_t blocks = std::min((n4 + threads - 1) / threads, max_blocks);
            gelu_vec4_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
                reinterpret_cast<const float4*>(px), reinterpret_cast<float4*>(py), n4);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        done = n4 * 4;
    }
    if (done < n) {
        const int64_t rest = n - done;
        const int64_t blocks = std::min((rest + threads - 1) / threads, max_blocks);
        gelu_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(px, py, done, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

CPP_SRC = "torch::Tensor gelu_forward(torch::Tensor x);"

_ext = load_inline(
    name="honest_cuda_gelu_erff_vec4",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_forward(x)
