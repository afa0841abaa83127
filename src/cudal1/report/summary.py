"""Paper-style summary statistics over a bench run's rows.

Two counting rules, both labelled in every table:
- `paper`: a missing, failing or rejected task counts as 1.0x (CUDA-L1's convention);
- `strict`: it counts as a failure: 0x in the mean and quantiles, never "fast"; the geometric
  mean is then taken over correct tasks only (and says how many).
fast_p is KernelBench's metric: the fraction of all tasks that are correct and faster than p times
the baseline (fast_0 is the fraction correct and measured). An unmeasured solution (correct, but
every timing was disturbed by other work, so no speedup) counts like a failure in every figure,
fast_p's numerators included, and `unmeasured` counts such tasks separately.

A source may hold several samples per task (a KernelBench run directory): the statistics are
then over tasks, each counted by its best sample (best of k), and `sample_summary` gives the same
statistics for each sample number alone.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from cudal1.evaluate.result import reason_kind

FAST_P = (0.0, 1.0, 1.2, 2.0)
RULES = ("paper", "strict")


def load_rows(path) -> list[dict[str, Any]]:
    import json
    from pathlib import Path

    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def speedup_of(row: dict[str, Any], baseline: str, strict: bool = False) -> float | None:
    """The measured speedup against `baseline`, or None when the row failed or was refused
    (under the strict rule, also when it beat the roofline, which no honest kernel can, or when
    the task is degenerate: a null answer passes it, so its speedups show nothing)."""
    result = row.get("result")
    if not result or result.get("status") != "ok":
        return None
    if strict and ((row.get("roofline") or {}).get("beyond") or degenerate(row)):
        return None
    return (row.get("speedups") or {}).get(baseline) or (
        result.get("speedup") if baseline == "eager" else None
    )


def unmeasured(row: dict[str, Any]) -> bool:
    """Correct, but every timing was disturbed by other work: there is no speedup to count."""
    result = row.get("result") or {}
    return result.get("status") == "ok" and result.get("speedup") is None


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _geomean(xs: Iterable[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None


def by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by task (a task with k samples has k rows), in first-seen order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r.get("task_id") or r.get("key") or "", []).append(r)
    return out


def samples_in(rows: list[dict[str, Any]]) -> list[int]:
    """The sample numbers present (empty when the source has one solution per task)."""
    return sorted({r["sample"] for r in rows if r.get("sample") is not None})


def best_speedup(rows: list[dict[str, Any]], baseline: str, strict: bool = False) -> float | None:
    """Best of k: the highest speedup among a task's correct samples, None if none is correct."""
    values = [s for r in rows if (s := speedup_of(r, baseline, strict)) is not None]
    return max(values, default=None)


def stats(
    rows: list[dict[str, Any]], baseline: str, rule: str, sample: int | None = None
) -> dict[str, Any]:
    """Statistics over the tasks of `rows`: each task counted by its best sample, or, with
    `sample`, by that sample alone (a task without it counts as a failure)."""
    strict = rule == "strict"
    chosen = [
        task_rows if sample is None else [r for r in task_rows if r.get("sample") == sample]
        for task_rows in by_task(rows).values()
    ]
    measured = [best_speedup(task_rows, baseline, strict) for task_rows in chosen]
    # tasks with no measured speedup whose only correct samples were not measured
    not_measured = sum(
        s is None and any(unmeasured(r) for r in task_rows)
        for s, task_rows in zip(measured, chosen, strict=True)
    )
    correct = [s for s in measured if s is not None]
    fill = 1.0 if rule == "paper" else 0.0
    values = [s if s is not None else fill for s in measured]
    if not values:
        return {"tasks": 0}
    geo = _geomean(values) if rule == "paper" else _geomean(correct)
    return {
        "tasks": len(values),
        "correct": len(correct),
        "mean": statistics.fmean(values),
        "max": max(values),
        "p75": quantile(values, 0.75),
        "median": quantile(values, 0.5),
        "p25": quantile(values, 0.25),
        "geomean": geo,
        "geomean_over": len(values) if rule == "paper" else len(correct),
        "above_1.01": sum(s > 1.01 for s in correct),
        "unmeasured": not_measured,
        **{f"fast_{p:g}": sum(s > p for s in correct) / len(values) for p in FAST_P},
    }


