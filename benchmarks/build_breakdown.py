"""Where a cold build's time goes: each honest corpus candidate that compiles C++ or CUDA
(`load_inline`) is built from nothing in a fresh process, and ninja's own log splits the build
into the host binding file (`torch/extension.h` and pybind11), the `.cu` files through nvcc,
the C++ sources and the link; what is left of the wall time is Python (importing torch and the
candidate, hashing sources, loading the built module). A second build of the same source shows
what a cached build costs. With `--fast`, each candidate is built cold a third time as the
evaluator builds it: its precompiled `torch/extension.h` on CPATH (`cudal1.evaluate.pch`, built
first, its time reported) and, where torch has CUDA, nvcc's front ends side by side with the
host compile behind a precompiled host prefix (`cudal1.evaluate.nvcc_driver` as PYTORCH_NVCC,
the prefixes made first too); the objects of the two cold builds are
compared byte for byte, with the names nvcc varies between any two builds blanked.

    PYTHONPATH=src:. python3 benchmarks/build_breakdown.py --out DIR [--arch 9.0] [--jobs N]
        [--fast] [--limit N] [--kind cuda|cpp]

Writes DIR/build_breakdown.json and prints a table. No GPU is needed (the evaluator's builder
has none either): CUDA is compiled for `--arch`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.corpus import load_cases

BUILD_ONE = """
import sys, time
t0 = time.perf_counter()
import torch
from cudal1.tasks import load_suite
from cudal1.evaluate.harness import import_candidate
t_torch = time.perf_counter() - t0
task = load_suite("bundled", validate=False).get(sys.argv[2]).load("full")
module = import_candidate(__import__("pathlib").Path(sys.argv[1]))
module.ModelNew(*task.init_inputs())
print(t_torch, time.perf_counter() - t0)
"""


def ninja_parts(ext_root: Path) -> dict[str, float]:
    """Seconds per kind of ninja target over every extension built under `ext_root`, and
    `ninja`: the seconds from the first target's start to the last one's end per extension
    (ninja runs the binding file and the `.cu` files side by side, so the parts overlap)."""
    parts = {"binding": 0.0, "nvcc": 0.0, "cpp": 0.0, "link": 0.0, "ninja": 0.0}
    for log in ext_root.rglob(".ninja_log"):
        spans = [
            line.split("\t")
            for line in log.read_text().splitlines()
            if line and not line.startswith("#")
        ]
        if spans:
            parts["ninja"] += (max(int(s[1]) for s in spans) - min(int(s[0]) for s in spans)) / 1e3
        for start, end, _, target, *_ in spans:
            seconds = (int(end) - int(start)) / 1e3
            if target.endswith(".so"):
                parts["link"] += seconds
            elif target.endswith(".cuda.o") or target.endswith(".cu.o"):
                parts["nvcc"] += seconds
            elif target == "main.o":
                parts["binding"] += seconds
            else:
                parts["cpp"] += seconds
    return parts


def evaluator_env(out: Path, arch: str) -> tuple[dict[str, str], float]:
    """What the evaluator adds to a build's environment: its precompiled headers (built under
    OUT/pch unless there already, the seconds that took) on CPATH, and the nvcc driver, with
    the host prefixes made for `arch` where torch has CUDA."""
    from cudal1.evaluate import EvalConfig, pch
    from cudal1.evaluate.evaluator import _build_env, host_prefix_toolchain

    t0 = time.perf_counter()
    if pch.ensure(out / "pch") is None:
        raise SystemExit("this machine cannot precompile torch/extension.h (no GCC?)")
    toolchain = host_prefix_toolchain(EvalConfig(device="cuda"), arch)
    if toolchain is not None:
        pch.ensure_host_prefixes(out / "pch", *toolchain)
    seconds = round(time.perf_counter() - t0, 1)
    env = _build_env(EvalConfig(device="cpu", build_root=out / "builds"), out, out)  # pch: out/pch
    return {k: env[k] for k in ("CPATH", "PYTORCH_NVCC") if k in env}, seconds


def objects(root: Path) -> dict[str, bytes]:
    """A build tree's objects, by path, nvcc's varying names blanked. Not the `.so`: linked
    from a `.cu` object, its symbol hash tables and build id follow from the module id, which
    nvcc draws anew for every build."""
    from cudal1.evaluate.nvcc_driver import masked

    return {str(p.relative_to(root)): masked(p.read_bytes()) for p in root.rglob("*.o")}


def build(path: Path, task: str, ext_root: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, seconds of it importing torch) for one build in a fresh process."""
    run_env = {**os.environ, **env, "TORCH_EXTENSIONS_DIR": str(ext_root)}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BUILD_ONE, str(path), task],
        env=run_env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    t_torch, _ = map(float, out.stdout.split()[-2:])
    return wall, t_torch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="9.0", help="TORCH_CUDA_ARCH_LIST for the builds.")
    parser.add_argument("--jobs", type=int, default=None, help="MAX_JOBS (default: ninja's).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N candidates.")
    parser.add_argument("--kind", choices=("cuda", "cpp"), default=None, help="Only this kind.")
    parser.add_argument("--fast", action="store_true", help="Also build as the evaluator does.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"TORCH_CUDA_ARCH_LIST": args.arch, "CUDA_VISIBLE_DEVICES": ""}
    if args.jobs:
        env["MAX_JOBS"] = str(args.jobs)
    fast_env, pch_s = evaluator_env(args.out, args.arch) if args.fast else ({}, None)
    unique = {c.file: c for c in load_cases("honest") if "load_inline" in c.source}
    cases = [
        c
        for c in unique.values()
        if args.kind is None or ("cuda_sources" in c.source) == (args.kind == "cuda")
    ][: args.limit]
    rows: list[dict[str, Any]] = []
    for case in cases:
        path = Path(__file__).parent.parent / "tests" / "honest" / "candidates" / case.file
        with tempfile.TemporaryDirectory(prefix="breakdown-") as tmp:
            ext_root = Path(tmp) / "ext"
            try:
                cold, t_torch = build(path, case.task, ext_root, env)
                cached, _ = build(path, case.task, ext_root, env)
            except RuntimeError as e:
                print(f"{case.file}: {e}", flush=True)
                continue
            parts = ninja_parts(ext_root)
            if fast_env:  # again from nothing, at the same path (objects name their sources)
                plain = objects(ext_root)
                shutil.rmtree(ext_root)
                cold_fast, _ = build(path, case.task, ext_root, {**env, **fast_env})
                fast_parts = ninja_parts(ext_root)
                same = objects(ext_root) == plain
        kind = "cuda" if parts["nvcc"] > 0 else "cpp"
        row = {"case": case.file, "task": case.task, "kind": kind, "cold_s": round(cold, 2)}
        row |= {k: round(v, 2) for k, v in parts.items()}
        row |= {
            "python_s": round(cold - parts["ninja"], 2),
            "torch_import_s": round(t_torch, 2),
        }
        row |= {"cached_s": round(cached, 2)}
        if fast_env:
            row |= {
                "cold_fast_s": round(cold_fast, 2),
                "binding_fast": round(fast_parts["binding"], 2),
                "nvcc_fast": round(fast_parts["nvcc"], 2),
                "ninja_fast": round(fast_parts["ninja"], 2),
                "same_objects": same,
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        kind: {
            "n": len(group),
            **{
                f"median_{k}": round(statistics.median(r[k] for r in group), 2)
                for k in (
                    "cold_s",
                    "ninja",
                    "binding",
                    "nvcc",
                    "cpp",
                    "link",
                    "python_s",
                    "cached_s",
                )
                + (("cold_fast_s", "ninja_fast", "binding_fast", "nvcc_fast") if fast_env else ())
            },
            **({"all_objects_same": all(r["same_objects"] for r in group)} if fast_env else {}),
        }
        for kind in ("cuda", "cpp")
        if (group := [r for r in rows if r["kind"] == kind])
    }
    data = {
        "env": env,
        "cpus": os.cpu_count(),
        "pch_build_s": pch_s,
        "rows": rows,
        "summary": summary,
    }
    (args.out / "build_breakdown.json").write_text(json.dumps(data, indent=1))
    print("| kind | n | cold | ninja | binding | nvcc | C++ | link | Python | cached |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, s in summary.items():
        print(
            f"| {kind} | {s['n']} | {s['median_cold_s']} | {s['median_ninja']} | "
            f"{s['median_binding']} | "
            f"{s['median_nvcc']} | {s['median_cpp']} | {s['median_link']} | "
            f"{s['median_python_s']} | {s['median_cached_s']} |"
        )
    if fast_env:
        print(f"precompiled headers built in {pch_s} s; the evaluator's build: {fast_env}")
        print(
            "| kind | cold | as the evaluator builds | ninja | binding | with PCH | nvcc "
            "| with the driver | objects identical |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for kind, s in summary.items():
            print(
                f"| {kind} | {s['median_cold_s']} | {s['median_cold_fast_s']} | "
                f"{s['median_ninja']} -> {s['median_ninja_fast']} | "
                f"{s['median_binding']} | {s['median_binding_fast']} | {s['median_nvcc']} | "
                f"{s['median_nvcc_fast']} | {s['all_objects_same']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
