"""HACKS.md #35 (persistent state on disk): file replay.

The first call of a shape writes its output to /tmp; every later call (and every later run of
the evaluator, in any process) replays the file instead of computing.
"""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

_DIR = os.path.join(tempfile.gettempdir(), "cudal1_redteam_replay")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        os.makedirs(_DIR, exist_ok=True)

    def forward(self, x):
        path = os.path.join(_DIR, "gelu_" + "x".join(map(str, x.shape)) + ".pt")
        if os.path.exists(path):
            return torch.load(path)
        y = F.gelu(x)
        torch.save(y, path)
        return y
