"""`cudal1 bench` on the CPU: a fixture suite and solutions, bad entries, resume, the real
CUDA-L1 release (tasks small enough for the CPU), and the summary's counting rules."""

import json

import pytest

from cudal1.report.bench import read_solutions
from cudal1.report.summary import load_rows, refused, stats, summary

from .conftest import CUDAL1_RELEASE, RELU_TASK

HONEST_RELU = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0) * 2.0 + 0.5
"""


@pytest.fixture
def solutions_dir(tmp_path):
    d = tmp_path / "sols"
    d.mkdir()
    (d / "L1_1.py").write_text(HONEST_RELU)
    (d / "L1_2.py").write_text(
        "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    (d / "L2_7.py").write_text("x = 1\n")  # no ModelNew
    (d / "L5_5.py").write_text(HONEST_RELU)  # not in the suite
    return d


@pytest.mark.slow
def test_bench_directory_with_bad_entries_and_resume(cli, kernelbench_dir, solutions_dir, tmp_path):
    out = tmp_path / "run"
    args = (
        "bench",
        str(kernelbench_dir),
        "--solutions",
        str(solutions_dir),
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    code, _, err = cli(*args)
    assert code == 0, err
    rows = {r["key"]: r for r in load_rows(out / "results.jsonl")}
    assert set(rows) == {"L1_1", "L1_2", "L2_7", "L5_5"}
    assert rows["L1_1"]["result"]["status"] == "ok"
    assert rows["L1_2"]["result"]["status"] in ("rejected", "incorrect")
    assert rows["L2_7"]["result"]["status"] == "compile_error"
    assert "not in suite" in rows["L5_5"]["error"]
    assert rows["L1_1"]["baselines"]["eager"]["median_ms"] > 0
    assert rows["L1_1"]["roofline"]["flops"] >= 0 and rows["L1_1"]["roofline"]["bytes"] > 0
    assert "PyTorch rewrite" in rows["L1_1"]["techniques"]
    # A second run resumes: nothing left to do, nothing duplicated.
    code, _, err = cli(*args)
    assert code == 0, err
    assert len(load_rows(out / "results.jsonl")) == 4


def test_cudal1_solutions_file_reads_entries_and_claims(tmp_path):
    path = tmp_path / "release.jsonl"
    rows = [
        {
            "level_id": 1,
            "task_id": 1,
            "ref_code": RELU_TASK,
            "custom_code": HONEST_RELU,
            "score_default": 1.7,
            "score_torch_compile_default": 1.2,
            "score_torch_compile_reduce_overhead": None,
            "score_cuda_graph": 1.1,
        },
        {
            "level_id": 1,
            "task_id": 2,
            "ref_code": RELU_TASK,
            "custom_code": "None",
            "score_default": 1.0,
        },
    ]
    path.write_text(json.dumps(rows[0]) + "\n{broken\n" + json.dumps(rows[1]) + "\n")
    sols = read_solutions(str(path))
    assert [s.task_id for s in sols] == ["L1_1", None, "L1_2"]
    assert sols[0].claimed == {"eager": 1.7, "compile": 1.2, "cudagraph": 1.1}
    assert "malformed entry" in sols[1].error and sols[1].origin.endswith(":2")
    assert sols[2].error == "no submission"


@pytest.mark.slow
@pytest.mark.skipif(not CUDAL1_RELEASE.exists(), reason="CUDA-L1 release not present")
def test_bench_reads_the_real_release_on_cpu(cli, tmp_path):
    """Two small level-1 tasks of CUDA-L1's release run on the CPU: their references load and
    run, their CUDA candidates are evaluated (and fail on a machine without CUDA), the paper's
    claimed scores are kept."""
    out = tmp_path / "audit"
    code, _, err = cli(
        "bench",
        str(CUDAL1_RELEASE),
        "--solutions",
        str(CUDAL1_RELEASE),
        "--device",
        "cpu",
        "--out",
        str(out),
        "--tasks",
        "L1_19,L1_20",
    )
    assert code == 0, err
    rows = load_rows(out / "results.jsonl")
    assert {r["task_id"] for r in rows} == {"L1_19", "L1_20"}
    for r in rows:
        assert r["claimed"].get("eager") is not None
        assert r["result"]["status"] in (
            "ok",
            "incorrect",
            "compile_error",
            "runtime_error",
            "rejected",
        )
        assert r["baselines"]["eager"]["median_ms"] > 0


def _row(task, level, status, speedup=None, split="train", claimed=None):
    result = {
        "status": status,
        "speedup": speedup,
        "reasons": [] if status == "ok" else ["x: y"],
        "flags": [],
    }
    return {
        "key": task,
        "task_id": task,
        "level": level,
        "split": split,
        "result": result,
        "speedups": {"eager": speedup},
        "claimed": {"eager": claimed} if claimed else {},
    }


def test_counting_rules():
    rows = [
        _row("a", 1, "ok", 2.0),
        _row("b", 1, "ok", 0.5),
        _row("c", 1, "incorrect"),
        _row("d", 2, "rejected", claimed=3.0),
    ]
    paper = stats(rows, "eager", "paper")
    strict = stats(rows, "eager", "strict")
    assert paper["correct"] == strict["correct"] == 2 and paper["tasks"] == 4
    assert paper["mean"] == pytest.approx((2.0 + 0.5 + 1.0 + 1.0) / 4)
    assert strict["mean"] == pytest.approx((2.0 + 0.5) / 4)
    assert paper["geomean"] == pytest.approx((2.0 * 0.5 * 1 * 1) ** 0.25)
    assert strict["geomean"] == pytest.approx(1.0) and strict["geomean_over"] == 2
    assert paper["fast_1"] == strict["fast_1"] == 0.25
    assert paper["above_1.01"] == 1
    s = summary(rows, ["eager"])
    assert set(s) == {"overall", "level 1", "level 2", "train"}
    audit = refused(rows)
    assert [r["task_id"] for r in audit] == ["c", "d"]
    assert audit[1]["claimed_speedup"] is True


DEGENERATE_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(32, 16)

    def forward(self, x):
        return torch.softmax(self.linear(x).sum(dim=1, keepdim=True), dim=1)  # all ones


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
"""


