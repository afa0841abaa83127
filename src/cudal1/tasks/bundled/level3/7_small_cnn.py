"""Small CNN classifier: 3 x (conv3x3-ReLU-maxpool2), then Linear-ReLU-Linear logits.

Mixed workload: early convs are memory-bound (few channels, large images), later ones
compute-bound; ReLU+pool fuse into conv epilogues and the classifier is a skinny GEMM.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, image_size: int, num_classes: int):
        super().__init__()
        layers = []
        ch = in_channels
        for out_ch in (32, 64, 128):
            layers += [nn.Conv2d(ch, out_ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            ch = out_ch
        self.features = nn.Sequential(*layers)
        spatial = image_size // 8
        self.classifier = nn.Sequential(
            nn.Linear(ch * spatial * spatial, 512),
            nn.ReLU(),
            nn.Linear(512, num_classes),
        )
        # He init keeps activations (and the logits) O(1) through the ReLU layers.
        for layer in self.modules():
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


batch_size = 128
in_channels = 3
image_size = 128
num_classes = 100

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {"batch_size": 2, "image_size": 32}


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, num_classes]
