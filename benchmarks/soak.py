"""Soak test on the CPU: many candidates through the local pool, 10 % of them crashing, hanging,
exiting early or allocating too much; counts harness failures, lost and duplicated results, and
samples the parent's memory.

    PYTHONPATH=src:. python3 benchmarks/soak.py --out DIR --count 1000 --jobs 2

Writes DIR/soak.json (with the memory samples) and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.pool import LocalEvaluator
from cudal1.tasks import load_suite

HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
KINDS = {
    "honest": "        return torch.nn.functional.gelu(x)\n",
    "wrong": "        return torch.nn.functional.gelu(x) * 1.01\n",
    "crash": "        import faulthandler\n        faulthandler._sigsegv()\n",
    "hang": "        while True:\n            pass\n",
    "exit": "        raise SystemExit(0)\n",
    "oom": "        return torch.empty(1 << 45)\n",
}
WEIGHTS = {"honest": 0.8, "wrong": 0.1, "crash": 0.025, "hang": 0.025, "exit": 0.025, "oom": 0.025}
EXPECTED = {
    "honest": "ok",
    "wrong": "incorrect",
    "crash": "runtime_error",
    "hang": "timeout",
    "exit": "runtime_error",
    "oom": "runtime_error",
}


def rss_mb() -> float:
    """Resident memory of this process, from /proc (current, not peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = load_suite("bundled", validate=False).get("L1_20")
    config = EvalConfig(
        device="cpu", trials=1, timing_budget_s=0.05, min_pairs=7, max_pairs=7, run_timeout_s=15
    )
    rng = random.Random(0)
    kinds = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=args.count)
    harness_failures, results, memory = [], {}, []
    t0 = time.perf_counter()
    with LocalEvaluator(config, jobs=args.jobs, cache=False) as ev:
        submitted = {}
        for i, kind in enumerate(kinds):
            source = HEAD + KINDS[kind] + f"# soak {i} {uuid.uuid4().hex}\n"
            submitted[ev.submit(task, source)] = (i, kind)
        # Each future is dropped once read, so the memory samples show the harness, not this
        # script holding a thousand EvalResults.
        for n in range(len(submitted)):
            future = next(iter(submitted))  # in submission order
            i, kind = submitted.pop(future)
            try:
                r = future.result()
                if i in results:
                    harness_failures.append(f"duplicate result for {i}")
                results[i] = (kind, r.status)
            except Exception as e:
                harness_failures.append(f"{i}: {type(e).__name__}: {e}")
            del future
            if n % 50 == 0:
                memory.append(
                    {
                        "done": n,
                        "seconds": round(time.perf_counter() - t0, 1),
                        "rss_mb": round(rss_mb(), 1),
                    }
                )
    wall = time.perf_counter() - t0
    lost = [i for i in range(args.count) if i not in results]
    wrong_verdict = Counter(f"{k}->{s}" for k, s in results.values() if EXPECTED[k] != s)
    summary = {
        "candidates": args.count,
        "results": len(results),
        "lost": len(lost),
        "harness_failures": harness_failures,
        "unexpected_verdicts": dict(wrong_verdict),
        "by_kind": dict(Counter(k for k, _ in results.values())),
        "wall_s": round(wall, 1),
        "per_hour": round(3600 * args.count / wall, 1),
        "memory": memory,
    }
    (args.out / "soak.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "memory"}, indent=1))
    print(
        f"parent RSS MB: first {memory[0]['rss_mb']}, last {memory[-1]['rss_mb']}, max {max(m['rss_mb'] for m in memory)}"
    )
    return 0 if not harness_failures and not lost else 1


if __name__ == "__main__":
    sys.exit(main())
