"""How long one candidate's `.cu` takes through nvcc, and through nvcc drivers: each honest
corpus CUDA candidate's `cuda_sources` is written as `load_inline` writes it and compiled with
the flags torch's extension builder gives a `.cu` (`-MD -MF`, sm_90 by default), by nvcc and
by each driver named, in turn, `--repeat` times. A driver's objects are compared with nvcc's,
the names nvcc varies between any two builds blanked. No GPU is needed; torch's CUDA headers
are, and a CPU build of torch ships them. The toolkit must have cuBLAS and friends' headers
(on CPATH otherwise).

    PYTHONPATH=src:. python3 benchmarks/nvcc_schedule.py --out DIR [--arch 9.0] [--repeat 3]
        [--limit N] [--driver NAME=PATH ...]

Without `--driver`, the checkout's own driver (`cudal1.evaluate.nvcc_driver`) is the one
driver. Writes DIR/nvcc_schedule.json and prints medians per candidate.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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

from cudal1.evaluate import nvcc_driver, pch

CANDIDATES = Path(__file__).resolve().parent.parent / "tests" / "honest" / "candidates"


class _Captured(BaseException):
    """Raised in place of `load_inline`: past a candidate's own `except Exception`."""


def cuda_source(candidate: Path) -> str | None:
    """The `.cu` file `load_inline` would write for `candidate` (None: it compiles none)."""
    unit = cuda_unit_of(candidate.read_text(), str(candidate))
    return None if unit is None else unit[0]


def cuda_unit_of(code: str, name: str = "candidate") -> tuple[str, tuple[str, ...]] | None:
    """The `.cu` file `load_inline` would write for the candidate `code` when imported, and the
    `extra_cuda_cflags` it asks for (None: it compiles none then, or fails first)."""
    from torch.utils import cpp_extension

    def capture(*args: Any, **kwargs: Any) -> None:
        raise _Captured(kwargs)

    real = cpp_extension.load_inline
    cpp_extension.load_inline = capture
    try:  # what the candidate prints, and any file it writes, are kept out of the way
        with (
            tempfile.TemporaryDirectory() as scratch,
            contextlib.chdir(scratch),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            exec(compile(code, name, "exec"), {"__name__": "candidate"})
    except _Captured as found:
        asked = found.args[0]
        sources = asked.get("cuda_sources")
        if not sources:
            return None
        body = sources if isinstance(sources, str) else "\n".join(sources)
        return pch.LOAD_INLINE_LINES + body, tuple(asked.get("extra_cuda_cflags") or ())
    except Exception:
        return None
    finally:
        cpp_extension.load_inline = real
    return None


def torch_cuda_flags(arch: str) -> list[str]:
    """`cuda_cflags` of the `build.ninja` torch writes for an extension with a `.cu`."""
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:  # a CPU build of torch: name this machine's toolkit
        toolkit = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        if not Path(toolkit).is_dir():
            raise SystemExit(f"nvcc_schedule: no CUDA toolkit at {toolkit}; set CUDA_HOME")
        cpp_extension.CUDA_HOME = toolkit
    os.environ["TORCH_CUDA_ARCH_LIST"] = arch
    return pch.extension_flags("cuda_cflags", with_cuda=True)


def compile_once(front: list[str], flags: list[str], source: str, work: Path) -> float:
    """Seconds to compile `source` to `work/cuda.cuda.o` with `front` (nvcc, or a driver and
    nvcc), as ninja would: `-MD -MF`, then torch's flags."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "cuda.cu").write_text(source)
    command = [*front, "-MD", "-MF", "cuda.cuda.o.d", *flags, "-c", "cuda.cu", "-o", "cuda.cuda.o"]
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(front[:3])}: {done.stderr.strip()[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="9.0")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--driver", action="append", default=[], help="NAME=PATH of an nvcc driver script."
    )
    args = parser.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc_schedule: no nvcc on PATH; install a CUDA toolkit")
    drivers = dict(d.split("=", 1) for d in args.driver) or {"driver": nvcc_driver.__file__}
    fronts = {"nvcc": [nvcc]} | {
        name: [sys.executable, "-I", "-S", str(Path(path).resolve()), nvcc]
        for name, path in drivers.items()
    }
    flags = torch_cuda_flags(args.arch)
    sources = {
        path.stem: source
        for path in sorted(CANDIDATES.glob("cuda_*.py"))
        if (source := cuda_source(path)) is not None
    }
    if args.limit:
        sources = dict(list(sources.items())[: args.limit])
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for name, source in sources.items():
        seconds: dict[str, list[float]] = {mode: [] for mode in fronts}
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.repeat):
                for mode, front in fronts.items():  # in turn, so drift reaches every mode alike
                    seconds[mode].append(compile_once(front, flags, source, Path(tmp) / mode))
            built = {
                mode: nvcc_driver.masked((Path(tmp) / mode / "cuda.cuda.o").read_bytes())
                for mode in fronts
            }
            same = {mode: built[mode] == built["nvcc"] for mode in drivers}
        row = {"candidate": name, "seconds": seconds, "same_object_as_nvcc": same}
        rows.append(row)
        medians = "  ".join(f"{m} {statistics.median(s):6.2f}" for m, s in seconds.items())
        print(f"{name:34s} {medians}  same: {same}", flush=True)
    summary = {
        mode: round(statistics.median(statistics.median(r["seconds"][mode]) for r in rows), 2)
        for mode in fronts
    }
    report = {
        "arch": args.arch,
        "repeat": args.repeat,
        "cpus": len(os.sched_getaffinity(0)),
        "flags": flags,
        "drivers": drivers,
        "median_of_medians_s": summary,
        "candidates": rows,
    }
    (args.out / "nvcc_schedule.json").write_text(json.dumps(report, indent=1) + "\n")
    print("median over candidates:", "  ".join(f"{m} {s:.2f} s" for m, s in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
