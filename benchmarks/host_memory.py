"""How much host memory an honest GPU candidate process holds, by the counters the sandbox's
ceiling reads (`sandbox.py`): VmData for RLIMIT_DATA, RssAnon + RssShmem for the launcher's
watch. One sandboxed process, under the evaluator's default ceiling, runs what candidates run
(CUDA context, cuBLAS, cuDNN with benchmark search, a Triton kernel, torch.compile, 1 GiB of
pinned memory) and reports the counters after each step.

    PYTHONPATH=src python3 benchmarks/host_memory.py --out DIR

Writes DIR/host_memory.json; prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from cudal1.evaluate import EvalConfig, sandbox

STEPS = r"""
import json, torch

def counters(step):
    fields = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmSize", "VmData", "VmHWM", "RssAnon", "RssShmem"):
            fields[key] = int(value.split()[0]) >> 10  # MiB
    print(json.dumps({"step": step, **fields}), flush=True)

counters("torch imported")
x = torch.randn(4096, 4096, device="cuda")
(x @ x).sum().item()
counters("CUDA context, cuBLAS matmul")
torch.backends.cudnn.benchmark = True
conv = torch.nn.Conv2d(64, 128, 3).cuda()
conv(torch.randn(32, 64, 112, 112, device="cuda")).sum().item()
counters("cuDNN conv (benchmark search)")
import triton, triton.language as tl

@triton.jit
def add(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(a + i, mask=i < n) + tl.load(b + i, mask=i < n), mask=i < n)

y = torch.empty_like(x)
add[(triton.cdiv(x.numel(), 1024),)](x, x, y, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
counters("Triton kernel (compiled here)")
f = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2)
f(x).sum().item()
counters("torch.compile (inductor)")
pinned = torch.empty(1 << 28, pin_memory=True)  # 1 GiB
pinned.fill_(1)
counters("1 GiB pinned host memory, filled")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ceiling = EvalConfig().host_memory_bytes
    scratch = args.out / "scratch"
    scratch.mkdir(exist_ok=True)
    steps = scratch / "steps.py"  # a file: Triton reads a kernel's source from it
    steps.write_text(STEPS)
    proc, control = sandbox.start(
        [sys.executable, str(steps)],
        writable=[str(scratch)],
        gpu=True,
        memory=ceiling,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            "TMPDIR": str(scratch),  # the caches of Triton and inductor go under it
            "TRITON_CACHE_DIR": str(scratch / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
        },
    )
    out, err = proc.communicate(timeout=600)
    control.close()
    rows = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    report = {
        "ceiling_gib": ceiling / 2**30 if ceiling else None,
        "exit": proc.returncode,
        "steps": rows,
        "stderr_tail": err.decode(errors="replace")[-2000:],
    }
    (args.out / "host_memory.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"ceiling {report['ceiling_gib']} GiB, exit {proc.returncode}")
    print(f"{'step':36} {'VmData':>8} {'RssAnon':>8} {'RssShmem':>8} {'VmSize':>8} (MiB)")
    for r in rows:
        print(
            f"{r['step']:36} {r.get('VmData', 0):8} {r.get('RssAnon', 0):8} "
            f"{r.get('RssShmem', 0):8} {r.get('VmSize', 0):8}"
        )
    if proc.returncode != 0:
        print(report["stderr_tail"])


if __name__ == "__main__":
    main()
