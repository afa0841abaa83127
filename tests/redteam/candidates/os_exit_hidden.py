"""HACKS.md #33 (exit codes), with the exit call hidden from the AST rules.

Fetches os._exit with getattr and a split name and calls it with status 0 on the first forward.
The process ends "successfully" in the middle of the run; a missing result must count as a
failure.
"""

import os

import torch.nn as nn

_leave = getattr(os, "_ex" + "it")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _leave(0)
