"""HACKS.md #26 (introspection) via the inspect module.

inspect.stack() gives every caller frame's locals; the candidate looks for any tensor of its
output's shape other than its input (the reference's result in a same-process harness).
"""

import inspect

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for info in inspect.stack()[1:]:
            for v in info.frame.f_locals.values():
                if type(v) is torch.Tensor and v.shape == x.shape and v is not x:
                    return v.clone()
        return torch.zeros_like(x)
