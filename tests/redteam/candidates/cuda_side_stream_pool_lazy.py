"""HACKS.md #1 (side-stream work escaping the timer), pool stream created lazily in forward.

On the first call forward takes a stream from PyTorch's pool through a local alias of
torch.cuda (`cuda = torch.cuda; cuda.Stream()`), which the static name resolution does not
follow, so no `stream` flag fires: only dynamic evidence can catch this one. The output is
allocated on the current stream and filled by `matmul(out=...)` launched on the pool stream,
which nothing joins back: forward returns while cuBLAS is still writing the output.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._lane = None

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        cuda = torch.cuda
        if self._lane is None:
            self._lane = cuda.Stream()
        out = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        self._lane.wait_stream(cuda.current_stream())
        with cuda.stream(self._lane):
            torch.matmul(A, B, out=out)
        return out
