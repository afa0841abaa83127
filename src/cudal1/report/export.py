"""`cudal1 report RUN_DIR --csv / --json`: a run's solutions and summary as files for scripts.

`solutions.csv` has one row per solution (per sample when a task has several): where it came
from, its status and reasons, its flags, its speedup against every baseline measured, the times
behind them, and its roofline. `report.json` holds the same rows (lists kept as lists) with the
summary the Markdown report shows: per group, baseline and counting rule, and per sample (and,
with `--compare`, the agreement with each other run). Each row names the cudal1 version that
evaluated it.
Both leave the code out: `results.jsonl` (or the exemplar database) keeps it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudal1.report.summary import (
    degenerate,
    refusal_counts,
    sample_summary,
    speedup_of,
    summary,
    unmeasured,
)

LIST_FIELDS = ("reasons", "flags", "techniques", "degenerate_nulls")
"""Fields that are lists; the CSV joins them with `; `."""


def solution_record(row: dict[str, Any], baselines: list[str]) -> dict[str, Any]:
    """One flat record per solution; `speedup_vs_B` is the measured speedup (None unless the
    solution is correct and measured), `unmeasured` whether it is correct but its timing was
    disturbed by other work (no speedup), `strict_counted` whether the strict rule counts it."""
    result = row.get("result") or {}
    roof = row.get("roofline") or {}
    measured = row.get("baselines") or {}
    record: dict[str, Any] = {
        "task_id": row.get("task_id"),
        "sample": row.get("sample"),
        "level": row.get("level"),
        "name": row.get("name"),
        "split": row.get("split"),
        "origin": row.get("origin"),
        "status": result.get("status") or "error",
        "unmeasured": unmeasured(row),
        "error": row.get("error"),
        "reasons": list(result.get("reasons") or []),
        "flags": list(result.get("flags") or []),
        "techniques": list(row.get("techniques") or []),
        "candidate_ms": result.get("candidate_ms"),
        "reference_ms": result.get("reference_ms"),
    }
    for b in baselines:
        record[f"speedup_vs_{b}"] = speedup_of(row, b)
        record[f"{b}_ms"] = (measured.get(b) or {}).get("median_ms")
    record |= {
        "strict_counted": speedup_of(row, baselines[0], strict=True) is not None,
        "roofline_fraction": roof.get("fraction"),
        "beyond_roofline": roof.get("beyond"),
        "degenerate_nulls": degenerate(row),
        "claimed_eager": (row.get("claimed") or {}).get("eager"),
        "retried_alone": bool(row.get("retried_alone")),
        "cudal1": row.get("cudal1"),
    }
    return record


def write_csv(path: Path, rows: list[dict[str, Any]], baselines: list[str]) -> Path:
    records = [solution_record(r, baselines) for r in rows]
    columns = list(solution_record({}, baselines))
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        for rec in records:
            writer.writerow(
                {
                    k: "; ".join(map(str, v)) if k in LIST_FIELDS else ("" if v is None else v)
                    for k, v in rec.items()
                }
            )
    return path


def write_json(
    path: Path,
    name: str,
    meta: dict[str, Any],
    rows: list[dict[str, Any]],
    baselines: list[str],
    compared: Sequence[tuple[str, dict[str, Any]]] = (),
) -> Path:
    """`compared`: other runs' names, each with its agreement with this one (`--compare`)."""
    doc: dict[str, Any] = {
        "run": name,
        "meta": meta,
        "baselines": baselines,
        "summary": summary(rows, baselines),
        "per_sample": sample_summary(rows, baselines),
        "refusals_by_reason": refusal_counts(rows),
        "solutions": [solution_record(r, baselines) for r in rows],
    }
    if compared:
        doc["agreements"] = [{"with": name, **agree} for name, agree in compared]
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path
