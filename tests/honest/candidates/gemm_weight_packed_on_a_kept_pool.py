"""L2_1 gemm + bias + ReLU with the transposed weight packed once, in __init__, on a thread pool
the module keeps (the habit of code that packs several weights at once). The pool's thread stays
parked for the rest of the run: left running, it never runs again, so it is no deferred work."""

import concurrent.futures

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        packed = self.pool.submit(lambda w: w.detach().t().contiguous(), self.linear.weight)
        self.register_buffer("weight_t", packed.result(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.linear.bias, x, self.weight_t).clamp_min_(0.0)
