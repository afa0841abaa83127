"""ViT patch embedding + encoder block: conv(stride=patch) -> tokens + pos-embed -> block.

The patch-embedding conv is a GEMM over non-overlapping patches (an im2col reshape, no halo);
the pre-norm transformer block after it is GEMM-dominated with a short-sequence attention.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize_ln(ln: nn.LayerNorm) -> None:
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)


class Block(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, mlp_dim: int):
        super().__init__()
        self.num_heads = num_heads
        self.ln1 = nn.LayerNorm(embed_dim)
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.ln2 = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, embed_dim)
        _randomize_ln(self.ln1)
        _randomize_ln(self.ln2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        hd = d // self.num_heads
        qkv = self.qkv(self.ln1(x)).reshape(b, n, 3, self.num_heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * hd**-0.5, dim=-1)
        x = x + self.proj(torch.matmul(attn, v).transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(
        self,
        in_channels: int,
        image_size: int,
        patch_size: int,
        embed_dim: int,
        num_heads: int,
        mlp_dim: int,
    ):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(in_channels, embed_dim, patch_size, stride=patch_size)
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches, embed_dim) * 0.1)
        self.block = Block(embed_dim, num_heads, mlp_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        return self.block(tokens + self.pos_embed)


batch_size = 64
in_channels = 3
image_size = 224
patch_size = 16
embed_dim = 768
num_heads = 12
mlp_dim = 3072

# Smaller sizes for CPU runs (tests and demos); CUDA runs use the sizes above.
CPU_SIZES = {
    "batch_size": 2,
    "image_size": 32,
    "patch_size": 8,
    "embed_dim": 64,
    "num_heads": 4,
    "mlp_dim": 256,
}


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, patch_size, embed_dim, num_heads, mlp_dim]
