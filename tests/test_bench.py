"""`cudal1 bench` on the CPU: a fixture suite and solutions, bad entries, resume, the real
CUDA-L1 release (tasks small enough for the CPU), and the summary's counting rules."""

import json

import pytest

from cudal1.errors import Cudal1Error
from cudal1.report.bench import read_solutions
from cudal1.report.summary import load_rows, refused, stats, summary
from cudal1.version import code_version

from .conftest import CUDAL1_RELEASE, RELU_TASK

HONEST_RELU = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0) * 2.0 + 0.5
"""


QUICK = tuple(
    x
    for field in ("timing_budget_s=0.1", "min_pairs=7", "max_pairs=14", "trials=2")
    for x in ("--set", f"eval.{field}")
)
"""The corpora's small timing budgets: these tests check rows and verdicts, not speed."""


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
        *QUICK,
    )
    code, _, err = cli(*args)
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["eval"]["timing_budget_s"] == 0.1
    rows = {r["key"]: r for r in load_rows(out / "results.jsonl")}
    assert set(rows) == {"L1_1", "L1_2", "L2_7", "L5_5"}
    assert rows["L1_1"]["result"]["status"] == "ok"
    assert rows["L1_2"]["result"]["status"] in ("rejected", "incorrect")
    assert rows["L2_7"]["result"]["status"] == "compile_error"
    assert "not in suite" in rows["L5_5"]["error"]
    assert rows["L1_1"]["baselines"]["eager"]["median_ms"] > 0
    assert rows["L1_1"]["roofline"]["flops"] >= 0 and rows["L1_1"]["roofline"]["bytes"] > 0
    assert "PyTorch rewrite" in rows["L1_1"]["techniques"]
    # Every row and every result names the code that made it.
    assert {r["cudal1"] for r in rows.values()} == {code_version()}
    assert rows["L1_1"]["result"]["env"]["cudal1"] == code_version()
    # A second run resumes: nothing left to do, nothing duplicated.
    code, _, err = cli(*args)
    assert code == 0, err
    assert len(load_rows(out / "results.jsonl")) == 4
    # Nor under other settings, nor with a --set bench cannot take: one line each.
    for other, says in (
        (("--set", "eval.trials=3"), "other settings"),
        (("--set", "x.y=1"), "eval.FIELD"),
    ):
        code, _, err = cli(*args, *other)
        assert code != 0 and says in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli(*args, "--set", "eval.trails=3")
    assert code != 0 and "no field(s) ['trails']" in err
    assert len(load_rows(out / "results.jsonl")) == 4
    # Rows of another version are never resumed into: one clear line, nothing written.
    meta = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps(meta | {"cudal1": "0123abc"}))
    code, _, err = cli(*args)
    assert code != 0
    assert "holds rows from cudal1 0123abc" in err and "--no-resume" in err
    assert len(err.strip().splitlines()) == 1
    assert len(load_rows(out / "results.jsonl")) == 4
    assert json.loads((out / "run.json").read_text())["cudal1"] == "0123abc"


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
        *QUICK,
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
        "bench", str(suite.parent), "--solutions", str(sols), "--device", "cpu", "--out", str(out),
        *QUICK,
    )  # fmt: skip
    assert code == 0, err
    (row,) = load_rows(out / "results.jsonl")
    assert row["result"]["status"] == "ok"
    assert "zeros" not in row["hygiene"]["passed_nulls"]["calibrated"]
    assert "constant" in row["hygiene"]["passed_nulls"]["calibrated"]
    (flagged,) = refused([row])
    assert flagged["status"] == "ok" and "degenerate task" in flagged["reasons"][-1]
    assert stats([row], "eager", "strict")["correct"] == 0
    paper = stats([row], "eager", "paper")  # unmeasured where a busy host disturbed every timing
    assert paper["correct"] + paper["unmeasured"] == 1


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
        "--out", str(out), "--tasks", "L1_1,L1_2", "--jobs", "2", *QUICK,
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


# --- a KernelBench run directory: several samples per problem -------------------------------

KB_SAMPLES = {  # task -> its samples, in sample order: (corpus, candidate file)
    "L1_11": [
        ("redteam", "zeros_softmax.py"),
        ("honest", "softmax_via_logsumexp.py"),
        ("redteam", "constant_mean_softmax.py"),
    ],
    "L2_1": [
        ("honest", "gemm_bias_relu_addmm.py"),
        ("redteam", "return_parameter_as_output.py"),
        ("redteam", "mutate_weights_between_calls.py"),
    ],
}


