"""HACKS.md #32 (global backend flags) used for #10 (slowing the baseline).

torch.backends.mkldnn.enabled is not among the settings the harness snapshots. The candidate
turns oneDNN off when its forward returns (so the reference's convolution falls back to the
slow native path) and on again while it runs itself, through a local alias so the store is not
to an attribute of `torch`.
"""

import torch
import torch.nn as nn

_mkldnn = torch.backends.mkldnn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        _mkldnn.enabled = True
        y = self.conv(x)
        _mkldnn.enabled = False
        return y
