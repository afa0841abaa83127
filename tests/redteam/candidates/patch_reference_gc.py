"""HACKS.md #24 (reference tampering) through the garbage collector.

Scans gc.get_objects() for the reference model instance and replaces its forward with one that
returns what the candidate returns (zeros), so that both sides agree.
"""

import gc

import torch
import torch.nn as nn


def _zeros(*args, **kwargs):
    return torch.zeros_like(args[0])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for obj in gc.get_objects():
            if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
                obj.forward = _zeros

    def forward(self, x):
        return torch.zeros_like(x)
