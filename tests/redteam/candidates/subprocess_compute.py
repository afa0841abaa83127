"""HACKS.md #34 (process tricks): subprocess.

Hands the input to a fresh Python interpreter through a file and reads the answer back: the work
runs in another process, outside anything the harness watches in its own.
"""

import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

_CODE = "import sys, torch; x = torch.load(sys.argv[1]); torch.save(torch.nn.functional.gelu(x), sys.argv[1])"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        with tempfile.NamedTemporaryFile(suffix=".pt") as f:
            torch.save(x, f.name)
            subprocess.run([sys.executable, "-c", _CODE, f.name], check=True)
            return torch.load(f.name)
