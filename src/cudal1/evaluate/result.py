"""`EvalResult`: the one record every evaluation produces, and that every other box consumes.

Statuses: `ok` (correct, timed, not rejected), `incorrect`, `compile_error`, `runtime_error`,
`timeout`, `rejected` (correct output obtained dishonestly, or forbidden by the policy).
`flags` record what static and dynamic checks saw on every result, whatever the status. An `ok`
result without a speedup was disturbed while timed (`gpu_shared`, `host_shared`): correct, not
measured, and worth no reward.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

Status = Literal["ok", "incorrect", "compile_error", "runtime_error", "timeout", "rejected"]
STATUSES: tuple[Status, ...] = (
    "ok",
    "incorrect",
    "compile_error",
    "runtime_error",
    "timeout",
    "rejected",
)


def reason_kind(reason: str) -> str:
    """What a refusal or failure reason is about, for counting: the flag's name
    (`escaped_work: ...` gives `escaped_work`), else its first few words."""
    head = reason.split(":", 1)[0]
    return head if ":" in reason and len(head) <= 40 else " ".join(reason.split()[:4]) or "-"


@dataclass
class TimingStats:
    """Per-call times in ms: median, and a 95 % interval for the median (order statistics)."""

    samples: int
    median_ms: float
    low_ms: float
    high_ms: float


@dataclass
class Timing:
    candidate: TimingStats
    reference: TimingStats
    """The reference timed beside the candidate, paired with it in random order."""
    reference_clean: TimingStats | None
    """The reference timed in the judge's process, which never loaded candidate code, straight
    after the pairs and in the same hold of the device lock."""
    speedup: float
    """Median over buckets of (mean reference time / mean candidate time) per bucket."""
    speedup_low: float
    speedup_high: float
    bucket_speedups: list[float]
    bucket_spread: float
    remeasured: int
    host_ms_per_call: float | None = None
    """Host wall time per candidate call over a batch of calls back to back (launching
    included): what a stream of calls costs when the host, not the GPU, is the limit."""
    stream_ms_per_call: float | None = None
    """The timed stream's event span over the same batch: host waits beyond it were for work
    outside the stream (`escaped_work`)."""
    reference_host_ms_per_call: float | None = None
    cover_us: dict[str, float] | None = None
    """The GPU-side wait ahead of each paired call, candidate (`cand`) and reference (`ref`)."""
    profiler_kernel_ms: float | None = None
    profiled_call_ms: float | None = None
    """The profiled call's own time by events (current stream): its kernels are set against
    it, as the timed calls' kernels are against theirs."""
    speedup_basis: str = "paired"
    """`paired` (bucket rule), or `clean reference` when the reference beside the candidate
    ran slower than alone and the paired ratio would have been inflated."""
    candidate_alone: TimingStats | None = None
    """The candidate timed back to back, as the clean reference is: only when the reference
    ran slower beside the candidate, to set the clean reference against like with like."""
    candidate_gpu_busy: float | None = None
    """Fraction of a candidate call the GPU ran its kernels (profiler, all streams, over the
    longer of the median event time and the host's time per call): low means launch-bound
    (`host_bound`)."""
    reference_gpu_busy: float | None = None


@dataclass
class Correctness:
    trials: int
    passed: int
    max_abs_err: float
    max_rel_err: float
    rel_l2: float
    tolerance_ratio: float
    tolerance: list[dict[str, Any]]
    timed_outputs_checked: int = 0


@dataclass
class KernelShare:
    name: str
    ms: float
    own: bool


@dataclass
class Provenance:
    kernels: list[KernelShare]
    own_kernel_share: float
    streams: int
    aten_ops: list[str]
    """PyTorch compute ops `forward` ran (view and allocation ops left out)."""


@dataclass
class EvalResult:
    status: Status
    task_id: str
    task_hash: str
    candidate_hash: str
    device: str
    policy: str
    tolerance_mode: str
    reasons: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    speedup: float | None = None
    candidate_ms: float | None = None
    reference_ms: float | None = None
    correctness: Correctness | None = None
    timing: Timing | None = None
    provenance: Provenance | None = None
    env: dict[str, Any] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    log_tail: str = ""
    """The end of the candidate process's own output (never parsed; for humans and LLM feedback)."""
    cached: bool = False
    """Served from the evaluator's cache: `phase_seconds` are the original evaluation's, and this
    answer cost no device time."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        d = dict(d)
        if d.get("correctness"):
            d["correctness"] = Correctness(**d["correctness"])
        if d.get("timing"):
            t = dict(d["timing"])
            for key in ("candidate", "reference", "reference_clean", "candidate_alone"):
                if t.get(key):
                    t[key] = TimingStats(**t[key])
            known = {f.name for f in fields(Timing)}  # rows written by earlier versions
            d["timing"] = Timing(**{k: v for k, v in t.items() if k in known})
        if d.get("provenance"):
            p = dict(d["provenance"])
            p["kernels"] = [KernelShare(**k) for k in p["kernels"]]
            d["provenance"] = Provenance(**p)
        return cls(**d)
