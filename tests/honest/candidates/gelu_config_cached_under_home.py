"""L1_20 GELU with the habit of libraries that keep a cache under the home directory (CuPy's
~/.cupy/kernel_cache): __init__ writes its settings under ~ once and reads them back. Each
candidate gets a home of its own, in its build directory; the real one stays read-only."""

import json
import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        cache = Path(os.path.expanduser("~")) / ".gelu_cache" / "settings.json"
        if not cache.exists():
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"approximate": "none"}))
        self.approximate = json.loads(cache.read_text())["approximate"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate=self.approximate)
