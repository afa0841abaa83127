"""The bench report: Markdown and HTML from a hand-written run directory.

The rows cover ok solutions at two levels against two baselines (train and held-out), an
incorrect one, a rejected one that its source claimed 3x for, a missing submission and a result
faster than its roofline, so every figure below can be checked by hand.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from cudal1.report.render import fmt, render_html, render_markdown, write_report

CUDA_SOLUTION = '''import torch
from torch.utils.cpp_extension import load_inline

SRC = """
__global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = x[i];
}
"""


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return a @ b
'''


def _ok(
    task: str,
    level: int,
    split: str,
    eager: float,
    compile_: float,
    *,
    fraction: float | None = None,
    beyond: bool = False,
    claimed: float | None = None,
) -> dict[str, Any]:
    return {
        **_row(task, level, split, claimed),
        "result": {
            "status": "ok",
            "reasons": [],
            "flags": [],
            "speedup": eager,
            "candidate_ms": 1.0,
            "reference_ms": eager,
            "env": {"torch": "2.13.0", "cuda": "12.8", "gpu": "NVIDIA H200", "device": "cuda"},
        },
        "techniques": ["custom CUDA kernel", "kernel fusion"],
        "code": CUDA_SOLUTION,
        "speedups": {"eager": eager, "compile": compile_},
        "roofline": {
            "flops": 1e9,
            "bytes": 1e6,
            "floor_ms": fraction,
            "fraction": fraction,
            "beyond": beyond,
        },
    }


def _row(task: str, level: int, split: str, claimed: float | None = None) -> dict[str, Any]:
    return {
        "key": task,
        "task_id": task,
        "origin": f"solutions/{task}.py",
        "level": level,
        "name": task.lower(),
        "split": split,
        "error": None,
        "claimed": {} if claimed is None else {"eager": claimed},
        "result": None,
        "techniques": [],
        "code": None,
        "baselines": {},
        "speedups": {"eager": None, "compile": None},
        "roofline": None,
    }


def _failed(task: str, level: int, split: str, status: str, **extra: Any) -> dict[str, Any]:
    claimed = extra.pop("claimed", None)
    return {
        **_row(task, level, split, claimed),
        "result": {
            "status": status,
            "reasons": [],
            "flags": [],
            "speedup": None,
            "env": {},
        }
        | extra,
        "code": "class ModelNew: pass\n",
    }


ROWS = [
    _ok("L1_1", 1, "train", 2.0, 1.5, fraction=0.4),
    _ok("L1_20", 1, "train", 1.25, 0.8, fraction=0.2),
    _ok("L2_1", 2, "train", 4.0, 3.0, fraction=1.5, beyond=True, claimed=0.9),
    _ok("L1_12", 1, "heldout", 0.5, 0.4),
    _failed("L2_8", 2, "train", "incorrect", reasons=["max_abs_err 0.3 > tolerance"]),
    _failed(
        "L1_11",
        1,
        "train",
        "rejected",
        reasons=["slowed_baseline: reference ran 2.1x slower beside the candidate"],
        flags=["side_stream", "gpu_hog"],
        claimed=3.0,
    ),
    _row("L1_2", 1, "heldout") | {"error": "no submission"},
]
EAGER_OK = [2.0, 1.25, 4.0, 0.5]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    meta = {
        "suite": "bundled",
        "eval": {"device": "cpu", "policy": "any", "tolerance": "calibrated"},
        "baselines": ["eager", "compile"],
    }
    (tmp_path / "run.json").write_text(json.dumps(meta))
    return tmp_path


def _section(text: str, heading: str) -> str:
    """From a Markdown heading to the next heading of any level."""
    start = text.index(heading + "\n")
    nxt = re.search(r"^#+ ", text[start + len(heading) :], re.M)
    return text[start : start + len(heading) + (nxt.start() if nxt else len(text))]


def _rule_rows(section: str, baseline: str) -> dict[str, list[str]]:
    """The table rows of one baseline in a summary section, keyed by rule, as cell lists."""
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == baseline:
            out[cells[1].split(" ", 1)[0]] = cells
    return out


def test_write_report_writes_both_files(run_dir: Path) -> None:
    paths = write_report(run_dir, html=True)
    assert paths == [run_dir / "report.md", run_dir / "report.html"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert write_report(run_dir, html=False) == [run_dir / "report.md"]


def test_markdown_header_and_rule_labels(run_dir: Path) -> None:
    md = render_markdown(run_dir)
    for item in ("| suite | bundled |", "| device | cpu |", "| tolerance | calibrated |"):
        assert item in md
    assert "| rows | 7 |" in md
    assert "GPU NVIDIA H200, torch 2.13.0, CUDA 12.8" in md
    assert "paper rule: failures count as 1.0x" in md
    assert "strict rule: failures count as failures; geomean over correct tasks only (n=3)" in md


def test_header_environment_from_a_row_that_reached_the_device(tmp_path: Path) -> None:
    """A run whose first row was refused by the static check (no device, so no GPU in its env)."""
    rows = [_failed("L1_11", 1, "train", "rejected", reasons=["static check"]), *ROWS[:1]]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "run.json").write_text(json.dumps({"suite": "bundled", "eval": {}}))
    assert "GPU NVIDIA H200, torch 2.13.0, CUDA 12.8" in render_markdown(tmp_path)


@pytest.mark.parametrize(
    ("group", "paper", "strict"),
    [
        # The strict rule also refuses L2_1, which beat the roofline.
        ("### overall", "4/7", "3/7"),
        ("### level 1", "3/5", "3/5"),
        ("### level 2", "1/2", "0/2"),
        ("### train", "3/5", "2/5"),
        ("### heldout (held-out tasks, reported separately)", "1/2", "1/2"),
    ],
)
def test_markdown_correct_counts_per_group(
    run_dir: Path, group: str, paper: str, strict: str
) -> None:
    section = _section(render_markdown(run_dir), group)
    for baseline in ("eager", "compile"):
        rows = _rule_rows(section, baseline)
        assert set(rows) == {"paper", "strict"}
        assert paper in rows["paper"] and strict in rows["strict"]


def test_markdown_geomeans_by_hand(run_dir: Path) -> None:
    rows = _rule_rows(_section(render_markdown(run_dir), "### overall"), "eager")
    paper = math.exp(sum(math.log(x) for x in [*EAGER_OK, 1.0, 1.0, 1.0]) / 7)  # 5 ** (1/7)
    strict = math.exp(sum(math.log(x) for x in (2.0, 1.25, 0.5)) / 3)  # 4.0 beat the roofline
    geomean = 7  # column: baseline, rule, mean, max, 75%, median, 25%, geomean
    assert rows["paper"][geomean] == fmt(paper) == "1.258"
    assert rows["strict"][geomean] == fmt(strict) == "1.077"
    # tasks > 1.01x counts correct tasks only: 2.0, 1.25, 4.0 (strict: not 4.0)
    assert rows["paper"][9] == "3" and rows["strict"][9] == "2"


def test_markdown_refused_audit(run_dir: Path) -> None:
    md = render_markdown(run_dir)
    # L2_8 (claimed nothing), L1_11 (claimed 3.0x) and L2_1 (beyond roofline, claimed 0.9x)
    section = _section(md, "## Refused or flagged (1 of them claimed a speedup by the source)")
    assert "3 solutions were refused or flagged;" in section
    lines = {line.split("|")[1].strip(): line for line in section.splitlines() if "|" in line}
    assert "rejected" in lines["L1_11"]
    assert "slowed_baseline: reference ran 2.1x slower beside the candidate" in lines["L1_11"]
    assert "side_stream, gpu_hog" in lines["L1_11"]
    assert "yes (3.000x)" in lines["L1_11"]
    assert "max_abs_err 0.3 > tolerance" in lines["L2_8"]
    assert "faster than the roofline allows" in lines["L2_1"]
    assert "no (0.900x)" in lines["L2_1"]
    assert "L1_2" not in lines  # no submission is a failure, not a refusal
    counts = _section(md, "### Refusals by reason")
    assert "| rejected: slowed_baseline | 1 |" in counts


def test_markdown_tasks_techniques_and_code(run_dir: Path) -> None:
    md = render_markdown(run_dir)
    tasks = _section(md, "## Per task")
    assert "| L2_1 | 2 | train | ok | 4.000 | 3.000 | 1.500 (beyond roofline) |" in tasks
    assert "| L1_2 | 1 | heldout | error (no submission) | - | - | - |" in tasks
    techniques = _section(md, "## Techniques (correct solutions, speedup vs eager)")
    assert f"| custom CUDA kernel | 4 | 1.625 | {fmt(5 ** (1 / 4))} |" in techniques
    code = md[md.index("## Solutions beside their references") :]
    order = [code.index(f"### {t} ") for t in ("L2_1", "L1_1", "L1_20", "L1_12")]
    assert order == sorted(order)  # fastest first
    assert "### L2_8" not in code
    assert code.count("```python") == 8  # solution and reference for each of the 4 ok rows
    assert "def get_inputs" in code  # the bundled reference source


def test_html_is_self_contained_with_side_by_side_code(run_dir: Path) -> None:
    page = render_html(run_dir)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<style>" in page
    assert page.count('<div class="pair">') == 4
    assert "i &lt; n" in page and "i < n" not in page
    assert "def get_inputs" in page
    assert "Refused or flagged (1 of them claimed a speedup by the source)" in page
    assert "strict rule: failures count as failures; geomean over correct tasks only (n=3)" in page


def test_html_embeds_plots(run_dir: Path) -> None:
    page = render_html(run_dir)
    assert page.count('<img alt="') == 3  # per-level speedups, vs roofline, claimed vs measured
    assert '<img alt="speedup per level against each baseline" src="data:image/png;base64,' in page
    assert '<img alt="claimed against measured speedup"' in page


def test_claimed_against_measured(run_dir: Path) -> None:
    """Only L2_1 is correct and claimed by its source (0.9x, measured 4x); the rejected L1_11's
    3x claim belongs to the refusals, not here."""
    section = _section(render_markdown(run_dir), "## Claimed against measured")
    assert "1 correct solutions whose source reported a speedup" in section
    assert "within 0.8x to 1.25x of the claim for 0 of them" in section
    assert "| L2_1 | 0.900 | 4.000 | 4.444 | custom CUDA kernel, kernel fusion | - |" in section
    assert "L1_11" not in section


def _agreement_run(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    run = tmp_path / name
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "run.json").write_text(json.dumps({"suite": "bundled", "cudal1": name}))
    return run


def test_compare_two_runs_of_the_same_entries(tmp_path: Path) -> None:
    """Deviation is larger/smaller - 1 over entries ok and measured in both; an unmeasured one
    and entries in one run only are counted apart; a verdict that changed is a flip with both
    runs' reasons."""
    a = [
        _ok("L1_1", 1, "train", 2.0, 1.0),
        _ok("L1_20", 1, "train", 1.25, 1.0),
        _ok("L2_1", 2, "train", 4.0, 1.0),
        _ok("L1_12", 1, "heldout", 0.5, 0.4),
        _failed("L1_3", 1, "train", "ok"),  # unmeasured here
        _ok("L1_9", 1, "train", 3.0, 1.0),  # only in this run
    ]
    b = [
        _ok("L1_1", 1, "train", 2.2, 1.0),  # 10 %
        _ok("L1_20", 1, "train", 1.0, 1.0),  # 25 %
        _ok("L2_1", 2, "train", 4.0, 1.0),  # 0 %
        _failed("L1_12", 1, "heldout", "incorrect", reasons=["max_abs_err 0.3 > tolerance"]),
        _ok("L1_3", 1, "train", 1.5, 1.0),
        _ok("L1_7", 1, "train", 1.1, 1.0),  # only in the other
    ]
    run_a = _agreement_run(tmp_path, "run-a", a)
    run_b = _agreement_run(tmp_path, "run-b", b)
    paths = write_report(run_a, html=True, json_=True, compare=[run_b, run_a])
    doc, itself = json.loads(paths[-1].read_text())["agreements"]
    assert (itself["with"], itself["speedup_deviation"]["max"], itself["flips"]) == ("run-a", 0, [])
    assert doc["with"] == "run-b"
    assert (doc["common"], doc["only_a"], doc["only_b"], doc["ok_both"]) == (5, 1, 1, 3)
    assert doc["speedup_deviation"]["median"] == pytest.approx(0.10)
    assert doc["speedup_deviation"]["max"] == pytest.approx(0.25)
    assert [d["key"] for d in doc["largest"]] == ["L1_20", "L1_1", "L2_1"]
    assert doc["flips"] == [
        {
            "key": "L1_12",
            "a": "ok",
            "b": "incorrect",
            "reasons_a": [],
            "reasons_b": ["max_abs_err 0.3 > tolerance"],
        }
    ]
    md = (run_a / "report.md").read_text()
    section = _section(md, "## Agreement with run-b")
    assert "| speedup deviation, median | 10.00 % |" in section
    assert "| cudal1 | run-a |" in md  # the version run.json names
    assert "Agreement with run-b" in (run_a / "report.html").read_text()


