"""L1_17 sum over one dim as a C++ CPU kernel (load_inline): the input is viewed as
(outer, reduced, inner); for each outer index the reduced rows are accumulated into a
contiguous inner-length output row, so every load is unit-stride (vectorisable) instead of
striding down the reduced dim. Works for any dim and any sizes."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor sum_dim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sum_dim expects float32");
    auto xc = x.contiguous();
    const int64_t nd = xc.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "bad dim");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t red = xc.size(dim);
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < nd; ++d) if (d != dim) out_shape.push_back(xc.size(d));
    auto out = torch::empty(out_shape, xc.options());
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, outer, 1, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
            float* orow = dst + o * inner;
            for (int64_t i = 0; i < inner; ++i) orow[i] = 0.0f;
            const float* base = src + o * red * inner;
            for (int64_t k = 0; k < red; ++k) {
                const float* row = base + k * inner;
                for (int64_t i = 0; i < inner; ++i) orow[i] += row[i];
            }
        }
    });
    return out;
}
"""

_ext = load_inline(
    name="honest_sum_reduction_cpp",
    cpp_sources=CPP_SOURCE,
    functions=["sum_dim"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim(x, self.dim)
