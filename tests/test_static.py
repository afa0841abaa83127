import pytest

from cudal1.evaluate.static import REJECT_ANY, analyze, strip_cpp

HEADER = "import torch\nimport torch.nn as nn\n"
BUILD = "from torch.utils.cpp_extension import load_inline\nsrc = '{}'\nload_inline('k', cpp_sources=[src])\n"
"""A C++ source that reaches a build call (C++ is read only where it is compiled or looks
like C++)."""
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
        ("import os\nos._exit(0)\n", "exit_call"),
        ("import subprocess\n", "processes"),
        ("import cudal1.evaluate.timing\n", "harness_access"),
        ("import atexit\n", "hooks"),
        (
            BUILD.format("cudaStreamAttrValue a; a.accessPolicyWindow.hitRatio = 1;"),
            "l2_persistence",
        ),
        ("import sys\nf = getattr(sys, '_get' + 'frame')\n", "introspection"),
        (
            "_B, _L = 'f_' + 'back', 'f_' + 'locals'\ndef g(f):\n    return getattr(f, _L)\n",
            "introspection",
        ),
        ("import os\nquit_ = getattr(os, '_' + 'exit')\n", "exit_call"),
        ("import sys\nf = getattr(sys, ''.join(reversed('emarfteg_')))\n", "obfuscation"),
        ("import importlib\nm = importlib.import_module('multi' + 'processing')\n", "processes"),
        ("import importlib\nm = importlib.import_module(''.join(['ct', 'ypes']))\n", "obfuscation"),
        ("import os\nos.listdir('/proc/self/fd')\n", "introspection"),
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
        (BUILD.format("float f(float x) { return __expf(x); }"), "fast_math"),
        ("torch.backends.cudnn.benchmark = True\n", "global_flags"),
        (
            "import torch._inductor.config\ntorch._inductor.config.coordinate_descent_tuning = True\n",
            "global_flags",
        ),
        ("open('/tmp/x', 'w')\n", "file_io"),
        ("from pathlib import Path\n(Path('/tmp') / 'x').write_text('1')\n", "file_io"),
        ("import triton.language as tl\ndef k(a, b):\n    return tl.dot(a, b)\n", "precision"),
        ("import os\nos.environ['OMP_NUM_THREADS'] = '1'\n", "env_write"),
        ("try:\n    import foo\nexcept ImportError:\n    foo = make()\n", "try_fallback"),
        ("cache = {}\ndef f(x):\n    return cache.get(x.data_ptr())\n", "caching"),
        ("import numpy as np\n", "numpy"),
        ("g = torch.compile(lambda x: x)\n", "torch_compile"),
        ("import ctypes\n", "ctypes"),
        ("class Lazy(torch.Tensor):\n    pass\n", "tensor_subclass"),
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


PROSE = '''"""Docstring naming every hack word: sys._getframe, gc, ctypes, os._exit, fopen(,
/proc/self, threading, subprocess, accessPolicyWindow, allow_tf32, TF32, cudnn.benchmark."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A comment: import ctypes; os._exit(0); sys._getframe(); gc.get_objects(); fopen("/proc/self")
CUDA = r"""
#include <torch/extension.h>
// no fopen( here, no /proc/self, no std::thread, no cudaStreamCreate, no TF32, no __half
/* accessPolicyWindow, persisting L2, system(), dlopen() are only named in this comment */
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];  // "strings" with fopen( are not code either
}
"""
ext = load_inline("scale", cpp_sources=[""], cuda_sources=[CUDA], functions=[])


class ModelNew(nn.Module):
    """Mentions torch.backends.cudnn.benchmark = True and os.environ, as prose."""

    def __init__(self, layers=2):
        super().__init__()
        for i in range(layers):
            setattr(self, f"layer{i}", nn.Linear(4, 4))

    def forward(self, x):
        "A bare string: subprocess.run(['nvcc']) and exec('...') are words here."
        for i in range(2):
            x = getattr(self, f"layer{i}")(x)
        return x


if __name__ == "__main__":
    import sys

    sys.exit(0)
'''


def test_prose_never_flags():
    """Comments, docstrings, bare strings, C++ comments and literals, and the never-run main
    block name every hack word; none of it is code the harness runs."""
    report = analyze(PROSE)
    assert report.flags == ["cuda_kernel:__global__ (in C++/CUDA source)"], report.flags
    assert report.kernel_names == ["scale"]


def test_strip_cpp_keeps_code_and_drops_comments_and_literals():
    code = 'int a = 1; // fopen(\n/* x\ny */ const char* s = "fopen(\\"q"; char c = \'"\';'
    stripped = strip_cpp(code)
    assert "fopen" not in stripped and "x" not in stripped.split("int a")[1].split(";")[1]
    assert stripped.count("\n") == code.count("\n")
    assert "int a = 1;" in stripped and 'const char* s = "";' in stripped


def test_full_precision_triton_dot_is_not_a_precision_change():
    src = (
        HEADER
        + (
            "import triton.language as tl\n"
            "def k(a, b):\n    return tl.dot(a, b, input_precision='ieee')\n"
        )
        + MODEL
    )
    assert "precision" not in analyze(src).names