def test_compare_with_a_directory_that_is_no_run(tmp_path: Path, run_dir: Path) -> None:
    from cudal1.errors import Cudal1Error

    with pytest.raises(Cudal1Error, match=r"holds neither results\.jsonl nor exemplars\.db"):
        write_report(run_dir, html=False, compare=[tmp_path / "nothing"])


def test_unknown_suite_drops_references_only(run_dir: Path) -> None:
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps(meta | {"suite": str(run_dir / "gone")}))
    md = render_markdown(run_dir)
    assert "(reference not available)" in md
    assert "| rows | 7 |" in md


def test_csv_and_json_exports(run_dir: Path) -> None:
    import csv

    paths = write_report(run_dir, html=False, csv=True, json_=True)
    assert paths == [run_dir / "report.md", run_dir / "solutions.csv", run_dir / "report.json"]
    with (run_dir / "solutions.csv").open() as f:
        table = {r["task_id"]: r for r in csv.DictReader(f)}
    assert set(table) == {r["task_id"] for r in ROWS}
    assert table["L1_1"]["status"] == "ok" and float(table["L1_1"]["speedup_vs_compile"]) == 1.5
    assert table["L2_1"]["beyond_roofline"] == "True" and table["L2_1"]["strict_counted"] == "False"
    assert table["L1_11"]["flags"] == "side_stream; gpu_hog"
    assert table["L1_11"]["claimed_eager"] == "3.0" and table["L1_11"]["speedup_vs_eager"] == ""
    assert table["L1_2"]["status"] == "error" and table["L1_2"]["error"] == "no submission"
    doc = json.loads((run_dir / "report.json").read_text())
    assert doc["baselines"] == ["eager", "compile"] and doc["per_sample"] == {}
    overall = doc["summary"]["overall"]["eager"]
    assert overall["paper"]["correct"] == 4 and overall["strict"]["correct"] == 3
    assert overall["paper"]["fast_0"] == pytest.approx(4 / 7)
    assert [s["task_id"] for s in doc["solutions"]] == [r["task_id"] for r in ROWS]
    assert doc["solutions"][5]["flags"] == ["side_stream", "gpu_hog"]


