"""L1_13 LayerNorm over the last dim as a C++ CPU kernel (load_inline): per row a mean pass, a
centred-variance pass (two-pass, numerically stable), then the normalise-and-affine pass fused
with the weight and bias of the mirrored nn.LayerNorm. Rows split across at::parallel_for."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor layernorm_rows(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "layernorm_rows expects float32");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t cols = xc.size(-1);
    TORCH_CHECK(wc.numel() == cols && bc.numel() == cols, "affine size mismatch");
    auto out = torch::empty_like(xc);
    const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
    const float* src = xc.data_ptr<float>();
    const float* w = wc.data_ptr<float>();
    const float* b = bc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const float feps = static_cast<float>(eps);
    at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            float* orow = dst + r * cols;
            float s = 0.0f;
            for (int64_t c = 0; c < cols; ++c) s += row[c];
            const float mean = s / static_cast<float>(cols);
            float ss = 0.0f;
            for (int64_t c = 0; c < cols; ++c) {
                const float d = row[c] - mean;
                ss += d * d;
            }
            const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(cols) + feps);
            for (int64_t c = 0; c < cols; ++c) orow[c] = (row[c] - mean) * rstd * w[c] + b[c];
        }
    });
    return out;
}
"""

_ext = load_inline(
    name="honest_layernorm_rows_cpp",
    cpp_sources=CPP_SOURCE,
    functions=["layernorm_rows"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_rows(x, self.norm.weight, self.norm.bias, self.norm.eps)
