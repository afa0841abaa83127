"""GELU (L1_20) from a module the candidate first writes to a fixed path under /tmp and then
imports (CUDA-L1's L3_43 keeps its generated sources in /tmp/cuda_extensions the same way): a
harmless habit. The sandbox gives each candidate process an empty /tmp of its own, so the write
and the import work, and nothing of it reaches the host or another evaluation."""

import importlib.util
import os

import torch
import torch.nn as nn

_SOURCE = '''
import torch


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))
'''

_DIR = "/tmp/cuda_extensions"
os.makedirs(_DIR, exist_ok=True)
_PATH = os.path.join(_DIR, "generated_gelu.py")
with open(_PATH, "w") as f:
    f.write(_SOURCE)
_spec = importlib.util.spec_from_file_location("generated_gelu", _PATH)
_generated = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_generated)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _generated.gelu(x)
