import pytest

from cudal1.evaluate.static import REJECT_ANY, analyze

HEADER = "import torch\nimport torch.nn as nn\n"
MODEL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 2\n"


@pytest.mark.parametrize(
    ("snippet", "flag"),
    [
        ("import gc\n", "introspection"),
        ("import sys\nf = sys._getframe(1)\n", "introspection"),
        ("def f():\n    import inspect\n", "introspection"),
        ("import time\ntime.perf_counter = lambda: 0.0\n", "patching"),
        ("torch.cuda.Event.elapsed_time = lambda a, b: 0.001\n", "patching"),
        ("from torch.cuda import Event\nEvent.elapsed_time = None\n", "patching"),
        ("setattr(torch, 'allclose', lambda *a, **k: True)\n", "patching"),
        ("import ctypes\n", "ctypes"),
        ("class Lazy(torch.Tensor):\n    pass\n", "tensor_subclass"),
        ("import os\nos._exit(0)\n", "exit_call"),
        ("import subprocess\n", "processes"),
        ("import cudal1.evaluate.timing\n", "harness_access"),
        ("import atexit\n", "hooks"),
        ("src = 'cudaStreamAttrValue a; a.accessPolicyWindow.hitRatio = 1;'\n", "l2_persistence"),
        ("torch.backends.cudnn.benchmark = True\n", "global_flags"),
        ("open('/tmp/x', 'w')\n", "file_io"),
        ("from pathlib import Path\n(Path('/tmp') / 'x').write_text('1')\n", "file_io"),
        ("import sys\nf = getattr(sys, '_get' + 'frame')\n", "obfuscation"),
        ("import importlib\nm = importlib.import_module('multi' + 'processing')\n", "obfuscation"),
        ("exec('x = 1')\n", "obfuscation"),
        ("import time\nvars(time)['perf_counter'] = lambda: 0.0\n", "patching"),
        ("import sys\nm = sys.modules['__main__']\n", "introspection"),
        ("subs = torch.nn.Module.__subclasses__()\n", "introspection"),
        ("from torch.utils._python_dispatch import _disable_current_modes\n", "introspection"),
    ],
)
def test_rejecting_flags(snippet, flag):
    report = analyze(HEADER + snippet + MODEL)
    assert flag in report.names
    assert flag in REJECT_ANY


@pytest.mark.parametrize(
    ("snippet", "flag"),
    [
        ("import threading\n", "threads"),
        ("s = torch.cuda.Stream()\n", "stream"),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", "precision"),
        ("y = torch.ones(2).half()\n", "precision"),
        ("src = '__global__ void k(__half* x) {}'\n", "precision"),
        ("src = 'y = __expf(x);'\n", "fast_math"),
        ("import os\nos.environ['OMP_NUM_THREADS'] = '1'\n", "env_write"),
        ("try:\n    import foo\nexcept ImportError:\n    foo = make()\n", "try_fallback"),
        ("cache = {}\ndef f(x):\n    return cache.get(x.data_ptr())\n", "caching"),
        ("import numpy as np\n", "numpy"),
        ("g = torch.compile(lambda x: x)\n", "torch_compile"),
    ],
)
def test_evidence_flags_do_not_reject_by_themselves(snippet, flag):
    report = analyze(HEADER + snippet + MODEL)
    assert flag in report.names
    assert flag not in REJECT_ANY


def test_plain_getattr_is_not_obfuscation():
    report = analyze(HEADER + "name = 'relu'\nf = getattr(torch, name)\n" + MODEL)
    assert "obfuscation" not in report.names


def test_reference_use_inside_model_new():
    src = HEADER + "class Model(nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n"
    assert "reference_call" in analyze(src).names


def test_kernel_names_from_cuda_and_triton():
    src = (
        HEADER
        + (
            "import triton\n@triton.jit\ndef add_kernel(x):\n    pass\n"
            "cuda = '__global__ void my_gelu(float* x) {}  __global__ __launch_bounds__(256) void red(float* y) {}'\n"
        )
        + MODEL
    )
    report = analyze(src)
    assert report.kernel_names == ["add_kernel", "my_gelu", "red"]


def test_syntax_error_and_missing_model_new():
    assert analyze("def f(:\n").syntax_error.startswith("line 1")
    assert not analyze(HEADER).defines_model_new
    assert analyze(HEADER + MODEL).defines_model_new


def test_honest_candidate_has_no_rejecting_flags():
    src = (
        HEADER
        + "import torch.nn.functional as F\n"
        + (
            "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "    def forward(self, x):\n        return F.gelu(x.contiguous())\n"
        )
    )
    assert not (analyze(src).names & REJECT_ANY)
