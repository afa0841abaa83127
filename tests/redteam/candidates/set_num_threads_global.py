"""HACKS.md #32 (global state tampering): thread count, spelled to dodge the AST rule.

The harness pins PyTorch to one intra-op thread in this process. The candidate raises it to 4 at
import time through getattr (no `torch.set_num_threads` call in the source) and leaves it so.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

getattr(torch, "set_num_" + "threads")(4)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)
