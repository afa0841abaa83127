"""HACKS.md #2 (background CPU thread / deferred work), thread-pool variant.

A concurrent.futures pool created in __init__ (its worker threads exist before the harness counts
threads) receives the real computation; forward returns the still-unwritten output buffer.
"""

from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.pool.submit(lambda: None).result()  # start the worker thread now

    def forward(self, x):
        out = torch.zeros_like(x)
        self.pool.submit(lambda: out.copy_(F.gelu(x)))
        return out
