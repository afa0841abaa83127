"""GELU (L1_20) as a C++ extension whose source the candidate first writes to a fixed path under
/tmp, then builds with `load` (CUDA-L1's L3_43 keeps its sources in /tmp/cuda_extensions): a
harmless habit. The sandbox gives each candidate process an empty /tmp of its own, so the write
works and nothing of it reaches the host or another evaluation."""

import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

_CPP = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    at::parallel_for(0, xc.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * 0.70710678118654752f));
        }
    });
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("gelu", &gelu); }
"""

_SOURCES = "/tmp/cuda_extensions"
os.makedirs(_SOURCES, exist_ok=True)
with open(os.path.join(_SOURCES, "gelu.cpp"), "w") as f:
    f.write(_CPP)
_ext = load("honest_tmp_sources_gelu", sources=[os.path.join(_SOURCES, "gelu.cpp")])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu(x)
