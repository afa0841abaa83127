"""L1_20 exact GELU as a C++ CPU kernel built with load_inline: one pass over the contiguous
input, y = 0.5 * x * (1 + erf(x / sqrt(2))) in float with std::erf, rows split across ATen's
intra-op pool with at::parallel_for. Output allocated fresh with torch::empty_like."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "gelu_forward expects float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    const int64_t n = xc.numel();
    const float inv_sqrt2 = 0.70710678118654752440f;
    at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float v = src[i];
            dst[i] = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2));
        }
    });
    return y;
}
"""

_ext = load_inline(
    name="honest_gelu_cpp_erf",
    cpp_sources=CPP_SOURCE,
    functions=["gelu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_forward(x)
