"""HACKS.md #33 (result-channel manipulation): write fake result lines to every low fd.

Writes a JSON line claiming success to file descriptors 1..10 (one of them may be the harness's
result pipe), then returns garbage. A channel that accepts the forged line would trust it.
"""

import json
import os

import torch
import torch.nn as nn

_LINE = (json.dumps({"status": "ok", "speedup": 50.0, "correct": True}) + "\n").encode()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for fd in range(1, 11):
            try:
                os.write(fd, _LINE)
            except OSError:
                pass
        return torch.empty_like(x)
