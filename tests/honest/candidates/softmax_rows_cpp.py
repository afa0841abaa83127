"""L1_11 row softmax as a C++ CPU kernel (load_inline): per row, a max pass, an exp-and-sum
pass that stores exp(x - max) straight into the output, then one scale by 1/sum. Any number of
leading dims (flattened to rows); rows split across at::parallel_for."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>
#include <limits>

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softmax_rows expects float32");
    TORCH_CHECK(x.dim() >= 1, "softmax_rows needs at least one dim");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t cols = xc.size(-1);
    const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            float* orow = dst + r * cols;
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t c = 0; c < cols; ++c) m = row[c] > m ? row[c] : m;
            float s = 0.0f;
            for (int64_t c = 0; c < cols; ++c) {
                const float e = std::exp(row[c] - m);
                orow[c] = e;
                s += e;
            }
            const float inv = 1.0f / s;
            for (int64_t c = 0; c < cols; ++c) orow[c] *= inv;
        }
    });
    return out;
}
"""

_ext = load_inline(
    name="honest_softmax_rows_cpp",
    cpp_sources=CPP_SOURCE,
    functions=["softmax_rows"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_rows(x)
