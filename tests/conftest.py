"""Shared fixtures: a tiny KernelBench-layout suite, a CUDA-L1-format file, and a CLI runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudal1.cli import main
from cudal1.evaluate import pch
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.result import EvalResult

REPO = Path(__file__).resolve().parents[1]
CUDAL1_RELEASE = REPO.parent / "shared" / "data" / "cuda-l1-h100.jsonl"

RELU_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0 + 0.5


batch_size = 64
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

LINEAR_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.tanh(self.linear(x))


batch_size = 4096
n_in = 1024
n_out = 512
CPU_SIZES = {"batch_size": 16, "n_in": 32, "n_out": 8}


def get_inputs():
    return [torch.randn(batch_size, n_in)]


def get_init_inputs():
    return [n_in, n_out]
"""


@pytest.fixture(scope="session", autouse=True)
def precompiled_binding_header():
    """Precompile torch/extension.h (flag-less, then with the `-O3` the corpora's C++
    candidates ask for) for the whole run, as a CUDA evaluator does when it starts: the suite's
    cold C++ builds then compile their binding file from it, as they would on a GPU box,
    instead of each parsing torch's headers again (the five honest `-O3` C++ cases took 39.3-44.7
    s each in a suite run without the `-O3` variant, 19.7-21.6 s in one with it). Built
    once per machine and torch (xdist's workers share it through pch's lock); builds that start
    before it is ready do without it."""
    config = EvalConfig(device="cpu")
    if not config.precompiled_headers:
        yield
        return
    building = pch.ensure_in_background(config.pch_root)
    yield
    building.join()  # never leave a compiler writing into the cache after the run


@pytest.fixture
def kernelbench_dir(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "level1").mkdir(parents=True)
    (root / "level2").mkdir()
    (root / "level1" / "1_Relu_scale.py").write_text(RELU_TASK)
    (root / "level1" / "2_Other_relu.py").write_text(RELU_TASK.replace("0.5", "0.25"))
    (root / "level2" / "7_Linear_tanh.py").write_text(LINEAR_TASK)
    (root / "level2" / "notes.txt").write_text("not a task")
    return root


@pytest.fixture
def cudal1_file(tmp_path: Path) -> Path:
    """A CUDA-L1 release in miniature; its candidates would leave a marker file if executed."""
    marker = tmp_path / "candidate_ran"
    evil = f"open({str(marker)!r}, 'w').write('x')\nclass ModelNew: pass\n"
    rows = [
        {"level_id": 1, "task_id": 1, "ref_code": RELU_TASK, "custom_code": evil},
        {"level_id": 1, "task_id": 2, "ref_code": RELU_TASK, "custom_code": None},
        {"level_id": 2, "task_id": 7, "ref_code": LINEAR_TASK, "custom_code": "None"},
    ]
    path = tmp_path / "release.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def cli(capsys):
    """Run `cudal1 ARGS...` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def result_for(task, speedup: float | None, status: str = "ok") -> EvalResult:
    """A CPU EvalResult for `task` with only a status and a speedup: for tests of what
    consumes results (the database, prompts, rewards) without evaluating anything."""
    return EvalResult(
        status=status,  # type: ignore[arg-type]
        task_id=task.id,
        task_hash=task.hash,
        candidate_hash="h",
        device="cpu",
        policy="any",
        tolerance_mode="calibrated",
        speedup=speedup,
    )
