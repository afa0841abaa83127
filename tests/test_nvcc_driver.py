"""nvcc with its front ends side by side builds what nvcc builds (evaluate/nvcc_driver.py):
the object matches nvcc's byte for byte but for the names nvcc itself varies (its
temporary files') and the module id, and so it does behind a precompiled host prefix."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudal1.evaluate import nvcc_driver
from cudal1.evaluate.evaluator import host_prefixes_reported

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="needs nvcc")

KERNEL = r"""
#include <cuda_runtime.h>
namespace {
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
}
void launch_scale(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""
ONE_ARCH = ["-gencode=arch=compute_90,code=sm_90"]
TWO_ARCHS = [*ONE_ARCH, "-gencode=arch=compute_80,code=sm_80"]
MODULE_ID = re.compile(rb"_[0-9a-f]{8}_\d+_kernel_cu_[0-9a-f]{8}")


def _compile(
    tmp_path: Path, arch: list[str], name: str, driver: bool
) -> subprocess.CompletedProcess[str]:
    assert NVCC is not None
    front = [sys.executable, "-I", "-S", nvcc_driver.__file__] if driver else []
    return subprocess.run(
        [*front, NVCC, *arch, "-c", "kernel.cu", "-o", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def _normalised(obj: Path) -> bytes:
    return nvcc_driver.masked(obj.read_bytes())


def _plan(tmp_path: Path, arch: list[str]) -> nvcc_driver.Plan | None:
    assert NVCC is not None
    dry = subprocess.run(
        [NVCC, *arch, "-c", "kernel.cu", "-o", "x.o", "--dryrun"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    return nvcc_driver.plan(dry.stderr, str(tmp_path / "empty.ii"))


def test_one_architecture_runs_the_front_ends_at_once_and_builds_what_nvcc_builds(tmp_path):
    (tmp_path / "kernel.cu").write_text(KERNEL)
    steps = _plan(tmp_path, ONE_ARCH)
    assert steps is not None
    assert "cudafe++" in steps.host[1] and "--gen_module_id_file" not in steps.host[1]
    assert "cicc" in steps.device[1]
    assert _compile(tmp_path, ONE_ARCH, "nvcc.o", driver=False).returncode == 0
    built = _compile(tmp_path, ONE_ARCH, "driver.o", driver=True)
    assert built.returncode == 0, built.stderr
    ids = {MODULE_ID.search((tmp_path / o).read_bytes()).group() for o in ("nvcc.o", "driver.o")}
    assert len(ids) == 2  # a module id of the driver's own, in nvcc's shape
    assert _normalised(tmp_path / "driver.o") == _normalised(tmp_path / "nvcc.o")


def test_torchs_dependency_list_takes_the_parallel_path_and_is_nvccs(tmp_path):
    """torch's build.ninja asks nvcc for `-MD -MF FILE` on every `.cu`; nvcc then orders its
    steps otherwise and writes the list in a step of its own. The driver ran all such builds
    through nvcc unchanged (the honest CUDA candidates built no faster as the evaluator builds
    them); now it writes the list itself, nvcc's byte for byte."""
    (tmp_path / "kernel.cu").write_text('#include "scale.h"\n' + KERNEL)
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    steps = _plan(tmp_path, [*ONE_ARCH, "-MD", "-MF", "x.o.d"])
    assert steps is not None and steps.depfile == "x.o.d"
    assert "cudafe++" in steps.host[1] and "cicc" in steps.device[1]
    for name, driver in (("nvcc.o", False), ("driver.o", True)):
        built = _compile(tmp_path, [*ONE_ARCH, "-MD", "-MF", f"{name}.d"], name, driver)
        assert built.returncode == 0, built.stderr
    ids = {MODULE_ID.search((tmp_path / o).read_bytes()).group() for o in ("nvcc.o", "driver.o")}
    assert len(ids) == 2  # built by the driver, not by nvcc alone
    assert _normalised(tmp_path / "driver.o") == _normalised(tmp_path / "nvcc.o")
    listed = (tmp_path / "driver.o.d").read_text()
    assert listed.startswith("driver.o : kernel.cu \\\n") and "scale.h" in listed
    assert listed == (tmp_path / "nvcc.o.d").read_text().replace("nvcc.o :", "driver.o :", 1)


@pytest.mark.parametrize(
    "flags",
    [
        ["-O3", "--use_fast_math"],
        ["-O3", "--use_fast_math", "--maxrregcount=48"],
        ["-O3", "-Xptxas", "-v"],
        ["--use_fast_math", "-prec-div=false"],
        ["-O3", "-std=c++14"],
    ],
    ids=["fast_math", "maxrregcount", "ptxas_verbose", "prec_div", "cxx14"],
)
def test_cuda_l1_release_flags_build_what_nvcc_builds(tmp_path, flags):
    """The `extra_cuda_cflags` CUDA-L1's release passes, with torch's dependency flags."""
    (tmp_path / "kernel.cu").write_text(KERNEL)
    for name, driver in (("nvcc.o", False), ("driver.o", True)):
        built = _compile(tmp_path, [*ONE_ARCH, *flags, "-MD", "-MF", f"{name}.d"], name, driver)
        assert built.returncode == 0, built.stderr
    ids = {MODULE_ID.search((tmp_path / o).read_bytes()).group() for o in ("nvcc.o", "driver.o")}
    assert len(ids) == 2
    assert _normalised(tmp_path / "driver.o") == _normalised(tmp_path / "nvcc.o")


def test_anything_else_is_left_to_nvcc(tmp_path):
    (tmp_path / "kernel.cu").write_text(KERNEL)
    assert _plan(tmp_path, TWO_ARCHS) is None
    assert _compile(tmp_path, TWO_ARCHS, "nvcc.o", driver=False).returncode == 0
    assert _compile(tmp_path, TWO_ARCHS, "driver.o", driver=True).returncode == 0
    nvcc_built, driver_built = (
        (tmp_path / "nvcc.o").read_bytes(),
        (tmp_path / "driver.o").read_bytes(),
    )
    assert MODULE_ID.search(nvcc_built).group() == MODULE_ID.search(driver_built).group()
    assert _normalised(tmp_path / "driver.o") == _normalised(tmp_path / "nvcc.o")


def test_a_compile_error_fails_with_the_compilers_message(tmp_path):
    (tmp_path / "kernel.cu").write_text(KERNEL.replace("x[i] *= a;", "x[i] *= undeclared_b;"))
    built = _compile(tmp_path, ONE_ARCH, "driver.o", driver=True)
    assert built.returncode != 0
    assert "undeclared_b" in built.stderr
    assert not (tmp_path / "driver.o").exists()


def test_what_only_nvcc_does_is_left_to_nvcc(tmp_path):
    """`-time FILE` is nvcc's own timing table: asked for, it is written."""
    (tmp_path / "kernel.cu").write_text(KERNEL)
    built = _compile(tmp_path, [*ONE_ARCH, "-time", "phases.csv"], "driver.o", driver=True)
    assert built.returncode == 0, built.stderr
    assert "cicc" in (tmp_path / "phases.csv").read_text()


def _builders_nvcc(config, tmp_path: Path, monkeypatch) -> str | None:
    """The PYTORCH_NVCC a candidate's build gets under `config` where torch's CUDA toolkit is
    one whose nvcc is this machine's (None: torch's own choice)."""
    from torch.utils import cpp_extension

    from cudal1.evaluate.evaluator import _build_env, real_nvcc

    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True, exist_ok=True)
    if not (toolkit / "bin" / "nvcc").exists():
        (toolkit / "bin" / "nvcc").symlink_to(NVCC)
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(toolkit))
    real_nvcc.cache_clear()
    try:
        return _build_env(config, tmp_path, tmp_path / "b").get("PYTORCH_NVCC")
    finally:
        real_nvcc.cache_clear()


def test_the_evaluator_builds_cuda_through_the_driver(tmp_path, monkeypatch):
    """Where torch has a CUDA toolkit, every candidate build's environment names the driver as
    torch's nvcc (PYTORCH_NVCC, a shell command in build.ninja), wrapping that toolkit's nvcc;
    CUDAL1_PARALLEL_NVCC=0 (parallel_nvcc=False) leaves torch's own choice."""
    import dataclasses

    from cudal1.evaluate import EvalConfig

    config = EvalConfig(device="cpu", parallel_nvcc=True)
    command = _builders_nvcc(config, tmp_path, monkeypatch)
    off = dataclasses.replace(config, parallel_nvcc=False)
    assert _builders_nvcc(off, tmp_path, monkeypatch) is None
    (tmp_path / "kernel.cu").write_text(KERNEL)
    args = " ".join(ONE_ARCH)
    built = subprocess.run(
        f"{command} {args} -c kernel.cu -o driver.o",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    assert _compile(tmp_path, ONE_ARCH, "nvcc.o", driver=False).returncode == 0
    assert _normalised(tmp_path / "driver.o") == _normalised(tmp_path / "nvcc.o")
    ids = {MODULE_ID.search((tmp_path / o).read_bytes()).group() for o in ("nvcc.o", "driver.o")}
    assert len(ids) == 2  # built by the driver, not by nvcc alone


def test_the_driver_builds_in_the_candidates_sandbox(tmp_path):
    """Where the evaluator runs it: a builder's sandbox (its own PID namespace and /proc, a
    private TMPDIR, the file system read-only but for the build directory)."""
    from cudal1.evaluate import sandbox

    try:
        sandbox.check_available()
    except sandbox.SandboxError as e:
        pytest.skip(f"this machine cannot sandbox: {e}")
    assert NVCC is not None
    (tmp_path / "kernel.cu").write_text(KERNEL)
    (tmp_path / "broken.cu").write_text(KERNEL.replace("x[i] *= a;", "x[i] *= undeclared_b;"))
    driver = [sys.executable, "-I", "-S", nvcc_driver.__file__, NVCC, *ONE_ARCH, "-MD"]
    outcomes = []
    for source in ("kernel", "broken"):
        argv = [*driver, "-MF", f"{source}.o.d", "-c", f"{source}.cu", "-o", f"{source}.o"]
        in_build_dir = f"cd {shlex.quote(str(tmp_path))} && exec {shlex.join(argv)}"
        proc, control = sandbox.start(
            ["bash", "-c", in_build_dir],
            writable=[str(tmp_path)],
            gpu=False,
            stderr=subprocess.PIPE,
        )
        try:
            _, err = proc.communicate(timeout=300)
        finally:
            control.close()
        outcomes.append((proc.returncode, err.decode()))
    assert outcomes[0][0] == 0, outcomes[0][1]
    assert outcomes[1][0] != 0 and "undeclared_b" in outcomes[1][1]
    assert not (tmp_path / "broken.o").exists()
    assert _compile(tmp_path, ONE_ARCH, "nvcc.o", driver=False).returncode == 0
    assert _normalised(tmp_path / "kernel.o") == _normalised(tmp_path / "nvcc.o")
    ids = {MODULE_ID.search((tmp_path / o).read_bytes()).group() for o in ("nvcc.o", "kernel.o")}
    assert len(ids) == 2  # built by the driver, not left to nvcc


HEADERS = "#include <map>\n#include <string>\n#include <vector>\n"


def test_split_host_source_cuts_where_the_output_returns_to_the_unit():
    text = '# 1 "k.cu"\n# 1 "/usr/include/map" 1\nint a;\n# 3 "k.cu" 2\nint b;\n'
    assert nvcc_driver.split_host_source(text) == (
        '# 1 "k.cu"',
        '# 1 "/usr/include/map" 1\nint a;\n',
        '# 3 "k.cu" 2\nint b;\n',
    )
    assert nvcc_driver.split_host_source('# 1 "k.cu"\n# 1 "/usr/include/map" 1\nint a;\n') is None
    assert nvcc_driver.split_host_source('# 1 "k.cu"\n# 2 "k.cu"\nint b;\n') is None


def _driven(tmp_path: Path, source: str, name: str, *options: str) -> subprocess.CompletedProcess:
    assert NVCC is not None
    (tmp_path / f"{name}.cu").write_text(source)
    front = [sys.executable, "-I", "-S", nvcc_driver.__file__, *options, NVCC, *ONE_ARCH]
    return subprocess.run(
        [*front, "-c", f"{name}.cu", "-o", f"{name}.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_a_trusted_host_prefix_serves_every_unit_with_its_headers_and_changes_no_object(tmp_path):
    """`--make-host-prefix` keeps a unit's host prefix precompiled (and writes no object);
    another unit with the same headers (and the same file name, so the same fixed module id)
    compiles behind it, GCC reading the precompiled header and not the text beside it, and the
    object is nvcc's. A unit with other headers is compiled as before."""
    prefixes, made = tmp_path / "prefixes", tmp_path / "made"
    prefixes.mkdir()
    made.mkdir()
    making = _driven(made, HEADERS + KERNEL, "kernel", "--make-host-prefix", str(prefixes))
    assert making.returncode == 0, making.stderr
    (text,) = prefixes.glob("*.h")
    assert making.stdout.splitlines() == [nvcc_driver.MADE_PREFIX + text.name]  # for its maker
    assert sorted(p.name for p in made.iterdir()) == ["kernel.cu"]  # the host chain's alone
    gch = prefixes / f"{text.name}.gch"
    precompiled = gch.read_bytes()
    assert len(precompiled) > text.stat().st_size
    text.write_text("#error the text was read\n")
    same_headers, other_headers = (
        HEADERS + KERNEL.replace("*= a", "+= a"),
        "#include <set>\n" + KERNEL,
    )

    def build(source: str, where: str) -> subprocess.CompletedProcess:
        (tmp_path / where).mkdir(exist_ok=True)
        return _driven(tmp_path / where, source, "kernel", "--host-prefix", str(prefixes))

    gch.write_bytes(b"not a precompiled header")  # GCC falls back to the text
    assert "the text was read" in build(same_headers, "same").stderr  # the prefix matched
    gch.write_bytes(precompiled)
    for source, where in ((same_headers, "same"), (other_headers, "other")):
        built = build(source, where)
        assert built.returncode == 0, built.stderr
        matched = [nvcc_driver.USED_PREFIX + text.name] if where == "same" else []
        assert built.stdout.splitlines() == matched
        assert _compile(tmp_path / where, ONE_ARCH, "nvcc.o", driver=False).returncode == 0
        assert _normalised(tmp_path / where / "kernel.o") == _normalised(
            tmp_path / where / "nvcc.o"
        )
    ids = {
        MODULE_ID.search((tmp_path / d / "kernel.o").read_bytes()).group()
        for d in ("same", "other")
    }
    assert len(ids) == 1  # the driver's module id is fixed by the file's name


@pytest.mark.slow
def test_trusted_code_precompiles_a_host_prefix_that_a_candidates_build_uses(tmp_path, monkeypatch):
    """`pch.ensure_host_prefixes` builds a unit of `load_inline`'s own headers with `-O3`
    through torch's ninja rule and records which prefix it made; a candidate's `.cu` with
    those headers and a kernel of its own, asking for `-O3` too (which reaches the host
    preprocessor, and so the prefix) and compiled with the command the evaluator gives its
    build (`PYTORCH_NVCC`), goes behind that prefix: the driver says it matched, and the build
    succeeds though the text beside the precompiled header now stops any compile that reads
    it, so GCC read the precompiled header. (That the object is the driver's own: the test
    above, and `benchmarks/host_prefix.py` for torch's units; that `-O3` changes the prefix:
    `benchmarks/results/2026-12-07-cpu/summary.md`.)"""
    from cudal1.evaluate import EvalConfig, pch

    assert NVCC is not None
    config = EvalConfig(device="cpu", parallel_nvcc=True, build_root=tmp_path / "builds")
    units, flags = {"types": KERNEL.replace("*= a", "+= a")}, {"O3": ("-O3",)}
    made = pch.ensure_host_prefixes(config.pch_root, NVCC, "9.0", units=units, flags=flags)
    assert made is not None and made == pch.host_prefix_dir(config.pch_root)
    (record,) = (made / "units").iterdir()
    assert record.name.startswith("types-O3-")
    (text,) = made.glob("*.h")
    assert record.read_text() == text.name
    text.write_text("#error the text was read\n")
    command = shlex.split(_builders_nvcc(config, tmp_path, monkeypatch) or "")
    assert command[-3:-1] == ["--host-prefix", str(made)]
    front = [*command[:-1], NVCC]  # the evaluator's command, with the real toolkit's nvcc
    (tmp_path / "candidate").mkdir()
    (tmp_path / "candidate" / "cuda.cu").write_text(pch.LOAD_INLINE_LINES + KERNEL)

    built = pch.cuda_object(
        tmp_path / "candidate", front, "9.0", name="candidate", cuda_flags=("-O3",)
    )
    assert built.returncode == 0, built.stdout + built.stderr  # the text was never read
    assert f"{nvcc_driver.USED_PREFIX}{text.name}" in built.stdout.splitlines()
    assert b"launch_scale" in (tmp_path / "candidate" / "cuda.cuda.o").read_bytes()
    # the evaluator reads back which prefix the build had (torch hides a build's output)
    assert host_prefixes_reported(tmp_path) == [text.name]