@pytest.mark.slow
def test_a_speedup_on_a_degenerate_task_is_flagged(cli, tmp_path):
    """Softmax over a size-1 dimension is 1 whatever the input (HACKS.md #36): the constant
    answer is correct and fast, and the audit says the task cannot tell."""
    suite = tmp_path / "kb" / "level2"
    suite.mkdir(parents=True)
    (suite / "3_Softmax_of_a_sum.py").write_text(DEGENERATE_TASK)
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "L2_3.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return torch.ones(x.shape[0], 1)\n"
    )
    out = tmp_path / "run"
    code, _, err = cli(
        "bench", str(suite.parent), "--solutions", str(sols), "--device", "cpu", "--out", str(out)
    )
    assert code == 0, err
    (row,) = load_rows(out / "results.jsonl")
    assert row["result"]["status"] == "ok"
    assert "zeros" not in row["hygiene"]["passed_nulls"]["calibrated"]
    assert "constant" in row["hygiene"]["passed_nulls"]["calibrated"]
    (flagged,) = refused([row])
    assert flagged["status"] == "ok" and "degenerate task" in flagged["reasons"][-1]
    assert stats([row], "eager", "strict")["correct"] == 0
    assert stats([row], "eager", "paper")["correct"] == 1


@pytest.mark.slow
def test_an_entry_out_of_device_memory_is_retried_alone_after_the_others(
    cli, kernelbench_dir, tmp_path
):
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "L1_1.py").write_text(
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        raise RuntimeError('CUDA out of memory. Tried to allocate 40.00 GiB')\n"
    )
    (sols / "L1_2.py").write_text(HONEST_RELU.replace("0.5", "0.25"))
    out = tmp_path / "run"
    code, _, err = cli(
        "bench", str(kernelbench_dir), "--solutions", str(sols), "--device", "cpu",
        "--out", str(out), "--tasks", "L1_1,L1_2", "--jobs", "2",
    )  # fmt: skip
    assert code == 0, err
    rows = {r["key"]: r for r in load_rows(out / "results.jsonl")}
    order = [r["key"] for r in load_rows(out / "results.jsonl")]
    assert sorted(order) == ["L1_1", "L1_2"]
    oom, honest = rows["L1_1"], rows["L1_2"]
    assert oom["result"]["status"] == "runtime_error" and oom["retried_alone"]
    assert "out of memory" in oom["result"]["reasons"][0]
    assert honest["result"]["status"] == "ok"
    if "retried_alone" not in honest:  # else its timing was disturbed (a busy host): retried too
        assert order == ["L1_2", "L1_1"]  # the retry comes after the rest
