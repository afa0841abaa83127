"""Evaluation throughput as GRPO needs it: fresh candidates per hour on one GPU box, every one a
new source (a cold build), in a GRPO-like mix (about half CUDA C++, a quarter Triton, a quarter
PyTorch rewrites), with the reproducibility goal checked under that load: six honest
candidates of 50 us to 1 ms are evaluated three times each, spread over the run.

    PYTHONPATH=src:. python3 benchmarks/rl_throughput.py --out DIR [--jobs 8] [--duration-s 480]

Submits until `--duration-s` has passed (twice the pool's jobs in flight), waits for what is in
flight, and writes DIR/rl_throughput.json: `commit`, `mix` (fresh candidates by kind),
`fresh_per_hour`, `compile_s` (median and 90th percentile over the fresh candidates),
`cuda_behind_host_prefix` (the fresh CUDA candidates whose build included a host prefix),
`gpu_busy_fraction` (exclusive, timed device-lock seconds over wall time) and
`spread_check` (median and max of max/min - 1 over each subject's speedups), and every
evaluation to DIR/evaluations.jsonl as it finishes. Runs on the CPU too (`--device cpu`: C++
instead of CUDA, no Triton), which checks the script, not the figures.

Before the clock starts, the machine's precompiled headers (the binding header's variants and
the host prefixes, `evaluate/pch.py`) are made if missing, as a long GRPO run would have them
for all but its first minutes; `headers_s` records that one-time cost (`--cold-headers`
leaves them to the pool's background builder, inside the measured time).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from benchmarks.repeatability import CURATED, _commit, evaluate_all, spread, subjects
from benchmarks.throughput import mix
from cudal1.evaluate import EvalConfig, pch
from cudal1.evaluate.evaluator import host_prefix_toolchain
from cudal1.evaluate.pool import LocalEvaluator
from cudal1.tasks import load_suite

SHARES = (0.5, 0.25)
"""CUDA C++ and Triton; PyTorch rewrites the rest."""


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--duration-s", type=float, default=480.0)
    parser.add_argument("--subjects", type=int, default=6, help="Honest 50 us-1 ms candidates.")
    parser.add_argument("--repeats", type=int, default=3, help="Evaluations of each subject.")
    parser.add_argument("--every", type=int, default=4, help="One subject per this many items.")
    parser.add_argument("--cold-headers", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    wanted = CURATED["50us_1ms"][: args.subjects]
    picked = [s for s in subjects(args.device) if s.key in wanted]
    if args.device == "cpu":  # the curated ones are GPU kernels: any CPU subjects will do
        picked = subjects("cpu")[: args.subjects]
    checks = [(s, s.task, s.source) for _ in range(args.repeats) for s in picked]
    suite = load_suite("bundled", validate=False)
    fresh_items = mix(args.device, 4000, SHARES)
    random.Random(0).shuffle(fresh_items)
    items = []
    for i, (task, source) in enumerate(fresh_items):
        if i % args.every == 0 and checks:
            items.append(checks.pop(0))
        items.append((None, suite.get(task), source))

    config = EvalConfig(device=args.device)
    headers_s = None
    if args.device == "cuda" and config.precompiled_headers and not args.cold_headers:
        started = time.perf_counter()
        pch.ensure(config.pch_root)
        toolchain = host_prefix_toolchain(config)
        if toolchain is not None:
            pch.ensure_host_prefixes(config.pch_root, *toolchain)
        headers_s = round(time.perf_counter() - started, 1)
    log = args.out / "evaluations.jsonl"
    t0 = time.perf_counter()
    with LocalEvaluator(config, jobs=args.jobs) as ev:
        rows = evaluate_all(ev, items, log, "rl", args.jobs, time.monotonic() + args.duration_s)
    wall = time.perf_counter() - t0

    fresh = [r for r in rows if r["subject"] is None]
    compile_s = [r["compile_s"] for r in fresh if r["compile_s"] is not None]
    by_subject: dict[str, list[float]] = {}
    for r in rows:
        if r["subject"] is not None and r["speedup"] is not None:
            by_subject.setdefault(r["subject"], []).append(r["speedup"])
    spreads = [s for v in by_subject.values() if (s := spread(v)) is not None]
    kinds: dict[str, int] = {}
    for r in fresh:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    data = {
        "commit": _commit(),
        "device": args.device,
        "jobs": args.jobs,
        "wall_s": round(wall, 1),
        "headers_s": headers_s,
        "mix": kinds,
        "fresh": len(fresh),
        "fresh_ok": sum(r["status"] == "ok" for r in fresh),
        "fresh_per_hour": round(3600 * len(fresh) / wall, 1),
        "compile_s": {"median": quantile(compile_s, 0.5), "p90": quantile(compile_s, 0.9)},
        "compile_s_by_kind": {
            k: quantile([r["compile_s"] for r in fresh if r["kind"] == k and r["compile_s"]], 0.5)
            for k in kinds
        },
        "cuda_behind_host_prefix": sum(
            bool(r["host_prefixes"]) for r in fresh if r["kind"] == "cuda"
        ),
        "gpu_busy_fraction": round(sum(r["exclusive_s"] for r in rows) / wall, 3),
        "device_held_fraction": round(sum(r["device_s"] for r in rows) / wall, 3),
        "spread_check": {
            "subjects": len(by_subject),
            "evaluations": sum(len(v) for v in by_subject.values()),
            "median_spread": round(statistics.median(spreads), 4) if spreads else None,
            "max_spread": round(max(spreads), 4) if spreads else None,
            "speedups": by_subject,
        },
        "statuses": {
            s: sum(r["status"] == s for r in fresh) for s in sorted({r["status"] for r in fresh})
        },
    }
    (args.out / "rl_throughput.json").write_text(json.dumps(data, indent=1))
    print("| fresh/h | mix | compile s median / p90 | GPU busy | spread median / max (n) |")
    print("|---|---|---|---|---|")
    check = data["spread_check"]
    print(
        f"| {data['fresh_per_hour']} | {kinds} | {data['compile_s']['median']} / "
        f"{data['compile_s']['p90']} | {data['gpu_busy_fraction']:.0%} | "
        f"{check['median_spread']} / {check['max_spread']} ({check['subjects']}) |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
