"""GELU (L1_20) as a C++ extension built into a directory the candidate makes itself, under the
build directory the evaluator gives it (TORCH_EXTENSIONS_DIR): `os.makedirs` and an explicit
`build_directory` are a harmless habit, and the sandbox lets a candidate write there."""

import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

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
"""

_BUILD = os.path.join(
    os.environ.get("TORCH_EXTENSIONS_DIR", os.path.expanduser("~/.cache/gelu")), "my_gelu"
)
os.makedirs(_BUILD, exist_ok=True)
_ext = load_inline("honest_own_dir_gelu", cpp_sources=[_CPP], functions=["gelu"], build_directory=_BUILD)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.gelu(x)
