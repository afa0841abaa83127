"""The host compile of a `.cu` behind a precompiled host prefix (`evaluate/nvcc_driver.py
--host-prefix`, made by `pch.ensure_host_prefixes`): how many candidates share a precompiled
prefix, and what it saves.

The prefixes of `pch.HOST_PREFIX_UNITS` (with each of `pch.HOST_PREFIX_FLAGS`) are made first
(timed). Then each honest `load_inline` CUDA candidate's `.cu` is compiled the way torch's
extension builder compiles it, with the `extra_cuda_cflags` the candidate asks for (its
`build.ninja`, `PYTORCH_NVCC` the driver), once with `--make-host-prefix` into a scratch
directory (whose file name says which prefix the candidate has, so whether one of the made ones
is it), then `--repeat` times each (0: none), in turn, without and with `--host-prefix`; the
objects are compared with the names nvcc varies blanked. `--cuda-l1 FILE --cuda-l1-limit N`
counts, for N of CUDA-L1's `load_inline` kernels found at import, which share a made prefix (no
timing). `--units` makes only the named units' prefixes (a shorter run).

    CUDA_HOME=/usr/local/cuda PYTHONPATH=src:. python3 benchmarks/host_prefix.py --out DIR \
        [--limit 3] [--repeat 2] [--units aten_cuda] \
        [--cuda-l1 ../shared/data/cuda-l1-h100.jsonl --cuda-l1-limit 6]

Writes DIR/host_prefix.json and prints a table. No GPU is needed; torch must have CUDA's headers
(on a CPU build of torch, see `benchmarks/results/2026-12-07-cpu/summary.md`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.nvcc_schedule import CANDIDATES, cuda_unit_of
from cudal1.evaluate import nvcc_driver, pch

DRIVER = [sys.executable, "-I", "-S", nvcc_driver.__file__]


Unit = tuple[str, tuple[str, ...]]
"""A `.cu` and the `extra_cuda_cflags` its candidate asks for."""


def build(work: Path, unit: Unit, front: list[str], arch: str, name: str) -> float:
    """Seconds to build `unit`'s object in a fresh `work` through torch's ninja rule."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "cuda.cu").write_text(unit[0])
    t0 = time.perf_counter()
    done = pch.cuda_object(work, front, arch, name=name, cuda_flags=unit[1])
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {(done.stdout + done.stderr)[-2000:]}")
    return seconds


