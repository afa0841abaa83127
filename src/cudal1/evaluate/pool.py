"""The local evaluation service: pre-started worker processes, a compile pool, and an async
interface that many candidates can be submitted to at once.

- `WorkerPool`: judge, candidate and (on a GPU) builder processes started ahead of time (torch
  imported; a GPU worker's CUDA context and library handles made under the shared device lock),
  each used for exactly one evaluation and then killed; a replacement starts the moment one is
  taken, so a candidate never waits for Python and torch to start.
- `LocalEvaluator`: runs evaluations in threads (`jobs` at once). Builds (the builder's import
  of the candidate, with no GPU) are limited to `compile_jobs` at once, sized to the CPU cores;
  every step that puts work on the device holds the device lock, shared for work that is not
  timed and exclusive for timed phases, so one GPU never times a candidate beside other work
  while builds of later candidates proceed. Identical (task, candidate, config) are evaluated
  once: a repeat, even one submitted while the first is still running, gets that result marked
  `cached`, unless `fresh=True` (the re-measurement of a suspicious win must be independent).
  With `gpus`, one worker pool per GPU: each evaluation goes to the GPU with the fewest in
  flight, takes that GPU's lock and measures on that GPU's own kept cores; builds share one
  limit, since they share the host's cores.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import torch

from cudal1.errors import Cudal1Error
from cudal1.evaluate import harness, pch
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.evaluator import (
    Prebuilt,
    evaluate,
    host_prefix_toolchain,
    require_sandbox,
    start_worker,
)
from cudal1.evaluate.protocol import Worker, worker_env
from cudal1.evaluate.result import EvalResult
from cudal1.tasks import Task, source_hash


def visible_gpus(count: int | None = None) -> list[str]:
    """The CUDA devices this process may use, as CUDA_VISIBLE_DEVICES names them (the first
    `count`, or all): a worker given one of them sees only that device, and the device lock is
    named after it, so runs with different visible sets still take turns on a shared GPU."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        names = [d.strip() for d in listed.split(",") if d.strip()]
    else:
        names = [str(i) for i in range(torch.cuda.device_count())]
    if count is not None and not 0 < count <= len(names):
        raise Cudal1Error(
            f"{count} GPUs asked for and {len(names)} visible: ask for 1 to {len(names)}"
        )
    return names[:count] if count is not None else names


WARM_UPS_AT_ONCE = 64
POOL_DIR_PREFIX = "cudal1-pool-"
POOL_LOCK = "pool.lock"


def _hold_pool_dir() -> tuple[Path, int]:
    """A new pool directory and the descriptor of the lock its pool holds for its life. The
    lock is taken before it gets its name, so a sweep never sees a live directory unheld."""
    directory = Path(tempfile.mkdtemp(prefix=POOL_DIR_PREFIX))
    partial = directory / f".{POOL_LOCK}"
    fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    partial.rename(directory / POOL_LOCK)
    return directory, fd


