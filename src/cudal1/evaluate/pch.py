"""Precompiled `torch/extension.h` for the binding file `load_inline` writes (TRUSTED).

Every C++ or CUDA candidate's build compiles a generated `main.cpp` that starts with
`#include <torch/extension.h>`, and that file is most of a cold build (on this project's CPU
machine one binding file compiled in 41.2 s, and in 16.5 s with the precompiled header, the
object byte for byte the same; `benchmarks/build_breakdown.py --pch` measures whole builds). The evaluator precompiles the header once per machine, with
exactly the flags torch's extension builder uses (one variant per optimisation level
candidates commonly ask for), into a directory of its own, and gives candidate processes that
directory on `CPATH`, which GCC searches before torch's `-isystem` directories. GCC itself
decides, per compile, whether a variant is valid for that compile's flags and macros; when
none is, it reads the header as before. Nothing in the candidate's command changes.

The headers are written here, outside the sandbox, by this module only: candidate processes
see the directory read-only. Each variant is compiled to a temporary name and renamed into
place, and dated as torch's header is, so a build made on another node with the same
installation looks no newer or older to ninja than one made here. A variant dated otherwise
was built from another installation at the same path (torch reinstalled): it is dated anew if
every file GCC reads for it is the same, name and content, as when it was built (recorded
beside it), and built again otherwise.

The `.cu` of a CUDA candidate has a second header part: the host prefix of cudafe++'s output
(`nvcc_driver.py`), which GCC parses again in the host compile. `ensure_host_prefixes` builds
a few units of common include lists through the driver, in torch's way, and keeps each one's
prefix precompiled under `host-prefix/`, named by the digest of its text; a candidate's build
uses one only where its own prefix is that text, byte for byte.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cudal1.evaluate import harness

VARIANTS: dict[str, tuple[str, ...]] = {"default": (), "O3": ("-O3",)}
"""`extra_cflags` the headers are precompiled for: none (70 of CUDA-L1's 72 `load_inline`
kernels) and `-O3`."""
PCH_TIMEOUT_S = 900.0
_KERNEL = "__global__ void cudal1_host_prefix(float* x) { x[threadIdx.x] = 0.0f; }\n"
_DISPATCHED = """template <typename scalar_t>
__global__ void cudal1_host_prefix(scalar_t* x) { x[threadIdx.x] = 0; }
void cudal1_host_prefix_launch(torch::Tensor x) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "cudal1_host_prefix", ([&] {
        cudal1_host_prefix<scalar_t><<<1, 1>>>(x.data_ptr<scalar_t>());
    }));
}
"""
HOST_PREFIX_UNITS: dict[str, str] = {
    "aten_cuda": (
        "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAException.h>\n"
        "#include <c10/cuda/CUDAGuard.h>\n" + _KERNEL
    ),
    "extension": "#include <torch/extension.h>\n" + _KERNEL,
    "extension_dispatch": "#include <torch/extension.h>\n" + _DISPATCHED,
    "load_inline": _KERNEL,
}
"""Units (after `load_inline`'s own three lines) whose host prefix is precompiled: the honest
corpus's include list; and CUDA-L1's commonest three shapes: `torch/extension.h`, the same
with `AT_DISPATCH_FLOATING_TYPES` (whose templates cudafe++ prints otherwise in the prefix),
and no header of the candidate's own (or only headers those lines include already); see
`benchmarks/host_prefix.py --cuda-l1`."""
_NINJA_FOR_UNIT = """
import sys
from pathlib import Path
from torch.utils import cpp_extension
if cpp_extension.CUDA_HOME is None:  # a torch without CUDA: the toolkit of the nvcc given
    cpp_extension.CUDA_HOME = str(Path(sys.argv[2]).parent.parent)
cpp_extension._write_ninja_file_to_build_library(
    path=sys.argv[1], name=sys.argv[3],
    sources=[str(Path(sys.argv[1]).parent / "cuda.cu")], extra_cflags=[],
    extra_cuda_cflags=sys.argv[4:], extra_sycl_cflags=[], extra_ldflags=[], extra_include_paths=[],
    with_cuda=True, with_sycl=False, is_standalone=False)
"""

HOST_PREFIX_FLAGS: dict[str, tuple[str, ...]] = {"default": (), "O3": ("-O3",)}
"""`extra_cuda_cflags` each unit's prefix is made for: `-O3` reaches the host preprocessor
(`__OPTIMIZE__`), so cudafe++ writes another prefix (`--use_fast_math` does not change it). Of
CUDA-L1's 72 `load_inline` kernels, 40 ask for no flags and most others for `-O3`, with or
without `--use_fast_math`; the honest corpus's 15 all ask for `-O3`."""
LOAD_INLINE_LINES = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
"""What `load_inline` puts before a candidate's CUDA source."""

log = logging.getLogger(__name__)
_building = threading.Lock()


def torch_header() -> Path:
    from torch.utils.cpp_extension import include_paths

    return Path(include_paths()[0]) / "torch" / "extension.h"


def extension_flags(variable: str, with_cuda: bool = False) -> list[str]:
    """A variable of the `build.ninja` torch's extension builder writes for an extension of a
    `main.cpp` (and a `.cu` `with_cuda`): `cflags`, `cuda_cflags`... Raises what torch raises
    where its builder cannot (no toolkit, a builder of another shape)."""
    from torch.utils import cpp_extension

    with tempfile.TemporaryDirectory() as tmp:
        sources = [Path(tmp) / "main.cpp", *([Path(tmp) / "cuda.cu"] if with_cuda else [])]
        for source in sources:
            source.touch()
        cpp_extension._write_ninja_file_to_build_library(  # the only place torch says
            path=str(Path(tmp) / "build.ninja"),
            name="cudal1_probe",
            sources=[str(s) for s in sources],
            extra_cflags=[],
            extra_cuda_cflags=[],
            extra_sycl_cflags=[],
            extra_ldflags=[],
            extra_include_paths=[],
            with_cuda=with_cuda,
            with_sycl=False,
            is_standalone=False,
        )
        ninja = (Path(tmp) / "build.ninja").read_text()
    for line in ninja.splitlines():
        if line.startswith(f"{variable} = "):
            return shlex.split(line.removeprefix(f"{variable} = "))
    raise ValueError(f"torch's build.ninja sets no {variable}")


@functools.cache
def binding_flags() -> list[str] | None:
    """The flags torch's extension builder passes when it compiles `main.cpp`, less the
    extension's name (read from the ninja file it writes; None if that cannot be done)."""
    try:
        flags = extension_flags("cflags")
    except Exception as e:  # a torch whose builder differs: no precompiled header
        log.warning("precompiled headers off: torch's extension flags unknown (%s)", e)
        return None
    return [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]


def _compiler_identity() -> str | None:
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        return None
    out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    return f"{compiler}\n{out.stdout}"


def include_dir(root: Path, header: Path | None = None) -> Path | None:
    """This machine's precompiled-header directory under `root` (for `CPATH`), or None while no
    variant has been built from the header installed now. Keyed by compiler, torch build,
    header path and flags: a node with the same installation uses the same path (a build made
    there is up to date here), another installation gets a directory of its own. `header`:
    the header precompiled (torch's when None)."""
    header = header or torch_header()
    key = _key(header)
    if key is None:
        return None
    directory = root / key
    gch = directory / "torch" / "extension.h.gch"
    ready = gch.is_dir() and (gch.parent / "extension.h").exists()
    return directory if ready and any(_current(v, header) for v in gch.glob("*.gch")) else None


def _current(variant: Path, header: Path) -> bool:
    """Whether `variant` is known to be built from the header installed now: it is dated as
    the header it was built from (or found the same as, `ensure`)."""
    try:
        return variant.stat().st_mtime_ns == header.stat().st_mtime_ns
    except FileNotFoundError:
        return False


@functools.cache
def _key(header: Path) -> str | None:
    compiler, flags = _compiler_identity(), binding_flags()
    if compiler is None or flags is None:
        return None
    import torch

    version = f"{torch.__version__} {torch.version.git_version}"
    stamp = f"{compiler}\n{header}\n{version}\n{' '.join(flags)}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:16]


def ensure(
    root: Path,
    cpus: frozenset[int] | None = None,
    variants: dict[str, tuple[str, ...]] = VARIANTS,
    header: Path | None = None,
) -> Path | None:
    """Build those of `variants` not built from `header` (torch's when None) yet, one builder
    per machine at a time, on `cpus` (the cores no evaluation measures on; None: any); the
    `CPATH` directory, or None when this machine cannot (no GCC, unknown flags, a failed
    compile)."""
    header = header or torch_header()
    compiler, flags, key = os.environ.get("CXX", "c++"), binding_flags(), _key(header)
    if flags is None or key is None:
        return None
    directory = root / key
    gch = directory / "torch" / "extension.h.gch"
    gch.mkdir(parents=True, exist_ok=True)
    with _building, harness.exclusive(directory / ".building.lock"):
        # A second `#include <torch/extension.h>` (the candidate's own, after load_inline's)
        # cannot use a precompiled header: GCC then reads the header beside the .gch: torch's.
        beside = directory / "torch" / "extension.h"
        if not beside.is_symlink():
            beside.symlink_to(header)
        mtime = header.stat().st_mtime_ns
        for stale in [v for v in gch.glob("*.gch") if not _current(v, header)]:
            recorded = _recorded_inputs(directory, stale.stem)
            if recorded and _inputs(compiler, [*flags, *recorded[0]], header, cpus) == recorded[1]:
                os.utime(stale, ns=(mtime, mtime))  # the same files, installed anew
            else:
                stale.unlink()  # GCC would still pick it for the flags it was built with
        for name, extra in variants.items():
            target = gch / f"{name}.gch"
            if _current(target, header):
                continue
            inputs = _inputs(compiler, [*flags, *extra], header, cpus)
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                partial = Path(tmp) / f"{name}.gch"
                command = [compiler, *flags, *extra, "-x", "c++-header", str(header)]
                out = subprocess.run(
                    [*command, "-o", str(partial)],
                    capture_output=True,
                    text=True,
                    timeout=PCH_TIMEOUT_S,
                    check=False,
                    preexec_fn=_on(cpus),
                )
                if out.returncode != 0 or inputs is None:
                    log.warning("precompiling %s failed: %s", header, out.stderr[-500:])
                    return include_dir(root, header)
                record = Path(tmp) / f"{name}.json"
                record.write_text(json.dumps({"extra": list(extra), "inputs": inputs}))
                (directory / "inputs").mkdir(exist_ok=True)
                record.rename(directory / "inputs" / f"{name}.json")
                os.utime(partial, ns=(mtime, mtime))
                partial.rename(target)  # GCC never sees half a header
    return directory


def host_prefix_dir(root: Path) -> Path | None:
    """Where precompiled host prefixes are kept for the torch installed now (`nvcc_driver.py
    --host-prefix`), or None while none is."""
    key = _key(torch_header())
    directory = root / key / "host-prefix" if key else None
    return directory if directory and any(directory.glob("*.h.gch")) else None


def ensure_host_prefixes(
    root: Path,
    nvcc: str,
    arch: str,
    cpus: frozenset[int] | None = None,
    units: dict[str, str] = HOST_PREFIX_UNITS,
    flags: dict[str, tuple[str, ...]] = HOST_PREFIX_FLAGS,
) -> Path | None:
    """Precompile the host prefix of each of `units` with each of `flags` not done yet for
    `arch` (TORCH_CUDA_ARCH_LIST), side by side (a core each): a `.cu` as `load_inline`
    writes it for that CUDA source and `extra_cuda_cflags`, given to torch's ninja rule through
    the driver with `--make-host-prefix` (the host chain, then GCC on the prefix). The
    directory, or None when none could be made."""
    key = _key(torch_header())
    if key is None:
        return None
    directory = root / key / "host-prefix"
    made = directory / "units"
    made.mkdir(parents=True, exist_ok=True)
    with _building, harness.exclusive(directory / ".building.lock"):
        missing = {}
        for (name, unit), (variant, extra) in itertools.product(units.items(), flags.items()):
            source = LOAD_INLINE_LINES + unit
            stamp = hashlib.sha256(f"{arch}\n{nvcc}\n{extra}\n{source}".encode()).hexdigest()
            record = made / f"{name}-{variant}-{stamp[:16]}"
            if not (record.exists() and (directory / f"{record.read_text()}.gch").exists()):
                missing[record] = (source, extra)
        cores = len(cpus or os.sched_getaffinity(0))
        with ThreadPoolExecutor(max(1, min(len(missing), cores))) as pool:
            builds = [
                pool.submit(_make_host_prefix, directory, record, *unit, nvcc, arch, cpus)
                for record, unit in missing.items()
            ]
        for build in builds:
            build.result()  # raises what a build raised
    return host_prefix_dir(root)


def _make_host_prefix(
    directory: Path,
    record: Path,
    source: str,
    cuda_flags: tuple[str, ...],
    nvcc: str,
    arch: str,
    cpus: frozenset[int] | None,
) -> None:
    """Give `source` with `cuda_flags` to the driver with `--make-host-prefix directory`
    (which writes no object), and write the made header's name to `record`."""
    from cudal1.evaluate import nvcc_driver

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cuda.cu").write_text(source)
        driver = [sys.executable, "-I", "-S", nvcc_driver.__file__]
        front = [*driver, "--make-host-prefix", str(directory), nvcc]
        out = cuda_object(Path(tmp), front, arch, cpus, cuda_flags=cuda_flags)
    names = re.findall(
        rf"^{re.escape(nvcc_driver.MADE_PREFIX)}([0-9a-f]{{32}}\.h)$", out.stdout, re.M
    )
    if out.returncode != 0 or len(names) != 1:
        log.warning("host prefix %s failed: %s", record.name, (out.stdout + out.stderr)[-500:])
        return
    record.write_text(names[0])


def cuda_object(
    build_dir: Path,
    nvcc: list[str],
    arch: str,
    cpus: frozenset[int] | None = None,
    name: str = "cudal1_host_prefix",
    cuda_flags: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Compile `build_dir/cuda.cu` to `cuda.cuda.o` as torch's extension builder does for an
    extension `name` asking for `cuda_flags` (`extra_cuda_cflags`): its `build.ninja` (written
    for `arch`), with `nvcc` (a command: the real one's path last) as its CUDA compiler."""
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": arch, "PYTORCH_NVCC": shlex.join(nvcc)}
    written = subprocess.run(
        [
            sys.executable,
            "-c",
            _NINJA_FOR_UNIT,
            str(build_dir / "build.ninja"),
            nvcc[-1],
            name,
            *cuda_flags,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=PCH_TIMEOUT_S,
        check=False,
    )
    if written.returncode != 0:
        return written
    return subprocess.run(
        ["ninja", "-C", str(build_dir), "cuda.cuda.o"],
        env=env,
        capture_output=True,
        text=True,
        timeout=PCH_TIMEOUT_S,
        check=False,
        preexec_fn=_on(cpus),
    )


def _on(cpus: frozenset[int] | None) -> Callable[[], None] | None:
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def _inputs(
    compiler: str, flags: list[str], header: Path, cpus: frozenset[int] | None
) -> str | None:
    """A digest of every file GCC reads to compile `header` with `flags` (its `-M` list, in
    order, names and contents): what a precompiled header depends on."""
    out = subprocess.run(
        [compiler, *flags, "-M", "-x", "c++-header", str(header)],
        capture_output=True,
        text=True,
        timeout=PCH_TIMEOUT_S,
        check=False,
        preexec_fn=_on(cpus),
    )
    if out.returncode != 0:
        return None
    listed = re.split(r"(?<!\\)\s+", out.stdout.replace("\\\n", " ").strip())[1:]
    digest = hashlib.sha256()
    for name in (n.replace("\\ ", " ") for n in listed):
        try:
            content = Path(name).read_bytes()
        except OSError:  # gone since GCC listed it: an installation changing under us
            return None
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()


def _recorded_inputs(directory: Path, name: str) -> tuple[list[str], str] | None:
    """The extra flags variant `name` was built with, and the digest of what it was built from."""
    try:
        record = json.loads((directory / "inputs" / f"{name}.json").read_text())
        return list(record["extra"]), str(record["inputs"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_in_background(
    root: Path,
    cpus: frozenset[int] | None = None,
    variants: dict[str, tuple[str, ...]] = VARIANTS,
    host_prefixes: tuple[str, str] | None = None,
) -> threading.Thread:
    """`ensure` without holding up the first evaluations (they build without it), then, given
    `host_prefixes` (nvcc, TORCH_CUDA_ARCH_LIST), `ensure_host_prefixes`."""

    def both() -> None:
        ensure(root, cpus, variants)
        if host_prefixes is not None:
            ensure_host_prefixes(root, *host_prefixes, cpus=cpus)

    thread = threading.Thread(target=both, name="cudal1-pch", daemon=True)
    thread.start()
    return thread
