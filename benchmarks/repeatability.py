"""Reproducible reward under load: the same candidate's speedup over repeated evaluations, under
the pool's real production load and alone, against an independent plain loop.

    PYTHONPATH=src:. python3 benchmarks/repeatability.py --phase both --out DIR --submit-s 480
    PYTHONPATH=src:. python3 benchmarks/repeatability.py --phase load --resume --out DIR \\
        --alone DIR/repeatability-alone.json --submit-s 480
    PYTHONPATH=src:. python3 benchmarks/repeatability.py --phase plain --out DIR \\
        --alone DIR/repeatability-alone.json

The whole benchmark takes longer than one device call (10 minutes): `--submit-s` stops
submitting in time for what is in flight to finish, and `--resume` carries the load phase on in
the next call (on a machine still warm, DIR and the builds are still there).

- `alone`: honest candidates of the corpora (CUDA, Triton, PyTorch rewrites; the bundled tasks
  at full size, and at their small CPU sizes for kernels of a few microseconds) are built once
  through the pool, then timed by a plain paired CUDA-event loop in this process with nothing
  else running (the independent reference), sorted into bands by the candidate's time (under
  20 us, 50 us to 1 ms, over 1 ms), and `--per-band` of each band are evaluated `--alone-repeats`
  times one at a time. Writes `repeatability-alone.json`.
- `load`: the same candidates evaluated `--repeats` times each in one pool of `--jobs`
  workers, interleaved with as many fresh candidates (every one a new build: the throughput
  mix of CUDA, Triton and PyTorch rewrites), as RL and the audit run it. Writes
  `repeatability.json`: per band, the spread (max/min - 1 of the speedups) under load and
  alone, and the agreement |cudal1 / plain - 1| of the median under load; fresh candidates
  per hour.
- `plain`: the plain loop again over the chosen subjects (after a change to it), then the
  figures from the log.

Evaluations left unmeasured by interference (`gpu_shared`, `host_shared`) are counted and left
out of the spreads.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from benchmarks.throughput import mix
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.config import default_build_root
from cudal1.evaluate.evaluator import _build_env
from cudal1.evaluate.harness import set_numerics
from cudal1.evaluate.pool import LocalEvaluator
from cudal1.tasks import Task, load_suite, source_hash
from tests.corpus import load_cases

BANDS = {"lt20us": (0.0, 0.020), "50us_1ms": (0.050, 1.0), "gt1ms": (1.0, float("inf"))}
CURATED = {
    # over 1 ms at full size (the H200 plain loops of 2026-12-04 and -05): GEMMs, an MLP,
    # attention
    "gt1ms": [
        "cuda_gemm_tiled_smem@L1_1",
        "gemm_bias_relu_addmm@L2_1",
        "triton_gemm_bias_relu_ieee@L2_1",
        "mlp_addmm_relu_inplace@L3_1",
        "cuda_gemm_bias_relu_epilogue@L2_1",
        "gemm_transposed_b_linear@L1_5",
        "gemm_residual_addmm@L2_4",
        "causal_attention_baddbmm@L1_22",
    ],
    # 0.1 to 0.9 ms at full size: row reductions, scans, fused elementwise chains, a convolution
    "50us_1ms": [
        "cuda_softmax_rows_warp_shuffle@L1_11",
        "triton_layernorm_rows@L1_13",
        "cuda_elementwise_chain_fused@L1_21",
        "cuda_layernorm_two_pass@L1_13",
        "cuda_rmsnorm_fused@L1_14",
        "triton_softmax_online@L1_11",
        "cuda_cumsum_block_scan@L1_19",
        "conv_bn_relu_folded@L2_8",
    ],
    # the same kinds at the tasks' CPU sizes: a few microseconds on the H200 (the CUDA ones share
    # their builds with the full-size subjects: a build is keyed by the source)
    "lt20us": [
        "cuda_gelu_erff_vec4@L1_20s",
        "triton_gelu_erf@L1_20s",
        "cuda_rmsnorm_fused@L1_14s",
        "cuda_softmax_rows_warp_shuffle@L1_11s",
        "triton_sum_reduction_tiles@L1_17s",
        "cuda_elementwise_chain_fused@L1_21s",
        "triton_softmax_online@L1_11s",
        "gemm_bias_relu_addmm@L2_1s",
    ],
}
"""Eight per band, chosen from earlier runs so one device call builds only these (`--all` takes
every honest candidate); the plain loop decides each one's band, and at least six of each land in
it (the 2026-12-04 lists left five in two bands)."""


@dataclass
class Subject:
    """One honest candidate on one task at one size."""

    case: str
    task: Task
    source: str

    @property
    def key(self) -> str:
        return f"{self.case}@{self.task.id}"


def small_task(task: Task) -> Task | None:
    """The task with its CPU sizes as its only sizes (kernels of a few microseconds on a GPU)."""
    sizes = task.load("full").cpu_sizes
    if not sizes:
        return None
    overrides = "\n".join(f"{name} = {value!r}" for name, value in sizes.items())
    source = f"{task.source}\n\n# small sizes for the repeatability benchmark\n{overrides}\n"
    return Task(f"{task.id}s", task.level, task.name, source, f"{task.origin} (CPU sizes)")


def subjects(device: str) -> list[Subject]:
    suite = load_suite("bundled", validate=False)
    out = []
    for case in load_cases("honest"):  # PyTorch rewrites of the CPU corpus run on CUDA too
        if case.policy != "any":
            continue
        if device == "cuda" and case.device == "cpu" and "load_inline" in case.source:
            continue  # C++ written for CPU tensors
        if device == "cpu" and case.device != "cpu":
            continue
        task = suite.get(case.task)
        name = case.file.removesuffix(".py")
        out.append(Subject(name, task, case.source))
        small = small_task(task)
        if small is not None:
            out.append(Subject(name, small, case.source))
    unique = {s.key: s for s in out}
    return list(unique.values())


def plain_loop(subject: Subject, device: str, pairs: int) -> dict[str, float]:
    """The candidate and the reference, built here, timed in random pairs on fresh inputs with
    an L2 flush before each call: the simplest honest measurement, nothing of the evaluator's
    timing code. Under the evaluator's numerics (default tolerance: no TF32 in cuDNN), so both
    time the same kernels; with PyTorch's defaults a convolution here ran in TF32 and the
    evaluator's did not (2026-12-05, `conv_bn_relu_folded`: 1.18x here, 1.08x there)."""
    set_numerics(device, EvalConfig(device=device).tolerance)
    build_dir = default_build_root() / source_hash(subject.source)
    workdir = Path(tempfile.mkdtemp(prefix="plain-"))
    env = _build_env(EvalConfig(device=device, sandbox=False), workdir, build_dir)
    os.environ.update(env)
    (workdir / "tmp").mkdir(exist_ok=True)
    path = workdir / "candidate.py"
    path.write_text(subject.source)
    spec = importlib.util.spec_from_file_location(f"plain_{uuid.uuid4().hex}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task_module = subject.task.load("full")
    torch.manual_seed(0)
    reference = task_module.make_model(0).to(device).eval()
    torch.manual_seed(0)
    candidate = module.ModelNew(*task_module.init_inputs()).to(device).eval()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    # four input sets made once, used in turn: new values every call, no host work timed
    sets = [
        [x.to(device) if torch.is_tensor(x) else x for x in task_module.inputs()] for _ in range(4)
    ]
    calls = iter(range(1 << 30))

    def once(model: torch.nn.Module) -> float:
        args = sets[next(calls) % len(sets)]
        flush.fill_(1)
        if device == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        model(*args)
        return (time.perf_counter() - t0) * 1e3

    times: dict[str, list[float]] = {"cand": [], "ref": []}
    with torch.no_grad():
        for _ in range(5):
            once(candidate)
            once(reference)
        for _ in range(pairs):
            order = ["cand", "ref"]
            random.shuffle(order)
            for who in order:
                times[who].append(once(candidate if who == "cand" else reference))
    cand, ref = statistics.median(times["cand"]), statistics.median(times["ref"])
    return {"candidate_ms": cand, "reference_ms": ref, "speedup": ref / cand}


def plain_loops(pool: list[Subject], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The plain loop over each subject; one that fails is reported and left out."""
    plain: dict[str, dict[str, float]] = {}
    for s in pool:
        try:
            plain[s.key] = plain_loop(s, args.device, args.plain_pairs)
            print(f"  plain {s.key}: {plain[s.key]}", flush=True)
        except Exception as e:  # reported, and the subject is left out
            print(f"plain loop failed for {s.key}: {type(e).__name__}: {e}", flush=True)
        if args.device == "cuda":
            torch.cuda.empty_cache()  # nothing of this process stays on the GPU
    return plain


def band_of(candidate_ms: float) -> str | None:
    for name, (lo, hi) in BANDS.items():
        if lo <= candidate_ms < hi:
            return name
    return None


def spread(values: list[float]) -> float | None:
    return max(values) / min(values) - 1 if len(values) >= 2 else None


def summarise(values: list[float | None]) -> dict[str, float | None]:
    present = [v for v in values if v is not None]
    if not present:
        return {"median_spread": None, "max_spread": None}
    return {
        "median_spread": round(statistics.median(present), 4),
        "max_spread": round(max(present), 4),
    }


def evaluate_all(
    ev: LocalEvaluator,
    items: list[tuple[Subject | None, Task, str]],
    log: Path,
    phase: str,
    jobs: int,
    deadline: float,
    t_offset: float = 0.0,
) -> list[dict[str, Any]]:
    """Keep twice the pool's `jobs` in flight, in `items`' order, until the items run out or the
    clock passes `deadline` (time.monotonic); what is in flight then is waited for. Each result
    is appended to `log` as it comes, with its time since the phase began (`t_offset` carries on
    the clock of an earlier call's rows), so a call cut short still leaves what it measured."""
    t0 = time.monotonic() - t_offset
    pending, in_flight, done = iter(items), deque(), []
    with log.open("a") as f:
        while True:
            while len(in_flight) < 2 * jobs and time.monotonic() < deadline:
                item = next(pending, None)
                if item is None:
                    break
                s, task, src = item
                in_flight.append((s, src, ev.submit(task, src, fresh=True)))
            if not in_flight:
                break
            s, source, fut = in_flight.popleft()
            r = fut.result()
            row = {"phase": phase, "t": round(time.monotonic() - t0, 1)}
            row |= {"subject": s.key if s else None, "status": r.status, "speedup": r.speedup}
            row |= {"flags": [x.split(":")[0] for x in r.flags], "reasons": r.reasons[:1]}
            row |= {
                "compile_s": r.phase_seconds.get("compile"),
                "exclusive_s": r.phase_seconds.get("device.timing", 0.0)
                + r.phase_seconds.get("device.profile", 0.0),
                "device_s": r.phase_seconds.get("device", 0.0),
                "kind": _kind(source),
                "host_prefixes": r.env.get("host_prefixes", []),
            }
            if r.timing is not None:  # what the speedup was made of, to read a spread
                t = r.timing
                row["timing"] = {
                    "basis": t.speedup_basis,
                    "candidate_ms": t.candidate.median_ms,
                    "reference_ms": t.reference.median_ms,
                    "reference_clean_ms": t.reference_clean and t.reference_clean.median_ms,
                    "candidate_alone_ms": t.candidate_alone and t.candidate_alone.median_ms,
                    "host_ms_per_call": t.host_ms_per_call,
                    "bucket_spread": round(t.bucket_spread, 4),
                    "remeasured": t.remeasured,
                    "cover_us": t.cover_us,
                }
            done.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
    return done


def _kind(source: str) -> str:
    if "load_inline" in source:
        return "cuda" if "cuda_sources" in source else "cpp"
    return "triton" if "import triton" in source else "torch"


def rounds(subjects_: list[Subject], repeats: int, seed: int) -> list[Subject]:
    """Every subject once per round, in a shuffled order: a phase cut short leaves each subject
    with as many evaluations as the others, give or take one."""
    rng, out = random.Random(seed), []
    for _ in range(repeats):
        batch = list(subjects_)
        rng.shuffle(batch)
        out += batch
    return out


def speedups_by_subject(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["subject"] is None:
            continue
        got = out.setdefault(row["subject"], {"speedups": [], "unmeasured": 0, "statuses": []})
        got["statuses"].append(row["status"])
        if row["status"] == "ok" and row["speedup"] is None:
            got["unmeasured"] += 1
        elif row["speedup"] is not None:
            got["speedups"].append(row["speedup"])
    return out


def phase_alone(args: argparse.Namespace) -> dict[str, Any]:
    config = EvalConfig(device=args.device)
    wanted = {
        k
        for band, keys in CURATED.items()
        if not args.bands or band in args.bands
        for k in keys[: args.pool_per_band]
    }
    pool = [s for s in subjects(args.device) if args.all or s.key in wanted]
    print(f"{len(pool)} subjects; building them through the pool", flush=True)
    t0 = time.perf_counter()
    with LocalEvaluator(config, jobs=args.jobs) as ev:
        built = evaluate_all(
            ev, [(s, s.task, s.source) for s in pool], args.log, "build", args.jobs, args.deadline
        )
    ok = {row["subject"] for row in built if row["status"] == "ok"}
    print(f"built in {time.perf_counter() - t0:.0f} s; {len(ok)} ok", flush=True)
    for row in built:
        if row["status"] != "ok":
            print(f"  {row['subject']}: {row['status']} {row['reasons']}", flush=True)
    plain = plain_loops([s for s in pool if s.key in ok], args)
    chosen: dict[str, list[str]] = {}
    for name in BANDS:
        in_band = [k for k, p in plain.items() if band_of(p["candidate_ms"]) == name]
        random.Random(0).shuffle(in_band)
        chosen[name] = sorted(in_band[: args.per_band])
    print(f"bands: {chosen}", flush=True)
    picked = [s for s in pool if any(s.key in keys for keys in chosen.values())]
    print(
        f"alone: {len(picked)} subjects x {args.alone_repeats} evaluations, one at a time",
        flush=True,
    )
    with LocalEvaluator(config, jobs=1, warm=1) as ev:
        items = [(s, s.task, s.source) for s in rounds(picked, args.alone_repeats, 0)]
        done = evaluate_all(ev, items, args.log, "alone", 1, args.deadline)
    return {
        "gpu": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "plain": plain,
        "bands_chosen": chosen,
        "alone": speedups_by_subject(done),
    }


def phase_plain(args: argparse.Namespace, alone: dict[str, Any]) -> dict[str, Any]:
    """The plain loop again over the chosen subjects (built by an earlier phase on this
    machine), after a change to the loop; the earlier figures stay as `plain_earlier`."""
    keys = {k for keys in alone["bands_chosen"].values() for k in keys}
    plain = plain_loops([s for s in subjects(args.device) if s.key in keys], args)
    for k, p in plain.items():
        print(f"  plain {k}: {p['speedup']:.4f}x (was {alone['plain'][k]['speedup']:.4f}x)")
    return {**alone, "plain": plain, "plain_earlier": alone["plain"]}


def phase_load(args: argparse.Namespace, alone: dict[str, Any]) -> dict[str, Any]:
    """Each subject `--repeats` times, each beside a fresh candidate of the throughput mix
    (shuffled, so a phase cut short still has the mix). With `--resume`, the load rows already
    in the log count: only the evaluations still missing run, and the clock carries on, so
    several device calls make one phase (the pool's start again in each call is counted)."""
    config = EvalConfig(device=args.device)
    keys = {k for keys in alone["bands_chosen"].values() for k in keys}
    picked = [s for s in subjects(args.device) if s.key in keys]
    earlier = load_rows(args.log) if args.resume else []
    have = collections.Counter(row["subject"] for row in earlier if row["subject"] is not None)
    measured = []
    for s in rounds(picked, args.repeats, 1):
        if have[s.key] > 0:
            have[s.key] -= 1
        else:
            measured.append((s, s.task, s.source))
    suite = load_suite("bundled", validate=False)
    load = [(None, suite.get(t), src) for t, src in mix(args.device, len(measured))]
    random.Random(len(earlier)).shuffle(load)
    items = [x for pair in zip(measured, load, strict=True) for x in pair]
    offset = max((row["t"] for row in earlier), default=0.0)
    print(f"under load: {len(measured)} evaluations to go, {len(earlier)} done", flush=True)
    with LocalEvaluator(config, jobs=args.jobs) as ev:
        done = evaluate_all(ev, items, args.log, "load", args.jobs, args.deadline, offset)
    rows = earlier + done
    return load_figures(alone, rows, max((row["t"] for row in rows), default=0.0), args.jobs)


def load_rows(log: Path) -> list[dict[str, Any]]:
    """The under-load rows an earlier call appended to the log."""
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [row for row in rows if row["phase"] == "load"]


def load_figures(
    alone: dict[str, Any], done: list[dict[str, Any]], wall: float, jobs: int
) -> dict[str, Any]:
    """The figures of `repeatability.json` from the under-load rows (also as read back from
    `evaluations.jsonl` by `--phase report`, after a call was cut short)."""
    measured = [row for row in done if row["subject"] is not None]
    fresh = [row for row in done if row["subject"] is None]
    under_load = speedups_by_subject(done)
    bands: dict[str, Any] = {}
    for name, members in alone["bands_chosen"].items():
        spreads_load = [spread(under_load.get(k, {}).get("speedups", [])) for k in members]
        spreads_alone = [spread(alone["alone"].get(k, {}).get("speedups", [])) for k in members]
        devs = []
        for k in members:
            got = under_load.get(k, {}).get("speedups", [])
            if got:
                devs.append(abs(statistics.median(got) / alone["plain"][k]["speedup"] - 1))
        bands[name] = {
            "n": len(members),
            "under_load": summarise(spreads_load),
            "alone": summarise(spreads_alone),
            "agreement": {
                "median_abs_dev": round(statistics.median(devs), 4) if devs else None,
                "max_abs_dev": round(max(devs), 4) if devs else None,
            },
        }
    return {
        "commit": _commit(),
        "gpu": alone["gpu"],
        "load": {
            "jobs": jobs,
            "fresh_candidates": len(fresh),
            "fresh_ok": sum(row["status"] == "ok" for row in fresh),
            "measured_evaluations": len(measured),
            "wall_s": round(wall, 1),
            "unmeasured": sum(v["unmeasured"] for v in under_load.values()),
        },
        "throughput_per_hour": round(3600 * len(fresh) / wall, 1) if wall else None,
        "evaluations_per_hour": round(3600 * len(done) / wall, 1) if wall else None,
        "bands": bands,
        "subjects": {
            k: {
                "band": name,
                "plain": alone["plain"][k],
                "alone": alone["alone"].get(k),
                "under_load": under_load.get(k),
            }
            for name, members in alone["bands_chosen"].items()
            for k in members
        },
    }


def _commit() -> str:
    """CUDAL1_COMMIT when set (a device copy's git metadata can be older than its files)."""
    if os.environ.get("CUDAL1_COMMIT"):
        return os.environ["CUDAL1_COMMIT"]
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--phase", choices=["alone", "load", "both", "plain", "report"], required=True
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--alone", type=Path, help="The alone phase's JSON (for --phase load).")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=5, help="Evaluations of each, under load.")
    parser.add_argument("--alone-repeats", type=int, default=5, help="Evaluations of each, alone.")
    parser.add_argument(
        "--submit-s",
        type=float,
        default=1e9,
        help="Submit nothing more this many seconds after the start (what is in flight finishes).",
    )
    parser.add_argument(
        "--resume", action="store_true", help="Load phase: count the log's load rows, run the rest."
    )
    parser.add_argument("--per-band", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--plain-pairs", type=int, default=50)
    parser.add_argument("--bands", nargs="*", choices=list(BANDS), help="Only CURATED's of these.")
    parser.add_argument("--all", action="store_true", help="Every honest candidate, not CURATED.")
    parser.add_argument(
        "--pool-per-band", type=int, default=8, help="How many of CURATED's to build and time."
    )
    args = parser.parse_args()
    args.deadline = time.monotonic() + args.submit_s
    args.out.mkdir(parents=True, exist_ok=True)
    args.log = args.out / "evaluations.jsonl"
    if args.phase in ("report", "plain"):
        args.log = args.alone.parent / "evaluations.jsonl"
    if args.phase == "plain":  # the plain loop again; the figures from the log follow
        alone = phase_plain(args, json.loads(args.alone.read_text()))
        args.alone.write_text(json.dumps(alone, indent=1))
    if args.phase == "both":
        alone = phase_alone(args)
        (args.out / "repeatability-alone.json").write_text(json.dumps(alone, indent=1))
        return report(phase_load(args, alone), args.out)
    if args.phase in ("report", "plain"):  # from the log and the alone phase's JSON
        rows = load_rows(args.log)
        alone = json.loads(args.alone.read_text())
        wall = max((row["t"] for row in rows), default=0.0)
        return report(load_figures(alone, rows, wall, args.jobs), args.out)
    if args.phase == "alone":
        data = phase_alone(args)
        (args.out / "repeatability-alone.json").write_text(json.dumps(data, indent=1))
        for name, keys in data["bands_chosen"].items():
            print(f"{name}: {len(keys)} subjects")
            for k in keys:
                got = data["alone"].get(k, {}).get("speedups", [])
                print(
                    f"  {k}: plain {data['plain'][k]['speedup']:.3f}x "
                    f"({data['plain'][k]['candidate_ms']:.4f} ms); alone {got}"
                )
        return 0
    return report(phase_load(args, json.loads(args.alone.read_text())), args.out)


def report(data: dict[str, Any], out: Path) -> int:
    (out / "repeatability.json").write_text(json.dumps(data, indent=1))
    print(f"fresh candidates per hour under load: {data['throughput_per_hour']}")
    print(
        "| band | n | spread under load (median / max) | alone (median / max) | "
        "agreement (median / max) |"
    )
    print("|---|---|---|---|---|")
    for name, b in data["bands"].items():
        ul, al, ag = b["under_load"], b["alone"], b["agreement"]
        print(
            f"| {name} | {b['n']} | {ul['median_spread']} / {ul['max_spread']} | "
            f"{al['median_spread']} / {al['max_spread']} | "
            f"{ag['median_abs_dev']} / {ag['max_abs_dev']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
