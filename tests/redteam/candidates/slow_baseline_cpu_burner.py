"""HACKS.md #10 (slowing the baseline: leave the machine busy).

A thread started in __init__ (before the harness takes its thread census) spins on the CPU
whenever the candidate is not running, competing with the reference's intra-op threads; forward
pauses it for its own duration, so only the reference is slowed.
"""

import threading

import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.quiet = threading.Event()
        threading.Thread(target=self._burn, daemon=True).start()

    def _burn(self):
        n = 0
        while True:
            if self.quiet.is_set():
                self.quiet.wait(0.0005)  # stay out of the way while the candidate runs
                continue
            for _ in range(2000):
                n += 1

    def forward(self, x):
        self.quiet.set()
        try:
            return F.gelu(x)
        finally:
            self.quiet.clear()