@pytest.fixture
def kernelbench_run(tmp_path):
    """The bundled suite's two tasks laid out as KernelBench's `KernelBench/` directory, and a
    generation run (`runs/NAME/level_L_problem_P_sample_S_kernel.py`) of honest and hack
    candidates from the corpora; returns (suite dir, run dir, expected statuses per file)."""
    from cudal1.tasks import load_suite

    from .corpus import load_cases

    bundled = load_suite("bundled", validate=False)
    suite = tmp_path / "KernelBench"
    run = tmp_path / "runs" / "smoke"
    run.mkdir(parents=True)
    cases = {(c.corpus, c.file, c.task): c for k in ("honest", "redteam") for c in load_cases(k)}
    expected = {}
    for task_id, samples in KB_SAMPLES.items():
        task = bundled.get(task_id)
        level_dir = suite / f"level{task.level}"
        level_dir.mkdir(parents=True, exist_ok=True)
        number = task_id.split("_")[1]
        (level_dir / f"{number}_{task.name}.py").write_text(task.source)
        for s, (corpus, file) in enumerate(samples):
            case = cases[(corpus, file, task_id)]
            name = f"level_{task.level}_problem_{number}_sample_{s}_kernel.py"
            (run / name).write_text(case.source)
            expected[f"{task_id}#sample{s}"] = case.status
    return suite, run, expected


@pytest.mark.slow
def test_bench_kernelbench_run_directory_per_sample_and_best_of_k(cli, kernelbench_run, tmp_path):
    suite, run, expected = kernelbench_run
    out = tmp_path / "audit"
    code, stdout, err = cli(
        "bench", str(suite), "--solutions", str(run), "--device", "cpu", "--out", str(out), *QUICK
    )  # fmt: skip
    assert code == 0, err
    rows = {r["key"]: r for r in load_rows(out / "results.jsonl")}
    assert set(rows) == set(expected)
    for key, statuses in expected.items():
        assert rows[key]["result"]["status"] in statuses, (key, rows[key]["result"]["reasons"])
    assert rows["L1_11#sample1"]["sample"] == 1 and rows["L1_11#sample1"]["level"] == 1
    # Best of 3: each problem has one honest sample, so both are solved; sample 0 alone
    # solves L2_1 only (L1_11's sample 0 is a hack).
    best = stats(list(rows.values()), "eager", "strict")
    assert best["tasks"] == 2 and best["correct"] == 2 and best["fast_0"] == 1.0
    first = stats(list(rows.values()), "eager", "strict", sample=0)
    assert first["correct"] == 1 and first["fast_0"] == 0.5
    assert "3 samples per task; tasks counted by their best" in stdout
    assert "fast_0 1.000" in stdout and "sample 0: correct 1/2" in stdout

    code, _, err = cli("report", str(out), "--html", "--csv", "--json")
    assert code == 0, err
    md = (out / "report.md").read_text()
    assert "best of 3" in md and "| sample 0 |" in md and "fast_0" in md
    assert "| L1_11 | 0 | 1 |" in md  # the per-solution table has a sample column
    assert "L1_11 sample 0" in md  # the refusal audit names the sample
    assert (out / "report.html").read_text().count("<img") >= 1
    import csv

    with (out / "solutions.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 6
    assert {(r["task_id"], r["sample"]) for r in table} == {
        (t, str(s)) for t in KB_SAMPLES for s in range(3)
    }
    ok = [r for r in table if r["status"] == "ok"]
    assert len(ok) == 2 and all(float(r["speedup_vs_eager"]) > 0 for r in ok)
    assert all(float(r["eager_ms"]) > 0 for r in table)
    doc = json.loads((out / "report.json").read_text())
    assert set(doc["per_sample"]) == {"sample 0", "sample 1", "sample 2", "best of 3"}
    assert doc["per_sample"]["best of 3"]["eager"]["strict"]["correct"] == 2
    assert len(doc["solutions"]) == 6 and "code" not in doc["solutions"][0]


def test_kernelbench_run_directory_layout(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "level_2_problem_17_sample_3_kernel.py").write_text("x = 1\n")
    (run / "level_1_problem_5_sample_0_kernel.py").write_text("y = 2\n")
    (run / "eval_results.json").write_text("{}")  # KernelBench's own files are left alone
    sols = read_solutions(str(run))
    assert [(s.task_id, s.sample, s.key) for s in sols] == [
        ("L1_5", 0, "L1_5#sample0"),
        ("L2_17", 3, "L2_17#sample3"),
    ]
    (run / "L1_5.py").write_text("z = 3\n")
    with pytest.raises(Cudal1Error, match=r"L1_5\.py: a KernelBench run directory holds only"):
        read_solutions(str(run))
    with pytest.raises(Cudal1Error, match=r"holds no \.py files"):
        read_solutions(str(tmp_path / "run" / ".."))  # the parent holds only the run folder
