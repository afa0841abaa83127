"""Interference: work that is not the measurement, seen during a timed phase (TRUSTED, parent).

A timed phase holds the device lock exclusively, so no other evaluation of this machine's pools
puts work on the device then. What the lock cannot hold back is seen here, and the phase is
measured again rather than charged to the candidate:

- another process on the GPU: NVML's per-process utilisation samples (the driver samples every
  fraction of a second; pids as this process sees them, sandboxed ones included) name every
  process that ran kernels during the phase; any but the evaluation's own two is interference;
- a busy host: the run-queue delay of the two timing processes' main threads
  (`/proc/PID/schedstat`), as a fraction of the phase: time the timing thread was ready to run
  and had no CPU.

Neither names the candidate: a candidate whose own process starts GPU work elsewhere is caught
by the evaluator's escape checks, and one that slows the reference by the clean-reference check.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field
from typing import Any

from cudal1.evaluate import harness

GPU_SAMPLE_PERIOD_S = 0.2
"""About how often the driver samples per-process utilisation (seen on the H200: 0.2 to 0.6 s
between one process's samples). A sample taken this soon after a phase starts covers time before
it, when the lock's previous shared holders were still at work, so it is not counted."""


@functools.cache
def _gpu_handle(uuid: str) -> Any | None:
    nvml = harness.nvml()
    if nvml is None:
        return None
    name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    try:
        return nvml.nvmlDeviceGetHandleByUUID(name)
    except nvml.NVMLError:
        return None


def _run_delay_ns(pid: int) -> int | None:
    """Nanoseconds the process's main thread has spent runnable but waiting for a CPU."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class Watch:
    """Started when a timed phase starts; `finish` says what else ran during it."""

    ours: frozenset[int]
    """The evaluation's own processes (the judge and the candidate process, host pids)."""
    gpu_uuid: str | None
    max_host_wait: float
    started_s: float = field(default_factory=time.time)
    delays: dict[int, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.delays = {pid: _run_delay_ns(pid) for pid in self.ours}

    def finish(self) -> list[str]:
        """Flags (`gpu_shared:...`, `host_shared:...`), empty when the phase ran undisturbed."""
        ended = time.time()
        wall_ns = max(1, int((ended - self.started_s) * 1e9))
        notes = []
        others = self._gpu_others(ended)
        if others:
            users = ", ".join(f"pid {pid} ({util} % of the SMs)" for pid, util in others)
            notes.append(f"gpu_shared:other processes ran on the GPU during timing: {users}")
        waited = 0
        for pid, before in self.delays.items():
            now = _run_delay_ns(pid)
            if before is not None and now is not None:
                waited += now - before
        if waited / wall_ns > self.max_host_wait:
            notes.append(
                f"host_shared:the timing processes waited {waited / wall_ns:.0%} of the phase "
                "for a CPU"
            )
        return notes

    def _gpu_others(self, ended: float) -> list[tuple[int, int]]:
        handle = _gpu_handle(self.gpu_uuid) if self.gpu_uuid else None
        if handle is None:
            return []
        nvml = harness.nvml()
        assert nvml is not None
        since_us = int((self.started_s + GPU_SAMPLE_PERIOD_S) * 1e6)
        if ended * 1e6 <= since_us:
            return []
        samples: list[Any] = []
        with contextlib.suppress(nvml.NVMLError):  # NOT_FOUND: no samples since then
            samples = nvml.nvmlDeviceGetProcessUtilization(handle, since_us)
        busiest: dict[int, int] = {}
        for s in samples:
            if s.pid not in self.ours and s.smUtil > 0 and s.timeStamp > since_us:
                busiest[s.pid] = max(busiest.get(s.pid, 0), int(s.smUtil))
        return sorted(busiest.items())
