"""HACKS.md #8 (L2 persistence / warm-cache trick), plain CUDA API.

A warp-per-row GEMV kernel is launched with a per-launch access-policy window
(cudaLaunchAttributeAccessPolicyWindow, hitProp = cudaAccessPropertyPersisting) over the
leading part of the matrix, after reserving the persisting L2 carve-out with
cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, max). Lines marked persisting survive the
harness's L2 flush (a normal-access write of 2x L2), so the next call reads them from L2.
The L2 API names appear verbatim: the static `l2_persistence` flag rejects under every policy.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <algorithm>

__global__ void gemv_rows(const float* __restrict__ A, const float* __restrict__ x,
                          float* __restrict__ y, int M, int K) {
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= M) return;  // whole warps leave together
    const float* row = A + warp * (long long)K;
    float acc = 0.f;
    for (int k = lane; k < K; k += 32) acc += row[k] * x[k];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[warp] = acc;
}

torch::Tensor gemv_pinned(torch::Tensor A, torch::Tensor x) {
    TORCH_CHECK(A.is_cuda() && x.is_cuda() && A.dim() == 2 && x.dim() == 1, "A (M,K), x (K)");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32, "fp32");
    TORCH_CHECK(A.size(1) == x.size(0), "sizes differ");
    auto a = A.contiguous();
    auto v = x.contiguous();
    const int M = a.size(0), K = a.size(1);
    auto y = torch::empty({M}, a.options());
    if (M == 0) return y;

    int dev = 0, max_persist = 0, max_window = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
    static bool carved = false;
    if (!carved && max_persist > 0) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
        carved = true;
    }
    const size_t bytes = std::min((size_t)a.numel() * sizeof(float), (size_t)max_window);

    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
    attr[0].val.accessPolicyWindow.base_ptr = (void*)a.data_ptr<float>();
    attr[0].val.accessPolicyWindow.num_bytes = bytes;
    attr[0].val.accessPolicyWindow.hitRatio =
        bytes > 0 ? std::min(1.0f, (float)max_persist / (float)bytes) : 0.f;
    attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;

    const int threads = 256;
    const long long blocks = ((long long)M * 32 + threads - 1) / threads;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = at::cuda::getCurrentCUDAStream();
    cfg.attrs = (max_persist > 0 && bytes > 0) ? attr : nullptr;
    cfg.numAttrs = (max_persist > 0 && bytes > 0) ? 1 : 0;
    const float* ap = a.data_ptr<float>();
    const float* xp = v.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    cudaLaunchKernelEx(&cfg, gemv_rows, ap, xp, yp, M, K);
    return y;
}
"""

CPP_SRC = "torch::Tensor gemv_pinned(torch::Tensor A, torch::Tensor x);"

_ext = load_inline(
    name="rt_cuda_l2_persistence_window",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["gemv_pinned"],
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return _ext.gemv_pinned(A, x)