def test_unmeasured_results_count_apart_and_never_as_speedups(tmp_path: Path) -> None:
    """A correct result whose timing other work disturbed (`ok`, speedup None) is in no speedup
    figure, fast_p's numerators included, and the summary, tables and exports count it apart;
    best of k takes a measured sample over an unmeasured one."""
    import csv

    from cudal1.report.summary import stats

    disturbed = _failed("L1_3", 1, "train", "ok", flags=["host_shared: timing waited 40 %"])
    rows = [*ROWS, disturbed]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "run.json").write_text(json.dumps({"suite": "bundled", "eval": {}}))
    strict, paper = stats(rows, "eager", "strict"), stats(rows, "eager", "paper")
    assert (strict["tasks"], strict["correct"], strict["unmeasured"]) == (8, 3, 1)
    assert strict["fast_0"] == pytest.approx(3 / 8)
    assert (paper["correct"], paper["unmeasured"]) == (4, 1)
    assert stats(ROWS, "eager", "strict")["unmeasured"] == 0

    write_report(tmp_path, html=True, csv=True, json_=True)
    md = (tmp_path / "report.md").read_text()
    assert "3/8 (+1 unmeasured)" in _rule_rows(_section(md, "### overall"), "eager")["strict"]
    assert "| L1_3 | 1 | train | ok (unmeasured) | - | - |" in md
    with (tmp_path / "solutions.csv").open() as f:
        table = {r["task_id"]: r for r in csv.DictReader(f)}
    assert table["L1_3"]["status"] == "ok" and table["L1_3"]["unmeasured"] == "True"
    assert table["L1_3"]["speedup_vs_eager"] == "" and table["L1_3"]["strict_counted"] == "False"
    assert table["L1_1"]["unmeasured"] == "False"
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["summary"]["overall"]["eager"]["strict"]["unmeasured"] == 1
    assert "<img" in (tmp_path / "report.html").read_text()

    def sample(task: str, s: int, row: dict[str, Any]) -> dict[str, Any]:
        return row | {"key": f"{task}#sample{s}", "sample": s}

    k = [
        sample("L1_5", 0, _failed("L1_5", 1, "train", "ok")),  # unmeasured
        sample("L1_5", 1, _failed("L1_5", 1, "train", "incorrect")),
        sample("L1_6", 0, _failed("L1_6", 1, "train", "ok")),  # unmeasured
        sample("L1_6", 1, _ok("L1_6", 1, "train", 1.5, 1.2)),
    ]
    best = stats(k, "eager", "strict")
    assert (best["correct"], best["unmeasured"], best["fast_1"]) == (1, 1, 0.5)
    first = stats(k, "eager", "strict", sample=0)
    assert (first["correct"], first["unmeasured"], first["fast_0"]) == (0, 2, 0.0)
