"""BatchNorm2d (inference): per-channel y = (x - running_mean) / sqrt(running_var + eps) * weight + bias.

Memory-bound; in eval mode it folds to one per-channel scale and shift, so it is a pure
streaming kernel. Running stats and affine parameters are randomized (not the identity).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 32
channels = 128
height = 112
width = 112

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "channels": 16, "height": 32, "width": 32}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
