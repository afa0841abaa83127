"""Can nvcc's two front ends read torch's headers from a precompiled header? cudafe++ (host) and
cicc (device) are built on EDG's front end, and both binaries carry EDG's precompiled-header
options (`--create_pch`, `--use_pch`); nvcc never passes them. Each parses the whole unit,
torch's headers included, and together they are most of a cold CUDA build
(`nvcc_driver.py` already runs them side by side).

Both take nvcc's preprocessed unit, which has no `#include` left for a header to stand in for,
so the probe splits it where the `.cu`'s own code begins, as `host_pch_probe.py` splits
cudafe++'s output, and gives each tool `#include "prefix.ii"`, `#pragma hdrstop` (EDG's mark
for where the precompiled part ends), `#include "rest.ii"`. Each tool, on a small unit
(`<vector>` and `<string>`) and on a torch extension's `.cu`, then: parses the unit plain,
creates the precompiled header, and parses the unit with it, with the address space laid out
at random as usual, and with that turned off (`setarch -R`; EDG maps the header back at the
addresses it was made at). Each run's exit status, time and first lines of output are kept.

A second way around the parse would be to feed a tool ahead: start it on a named pipe, write
the headers' part while no candidate is there yet, and the candidate's own part when it comes.
So each tool is also given its unit through a named pipe (`streamed`), and, in `included`, a
regular file that includes the unit from a named pipe.

    PYTHONPATH=src:. python3 benchmarks/edg_pch_probe.py --out DIR

No GPU is needed; torch must have CUDA's headers (a CPU build of torch has them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SMALL = "#include <vector>\n#include <string>\nint f() { std::vector<std::string> v; return v.size(); }\n"
TORCH = r"""#include <torch/extension.h>
__global__ void scale_kernel(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
    return y;
}
"""


def nvcc_flags() -> list[str]:
    """torch's flags for a CUDA extension (its include directories), for sm_90."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    includes = [
        f for p in [*include_paths(), sysconfig.get_paths()["include"]] for f in ("-isystem", p)
    ]
    return [
        *includes,
        "-std=c++17",
        "--expt-relaxed-constexpr",
        "-gencode=arch=compute_90,code=sm_90",
    ]


def front_end_commands(nvcc: str, flags: list[str], work: Path) -> dict[str, list[str]]:
    """nvcc's own cudafe++ and cicc commands for `unit.cu`, its intermediates kept in `work`:
    each tool's path, then its options, the preprocessed unit it reads last."""
    args = [nvcc, *flags, "-c", "unit.cu", "-o", "unit.o", "--keep", "--keep-dir", "."]
    subprocess.run(args, cwd=work, check=True, capture_output=True)
    dry = subprocess.run([*args, "--dryrun"], cwd=work, capture_output=True, text=True)
    lines = [ln.removeprefix("#$ ") for ln in dry.stderr.splitlines()]
    where = dict(ln.split("=", 1) for ln in lines if re.match(r"^(_HERE_|CICC_PATH)=", ln))
    found = {}
    for line in lines:
        words = shlex.split(line) if line.split(" ", 1)[0].endswith(("cudafe++", 'cicc"')) else []
        if words and words[0].endswith("cudafe++"):
            found["cudafe++"] = [f"{where['_HERE_']}/cudafe++", *words[1:]]
        elif words:  # cicc reads the unit named before `-o`
            at = words.index("-o") - 1
            unit = words.pop(at)
            found["cicc"] = [f"{where['CICC_PATH']}/cicc", *words[1:], unit]
    return found


def split_unit(preprocessed: Path, work: Path) -> Path:
    """`prefix.ii`, `#pragma hdrstop`, `rest.ii`: the unit split where its own code begins."""
    lines = preprocessed.read_text(errors="surrogateescape").split("\n")
    marker, current, cut = re.compile(r'^# \d+ "(.*)"'), None, None
    main = marker.match(lines[0]).group(1)
    for i, line in enumerate(lines):
        if found := marker.match(line):
            current, last = found.group(1), i
        elif current == main and line.strip() and not line.startswith("#"):
            cut = last
            break
    (work / "prefix.ii").write_text("\n".join(lines[:cut]) + "\n", errors="surrogateescape")
    (work / "rest.ii").write_text("\n".join(lines[cut:]), errors="surrogateescape")
    wrapper = work / f"{preprocessed.stem}.split.ii"
    wrapper.write_text(f'#include "{work}/prefix.ii"\n#pragma hdrstop\n#include "{work}/rest.ii"\n')
    return wrapper


