"""Evaluation throughput: fresh candidates per hour, compile included, for a realistic mix, with
the local pool against one-at-a-time evaluation of the same candidates.

    PYTHONPATH=src:. python3 benchmarks/throughput.py --out $OUT --count 40 --jobs 8
    PYTHONPATH=src:. python3 benchmarks/throughput.py --out $OUT --gpus 2 --backend ray --sequential 0

The mix is drawn from the honest corpus for the device: about 40 % CUDA C++ (load_inline), 10 %
Triton, 50 % PyTorch rewrites. Each candidate gets a unique comment, so every one is a fresh
build (no cache hits). GPU busy fraction = time in timed phases (which hold the device lock
exclusively) over wall time, per GPU with `--gpus`; scaling efficiency is then read by
comparing per-hour figures of runs at 1, 2 and 4 GPUs on the same `--count`. Writes
OUT/throughput.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

from cudal1.evaluate import EvalConfig, evaluate
from cudal1.evaluate.service import BACKENDS, make_evaluator
from cudal1.tasks import load_suite
from tests.corpus import load_cases


def mix(device: str, count: int, shares: tuple[float, float] = (0.4, 0.1)) -> list[tuple[str, str]]:
    """`count` fresh candidates, `shares` of them (CUDA C++, Triton), the rest PyTorch
    rewrites; on CUDA the rewrites come from the CPU corpus too (they run on either device)."""
    cases = load_cases("honest", device)
    if device == "cuda":
        cases += [c for c in load_cases("honest", "cpu") if "load_inline" not in c.source]
    cuda = [c for c in cases if "load_inline" in c.source]
    triton = [c for c in cases if "triton" in c.source and c not in cuda]
    torch_ = [c for c in cases if c not in cuda and c not in triton]
    want = {
        "cuda": round(shares[0] * count) if cuda else 0,
        "triton": round(shares[1] * count) if triton else 0,
    }
    want["torch"] = count - want["cuda"] - want["triton"]  # and whatever a missing kind leaves
    out = []
    for kind, pool in (("cuda", cuda), ("triton", triton), ("torch", torch_)):
        for i in range(want[kind] if pool else 0):
            case = pool[i % len(pool)]
            out.append((case.task, case.source + f"\n# throughput {uuid.uuid4().hex}\n"))
    return out


def summarize(label: str, results: list, wall: float, gpus: int = 1) -> dict:
    busy = sum(  # exclusive device-lock seconds
        r.phase_seconds.get("device.timing", 0.0) + r.phase_seconds.get("device.profile", 0.0)
        for r in results
    )
    return {
        "mode": label,
        "gpus": gpus,
        "candidates": len(results),
        "ok": sum(r.status == "ok" for r in results),
        "wall_s": round(wall, 1),
        "per_hour": round(3600 * len(results) / wall, 1),
        "device_busy_fraction": round(busy / (wall * gpus), 3),
        "median_compile_s": round(
            statistics.median(r.phase_seconds.get("compile", 0.0) for r in results), 2
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--sequential", type=int, default=10, help="How many to run one at a time.")
    parser.add_argument("--gpus", type=int, default=None, help="GPUs the pool spreads over.")
    parser.add_argument("--backend", default="local", choices=BACKENDS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    suite = load_suite("bundled", validate=False)
    config = EvalConfig(device=args.device)
    rows = []

    items = mix(args.device, args.count)
    t0 = time.perf_counter()
    ev = make_evaluator(args.backend, config, jobs=args.jobs, gpus=args.gpus)
    try:
        futures = [ev.submit(suite.get(task), src) for task, src in items]
        pooled = [f.result() for f in futures]
    finally:
        ev.close()
    label = f"{args.backend}, {args.jobs} jobs, {args.gpus or 1} GPU(s)"
    rows.append(summarize(label, pooled, time.perf_counter() - t0, args.gpus or 1))

    if args.sequential:
        items = mix(args.device, args.sequential)
        t0 = time.perf_counter()
        sequential = [evaluate(suite.get(task), src, config) for task, src in items]
        rows.append(summarize("one at a time", sequential, time.perf_counter() - t0))

    (args.out / "throughput.json").write_text(json.dumps(rows, indent=1))
    print("| mode | candidates | ok | wall s | per hour | busy per GPU | median compile s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['candidates']} | {r['ok']} | {r['wall_s']} | {r['per_hour']} | "
            f"{r['device_busy_fraction']:.0%} | {r['median_compile_s']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