def groups(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """overall, per level, and per split (train / heldout), in that order."""
    scored = [r for r in rows if r.get("level") is not None]
    out = {"overall": scored}
    for level in sorted({r["level"] for r in scored}):
        out[f"level {level}"] = [r for r in scored if r["level"] == level]
    for split in ("train", "heldout"):
        part = [r for r in scored if r.get("split") == split]
        if part:
            out[split] = part
    return out


def summary(rows: list[dict[str, Any]], baselines: list[str]) -> dict[str, Any]:
    return {
        name: {b: {rule: stats(part, b, rule) for rule in RULES} for b in baselines}
        for name, part in groups(rows).items()
    }


def sample_summary(rows: list[dict[str, Any]], baselines: list[str]) -> dict[str, Any]:
    """Over all scored tasks: each sample number alone, then best of k ({} with no samples)."""
    samples = samples_in(rows)
    if not samples:
        return {}
    scored = groups(rows)["overall"]
    out = {
        f"sample {s}": {b: {rule: stats(scored, b, rule, s) for rule in RULES} for b in baselines}
        for s in samples
    }
    out[f"best of {len(samples)}"] = {
        b: {rule: stats(scored, b, rule) for rule in RULES} for b in baselines
    }
    return out


def degenerate(row: dict[str, Any]) -> list[str]:
    """The null answers (zeros, constant, ...) that pass the row's task under the run's
    tolerance: non-empty means the task cannot tell a real kernel from a constant."""
    hygiene = row.get("hygiene") or {}
    mode = (row.get("result") or {}).get("tolerance_mode") or "calibrated"
    return list((hygiene.get("passed_nulls") or {}).get(mode) or [])


def refused(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose solution cudal1 did not accept as an honest speedup, with why; entries that
    the source itself claimed as speedups (CUDA-L1's score > 1) are marked."""
    out = []
    for r in rows:
        result = r.get("result") or {}
        status = result.get("status")
        claimed = (r.get("claimed") or {}).get("eager")
        beyond = (r.get("roofline") or {}).get("beyond")
        nulls = degenerate(r)
        if status == "ok" and not beyond and not nulls:
            continue
        if status is None and r.get("error") == "no submission":
            continue
        reasons = result.get("reasons") or ([r["error"]] if r.get("error") else [])
        flagged: dict[str, str] = {}  # why a correct solution is still no honest speedup
        if beyond:
            flagged["beyond roofline"] = "faster than the roofline allows"
        if nulls:
            flagged["degenerate task"] = f"degenerate task: null answers pass ({', '.join(nulls)})"
        out.append(
            {
                "task_id": r.get("task_id") or r.get("key"),
                "sample": r.get("sample"),
                "status": status or "error",
                "reasons": [*reasons, *flagged.values()],
                "flagged": list(flagged),
                "flags": result.get("flags", []),
                "claimed": claimed,
                "claimed_speedup": claimed is not None and claimed > 1.0,
            }
        )
    return out


def refusal_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Refused rows by their first reason's kind (the flag name, or the status)."""
    counts: dict[str, int] = {}
    for r in refused(rows):
        if r["status"] == "ok":  # correct, but beyond the roofline or on a degenerate task
            key = f"flagged: {r['flagged'][0]}"
        else:
            key = f"{r['status']}: {reason_kind(r['reasons'][0] if r['reasons'] else '')}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def technique_table(rows: list[dict[str, Any]], baseline: str = "eager") -> list[dict[str, Any]]:
    """Per technique: how many correct solutions use it, and their median and geomean speedup."""
    by: dict[str, list[float]] = {}
    for r in rows:
        s = speedup_of(r, baseline)
        if s is None:
            continue
        for t in r.get("techniques") or []:
            by.setdefault(t, []).append(s)
    return sorted(
        (
            {"technique": t, "n": len(v), "median": statistics.median(v), "geomean": _geomean(v)}
            for t, v in by.items()
        ),
        key=lambda d: -d["n"],
    )
