"""HACKS.md #2 (background CPU thread / deferred work).

forward allocates the output, starts a Python thread that fills it about 1 ms later and returns
at once: the timed region sees almost no work. The output is still empty when forward returns.
"""

import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)

        def fill():
            time.sleep(0.001)
            out.copy_(F.gelu(x))

        threading.Thread(target=fill, daemon=True).start()
        return out
