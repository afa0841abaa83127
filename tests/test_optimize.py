"""End-to-end: `cudal1 optimize` with the replay policy on a bundled task, on the CPU."""

import json

import pytest

from cudal1.errors import Cudal1Error

from .conftest import REPO, result_for

FOLDED = (REPO / "examples" / "L2_8_fold_batchnorm.py").read_text()
INIT = """
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
"""
HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):" + INIT
SLOW = (
    HEAD
    + "\n    def forward(self, x):\n        y = self.conv(x)\n        for _ in range(4):\n            y = self.conv(x)\n        return torch.relu(self.bn(y))\n"
)
SAME = HEAD + "\n    def forward(self, x):\n        return torch.relu(self.bn(self.conv(x)))\n"
WRONG = HEAD + "\n    def forward(self, x):\n        return torch.relu(self.conv(x))\n"


def answer(code: str, note: str = "") -> str:
    return f"## Performance analysis\n{note}\n\n## Algorithm design\nSee code.\n\n## Code\n```python\n{code}```\n"


ROUNDS = [
    [answer(SLOW, "slow"), "I do not know."],
    [answer(SAME, "same as reference"), answer(WRONG, "forgot BN")],
    [answer(FOLDED, "fold BN into the conv")],
]


def _replay(path, rounds):
    lines = [json.dumps({"response": a, "task": "L2_8"}) for r in rounds for a in r]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_optimize_replay_three_rounds_and_resume(cli, tmp_path):
    out = tmp_path / "run"
    # First invocation: answers for two rounds only; the run stops when the replay runs dry.
    first = _replay(tmp_path / "first.jsonl", [ROUNDS[0], ROUNDS[1]])
    code, _, err = cli(
        "optimize",
        "L2_8",
        "--llm",
        f"replay:{first}",
        "--rounds",
        "3",
        "--samples",
        "2",
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert [r["round"] for r in summary["rounds"]] == [0, 1]

    from cudal1.exemplars import ExemplarDB

    db = ExemplarDB(out / "exemplars.db")
    rows = db.exemplars("L2_8")
    assert len(rows) == 1 + 4  # reference + every answer, the unparsed one included
    statuses = sorted(e.status for e in rows)
    assert statuses == ["incorrect", "ok", "ok", "ok", "unparsed"]
    best_after_two = db.best("L2_8").speedup
    round1 = [e for e in rows if e.step == 1]
    assert all(e.parents for e in round1)  # prompts showed exemplars, recorded as parents

    # Second invocation resumes at round 2 with the remaining answer.
    second = _replay(tmp_path / "second.jsonl", [ROUNDS[2]])
    code, _stdout, err = cli(
        "optimize",
        "L2_8",
        "--llm",
        f"replay:{second}",
        "--rounds",
        "3",
        "--samples",
        "1",
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert [r["round"] for r in summary["rounds"]] == [2]
    (folded,) = [e for e in db.exemplars("L2_8") if e.step == 2]
    assert "folded_weight" in folded.code and folded.status == "ok"
    best = db.best("L2_8")
    if folded.speedup is not None:  # None: a busy host disturbed every timing, no speedup
        assert best.id == folded.id and best.speedup > best_after_two
    assert (out / "best.py").read_text() == best.code
    report = (out / "report.md").read_text()
    assert "Resumed after round 2" in report and "incorrect" in report

    # `cudal1 report` reads the optimize run as it reads a bench run: every answer a row.
    code, _, err = cli("report", str(out), "--html", "--csv")
    assert code == 0, err
    md = (out / "report.md").read_text()
    assert "# cudal1 optimize report" in md and "## Rounds" in md
    assert "| L2_8 | 0 | 2 | 1 |" in md  # round 0: two answers, one correct, one unparsed
    assert "unparsed: no usable ModelNew in the answer" in md
    assert "best of 5" in md
    page = (out / "report.html").read_text()
    assert '<img alt="speedup per level against each baseline"' in page
    assert len((out / "solutions.csv").read_text().splitlines()) == 1 + 5
    code, _, err = cli("report", str(tmp_path))
    assert code == 2 and "holds neither results.jsonl nor exemplars.db" in err


class _Fixed:
    """An evaluator that answers every candidate with the same result."""

    def __init__(self, result):
        self.result = result

    async def evaluate(self, task, source, *, fresh=False):
        return self.result


def test_prompt_sees_scores_of_the_database(tmp_path):
    """The exemplars a round shows come from the database with their measured scores."""
    import asyncio

    from cudal1.exemplars import ExemplarDB
    from cudal1.optimize import OptimizeConfig, Optimizer
    from cudal1.policy import ReplayPolicy
    from cudal1.tasks import load_suite

    task = load_suite("bundled", validate=False).get("L2_8")
    db = ExemplarDB(tmp_path / "x.db")
    db.ensure_reference(task)
    ok = result_for(task, 2.34)
    db.add(task, SAME, ok)
    seen = []

    class Recording(ReplayPolicy):
        async def complete(self, prompt, n):
            seen.append(prompt)
            return await super().complete(prompt, n)

    policy = Recording(_replay(tmp_path / "r.jsonl", [["no code"]]))
    opt = Optimizer(task, policy, db, _Fixed(ok), OptimizeConfig(rounds=1, samples=1, device="cpu"))
    asyncio.run(opt.run())
    text = seen[0].messages[-1]["content"]
    assert "speedup 2.34" in text and "speedup 1.00" in text


def test_compact_prompt_and_retries_of_unusable_answers(tmp_path):
    """An answer with no usable ModelNew is asked for again from the same prompt; every
    answer is stored, and the events say which answer stood."""
    import asyncio

    from cudal1.exemplars import ExemplarDB
    from cudal1.optimize import OptimizeConfig, Optimizer
    from cudal1.policy import ReplayPolicy
    from cudal1.tasks import load_suite

    task = load_suite("bundled", validate=False).get("L2_8")
    db = ExemplarDB(tmp_path / "exemplars.db")
    ok = result_for(task, 1.01)
    body = SAME.split("class ModelNew(nn.Module):", 1)[1]
    # continuations of the prefill: prose, cut in forward, then a whole class
    replies = ["I will make it faster.", body[:-8], body + "```\n"]
    policy = ReplayPolicy(_replay(tmp_path / "r.jsonl", [replies]))
    events = []
    config = OptimizeConfig(rounds=1, samples=1, device="cpu", prompt="compact", retries=2)
    summary = asyncio.run(
        Optimizer(task, policy, db, _Fixed(ok), config, on_event=events.append).run()
    )
    results = [e for e in events if e["event"] == "result"]
    assert [(e["status"], e["final"]) for e in results] == [
        ("unparsed", False),
        ("unparsed", False),
        ("ok", True),
    ]
    assert "does not parse" in results[1]["error"]
    assert sorted(e.status for e in db.exemplars(task.id)) == ["ok", "ok", "unparsed", "unparsed"]
    best = summary.best
    assert best is not None and best.code.startswith("import torch") and "```" not in best.code

    from cudal1.optimize import write_outputs
    from cudal1.report.render import write_report

    write_outputs(tmp_path, summary, db, {"suite": "bundled", "eval": {"device": "cpu"}})
    write_report(tmp_path, html=True)
    md = (tmp_path / "report.md").read_text()
    assert "| L2_8 | 0 | 3 | 1 | 1.010 | 1.010 | ok 1, unparsed 2 |" in md
    from cudal1.version import code_version

    assert f"| cudal1 | {code_version()} |" in md  # run.json names the code
    page = (tmp_path / "report.html").read_text()
    assert page.count("<img") == 2 and "speedup of each answer, in the order written" in page
    with pytest.raises(Cudal1Error, match="unknown prompt style"):
        OptimizeConfig(prompt="tiny")


def test_a_round_of_unmeasured_answers_has_no_best(tmp_path):
    """Correct answers whose timing other work disturbed carry no speedup: the round has no
    best (not 0.000), and the best so far stays the reference's 1.0."""
    import asyncio

    from cudal1.exemplars import ExemplarDB
    from cudal1.optimize import OptimizeConfig, Optimizer
    from cudal1.policy import ReplayPolicy
    from cudal1.tasks import load_suite

    task = load_suite("bundled", validate=False).get("L2_8")
    db = ExemplarDB(tmp_path / "exemplars.db")
    policy = ReplayPolicy(_replay(tmp_path / "r.jsonl", [[answer(SAME)]]))
    config = OptimizeConfig(rounds=1, samples=1, device="cpu")
    summary = asyncio.run(Optimizer(task, policy, db, _Fixed(result_for(task, None)), config).run())
    (only,) = summary.rounds
    assert only.correct == 1 and only.best_speedup is None and only.best_so_far == 1.0
