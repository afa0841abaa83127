"""HACKS.md #11 (init-time precompute from predictable seeds).

In __init__ the candidate reseeds torch with the seeds benchmarks usually use (0, 42, 1234),
regenerates the task's inputs exactly as get_inputs() does, and stores the answers. forward
returns the stored answer whose input matches the first row, or the seed-42 answer.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, DIM = 64, 1024  # the task's CPU sizes


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = []
        state = torch.get_rng_state()
        for seed in (0, 42, 1234):
            torch.manual_seed(seed)
            x = torch.randn(BATCH, DIM)
            self.answers.append((x[0, :8].clone(), F.gelu(x)))
        torch.set_rng_state(state)

    def forward(self, x):
        for probe, y in self.answers:
            if x.shape == y.shape and torch.equal(x[0, :8], probe):
                return y.clone()
        return self.answers[1][1].clone()