def sweep_abandoned_pool_dirs() -> None:
    """Remove the pool directories (their workers' logs and scratch) of processes that died
    without closing their pool: a SIGKILL (Ray's `kill`, the OOM killer) runs no exit handler.
    The kernel drops a dead process's lock, so a directory whose lock nobody holds is
    abandoned; one without a lock file is left alone."""
    for directory in Path(tempfile.gettempdir()).glob(POOL_DIR_PREFIX + "*"):
        try:
            fd = os.open(directory / POOL_LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its pool is alive
        finally:
            os.close(fd)
        shutil.rmtree(directory, ignore_errors=True)


def compile_limit(compile_jobs: int | None) -> threading.Semaphore:
    """`compile_jobs` compiles at once (default: one per CPU core)."""
    return threading.Semaphore(max(1, compile_jobs or os.cpu_count() or 1))


class WorkerPool:
    """Pre-started single-use workers for one device (`gpu`: the one CUDA device its workers
    see, as CUDA_VISIBLE_DEVICES names it; None: whatever this process sees). A GPU worker's
    device warm-up (CUDA context, library handles) runs as soon as it has started, under the
    shared device lock (`lock_path`), like every other step that puts work on the device."""

    def __init__(
        self,
        device: str,
        size: int = 2,
        cpus: harness.CpuPartition | None = None,
        gpu: str | None = None,
        compile_slots: threading.Semaphore | None = None,
        lock_path: str | None = None,
        sandboxed: bool = True,
        host_memory: int | None = None,
    ) -> None:
        self.device = device
        self.size = size
        self.cpus = cpus
        """Workers start on `cpus.shared`, until an evaluation that times moves them."""
        self.gpu = gpu
        self.lock_path = lock_path
        self.sandboxed = sandboxed
        self.host_memory = host_memory
        sweep_abandoned_pool_dirs()
        self.dir, self._dir_lock = _hold_pool_dir()
        self.env = worker_env(device)
        if gpu is not None:
            self.env["CUDA_VISIBLE_DEVICES"] = gpu
        self.roles = ("judge", "candidate_worker", *(("builder",) if device == "cuda" else ()))
        self.idle: dict[str, deque[Worker]] = {r: deque() for r in self.roles}
        self.warming: dict[Worker, Future[None]] = {}
        # A thread a warm-up (a thread is only added while none is idle). With two, a worker
        # taken waited for every warm-up queued before it, and each of those waited out the
        # timed phases of other evaluations at the device lock.
        self.warmer = ThreadPoolExecutor(WARM_UPS_AT_ONCE, thread_name_prefix="cudal1-warm")
        self.taken: weakref.WeakSet[Worker] = weakref.WeakSet()
        """Workers handed to evaluations still running: `close` ends them too (Ctrl-C)."""
        self.lock = threading.Lock()
        self.compile_slots = compile_slots or compile_limit(None)
        """Compiles at once; shared by the pools of one evaluator, as they share the cores."""
        self.closed = False
        for role in self.roles:
            for _ in range(size):
                self.idle[role].append(self._spawn(role))
        atexit.register(self.close)

    def take(self, role: str, workdir: Path) -> Worker:
        """A pre-started worker (a new one if none is alive), and a replacement started in its
        place; a GPU worker still warming up is waited for."""
        with self.lock:
            if self.closed:
                raise RuntimeError("worker pool is closed")
            queue = self.idle[role]
            worker = None
            while queue:
                candidate = queue.popleft()
                if candidate.proc.poll() is None:
                    worker = candidate
                    break
                candidate.kill()
            queue.append(self._spawn(role))
            worker = worker or self._spawn(role)
            self.taken.add(worker)
            warming = self.warming.pop(worker, None)
        if warming is not None:
            with contextlib.suppress(Exception):  # a failed warm-up is left to the evaluation
                warming.result()
        return worker

    def _spawn(self, role: str) -> Worker:
        worker = start_worker(
            role, self.device, self.dir, self.env, self.cpus, self.sandboxed, self.host_memory
        )
        if self.device == "cuda" and role != "builder":
            self.warming[worker] = self.warmer.submit(self._warm, worker)
        return worker

    def _warm(self, worker: Worker) -> None:
        """The worker's start-up first, without the lock (torch's import alone took 3.4 to
        4.5 s on the H200; held under the shared lock, two start-ups at a time keep every
        timed phase waiting while the GPU has nothing to do), then its device warm-up under
        the shared lock."""
        worker.wait_started(300.0)
        with harness.device_lock(self.lock_path, timing=False):
            worker.request({"cmd": "hello", "device": self.device}, 300.0)
        worker.warmed = True

    @contextlib.contextmanager
    def compile_slot(self) -> Iterator[None]:
        with self.compile_slots:
            yield

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for queue in self.idle.values():
                while queue:
                    queue.popleft().kill()
            for worker in list(self.taken):
                worker.terminate()  # its evaluation's thread sees it gone and cleans up
        self.warmer.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.close(self._dir_lock)


class LocalEvaluator:
    """Submit many candidates; results arrive as futures (or awaitables) as they finish."""

    def __init__(
        self,
        config: EvalConfig,
        *,
        jobs: int = 4,
        compile_jobs: int | None = None,
        warm: int | None = None,
        cache: bool = True,
        gpus: int | None = None,
        cpu_lane: tuple[int, int] = (0, 1),
    ) -> None:
        """`gpus`: spread evaluations over the first `gpus` visible CUDA devices (None: the
        first device only, as one evaluation at a time on it). `cpu_lane` (lane, lanes): which
        of the host's kept core sets this evaluator measures on, when other processes measure
        on the host's other GPUs (Ray's actors, one per GPU)."""
        self.config = config
        if config.sandbox:
            require_sandbox()
        names: list[str | None] = [None]
        if gpus is not None:
            if config.device != "cuda":
                raise Cudal1Error("--gpus needs --device cuda")
            names = list(visible_gpus(gpus))
        if warm is not None:
            size = warm
        elif config.device == "cuda":
            # a worker not pre-started costs its evaluation a start and a warm-up that waits
            # for the device lock: one ready per job that GPU's pool runs
            size = -(-jobs // len(names))
        else:
            size = min(jobs, 4)  # start-ups compete with the evaluations for the cores
        slots = compile_limit(compile_jobs)
        lane, lanes = cpu_lane
        self.pools = [
            WorkerPool(
                config.device,
                size=size,
                cpus=harness.cpu_partition(
                    config.measure_cpus, lane=lane * len(names) + i, lanes=lanes * len(names)
                ),
                gpu=name,
                compile_slots=slots,
                lock_path=config.lock_path(name),
                sandboxed=config.sandbox,
                host_memory=config.host_memory_bytes,
            )
            for i, name in enumerate(names)
        ]
        if config.precompiled_headers and config.device == "cuda":  # where builds are CUDA's
            shared = [p.cpus.shared for p in self.pools if p.cpus is not None]
            pch.ensure_in_background(
                config.pch_root,
                frozenset.intersection(*shared) if shared else None,
                host_prefixes=host_prefix_toolchain(config),
            )
        self.in_flight = [0] * len(self.pools)
        self.dispatch_lock = threading.Lock()
        self.executor = ThreadPoolExecutor(jobs, thread_name_prefix="cudal1-eval")
        # key -> the evaluation's future: a second request for a candidate already being
        # evaluated waits for that evaluation instead of spending device time on a copy
        self.cache: dict[str, Future[EvalResult]] | None = {} if cache else None
        self.cache_lock = threading.Lock()

    def _key(self, task: Task, source: str) -> str:
        return (
            f"{task.hash}:{source_hash(source)}:{json.dumps(self.config.to_dict(), sort_keys=True)}"
        )

    def _run(self, task: Task, source: str, fresh: bool, prebuilt: Prebuilt | None) -> EvalResult:
        key = self._key(task, source)
        mine: Future[EvalResult] = Future()
        if self.cache is not None:
            with self.cache_lock:
                known = self.cache.get(key)
                if known is None:
                    self.cache[key] = mine
            if known is not None and not fresh:
                return dataclasses.replace(known.result(), cached=True)
        try:
            result = self._on_least_busy_gpu(task, source, prebuilt)
        except BaseException as e:
            mine.set_exception(e)
            if self.cache is not None:
                with self.cache_lock:
                    if self.cache.get(key) is mine:  # the next request tries again
                        del self.cache[key]
            raise
        mine.set_result(result)
        return result

    def _on_least_busy_gpu(self, task: Task, source: str, prebuilt: Prebuilt | None) -> EvalResult:
        with self.dispatch_lock:
            index = min(range(len(self.pools)), key=self.in_flight.__getitem__)
            self.in_flight[index] += 1
        try:
            return evaluate(task, source, self.config, workers=self.pools[index], prebuilt=prebuilt)
        finally:
            with self.dispatch_lock:
                self.in_flight[index] -= 1

    def submit(
        self, task: Task, source: str, *, fresh: bool = False, prebuilt: Prebuilt | None = None
    ) -> Future[EvalResult]:
        """`prebuilt`: the candidate's build from a compile node (`evaluator.build_only`)."""
        return self.executor.submit(self._run, task, source, fresh, prebuilt)

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        return await asyncio.wrap_future(self.submit(task, source, fresh=fresh))

    def __call__(self, task: Task, source: str) -> EvalResult:
        """Synchronous form, for code that passes an `evaluate_fn`."""
        return self.submit(task, source).result()

    def close(self) -> None:
        """Stop now: queued evaluations are cancelled and running ones lose their processes
        (their results are never delivered), so Ctrl-C leaves nothing running."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        for pool in self.pools:
            pool.close()
        self.executor.shutdown(wait=True)

    def __enter__(self) -> LocalEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
