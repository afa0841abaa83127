"""The learning curve's own logic: which held-out evaluation a resumed call owes, chunks that
run on across evaluations, the held-out answers generated as one batch (each as its prompt
alone would be continued), and the report's comparison of the arms."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import learning_curve

from cudal1.exemplars import ExemplarDB
from cudal1.tasks import load_suite
from tests.conftest import result_for
from tests.scripts import script


def _state(tmp_path: Path, step: int, evaluated: list[tuple[int, str]]) -> argparse.Namespace:
    arm = tmp_path / "plain"
    (arm / "run" / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
    rows = [{"arm": "plain", "step": s, "mode": m} for s, m in evaluated]
    (arm / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return argparse.Namespace(state=tmp_path, eval_every=25, total=150)


def test_a_held_out_evaluation_cut_short_is_owed_by_the_next_call(tmp_path):
    args = _state(tmp_path / "cut", 25, [(0, "greedy"), (0, "sampled")])
    assert learning_curve.evaluation_due(args, "plain") == 25
    args = _state(tmp_path / "half", 25, [(25, "greedy")])  # cut before its last row
    assert learning_curve.evaluation_due(args, "plain") == 25
    args = _state(tmp_path / "done", 25, [(25, "greedy"), (25, "sampled")])
    assert learning_curve.evaluation_due(args, "plain") is None
    args = _state(tmp_path / "between", 31, [(25, "greedy"), (25, "sampled")])
    assert learning_curve.evaluation_due(args, "plain") is None
    args = _state(tmp_path / "last", 150, [])
    assert learning_curve.evaluation_due(args, "plain") == 150


def test_batched_generation_continues_each_prompt_as_alone(tmp_path):
    """Greedy continuations of prompts of different lengths, padded into one batch, are the
    ones each prompt gets alone; sampled ones come `n` to a prompt, in the prompts' order."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cudal1.policy import contrastive_prompt
    from cudal1.tasks import load_suite
    from cudal1.train.tiny import build_tiny

    path = build_tiny(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tasks = load_suite("bundled").split("heldout")[:3]
    prompts = [contrastive_prompt(t, [], device="cpu", style="compact") for t in tasks]
    lengths = {len(tok(learning_curve.chat_text(tok, p))["input_ids"]) for p in prompts}
    assert len(lengths) == 3  # the batch is padded

    batched = learning_curve.generate(model, tok, prompts, None, 1, 12)
    alone = [learning_curve.generate(model, tok, [p], None, 1, 12)[0] for p in prompts]
    assert batched == alone and all(len(a) == 1 and a[0] for a in batched)
    sampled = learning_curve.generate(model, tok, prompts, 0.7, 4, 12)
    assert [len(s) for s in sampled] == [4, 4, 4]


def test_windows_follow_the_held_out_evaluations():
    assert learning_curve.windows(3, 25) == [(1, 3)]
    assert learning_curve.windows(25, 25) == [(1, 5), (6, 25)]
    assert learning_curve.windows(60, 25) == [(1, 5), (6, 25), (26, 50), (51, 60)]
    assert learning_curve.windows(9, 2) == [(1, 5), (6, 6), (7, 8), (9, 9)]


def _steps(correct: list[float]) -> list[dict]:
    return [{"step": i + 1, "correct": c, "rollouts": 32} for i, c in enumerate(correct)]


def test_a_lead_counts_only_where_its_interval_excludes_zero():
    """Resampling whole steps: an arm ahead at every step has an interval above zero; two arms
    whose steps merely trade places have one that straddles it."""
    ahead = learning_curve.paired_difference(
        _steps([0.2, 0.1, 0.3, 0.2]), _steps([0.1, 0.0, 0.1, 0.1]), "correct"
    )
    assert ahead[0] == pytest.approx(0.125) and 0 < ahead[1] <= ahead[0] <= ahead[2]
    traded = learning_curve.paired_difference(
        _steps([0.3, 0.0, 0.3, 0.0]), _steps([0.0, 0.3, 0.0, 0.3]), "correct"
    )
    assert traded[0] == pytest.approx(0) and traded[1] < 0 < traded[2]
    assert all(math.isnan(x) for x in learning_curve.paired_difference([], [], "correct"))


def test_the_report_tables_training_rollouts_by_window(tmp_path):
    """Each window's rates by arm, with what the step log and the database add: the share of
    rollouts that repeated a program already evaluated, and the correct programs new to the
    database (a program is stored once, at the step that first evaluated it)."""
    task = load_suite("bundled", validate=False).get("L1_20")
    for arm, correct in (("contrastive", 0.25), ("plain", 0.125)):
        rows = [
            {"arm": arm, "step": s, "reward_mean": -1.0, "correct": correct, "parse": 0.5,
             "refused": 1 / 32 if s == 7 else 0.0, "rollouts": 32,
             "refused_by_reason": {"aliases": 1} if s == 7 else {},
             "update_skipped": arm == "contrastive" and s == 8}
            for s in range(1, 11)
        ]  # fmt: skip
        (tmp_path / arm / "run").mkdir(parents=True)
        (tmp_path / arm / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        repeated = 0.5 if arm == "contrastive" else 0.0
        log = [{"step": s, "reward/cached": repeated} for s in range(1, 11)]
        (tmp_path / arm / "run" / "steps.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in log)
        )
        db = ExemplarDB(tmp_path / arm / "run" / "exemplars.db")
        db.ensure_reference(task)  # the reference is not the model's
        if arm == "contrastive":  # two correct programs at step 7, one at step 1, one failing
            for code, step, speedup in (("# a", 6, 1.0), ("# b", 6, 1.1), ("# c", 0, 1.0)):
                db.add(task, code, result_for(task, speedup), source="grpo", step=step)
            db.add(task, "# d", result_for(task, None, "incorrect"), source="grpo", step=6)
    assert learning_curve.report(tmp_path, tmp_path / "out", 25) == 0
    summary = (tmp_path / "out" / "summary.md").read_text()
    row = "| 6-10 | contrastive | 160 | 0.250 | 0.500 | 0.013 | 0.500 | 0.006 (aliases 1) | 1 |"
    assert row in summary
    assert "| 1-5 | contrastive | 160 | 0.250 | 0.500 | 0.006 | 0.500 | 0.000 | 0 |" in summary
    assert (
        "| 6-10 | plain | 160 | 0.125 | 0.000 | 0.000 | 0.500 | 0.006 (aliases 1) | 0 |" in summary
    )
    assert "| 6-10 | correct | +0.125 | +0.125 to +0.125 |" in summary
    assert "| 6-10 | new correct | +0.013 | +0.000 to +0.037 |" in summary  # 3 of 5 draws
    assert (tmp_path / "out" / "curve.png").stat().st_size > 0


@pytest.mark.slow
def test_a_call_trains_chunk_after_chunk_with_each_evaluation_between(tmp_path):
    """One call crosses a held-out evaluation and trains on (a call no longer ends at each
    multiple of --eval-every); the next resumes, and a spent budget only settles what is owed."""
    pytest.importorskip("trl")
    state = tmp_path / "state"
    tiny = ["--arm", "plain", "--model", "tiny-random", "--device", "cpu", "--eval-every", "2"]
    tiny += ["--total", "4", "--prompts", "1", "--generations", "2", "--max-tokens", "8"]
    tiny += ["--eval-jobs", "1", "--state", str(state)]

    def steps(name: str) -> list[int]:
        return [r["step"] for r in learning_curve.read_jsonl(state / "plain" / name)]

    done = script("learning_curve.py", *tiny, "--steps", "3")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "plain: steps 0 -> 3" in done.stdout
    assert steps("metrics.jsonl") == [1, 2, 3] and steps("heldout.jsonl") == [2, 2]
    metrics = learning_curve.read_jsonl(state / "plain" / "metrics.jsonl")
    assert [r["update_skipped"] for r in metrics] == [False] * 3  # every gradient finite

    done = script("learning_curve.py", *tiny, "--steps", "5", "--budget-s", "0")
    assert done.returncode == 0 and "plain: steps 3 -> 3" in done.stdout
    done = script("learning_curve.py", *tiny, "--steps", "5")
    assert done.returncode == 0 and "plain: steps 3 -> 4" in done.stdout
    assert steps("metrics.jsonl") == [1, 2, 3, 4] and steps("heldout.jsonl") == [2, 2, 4, 4]
