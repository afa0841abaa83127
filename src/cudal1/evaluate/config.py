"""Evaluator configuration: one keyword-only dataclass, every field documented and checked."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from cudal1.errors import Cudal1Error
from cudal1.evaluate.compare import TOLERANCE_MODES, ToleranceMode

Device = Literal["cuda", "cpu"]
Policy = Literal["any", "kernel"]
POLICIES: tuple[Policy, ...] = ("any", "kernel")


def default_build_root() -> Path:
    return Path(os.environ.get("CUDAL1_BUILD_DIR", Path.home() / ".cache" / "cudal1" / "build"))


@dataclass(kw_only=True)
class EvalConfig:
    device: Device = "cuda"
    """Where reference and candidate run. `cpu` runs the same pipeline with host timers."""
    policy: Policy = "any"
    """`any`: any honest code (CUDA-L1's rule). `kernel`: the candidate's own kernels must carry
    most of the GPU time and `forward` may run no PyTorch compute op."""
    tolerance: ToleranceMode = "calibrated"
    """`calibrated`: from the fp32 reference's error against fp64; `kernelbench`: atol=rtol=1e-2."""
    module_mode: Literal["eval", "train"] = "eval"
    """Module mode for reference and candidate, in correctness and timing alike."""
    sizes: Literal["auto", "full", "cpu"] = "auto"
    """Task size profile: `auto` is `cpu` (CPU_SIZES) on the CPU device and `full` on CUDA."""

    static_gate: bool = True
    """Reject on static flags before running anything. False records them only and leaves the
    verdict to the dynamic checks (how the red-team suite tests that layer on its own)."""

    trials: int = 3
    """Correctness trials with fresh secret-seeded inputs (plus one refill and one repeat)."""
    timed_samples_checked: int = 4
    """Timed candidate calls whose outputs are sent to the judge (chosen at random)."""
    timing_budget_s: float = 1.0
    """Target wall time of the paired timing loop; sets the number of pairs within the bounds."""
    min_pairs: int = 21
    max_pairs: int = 140
    buckets: int = 7
    """CUDA-L1's rule: split the pairs into this many buckets; reward = median over buckets of
    each bucket's speedup (of medians, where the paper takes means: see `bucket_speedups`)."""
    max_bucket_spread: float = 0.10
    """Re-measure when (max - min) / median of bucket speedups exceeds this."""
    remeasure_limit: int = 2
    slowed_baseline_ratio: float | None = None
    """Reject when the reference beside the candidate runs this much slower than alone in the
    judge (the low end of one median's interval against the high end of the other's), timed
    straight after it in the same exclusive hold, beyond however much slower the candidate ran
    paired than alone, and by more than `slowed_baseline_slack_ms`. Default 1.15 on CUDA; 3.0
    on the CPU, whose timings a busy host can double."""
    slowed_baseline_slack_ms: float | None = None
    """...and by at least this much time. Calls of a few microseconds are timed host-bound and
    drift beside a candidate with nothing else on the machine (an honest 4 us Triton GELU's
    reference by more than 1.15x in 2 of 4 H200 evaluations); below the margin the speedup is
    taken against the clean reference instead, so a slower baseline gains nothing. Default
    0.2 ms on CUDA, 5 ms on the CPU."""
    escape_ratio: float = 1.5
    """Flag when profiler kernel time or host time per call exceeds the event time by this factor."""
    escape_slack_ms: float = 0.05
    host_bound_below: float = 0.5
    """Flag `host_bound` when kernels keep the GPU busy for less than this fraction of a call
    (candidate or reference): its time is launch overhead, and the speedup depends on the CPU."""
    interference_retries: int = 3
    """A timed phase that other work disturbed (another process on the GPU, a busy host) is
    measured again up to this many times; after that the result carries `gpu_shared` or
    `host_shared` and no speedup."""
    max_host_wait: float | None = None
    """A timed phase is disturbed when its timing threads waited for a CPU this fraction of it
    (run-queue delay). Default 0.02 on CUDA, where the measuring cores are kept for them; 0.5 on
    the CPU, where the pairing and the bucket rule absorb ordinary sharing of a small host (the
    2-core CI machine running two evaluations at once) and a neighbour busy on the same core
    makes the timing thread wait half the time or more."""
    min_own_kernel_share: float = 0.5
    """Policy `kernel`: the candidate's own kernels' share of GPU time."""

    measure_cpus: int = 2
    """Logical CPUs (whole physical cores, so at least this many) kept for the two processes of
    the evaluation that holds the device lock; every other worker, and the compilers it starts,
    runs on the rest. Short kernels are timed host-bound: beside busy compilers the same clean
    reference measured 0.0055 ms in one H200 audit run and 0.0351 ms in the other. 0 turns it
    off; a host with fewer than twice as many CPUs keeps all of them shared."""

    compile_timeout_s: float = 900.0
    """A build: the builder's, or one inside the candidate's import, `ModelNew(...)` or first
    call (where the builder cannot reach), timed while it runs off the device lock."""
    load_device_s: float = 60.0
    """Importing the candidate and constructing ModelNew, builds not counted: the time this step
    may hold the shared device lock, where every timed phase of other evaluations waits for
    it. Of 748 such holds in the H100 audits and learning-curve runs the longest was at most
    27.1 s; a GRPO candidate's 1.1e12-weight layer held it 131.5 s, the GPU idle about 115 s."""
    host_memory_gb: float | None = 16.0
    """Host memory each sandboxed candidate process, with everything it starts, may hold
    (`sandbox.py`); None: no bound. A whole box's workers share the host (the learning curve ran
    48 on a 128 GiB H100 host)."""
    max_build_mb: int = 1024
    """A candidate's build directory, as a compile node sends it to the GPU's node."""
    precompiled_headers: bool = field(
        default_factory=lambda: os.environ.get("CUDAL1_PRECOMPILED_HEADERS", "1") != "0"
    )
    """Precompile `torch/extension.h` once per machine for the binding file of every
    `load_inline` build (`pch.py`); CUDAL1_PRECOMPILED_HEADERS=0 turns it off by default."""
    parallel_nvcc: bool = field(
        default_factory=lambda: os.environ.get("CUDAL1_PARALLEL_NVCC", "1") != "0"
    )
    """Compile `.cu` files with nvcc's host and device front ends side by side
    (`nvcc_driver.py`, through torch's PYTORCH_NVCC); CUDAL1_PARALLEL_NVCC=0 turns it off."""
    run_timeout_s: float = 300.0
    """Each request to a worker, the candidate's first call included (an extension it builds
    inside forward has the compile timeout for the build itself)."""
    build_root: Path = field(default_factory=default_build_root)
    """Per-candidate build directories live here, one per candidate source hash."""
    lock_dir: Path | None = field(default_factory=lambda: default_build_root().parent / "locks")
    """Device lock files live here; evaluations running at once take turns on the device for
    every phase that runs on it (None: no locking, for a caller that serialises itself)."""
    sandbox: bool = True
    """Run candidate processes in the OS sandbox (`sandbox.py`). False (`--no-sandbox`) runs
    them unconfined and flags every result `no_sandbox`."""
    keep_exchange: bool = False
    """Keep the per-evaluation exchange directory (logs, output files) for debugging."""

    def __post_init__(self) -> None:
        if self.device not in ("cuda", "cpu"):
            raise Cudal1Error(f"unknown device {self.device!r}: choose cuda or cpu")
        if self.policy not in POLICIES:
            raise Cudal1Error(
                f"unknown policy {self.policy!r}: choose one of {', '.join(POLICIES)}"
            )
        if self.tolerance not in TOLERANCE_MODES:
            raise Cudal1Error(
                f"unknown tolerance {self.tolerance!r}: choose one of {', '.join(TOLERANCE_MODES)}"
            )
        if self.module_mode not in ("eval", "train"):
            raise Cudal1Error(f"unknown module mode {self.module_mode!r}: choose eval or train")
        if self.trials < 1:
            raise Cudal1Error(f"trials must be >= 1, got {self.trials}")
        if not 1 <= self.buckets <= self.min_pairs <= self.max_pairs:
            raise Cudal1Error("need 1 <= buckets <= min_pairs <= max_pairs")
        self.build_root = Path(self.build_root)
        if self.lock_dir is not None:
            self.lock_dir = Path(self.lock_dir)
        if self.slowed_baseline_ratio is None:
            self.slowed_baseline_ratio = 1.15 if self.device == "cuda" else 3.0
        if self.slowed_baseline_slack_ms is None:
            self.slowed_baseline_slack_ms = 0.2 if self.device == "cuda" else 5.0
        if self.max_host_wait is None:
            self.max_host_wait = 0.02 if self.device == "cuda" else 0.5
        if self.interference_retries < 0:
            raise Cudal1Error(f"interference_retries must be >= 0, got {self.interference_retries}")
        if self.host_memory_gb is not None and not _positive(self.host_memory_gb):
            raise Cudal1Error(
                f"host_memory_gb must be a number of GiB > 0, or null for no ceiling; "
                f"got {self.host_memory_gb!r}"
            )
        if not _positive(self.load_device_s):
            raise Cudal1Error(
                f"load_device_s must be a number of seconds > 0, got {self.load_device_s!r}"
            )

    @property
    def host_wait_limit(self) -> float:
        assert self.max_host_wait is not None
        return self.max_host_wait

    @property
    def host_memory_bytes(self) -> int | None:
        return None if self.host_memory_gb is None else int(self.host_memory_gb * 2**30)

    @property
    def size_profile(self) -> Literal["full", "cpu"]:
        if self.sizes == "auto":
            return "cpu" if self.device == "cpu" else "full"
        return self.sizes

    @property
    def pch_root(self) -> Path:
        """Precompiled headers, beside the build directories, one directory per toolchain."""
        return self.build_root.parent / "pch"

    def lock_path(self, gpu: str | None = None) -> str | None:
        """One lock per device: `cuda0.lock` (`gpu` as CUDA_VISIBLE_DEVICES names it, else the
        first visible CUDA device) or `cpu.lock`."""
        if self.lock_dir is None:
            return None
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        if self.device != "cuda":
            index = ""
        elif gpu is not None:
            index = gpu
        else:
            index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
        return str(self.lock_dir / f"{self.device}{index}.lock")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["build_root"] = str(self.build_root)
        d["lock_dir"] = str(self.lock_dir) if self.lock_dir else None
        return d


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
