"""HACKS.md #4 (monkey-patching the timer), the plain spelling.

Replaces time.perf_counter (the CPU timer) with a clock that hides 95 % of the time spent inside
this candidate's forward, so the candidate looks 20x faster than it is.
"""

import time

import torch.nn as nn
import torch.nn.functional as F

_real = time.perf_counter
_hidden = [0.0]


def _fake():
    return _real() - _hidden[0]


time.perf_counter = _fake


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        t0 = _real()
        y = F.gelu(x)
        _hidden[0] += 0.95 * (_real() - t0)
        return y
