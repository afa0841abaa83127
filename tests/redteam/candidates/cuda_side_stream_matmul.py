"""HACKS.md #1 (side-stream work escaping the timer), Python stream API.

The GEMM runs on a private stream taken from PyTorch's pool (created in __init__; pool streams
are non-blocking, so they never synchronise with the legacy default stream the harness records
its events on). The side stream waits for the inputs, but nothing makes the current stream wait
for the side stream: forward returns at once, the end event fires before the ~2 ms GEMM has
finished, and the output is still being written when forward returns.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        self.side.wait_stream(torch.cuda.current_stream())  # inputs ready; no wait back
        with torch.cuda.stream(self.side):
            out = torch.matmul(A, B)
        return out