def own_prefix(unit: Unit, nvcc: str, arch: str, work: Path) -> tuple[str | None, float]:
    """The file name of `unit`'s host prefix (None: it has none) and the make's seconds."""
    scratch = work / "own-prefix"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    seconds = build(
        work / "make", unit, [*DRIVER, "--make-host-prefix", str(scratch), nvcc], arch, "own"
    )
    made = [p.name.removesuffix(".gch") for p in scratch.glob("*.h.gch")]
    return (made[0] if made else None), seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="9.0")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cuda-l1", type=Path, default=None)
    parser.add_argument("--cuda-l1-limit", type=int, default=6)
    parser.add_argument("--units", default=",".join(pch.HOST_PREFIX_UNITS))
    args = parser.parse_args()
    if unknown := set(args.units.split(",")) - set(pch.HOST_PREFIX_UNITS):
        parser.error(
            f"--units: no unit {', '.join(sorted(unknown))}; known: {','.join(pch.HOST_PREFIX_UNITS)}"
        )
    nvcc = shutil.which("nvcc", path=os.path.join(os.environ.get("CUDA_HOME", ""), "bin"))
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("host_prefix: no nvcc; set CUDA_HOME or put nvcc on PATH")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="host-prefix-") as tmp:
        root = Path(tmp) / "pch"
        t0 = time.perf_counter()
        wanted = {u: pch.HOST_PREFIX_UNITS[u] for u in args.units.split(",")}
        directory = pch.ensure_host_prefixes(root, nvcc, args.arch, units=wanted)
        make_s = time.perf_counter() - t0
        if directory is None:
            raise SystemExit("host_prefix: no host prefix could be made (see the log)")
        made = {p.name.removesuffix(".gch"): p.stat().st_size for p in directory.glob("*.h.gch")}
        units = {r.name.rsplit("-", 1)[0]: r.read_text() for r in (directory / "units").iterdir()}
        print(f"made {len(made)} prefixes in {make_s:.1f} s: {units}", flush=True)
        sources = {
            p.stem: unit
            for p in sorted(CANDIDATES.glob("cuda_*.py"))
            if (unit := cuda_unit_of(p.read_text(), str(p)))
        }
        if args.limit is not None:
            sources = dict(list(sources.items())[: args.limit])
        rows: list[dict[str, Any]] = []
        fronts = {
            "driver": [*DRIVER, nvcc],
            "with_prefix": [*DRIVER, "--host-prefix", str(directory), nvcc],
        }
        for i, (name, unit) in enumerate(sources.items()):
            work = Path(tmp) / name
            prefix, own_s = own_prefix(unit, nvcc, args.arch, work)
            seconds: dict[str, list[float]] = {mode: [] for mode in fronts}
            objects: dict[str, bytes] = {}
            for _ in range(args.repeat):
                for mode, front in fronts.items():  # in turn, so drift reaches both alike
                    # at one path: the object names the `.cu` as ninja gives it, absolute
                    seconds[mode].append(build(work / "build", unit, front, args.arch, f"c{i}"))
                    objects[mode] = nvcc_driver.masked(
                        (work / "build" / "cuda.cuda.o").read_bytes()
                    )
            row = {
                "candidate": name,
                "cuda_flags": list(unit[1]),
                "prefix": prefix,
                "shares_a_made_prefix": prefix in made,
                "make_own_prefix_s": round(own_s, 2),
                "seconds": {m: [round(s, 2) for s in v] for m, v in seconds.items()},
                "same_object": objects["driver"] == objects["with_prefix"] if objects else None,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        cuda_l1 = []
        if args.cuda_l1:
            for line in args.cuda_l1.read_text().splitlines():
                if len(cuda_l1) >= args.cuda_l1_limit:
                    break
                entry = json.loads(line)
                unit = cuda_unit_of(entry.get("custom_code") or "")
                if unit is None:
                    continue
                task = f"L{entry['level_id']}_{entry['task_id']}"
                try:
                    prefix, _ = own_prefix(unit, nvcc, args.arch, Path(tmp) / "cuda-l1")
                except RuntimeError:  # a kernel this torch no longer compiles
                    cuda_l1.append({"task": task, "prefix": None, "compiles": False})
                    continue
                cuda_l1.append(
                    {
                        "task": task,
                        "cuda_flags": list(unit[1]),
                        "prefix": prefix,
                        "shares": prefix in made,
                    }
                )
                print(json.dumps(cuda_l1[-1]), flush=True)
    report = {
        "arch": args.arch,
        "nvcc": nvcc,
        "make_prefixes_s": round(make_s, 2),
        "prefixes": {
            name: {"file": f, "gch_mb": round(made[f] / 2**20, 1)} for name, f in units.items()
        },
        "rows": rows,
        "cuda_l1": cuda_l1,
    }
    (args.out / "host_prefix.json").write_text(json.dumps(report, indent=1) + "\n")
    print("| candidate | shares a made prefix | driver s | with the prefix s | same object |")
    print("|---|---|---|---|---|")
    for r in rows:
        plain, fast = (
            f"{statistics.median(r['seconds'][m]):.2f}" if r["seconds"][m] else "-" for m in fronts
        )
        print(
            f"| {r['candidate']} | {r['shares_a_made_prefix']} | {plain} | {fast} | {r['same_object']} |"
        )
    shared = sum(r["shares_a_made_prefix"] for r in rows)
    print(f"honest corpus: {shared} of {len(rows)} share a made prefix")
    if cuda_l1:
        built = [c for c in cuda_l1 if c.get("compiles", True)]
        shared = sum(c["shares"] for c in built)
        print(f"CUDA-L1: {shared} of the {len(built)} that compile share a made prefix")
    return 0


if __name__ == "__main__":
    sys.exit(main())
