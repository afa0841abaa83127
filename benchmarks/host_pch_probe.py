"""Can the host compile of a `.cu` use a precompiled header? nvcc's last step compiles
cudafe++'s output (`cuda.cudafe1.cpp`) with GCC. That file is preprocessed, so no header is
left for a precompiled one to stand in for. But its first part, up to the first line that
returns to the candidate's own source, is torch's and CUDA's headers as cudafe++ rewrote them.
This moves that part into a header of its own, precompiles it, and compiles the rest behind
an `#include` of it.

Each honest `load_inline` CUDA candidate is built as torch builds it. Its `.cu` then goes
through nvcc again with `--keep`, and the host compile is timed plain and behind the
precompiled prefix, each `--repeats` times. The two objects are compared byte for byte. The
script also counts the prefix lines that carry the build's module id, which varies from build
to build, and hashes the prefix with that id blanked: candidates that include the same headers
share the digest, so one precompiled prefix could serve them all if they shared a module id.

    PYTHONPATH=src:. python3 benchmarks/host_pch_probe.py --out DIR [--limit N] [--repeats 2]

Writes DIR/host_pch_probe.json and prints a table. No GPU is needed (CUDA is compiled for
`--arch`), but torch must have CUDA's headers, as for `build_breakdown.py --kind cuda`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.build_breakdown import build
from tests.corpus import load_cases


def ninja_vars(build_ninja: Path) -> dict[str, str]:
    """The top-level variables of torch's `build.ninja` (`nvcc`, `cuda_cflags`, ...)."""
    out = {}
    for line in build_ninja.read_text().splitlines():
        name, sep, value = line.partition(" = ")
        if sep and not line.startswith(" "):
            out[name.strip()] = value
    return out


def host_compile(nvcc: str, cflags: list[str], cu: Path, keep: Path) -> list[str]:
    """nvcc's own host-compile command for `cu`, its intermediates kept in `keep`, named
    relative to `keep`'s parent (an object records its main file's name as given)."""
    args = [nvcc, *cflags, "--keep", "--keep-dir", keep.name, "-c", str(cu), "-o", "plain.o"]
    subprocess.run(args, cwd=keep.parent, check=True, capture_output=True)
    dry = subprocess.run([*args, "--dryrun"], cwd=keep.parent, capture_output=True, text=True)
    lines = [ln[3:] for ln in dry.stderr.splitlines() if ln.startswith("#$ ")]
    (command,) = [ln for ln in lines if " -c " in ln and "cudafe1.cpp" in ln]
    return shlex.split(command)


def timed(command: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def probe(nvcc: str, cflags: list[str], cu: Path, work: Path, repeats: int) -> dict:
    keep = work / "keep"
    keep.mkdir(parents=True)
    command = host_compile(nvcc, cflags, cu, keep)
    source = work / next(a for a in command if a.endswith("cudafe1.cpp"))
    out_at = command.index("-o") + 1
    lines = source.read_text(errors="surrogateescape").split("\n")
    main_file = lines[0].split('"')[1]
    split = next(
        i for i, ln in enumerate(lines) if i and ln.startswith("# ") and f'"{main_file}"' in ln
    )
    module_id = (keep / f"{cu.stem}.module_id").read_text().strip()
    prefix = work / "prefix" / "prefix.h"
    prefix.parent.mkdir()
    prefix.write_text("\n".join(lines[1:split]) + "\n", errors="surrogateescape")
    # the same path and name as nvcc's (an object names its main file), behind the prefix
    split_dir = work / "split"
    shutil.copytree(keep, split_dir / keep.name)
    split_source = split_dir / source.relative_to(work)
    split_source.write_text(
        "\n".join([lines[0], f'#include "{prefix}"', *lines[split:]]),
        errors="surrogateescape",
    )

    def run(cwd: Path, out: str) -> float:
        c = list(command)
        c[out_at] = out
        return timed(c, cwd)

    plain = [run(work, "plain_host.o") for _ in range(repeats)]
    header = [a for a in command if a not in ("-c",) and not a.endswith("cudafe1.cpp")]
    header[header.index("-o") + 1] = str(prefix) + ".gch"
    header[header.index("c++")] = "c++-header"
    pch_s = timed([*header, str(prefix)], work)
    with_pch = [run(split_dir, "pch_host.o") for _ in range(repeats)]
    same = (work / "plain_host.o").read_bytes() == (split_dir / "pch_host.o").read_bytes()
    return {
        "prefix_lines": split - 1,
        "file_lines": len(lines),
        "module_id_lines_in_prefix": sum(module_id in ln for ln in lines[1:split]),
        # candidates that include the same headers share this digest
        "prefix_sha256_module_id_blanked": hashlib.sha256(
            "\n".join(lines[1:split]).replace(module_id, "").encode("utf-8", "surrogateescape")
        ).hexdigest()[:16],
        "plain_s": [round(s, 2) for s in plain],
        "pch_build_s": round(pch_s, 2),
        "pch_mb": round(Path(str(prefix) + ".gch").stat().st_size / 2**20, 1),
        "with_pch_s": [round(s, 2) for s in with_pch],
        "same_object": same,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="9.0", help="TORCH_CUDA_ARCH_LIST for the builds.")
    parser.add_argument("--limit", type=int, default=2, help="Only the first N candidates.")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"TORCH_CUDA_ARCH_LIST": args.arch, "CUDA_VISIBLE_DEVICES": ""}
    unique = {c.file: c for c in load_cases("honest") if "cuda_sources" in c.source}
    rows = []
    for case in list(unique.values())[: args.limit]:
        path = Path(__file__).parent.parent / "tests" / "honest" / "candidates" / case.file
        with tempfile.TemporaryDirectory(prefix="host-pch-") as tmp:
            ext_root = Path(tmp) / "ext"
            build(path, case.task, ext_root, env)
            (ninja,) = ext_root.rglob("build.ninja")
            found = ninja_vars(ninja)
            cflags = shlex.split(found["cuda_cflags"]) + shlex.split(found["cuda_post_cflags"])
            row = {"case": case.file, "task": case.task}
            row |= probe(
                found["nvcc"], cflags, ninja.parent / "cuda.cu", Path(tmp) / "p", args.repeats
            )
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "host_pch_probe.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    print(
        "| candidate | host compile s | behind the precompiled prefix | PCH s, MB | same object |"
    )
    print("|---|---|---|---|---|")
    for r in rows:
        plain, pch = statistics.median(r["plain_s"]), statistics.median(r["with_pch_s"])
        print(
            f"| {r['case']} | {plain:.2f} | {pch:.2f} | {r['pch_build_s']}, {r['pch_mb']} "
            f"| {r['same_object']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