def run(command: list[str], cwd: Path) -> dict:
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    out = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    return {"rc": done.returncode, "s": round(time.perf_counter() - t0, 2), "output": out[:3]}


def through_pipe(command: list[str], cwd: Path, text: str, pipe: Path) -> dict:
    """`run`, while another thread writes `text` into the named pipe `pipe` once the tool
    opens it for reading (it may never: then the tool's own output says why)."""
    os.mkfifo(pipe)
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def feed() -> None:
        while proc.poll() is None:
            try:
                fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)  # fails until a reader opens
            except OSError:
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            with (
                contextlib.suppress(BrokenPipeError),
                os.fdopen(fd, "w", errors="surrogateescape") as f,
            ):
                f.write(text)
            return

    t0 = time.perf_counter()
    writer = threading.Thread(target=feed)
    writer.start()
    out = proc.communicate()[0].decode(errors="replace")
    writer.join()
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return {"rc": proc.returncode, "s": round(time.perf_counter() - t0, 2), "output": lines[:3]}


def probe(nvcc: str, flags: list[str], source: str, tool: str, work: Path) -> dict:
    work.mkdir(parents=True)
    (work / "unit.cu").write_text(source)
    executable, *options, preprocessed = front_end_commands(nvcc, flags, work)[tool]
    wrapper = split_unit(work / preprocessed, work)
    pch = work / f"{tool}.pch"
    row: dict = {"tool": tool, "plain": run([executable, *options, str(wrapper)], work)}
    for layout, front in (("random", []), ("fixed", ["setarch", "-R"])):
        pch.unlink(missing_ok=True)
        # EDG wants its precompiled-header options first on the command line
        create = [*front, executable, "--create_pch", str(pch), *options, str(wrapper)]
        row[f"create_{layout}"] = run(create, work)
        row["pch_bytes"] = pch.stat().st_size if pch.exists() else 0
        use = [*front, executable, "--use_pch", str(pch), *options, str(wrapper)]
        row[f"use_{layout}"] = run(use, work)
    pch.unlink(missing_ok=True)
    unit = (work / preprocessed).read_text(errors="surrogateescape")
    streamed, included = work / "streamed.ii", work / "included.ii"
    row["streamed"] = through_pipe([executable, *options, str(streamed)], work, unit, streamed)
    included.write_text(f'#include "{work}/included.pipe.ii"\n')
    pipe = work / "included.pipe.ii"
    row["included"] = through_pipe([executable, *options, str(included)], work, unit, pipe)
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None or shutil.which("setarch") is None:
        print("edg_pch_probe: needs nvcc and setarch on PATH", file=sys.stderr)
        return 2
    flags = nvcc_flags()
    rows = []
    with tempfile.TemporaryDirectory(prefix="edg-pch-") as tmp:
        for unit, source in (("small", SMALL), ("torch", TORCH)):
            for tool in ("cudafe++", "cicc"):
                row = {"unit": unit, **probe(nvcc, flags, source, tool, Path(tmp) / unit / tool)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "edg_pch_probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(
        "| unit | tool | plain s | create s, MB | use (random layout): rc, s | use (fixed): rc, s "
        "| streamed rc | included rc |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['unit']} | {r['tool']} | {r['plain']['s']} | {r['create_random']['s']}, "
            f"{r['pch_bytes'] / 2**20:.0f} | {r['use_random']['rc']}, {r['use_random']['s']} | "
            f"{r['use_fixed']['rc']}, {r['use_fixed']['s']} | {r['streamed']['rc']} "
            f"| {r['included']['rc']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
