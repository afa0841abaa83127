"""Start-up cost of the candidate sandbox: the same program started directly and through the
launcher (`cudal1.evaluate.sandbox`), N times each, median and spread; on a GPU machine also a
CUDA kernel run inside the sandbox (the GPU device files reach it).

    PYTHONPATH=src python3 benchmarks/sandbox_cost.py [--runs 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cudal1.evaluate import sandbox

PROGRAM = [sys.executable, "-S", "-c", "pass"]
CUDA_CHECK = [
    sys.executable,
    "-c",
    "import torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); "
    "print('cuda inside the sandbox:', torch.cuda.get_device_name(), float((x * 2).sum()))",
]


def run_once(argv: list[str], sandboxed: bool) -> float:
    t0 = time.perf_counter()
    if sandboxed:
        proc, control = sandbox.start(argv, writable=[], gpu=True, stdout=subprocess.DEVNULL)
        proc.wait()
        control.close()
    else:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sandbox.check_available()
    direct = [run_once(PROGRAM, False) for _ in range(args.runs)]
    boxed = [run_once(PROGRAM, True) for _ in range(args.runs)]
    row = {
        "runs": args.runs,
        "direct_ms_median": round(1e3 * statistics.median(direct), 1),
        "sandboxed_ms_median": round(1e3 * statistics.median(boxed), 1),
        "overhead_ms_median": round(
            1e3 * (statistics.median(boxed) - statistics.median(direct)), 1
        ),
        "sandboxed_ms_max": round(1e3 * max(boxed), 1),
    }
    try:
        import torch

        if torch.cuda.is_available():
            proc, control = sandbox.start(CUDA_CHECK, writable=[], gpu=True, stdout=subprocess.PIPE)
            row["cuda_check"] = proc.communicate()[0].decode().strip()
            control.close()
    except ImportError:
        pass
    if args.out:
        args.out.write_text(json.dumps(row, indent=1))
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
