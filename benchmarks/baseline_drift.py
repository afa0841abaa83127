"""Is "the reference runs slower beside the candidate" the candidate's doing, or the machine's?

The evaluator times the reference twice: alone in the judge (the clean baseline) and paired with
the candidate in the candidate process. It rejects as `slowed_baseline` when the second is far
slower (HACKS.md #10). This script evaluates the same tasks under three conditions and prints the
ratio reference-beside / reference-alone for each:

  concurrent  CUDA-L1's kernels, --jobs JOBS (other evaluations compile and load meanwhile)
  alone       the same kernels, one evaluation at a time (builds cached by the first pass)
  identity    the reference itself as the candidate, one at a time (an honest null: any drift
              here is the harness's own)

    PYTHONPATH=src:. python3 benchmarks/baseline_drift.py --out $OUT --solutions cuda-l1.jsonl \\
        --tasks L1_32,L1_39 --jobs 8
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from cudal1.tasks import load_suite


def bench(suite: str, solutions: str, tasks: str, jobs: int, out: Path, device: str) -> list[dict]:
    cmd = [sys.executable, "-m", "cudal1", "bench", suite, "--solutions", solutions]
    cmd += ["--device", device, "--tasks", tasks, "--jobs", str(jobs), "--out", str(out)]
    with open(out.parent / f"{out.name}.log", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
    results = out / "results.jsonl"
    return (
        [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    )


def identity_solutions(suite: str, tasks: list[str], where: Path) -> Path:
    """Each task's reference, renamed ModelNew: the candidate that cannot slow anything."""
    where.mkdir(parents=True, exist_ok=True)
    by_id = {t.id: t for t in load_suite(suite).tasks}
    for task_id in tasks:
        source = re.sub(r"\bclass Model\b", "class ModelNew", by_id[task_id].source)
        (where / f"{task_id}.py").write_text(source.replace("super(Model,", "super(ModelNew,"))
    return where


def drift(row: dict) -> tuple[float | None, float | None, float | None, str]:
    res = row.get("result") or {}
    t = res.get("timing") or {}
    verdict = res.get("status") or row.get("error") or "?"
    if res.get("status") == "rejected":
        verdict += ":" + (res.get("reasons") or ["?"])[0].split(":")[0]
    if not t.get("reference_clean"):
        return None, None, None, verdict
    beside, clean = t["reference"]["median_ms"], t["reference_clean"]["median_ms"]
    return beside, clean, beside / clean, verdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--solutions", required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    tasks = args.tasks.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    ids = identity_solutions(args.solutions, tasks, args.out / "identity-src")
    conditions = {
        "concurrent": (args.solutions, args.jobs),
        "alone": (args.solutions, 1),
        "identity": (str(ids), 1),
    }
    runs = {
        name: bench(args.solutions, sols, args.tasks, jobs, args.out / name, args.device)
        for name, (sols, jobs) in conditions.items()
    }
    table = {name: {r["task_id"]: drift(r) for r in rows} for name, rows in runs.items()}
    (args.out / "drift.json").write_text(json.dumps(table, indent=1))
    print(f"{'task':8}" + "".join(f"{n:>34}" for n in runs))
    for task_id in tasks:
        cells = []
        for name in runs:
            beside, clean, ratio, verdict = table[name].get(task_id, (None, None, None, "-"))
            cell = f"{beside:.4f}/{clean:.4f}={ratio:.2f} {verdict[:12]}" if ratio else verdict[:30]
            cells.append(f"{cell:>34}")
        print(f"{task_id:8}" + "".join(cells))


if __name__ == "__main__":
    main()
