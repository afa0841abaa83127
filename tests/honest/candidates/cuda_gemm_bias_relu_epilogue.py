"""L2_1 relu(x @ W^T + b) as one CUDA kernel: a shared-memory tiled fp32 GEMM in the NT layout
(x and the nn.Linear weight are both K-contiguous), 64x64 tiles, 4x4 register blocks per
thread, with the bias add and ReLU fused into the epilogue before the single store. Boundary
checks on every dimension; the nn.Linear is mirrored so the seeded weights match."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#define BM 64
#define BN 64
#define BK 16
#define NTHREADS 256

__global__ void __launch_bounds__(NTHREADS) linear_bias_relu_kernel(
        const float* __restrict__ X, const float* __restrict__ W, const float* __restrict__ bias,
        float* __restrict__ Y, int M, int N, int K) {
    __shared__ float Xs[BK][BM + 4];
    __shared__ float Ws[BK][BN + 4];
    const int tid = threadIdx.x;
    const int tx = tid % 16;
    const int ty = tid / 16;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < (BM * BK) / NTHREADS; ++l) {
            const int idx = tid + l * NTHREADS;
            const int r = idx / BK, c = idx % BK;
            const int gk = k0 + c;
            const int gm = m0 + r;
            Xs[c][r] = (gm < M && gk < K) ? X[(size_t)gm * K + gk] : 0.0f;
            const int gn = n0 + r;
            Ws[c][r] = (gn < N && gk < K) ? W[(size_t)gn * K + gk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = Xs[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Ws[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int gn = n0 + tx + 16 * j;
        if (gn >= N) continue;
        const float bj = bias[gn];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int gm = m0 + ty + 16 * i;
            if (gm < M) {
                const float v = acc[i][j] + bj;
                Y[(size_t)gm * N + gn] = v < 0.0f ? 0.0f : v;
            }
        }
    }
}

torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
                b.scalar_type() == at::kFloat, "float32 only");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "shape mismatch");
    TORCH_CHECK(b.numel() == w.size(0), "bias size mismatch");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    if (M == 0 || N == 0) return y;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    linear_bias_relu_kernel<<<grid, NTHREADS, 0, stream>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        M, N, K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

CPP_SRC = "torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

_ext = load_inline(
    name="honest_cuda_gemm_bias_relu_epilogue",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["linear_bias_relu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.linear_bias_relu(x, self.linear.weight, self.linear.bias)
