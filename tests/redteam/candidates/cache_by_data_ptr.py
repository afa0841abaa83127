"""HACKS.md #5 (caching outputs across calls), keyed by the input's address.

The classic CUDA-L1 cache: a dict from x.data_ptr() to the output computed the first time that
buffer was seen. The harness refills the same buffers with new values, so the cached answer is
stale.
"""

import torch.nn as nn
import torch.nn.functional as F

_CACHE = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in _CACHE:
            _CACHE[key] = F.gelu(x)
        return _CACHE[key].clone()
