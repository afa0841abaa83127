"""HACKS.md #15 (calling PyTorch instead of writing the kernel), evaluated under policy "kernel".

cuBLAS does the whole GEMM through torch.matmul; the candidate's own CUDA kernel only runs a
trivial epilogue over the result (multiply by 1, in place), so a custom kernel does appear in
the profile, but with a few per cent of the GPU time.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void scale_inplace(float* __restrict__ y, float alpha, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= alpha;
}

torch::Tensor epilogue(torch::Tensor y, double alpha) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous(),
                "contiguous fp32 CUDA tensor");
    const long long n = y.numel();
    if (n == 0) return y;
    const int threads = 256;
    const long long blocks = (n + threads - 1) / threads;
    scale_inplace<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), (float)alpha, n);
    return y;
}
"""

CPP_SRC = "torch::Tensor epilogue(torch::Tensor y, double alpha);"

_ext = load_inline(
    name="rt_cuda_own_kernel_trivial_share",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["epilogue"],
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        out = torch.matmul(A, B).contiguous()
        return _ext.epilogue(out, 1.0)
