"""HACKS.md #38 / #40 (CUDA graphs inside the candidate): benign under policy "any".

The reference computation (torch.matmul) is captured once into a CUDA graph on static input
buffers; each call copies the inputs in, replays the graph and returns a copy of the static
output. Nothing is cached across inputs and all work is on the current stream, so the result is
correct and honestly timed: under policy "any" this must pass (status ok) and carry the
`cuda_graphs` flag, documenting the policy rather than a fraud.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None
        self.key = None

    def _capture(self, A: torch.Tensor, B: torch.Tensor) -> None:
        self.sa = A.clone()
        self.sb = B.clone()
        warm = torch.cuda.Stream()
        warm.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(warm):  # let cuBLAS pick its algorithm before the capture
            for _ in range(2):
                torch.matmul(self.sa, self.sb)
        torch.cuda.current_stream().wait_stream(warm)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.sout = torch.matmul(self.sa, self.sb)
        self.key = (tuple(A.shape), tuple(B.shape), A.dtype, A.device)

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if self.graph is None or self.key != (tuple(A.shape), tuple(B.shape), A.dtype, A.device):
            self._capture(A, B)
        self.sa.copy_(A)
        self.sb.copy_(B)
        self.graph.replay()
        return self.sout.clone()
