"""Soak of the HTTP service on the CPU: many requests from concurrent clients through a real
`cudal1 serve --http` process, 10 % of the candidates crashing or hanging; counts answered and
lost requests and unexpected verdicts, and measures what the service adds to each answer.

    PYTHONPATH=src:. python3 benchmarks/service_soak.py --out DIR --count 1000 --clients 32 --jobs 2

Every request is a fresh candidate for L1_20 (a unique comment: no cache hits), drawn from
`soak.py`'s kinds: 80 % honest, 10 % wrong, 5 % segfault, 5 % infinite loop. Each client is a
`cudal1.client.ServiceClient` with its default retries; the queue (`--max-queue`, default 16)
is smaller than the number of clients, so 503s and their retries are part of the run. Per
answer, with its round trip measured by the client:

- beyond evaluation: round trip - the EvalResult's `phase_seconds["total"]` (queueing,
  retries, HTTP, JSON and the thread hop together);
- queued: the server's `Server-Timing` queue time (waiting for one of `--jobs` slots);
- overhead: round trip - the server's queue and evaluate times - retry waits, i.e. what HTTP,
  JSON and the event loop cost (retried requests are left out of it).

Writes DIR/service_soak.json (with the server's resident memory sampled every 50 answers) and
prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

from benchmarks.soak import EXPECTED, HEAD, KINDS
from cudal1.client import ServiceClient

WEIGHTS = {"honest": 0.8, "wrong": 0.1, "crash": 0.05, "hang": 0.05}
EVAL_SETS = [
    "eval.trials=1",
    "eval.timing_budget_s=0.05",
    "eval.min_pairs=7",
    "eval.max_pairs=7",
    "eval.run_timeout_s=15",
]


def start_server(workdir: Path, jobs: int, max_queue: int) -> tuple[subprocess.Popen, str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = uuid.uuid4().hex
    (workdir / "token").write_text(token)
    sets = [*EVAL_SETS, f"serve.db={workdir / 'exemplars.db'}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cudal1", "serve", "--http", f"127.0.0.1:{port}"]
        + ["--token-file", str(workdir / "token"), "--device", "cpu"]
        + ["--jobs", str(jobs), "--max-queue", str(max_queue)]
        + [x for s in sets for x in ("--set", s)],
        stdout=(workdir / "server.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: see {workdir / 'server.log'}")
        try:
            if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                return proc, url, token
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not come up in 300 s")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    cuts = (
        statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    )
    return {
        "p50_s": round(cuts[49], 4),
        "p99_s": round(cuts[98], 4),
        "max_s": round(max(values), 4),
    }


async def soak(url: str, token: str, kinds: list[str], clients: int, pid: int) -> dict:
    todo: asyncio.Queue[tuple[int, str]] = asyncio.Queue()
    for item in enumerate(kinds):
        todo.put_nowait(item)
    rows: dict[int, dict] = {}
    failures: list[str] = []
    memory: list[dict] = []
    t0 = time.perf_counter()

    async def client_loop() -> int:
        async with ServiceClient(url, token) as client:
            while not todo.empty():
                i, kind = todo.get_nowait()
                source = HEAD + KINDS[kind] + f"# service soak {i} {uuid.uuid4().hex}\n"
                retried = client.retried
                start = time.perf_counter()
                try:
                    result, timing = await client.evaluate_timed("L1_20", source)
                except Exception as e:  # a lost request: counted, never hidden
                    failures.append(f"{i} ({kind}): {type(e).__name__}: {e}")
                    continue
                round_trip = time.perf_counter() - start
                if i in rows:
                    failures.append(f"{i}: answered twice")
                rows[i] = {
                    "kind": kind,
                    "status": result.status,
                    "round_trip_s": round_trip,
                    "beyond_eval_s": round_trip - result.phase_seconds["total"],
                    "queue_s": timing["queue"],
                    "server_eval_s": timing["evaluate"],
                    "retried": client.retried - retried,
                }
                if len(rows) % 50 == 0:
                    memory.append(
                        {
                            "answered": len(rows),
                            "seconds": round(time.perf_counter() - t0, 1),
                            "server_rss_mb": round(rss_mb(pid), 1),
                        }
                    )
            return client.retried

    retried = await asyncio.gather(*(client_loop() for _ in range(clients)))
    wall = time.perf_counter() - t0
    answered = list(rows.values())
    unretried = [r for r in answered if r["retried"] == 0]
    return {
        "requests": len(kinds),
        "clients": clients,
        "answered": len(rows),
        "lost": len(kinds) - len(rows),
        "failures": failures,
        "unexpected_verdicts": dict(
            Counter(
                f"{r['kind']}->{r['status']}"
                for r in answered
                if EXPECTED[r["kind"]] != r["status"]
            )
        ),
        "by_kind": dict(Counter(r["kind"] for r in answered)),
        "retries": sum(retried),
        "requests_retried": len(answered) - len(unretried),
        "wall_s": round(wall, 1),
        "per_hour": round(3600 * len(rows) / wall, 1),
        "latency_beyond_evaluation": quantiles([r["beyond_eval_s"] for r in answered]),
        "queued": quantiles([r["queue_s"] for r in answered]),
        "overhead_unretried": quantiles(
            [r["round_trip_s"] - r["queue_s"] - r["server_eval_s"] for r in unretried]
        ),
        "memory": memory,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--max-queue", type=int, default=16)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    kinds = random.Random(0).choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=args.count)
    with tempfile.TemporaryDirectory(prefix="cudal1-service-soak-") as tmp:
        proc, url, token = start_server(Path(tmp), args.jobs, args.max_queue)
        try:
            summary = asyncio.run(soak(url, token, kinds, args.clients, proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            exit_code = proc.wait(timeout=300)
        log = (Path(tmp) / "server.log").read_text()
    summary["server_exit_code"] = exit_code
    summary["server_errors_logged"] = log.count("Exception in ASGI application")
    summary["server_500s"] = log.count('" 500')
    summary["jobs"], summary["max_queue"] = args.jobs, args.max_queue
    summary["cpus"] = os.cpu_count()
    (args.out / "service_soak.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "memory"}, indent=1))
    if summary["memory"]:
        rss = [m["server_rss_mb"] for m in summary["memory"]]
        print(f"server RSS MB: first {rss[0]}, last {rss[-1]}, max {max(rss)}")
    return 0 if summary["lost"] == 0 and not summary["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
