"""What `cudal1 optimize` leaves in its output directory: `best.py`, a short report (`report.md`,
which `cudal1 report OUT` rewrites as the full one), `summary.json`, and `run.json` (the suite and
evaluator settings and the code's version, which `cudal1 report` reads as it reads a bench run's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudal1.exemplars import ExemplarDB
from cudal1.optimize.loop import OptimizeSummary
from cudal1.version import code_version


def write_outputs(
    out_dir: Path, summary: OptimizeSummary, db: ExemplarDB, meta: dict[str, Any]
) -> None:
    """`meta`: the suite (`suite`: a suite spec or a task file) and the `eval` settings."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "run.json").write_text(
        json.dumps(
            {"kind": "optimize", "baselines": ["eager"], "cudal1": code_version(), **meta}, indent=1
        )
    )
    best = summary.best
    if best is not None and not best.is_reference:
        (out_dir / "best.py").write_text(best.code)
    lines = [
        f"# cudal1 optimize: {summary.task_id}",
        "",
        f"Best: {'the reference (nothing faster yet)' if best is None or best.is_reference else f'{best.speedup:.3f}x (exemplar {best.id})'}",
        f"Resumed after round {summary.resumed_from}" if summary.resumed_from else "Fresh run",
        "",
        "| round | candidates | correct | best this round | best so far | statuses |",
        "|---|---|---|---|---|---|",
    ]
    for r in summary.rounds:
        this = f"{r.best_speedup:.3f}" if r.best_speedup is not None else "-"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()))
        lines.append(
            f"| {r.round} | {r.candidates} | {r.correct} | {this} | {r.best_so_far:.3f} | {statuses} |"
        )
    lines += ["", "Failures by reason:"]
    reasons: dict[str, int] = {}
    for e in db.exemplars(summary.task_id):
        if e.status != "ok" and e.result:
            key = f"{e.status}: {(e.result.get('reasons') or ['-'])[0][:100]}"
            reasons[key] = reasons.get(key, 0) + 1
        elif e.status == "unparsed":
            reasons["unparsed: no usable ModelNew in the answer"] = (
                reasons.get("unparsed: no usable ModelNew in the answer", 0) + 1
            )
    lines += [f"- {n} x {k}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1])] or [
        "- none"
    ]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    (out_dir / "summary.json").write_text(
        json.dumps(
            {
                "task": summary.task_id,
                "best_speedup": best.speedup if best else None,
                "best_id": best.id if best else None,
                "rounds": [r.__dict__ for r in summary.rounds],
                "failures": summary.failures,
            },
            indent=1,
        )
    )
