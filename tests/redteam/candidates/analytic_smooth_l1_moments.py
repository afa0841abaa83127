"""HACKS.md #20 (statistical / analytical shortcut from the input distribution).

For d = pred - target with d ~ N(0, s^2) the expected smooth-L1 (beta = 1) has a closed form in
s. The candidate estimates each row's s from 32 sampled columns and returns the closed-form
expectation instead of averaging the loss over the row.
"""

import math

import torch
import torch.nn as nn


def _expected_smooth_l1(s):
    # E[0.5 d^2 ; |d|<1] + E[|d| - 0.5 ; |d|>=1], d ~ N(0, s^2), beta = 1
    a = 1.0 / s
    phi = torch.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + torch.erf(a / math.sqrt(2)))
    inner = 0.5 * s * s * ((2 * cdf - 1) - 2 * a * phi)
    outer = 2 * s * phi - (1 - (2 * cdf - 1)) * 0.5
    return inner + outer


class ModelNew(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, pred, target):
        d = pred[:, :32] - target[:, :32]
        s = d.pow(2).mean(-1).sqrt().clamp_min(1e-3)
        return _expected_smooth_l1(s)
