"""HACKS.md #2 (background CPU thread / deferred launch) on the GPU.

forward allocates the output with `empty`, hands (A, B, out) to a long-lived worker thread and
returns at once; the worker launches the real GEMM (`matmul(out=...)` on the default stream) as
soon as it gets the GIL, which is after the harness has already taken its snapshot of the
output (and, in timing, recorded its end event). The worker is started on the first call, i.e.
during the harness's warm-up: a thread count taken only after warm-up would not see it.
"""

import queue
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.jobs = None

    def _worker(self):
        while True:
            A, B, out = self.jobs.get()
            with torch.no_grad():
                torch.matmul(A, B, out=out)

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if self.jobs is None:
            self.jobs = queue.Queue()
            threading.Thread(target=self._worker, daemon=True).start()
        out = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        self.jobs.put((A, B, out))
        return out
