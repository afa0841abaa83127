"""HACKS.md #32 (global state tampering): cudnn.benchmark switched on in __init__.

The convolution itself is the reference's (same nn.Conv2d, same seeded weights), but the
constructor turns on torch.backends.cudnn.benchmark for the whole process, so cuDNN autotunes
the algorithm (possibly Winograd/FFT with a different error), and anything else in the process
(a reference timed beside the candidate) runs under a changed global setting.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=True
        )
        torch.backends.cudnn.benchmark = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)
