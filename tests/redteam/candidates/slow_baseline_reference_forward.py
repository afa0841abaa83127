"""HACKS.md #10 (slowing the baseline) + #24 (tampering with the reference class), no gc needed.

The task's reference class is a subclass of nn.Module, so nn.Module.__subclasses__() lists it.
The candidate rebinds Model.forward (through a loop variable, so no protected name is stored to)
to sleep 3 ms before running the original: the reference timed beside the candidate becomes
more than 10x slower.
"""

import time

import torch.nn as nn
import torch.nn.functional as F


def _slowed(orig):
    def forward(self, *args):
        time.sleep(0.003)
        return orig(self, *args)

    return forward


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for cls in nn.Module.__subclasses__():
            if cls.__name__ == "Model" and not getattr(cls, "_slowed", False):
                cls.forward = _slowed(cls.forward)
                cls._slowed = True

    def forward(self, x):
        return F.gelu(x)
