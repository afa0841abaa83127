"""What the compile farm takes off the measuring actor: the same fresh C++ candidates
(`load_inline`, a new source hash each, so every build is cold) evaluated through the Ray
backend twice, once with each evaluation actor building its own candidates and once with a
CPU-only build actor building them. Per candidate it records the evaluation actor's own time
(`phase_seconds.total` of the evaluation there), the compile seconds and where the build ran.

    PYTHONPATH=src:. python3 benchmarks/compile_farm.py --out DIR [--candidates 4]
        [--device cpu] [--address ADDR]

On one machine (a loopback cluster) the two modes share its cores, so the figure that carries
over to a cluster is the evaluation actor's time per candidate, not the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks.repeatability import _commit
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.ray_backend import RayEvaluator
from cudal1.tasks import load_suite

CANDIDATE = Path(__file__).parent.parent / "tests" / "honest" / "candidates"


def run_mode(config: EvalConfig, builders: int, sources: list[str], address: str | None) -> dict:
    task = load_suite("bundled", validate=False).get("L1_20")
    t0 = time.perf_counter()
    with RayEvaluator(config, address=address, actors=1, jobs=2, builders=builders) as ev:
        results = [f.result() for f in [ev.submit(task, s) for s in sources]]
    wall = time.perf_counter() - t0
    rows = [
        {
            "status": r.status,
            "actor_s": r.phase_seconds.get("total"),
            "compile_s": r.phase_seconds.get("compile"),
            "built_on": r.env.get("built_on", "evaluation actor"),
            "reasons": r.reasons,
        }
        for r in results
    ]
    ok = [row for row in rows if row["status"] == "ok"]
    return {
        "builders": builders,
        "wall_s": round(wall, 1),
        "ok": len(ok),
        "median_actor_s": round(statistics.median(r["actor_s"] for r in ok), 2) if ok else None,
        "median_compile_s": round(statistics.median(r["compile_s"] for r in ok), 2) if ok else None,
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--address", default=None, help="A Ray cluster (default: loopback).")
    args = parser.parse_args()
    import ray

    ray.init(address=args.address, num_cpus=None if args.address else 4, log_to_driver=False)
    base = (CANDIDATE / "build_in_own_directory.py").read_text()
    stamp = time.time_ns()
    config = EvalConfig(device=args.device, build_root=args.out / "builds")
    modes = {}
    for builders in (0, 1):  # fresh sources per mode: every build cold
        sources = [f"{base}\n# farm {stamp} {builders} {i}\n" for i in range(args.candidates)]
        modes["farm" if builders else "in_actor"] = run_mode(
            config, builders, sources, args.address
        )
    ray.shutdown()
    data = {"commit": _commit(), "device": args.device, "cpus": os.cpu_count(), "modes": modes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compile_farm.json").write_text(json.dumps(data, indent=1))
    print("| mode | ok | evaluation actor s per candidate (median) | compile s | wall s |")
    print("|---|---|---|---|---|")
    for name, m in modes.items():
        print(
            f"| {name} | {m['ok']}/{args.candidates} | {m['median_actor_s']} | "
            f"{m['median_compile_s']} | {m['wall_s']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
