"""Harness helpers shared by the judge and the candidate process: numerics, inputs, and the facts
about one call (output types, aliasing, mutation, threads) that the parent turns into a verdict.

These functions run inside the candidate's process too, so they report facts and decide
nothing; the parent, which never ran candidate code, decides.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from cudal1.evaluate import sandbox
from cudal1.evaluate.compare import OutputStructureError, flatten_outputs
from cudal1.evaluate.timing import same_bits
from cudal1.tasks import Task, TaskModule

WATCHED_ENV = (
    "CUDA_LAUNCH_BLOCKING",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "TORCH_EXTENSIONS_DIR",
    "TRITON_CACHE_DIR",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)


@contextlib.contextmanager
def exclusive(path: str | Path):
    """Hold a lock file; the kernel releases it if the process dies, so none is ever stale."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def device_lock(path: str | None, *, timing: bool):
    """The device's readers-writer lock. Every step that puts work on the device holds it:
    shared for work that is not timed (loading, first calls, correctness, the judge's fp64
    work), exclusive for timed phases, so a timed phase has the device to itself (on the H200
    an honest 0.1 ms candidate scored 1.22x to 1.97x beside three other evaluations, 1.08x to
    1.14x alone). Writers first: a timing step waiting at the turnstile holds back new shared
    steps, so a stream of them cannot starve it. flock: the kernel releases the locks of a
    process that dies."""
    if path is None:
        yield
        return
    turnstile = path + ".turnstile"
    with open(path, "a") as f:
        if timing:
            with exclusive(turnstile):
                fcntl.flock(f, fcntl.LOCK_EX)
        else:
            with exclusive(turnstile):
                pass
            fcntl.flock(f, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


BUILD_LOCK_NAME = ".cudal1-build.lock"


@contextlib.contextmanager
def build_lock(build_dir: Path):
    """One live candidate process per build directory. torch's extension builder marks a build
    in progress with a `lock` file that only the builder removes: a build killed midway (an
    interrupted run) leaves it, and every later load of that candidate would wait on it until
    the compile timeout. Holding this lock proves that no build is in progress, so such markers
    are removed. A lock taken on a file that was removed while we waited (the directory
    deleted by its holder, or by hand) locks nothing: it is taken again on the new one."""
    lock = build_dir / BUILD_LOCK_NAME
    while True:
        build_dir.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                if not _same_file(f.fileno(), lock):
                    continue
                for stale in build_dir.glob("torch_extensions/*/lock"):
                    stale.unlink(missing_ok=True)
                yield
                return
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def _same_file(fd: int, path: Path) -> bool:
    """Is the open file `fd` still the one at `path`?"""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@dataclass(frozen=True)
class CpuPartition:
    """`measuring`: cores for the evaluation holding the device lock; `shared`: all others."""

    measuring: frozenset[int]
    shared: frozenset[int]


def cpu_partition(measure_cpus: int, lane: int = 0, lanes: int = 1) -> CpuPartition | None:
    """Split this process's cores, or None when there are too few to keep some back. Whole
    physical cores are kept (a hyperthread sibling left shared would still be busy). Every
    process computes the same split, so evaluations of different runs agree on it. With several
    devices measuring at once (`lanes`, one per GPU), each keeps its own cores: lane 0 the last
    ones, lane 1 those before them, and so on; the rest is shared by all."""
    allowed = sorted(os.sched_getaffinity(0))
    if measure_cpus <= 0 or len(allowed) < 2 * measure_cpus * lanes:
        return None
    cores: dict[frozenset[int], None] = {}  # physical cores, in order of their first CPU
    for cpu in allowed:
        cores.setdefault(_siblings(cpu) & frozenset(allowed), None)
    kept: list[set[int]] = []
    remaining = list(cores)
    for _ in range(lanes):
        measuring: set[int] = set()
        while remaining and len(measuring) < measure_cpus:
            measuring |= remaining.pop()
        kept.append(measuring)
    shared = frozenset(allowed).difference(*kept)
    if len(shared) < sum(map(len, kept)) or any(len(k) < measure_cpus for k in kept):
        return None
    return CpuPartition(frozenset(kept[lane]), shared)


def _siblings(cpu: int) -> frozenset[int]:
    """The logical CPUs of `cpu`'s physical core (itself alone when the kernel does not say)."""
    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    try:
        text = path.read_text().strip()
    except OSError:
        return frozenset({cpu})
    out: set[int] = {cpu}
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def pin(pid: int, cpus: frozenset[int], *, all_threads: bool = False) -> None:
    """Move a process's main thread (or all its threads) onto `cpus`; threads started later
    inherit the mask of the thread that starts them. A process that is gone is skipped."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")] if all_threads else [pid]
    except OSError:
        return
    for tid in tids:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)


def set_numerics(device: str, tolerance_mode: str) -> None:
    """The harness's own flags, set explicitly in every process. Calibrated mode computes fp32
    problems in fp32 (no TF32 anywhere); KernelBench mode keeps PyTorch's defaults, as
    KernelBench does (TF32 for cuDNN convolutions)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = tolerance_mode == "kernelbench"
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = False
    # Switching it off imports torch._dynamo (2 s or more): only when it is on.
    if torch.are_deterministic_algorithms_enabled():
        torch.use_deterministic_algorithms(False)
    if device == "cpu":
        # One thread: OpenMP workers on a shared or busy host turn a 0.05 ms convolution into
        # 40 ms (measured on the 2-core CI machine), which would make every CPU timing noise.
        torch.set_num_threads(1)


def releasing(handler: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """A worker's command handler, then the process's cached device blocks handed back: the
    other processes on the GPU (a candidate beside the judge, the next evaluation's timed
    phase) find its memory free. The allocator cache of a large task's fp64 reference (129 GiB
    for L2_34 on the H200) once left the candidate out of memory on its first call."""

    def run_and_release(msg: dict[str, Any]) -> Any:
        try:
            return handler(msg)
        finally:
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()

    return run_and_release


def preload() -> None:
    """Host-side start-up work of a GPU worker that needs torch._dynamo (about 5 s on the
    H200 machine), done when it starts (no device work), outside the device lock: a candidate
    process (the profiler's first session imports it) and a baselines judge (the flop
    counter). An evaluation's judge needs neither, and starts without it."""
    importlib.import_module("torch._dynamo")


def warm_device(device: str | None) -> dict[str, Any]:
    """Pay a process's one-off device costs (the parent asks under the shared device lock,
    before any candidate code exists): the CUDA context, the cuBLAS and cuDNN handles (cuDNN
    loads its engine libraries on first use) and the environment query."""
    if device != "cuda" or not torch.cuda.is_available():
        return {}
    torch.cuda.init()
    x = torch.ones(8, 8, device="cuda")
    x @ x
    torch.nn.functional.conv2d(x.view(1, 1, 8, 8), x[:3, :3].reshape(1, 1, 3, 3))
    torch.cuda.synchronize()
    device_env(device)
    return {}


@functools.cache
def nvml() -> Any | None:
    """NVML (the driver's management library), or None where there is none (CPU machines).
    Used by the parent only: it answers about the GPU without creating a CUDA context."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def cuda_arch_list() -> str | None:
    """TORCH_CUDA_ARCH_LIST for candidate builds: the user's when set, else the compute
    capabilities of this machine's GPUs. The builder sees no GPU, and the candidate process
    must compile for the same list or torch builds again."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    lib = nvml()
    if lib is None:
        return None
    caps = set()
    for i in range(lib.nvmlDeviceGetCount()):
        major, minor = lib.nvmlDeviceGetCudaComputeCapability(lib.nvmlDeviceGetHandleByIndex(i))
        caps.add(f"{major}.{minor}")
    return ";".join(sorted(caps)) or None


@functools.cache
def device_env(device: str) -> dict[str, Any]:
    """What the numbers were measured on (asked once per process)."""
    env: dict[str, Any] = {"device": device}
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env |= {
            "gpu": props.name,
            "gpu_uuid": str(props.uuid),
            "sm": f"{props.major}.{props.minor}",
            "gpu_memory_gb": round(props.total_memory / 2**30, 1),
            "l2_bytes": props.L2_cache_size,
            "driver": _driver_version(),
        }
    else:
        env["cpu_threads"] = torch.get_num_threads()
    return env


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def numerics_state() -> dict[str, Any]:
    """Global settings a candidate must not change (HACKS.md #32)."""
    return {
        "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "matmul.fp16_reduced": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.bf16_reduced": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "cudnn.enabled": torch.backends.cudnn.enabled,
        "mkldnn.enabled": torch.backends.mkldnn.enabled,
        "sdp.flash": torch.backends.cuda.flash_sdp_enabled(),
        "sdp.mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
        "sdp.math": torch.backends.cuda.math_sdp_enabled(),
        "sdp.cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
        "cuda.persisting_l2_bytes": persisting_l2_bytes(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "default_dtype": str(torch.get_default_dtype()),
        "num_threads": torch.get_num_threads(),
        "grad_enabled": torch.is_grad_enabled(),
        **{f"env.{k}": os.environ.get(k) for k in WATCHED_ENV},
    }


_CUDART_NAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so")
CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def persisting_l2_bytes() -> int | None:
    """The device's persisting-L2 carve-out (cudaLimitPersistingL2CacheSize). Anything above 0
    means someone pinned data in L2 where the harness's flush cannot evict it (HACKS.md #8);
    without the carve-out, access-policy windows persist nothing. None without CUDA."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    import ctypes

    for name in _CUDART_NAMES:  # the runtime torch already loaded, found by its soname
        try:
            cudart = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return None
    value = ctypes.c_size_t(0)
    if cudart.cudaDeviceGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE) != 0:
        return None
    return int(value.value)


def changed_numerics(before: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(setting, before, now) for every setting that differs from `before`."""
    now = numerics_state()
    return [(k, before[k], now[k]) for k in before if now[k] != before[k]]


def load_task(fields: dict[str, Any], sizes: str) -> TaskModule:
    return Task(**fields).load(sizes)  # type: ignore[arg-type]


def refill(buffers: list[Any], fresh: list[Any]) -> None:
    """Copy fresh values into the existing input buffers (same addresses, new contents)."""
    with torch.no_grad():
        for b, f in zip(buffers, fresh, strict=True):
            if isinstance(b, torch.Tensor):
                b.copy_(f)


def write_outputs(tensors: list[torch.Tensor], stem: str) -> None:
    """Each output's raw bytes into `STEM_I.bin`, one copy from the device straight into a
    memory-mapped file (no pickling, no archive): the judge maps it and reads it back as the
    dtype and shape it expects, never as anything the writer declares."""
    for i, t in enumerate(tensors):
        path = f"{stem}_{i}.bin"
        flat = t.detach().reshape(-1)
        if flat.numel() == 0:
            Path(path).write_bytes(b"")
            continue
        torch.from_file(path, shared=True, size=flat.numel(), dtype=flat.dtype).copy_(flat)


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def poison_free_memory(device: str, sizes_bytes: list[int]) -> None:
    """Leave blocks of the output sizes in the allocator's free lists filled with 0xFF (NaN for
    floats), so an output allocated with `empty` and never written cannot hold a stale answer."""
    for n in sorted(set(sizes_bytes)):
        for _ in range(2):
            block = torch.empty(n, dtype=torch.uint8, device=device)
            block.fill_(0xFF)
            del block


def thread_counts() -> tuple[set[int], int]:
    """Python thread idents and the number of native threads of this process."""
    python = {t.ident for t in threading.enumerate() if t.ident is not None}
    try:
        native = len(os.listdir("/proc/self/task"))
    except OSError:
        native = threading.active_count()
    return python, native


def thread_cpu_ns(tids: Iterable[int]) -> dict[int, int]:
    """How long each of this process's threads `tids` has run on a CPU, in ns (the kernel's
    schedstat, exact where /proc/self/task/TID/stat counts 10 ms ticks); ended threads are left
    out."""
    ran = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ran[tid] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return ran


def child_processes(pid: int | None = None) -> list[str]:
    """Live child processes of `pid` (default: this process): a candidate's pools, forks and
    helpers, or the compiler its `load_inline` runs."""
    parent = os.getpid() if pid is None else pid
    return [
        f"{child}:{name}"
        for child, (up, state, name) in sandbox.processes().items()
        if up == parent and state != "Z"
    ]


def descendant_names(pid: int) -> set[str]:
    """Names of the live processes anywhere under `pid` (which tools a build ran)."""
    table = sandbox.processes()
    names = set()
    for child, (up, state, name) in table.items():
        while up in table and up != pid:
            up = table[up][0]
        if up == pid and state != "Z" and child != pid:
            names.add(name)
    return names


def _storage_range(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


def output_facts(
    out: Any,
    inputs: list[Any],
    pristine_inputs: list[Any],
    model: nn.Module,
    state_before: dict[str, torch.Tensor],
    snapshot: list[torch.Tensor],
) -> dict[str, Any]:
    """What a call returned and did (its outputs are plain tensors: `compare.foreign_outputs`):
    full storage, no aliasing of inputs or parameters, inputs and parameters unchanged, output
    not changed after return."""
    facts: dict[str, Any] = {"structure_error": None}
    try:
        tensors, structure = flatten_outputs(out)
    except OutputStructureError as e:
        facts["structure_error"] = str(e)
        return facts
    facts["structure"] = structure
    described = []
    for t in tensors:
        needed = (
            1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
            if t.numel()
            else 0
        )
        described.append(
            {
                "dtype": str(t.dtype),
                "shape": list(t.shape),
                "device": t.device.type,
                "zero_stride": any(
                    st == 0 and s > 1 for s, st in zip(t.shape, t.stride(), strict=True)
                ),
                "storage_ok": t.untyped_storage().nbytes()
                >= (t.storage_offset() + needed) * t.element_size(),
                "requires_grad": t.requires_grad,
            }
        )
    facts["tensors"] = described
    owned = [(f"input {i}", x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    owned += [(f"parameter {n}", p) for n, p in model.named_parameters()]
    owned += [(f"buffer {n}", b) for n, b in model.named_buffers()]
    facts["aliases"] = sorted(
        {
            f"output {i} shares memory with {name}"
            for i, t in enumerate(tensors)
            for name, x in owned
            if t.numel() and x.numel() and _overlaps(_storage_range(t), _storage_range(x))
        }
    )
    facts["inputs_mutated"] = [
        i
        for i, (x, p) in enumerate(zip(inputs, pristine_inputs, strict=True))
        if isinstance(x, torch.Tensor) and not same_bits(x, p)
    ]
    state_now = model_state(model, include_buffers=True)
    facts["state_mutated"] = sorted(
        name
        for name, before in state_before.items()
        if name not in state_now or not same_bits(state_now[name], before)
    )
    facts["escaped"] = not all(same_bits(s, t) for s, t in zip(snapshot, tensors, strict=True))
    return facts


def model_state(model: nn.Module, include_buffers: bool) -> dict[str, torch.Tensor]:
    state = {f"parameter {n}": p.detach().clone() for n, p in model.named_parameters()}
    if include_buffers:
        state |= {f"buffer {n}": b.detach().clone() for n, b in model.named_buffers()}
    return state


def import_candidate(path: Path) -> ModuleType:
    """Execute the candidate file as module `candidate` (a real file, so Triton can read it)."""
    spec = importlib.util.spec_from_file_location("candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    spec.loader.exec_module(module)
    return module


_BUILD_ERROR = re.compile(r"Error building extension|CompilationError|ninja: build stopped|nvcc")


def is_build_error(e: BaseException) -> bool:
    """A compiler or build tool failed (not an import of something missing, not a run)."""
    chain = []
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return any(_BUILD_ERROR.search(type(x).__name__ + " " + str(x)[:2000]) for x in chain)


def classify_load_error(e: BaseException) -> str:
    """compile_error for syntax, import and build failures; runtime_error for everything else."""
    chain = []
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    for exc in chain:
        if isinstance(exc, (SyntaxError, ImportError)):
            return "compile_error"
        if _BUILD_ERROR.search(type(exc).__name__ + " " + str(exc)[:2000]):
            return "compile_error"
    return "runtime_error"


def trim_compiler_output(text: str, max_lines: int = 40, max_chars: int = 4000) -> str:
    """Keep what a human (or an LLM in its next turn) needs: the error lines and a little after."""
    lines = text.splitlines()
    keep: list[str] = []
    for i, line in enumerate(lines):
        if re.search(r"\berror\b|Error", line):
            keep.extend(lines[i : i + 3])
    keep = keep or lines[-max_lines:]
    seen: set[str] = set()
    unique = [ln for ln in keep if not (ln in seen or seen.add(ln))]  # type: ignore[func-returns-value]
    return "\n".join(unique[:max_lines])[:max_chars]
