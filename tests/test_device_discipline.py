"""A timed phase has the device to itself, and interference is measured again or flagged, never
charged to the candidate (DESIGN.md §4 Timing)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
import torch

from cudal1.evaluate import EvalConfig, baselines, evaluate, harness, sandbox
from cudal1.evaluate.pool import LocalEvaluator, WorkerPool
from cudal1.evaluate.protocol import Worker
from cudal1.tasks import load_suite

from .corpus import load_cases

SUITE = load_suite("bundled", validate=False)
DEVICE_COMMANDS = {"hello", "prepare", "time_reference", "first_call", "correctness", "judge"}
TIMED_COMMANDS = {"time", "profile"}


def _held(lock: str, timing: bool, log: list, name: str, release: threading.Event) -> None:
    log.append(("asking", name))
    with harness.device_lock(lock, timing=timing):
        log.append(("got", name))
        release.wait(30)
        log.append(("let go", name))  # still held: anyone after it logs later


def _until(condition: Callable[[], bool], what: Callable[[], str], timeout_s: float) -> None:
    """Poll `condition` until it holds; fail with `what()` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(what())
        time.sleep(0.01)


def _wait_for(log: list, entry: tuple) -> None:
    _until(lambda: entry in log, lambda: f"{entry} never happened: {log}", 6.0)


def test_shared_steps_overlap_and_a_waiting_timed_phase_goes_first(tmp_path):
    lock = str(tmp_path / "cuda0.lock")
    log: list = []
    gates = {name: threading.Event() for name in ("r1", "r2", "w", "r3")}

    def start(name: str, timing: bool) -> threading.Thread:
        t = threading.Thread(target=_held, args=(lock, timing, log, name, gates[name]))
        t.start()
        return t

    threads = [start("r1", False), start("r2", False)]
    _wait_for(log, ("got", "r1"))
    _wait_for(log, ("got", "r2"))  # two shared holders at once
    threads.append(start("w", True))
    _wait_for(log, ("asking", "w"))
    time.sleep(0.5)  # the timed phase is now waiting for the shared holders
    threads.append(start("r3", False))
    _wait_for(log, ("asking", "r3"))
    time.sleep(0.5)
    assert ("got", "w") not in log and ("got", "r3") not in log
    gates["r1"].set()
    gates["r2"].set()
    _wait_for(log, ("got", "w"))
    assert ("got", "r3") not in log  # a shared step arriving after it waits for it
    gates["w"].set()
    _wait_for(log, ("got", "r3"))
    gates["r3"].set()
    for t in threads:
        t.join(30)
    assert log.index(("let go", "w")) < log.index(("got", "r3"))


class _Recorder:
    """Records the device-lock holds and the worker commands of every evaluation thread."""

    def __init__(self) -> None:
        self.locks: list[tuple[int, bool, float, float]] = []
        self.commands: list[tuple[int, str, float, float]] = []
        self.started: dict[int, float] = {}
        self.guard = threading.Lock()

    @contextlib.contextmanager
    def patched(self, monkeypatch):
        real_lock, real_send, real_recv = harness.device_lock, Worker.send, Worker.recv
        recorder = self

        @contextlib.contextmanager
        def device_lock(path, *, timing):
            with real_lock(path, timing=timing):
                t0 = time.monotonic()
                try:
                    yield
                finally:
                    with recorder.guard:
                        recorder.locks.append((threading.get_ident(), timing, t0, time.monotonic()))

        def send(worker, message):
            recorder.started[id(worker)] = time.monotonic()
            return real_send(worker, message)

        def recv(worker, timeout_s):
            cmd = worker._pending[0] if worker._pending else "?"
            try:
                return real_recv(worker, timeout_s)
            finally:
                with recorder.guard:
                    recorder.commands.append(
                        (
                            threading.get_ident(),
                            cmd,
                            recorder.started.get(id(worker), 0.0),
                            time.monotonic(),
                        )
                    )

        monkeypatch.setattr(harness, "device_lock", device_lock)
        monkeypatch.setattr(Worker, "send", send)
        monkeypatch.setattr(Worker, "recv", recv)
        yield self


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.slow
def test_no_device_step_of_one_evaluation_overlaps_another_timed_phase(monkeypatch, tmp_path):
    """Three evaluations at once in the pool (CPU device): every device step runs inside a
    hold of the device lock, and no timed hold overlaps any other hold."""
    cases = [c for c in load_cases("honest", "cpu") if "load_inline" not in c.source][:3]
    config = EvalConfig(
        device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=14, lock_dir=tmp_path
    )
    with _Recorder().patched(monkeypatch) as rec, LocalEvaluator(config, jobs=3) as ev:
        futures = [ev.submit(SUITE.get(c.task), c.source) for c in cases]
        results = [f.result() for f in futures]
    assert all(r.ok for r in results), [r.reasons for r in results]
    assert len({t for t, *_ in rec.locks}) == 3
    for thread, cmd, start, end in rec.commands:
        if cmd in DEVICE_COMMANDS | TIMED_COMMANDS:
            holds = [(s, e) for t, timing, s, e in rec.locks if t == thread]
            assert any(s <= start and end <= e for s, e in holds), (cmd, start, end)
        if cmd in TIMED_COMMANDS:
            assert any(
                t == thread and timing and s <= start and end <= e for t, timing, s, e in rec.locks
            ), f"{cmd} outside an exclusive hold"
    timed = [(t, s, e) for t, timing, s, e in rec.locks if timing]
    for t, s, e in timed:
        others = [(s2, e2) for t2, _, s2, e2 in rec.locks if (t2, s2, e2) != (t, s, e)]
        assert not any(_overlap((s, e), o) for o in others)


@pytest.mark.slow
def test_shared_holds_are_one_step_each_and_the_profile_shares_the_last_timed_hold(
    monkeypatch, tmp_path
):
    """Writers first: a timed phase asking for the lock waits for every shared hold in flight,
    and every other evaluation waits with it. In the H100 audit one shared hold for all of the
    baselines' steps (5.5 s median a task) and a second exclusive hold for the profile kept
    the evaluations waiting 5138 s for the lock while they held it 719 s. So: one step a
    shared hold, and the profile in the hold of the last timed call."""
    case = next(c for c in load_cases("honest", "cpu") if "load_inline" not in c.source)
    task = SUITE.get(case.task)
    config = EvalConfig(
        device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=14, lock_dir=tmp_path
    )
    with _Recorder().patched(monkeypatch) as rec:
        baselines.measure_task(task, ["eager"], config, cache=tmp_path / "cache")
        result = evaluate(task, case.source, config)
    assert result.ok, result.reasons

    def inside(hold: tuple[int, bool, float, float]) -> list[str]:
        thread, _, start, end = hold
        return [c for t, c, s, e in rec.commands if t == thread and start <= s and e <= end]

    shared = [inside(h) for h in rec.locks if not h[1]]
    assert all(len(set(cmds)) <= 1 for cmds in shared), shared  # hello to both: one step
    assert {"prepare", "roofline", "hygiene", "correctness", "judge"} <= {
        c for cmds in shared for c in cmds
    }
    if any(f.startswith(("host_shared", "gpu_shared")) for f in result.flags):
        return  # every try disturbed: the profile then has a hold of its own
    # the first profile (a disturbed one is taken again in a hold of its own)
    profile = min((c for c in rec.commands if c[1] == "profile"), key=lambda c: c[2])
    last_time = max((c for c in rec.commands if c[1] == "time"), key=lambda c: c[3])
    (hold,) = [h for h in rec.locks if h[1] and h[2] <= last_time[2] and last_time[3] <= h[3]]
    assert hold[2] <= profile[2] and profile[3] <= hold[3]


def test_the_baselines_judge_starts_without_the_device_lock(monkeypatch, tmp_path):
    """`cudal1 bench` measures each task's baselines in a fresh judge: its start-up (seconds
    of imports) runs while a timed phase holds the device, and its device work waits for the
    lock. Under the lock, the start-ups of 8 evaluations' baselines kept the timed phases
    beside them waiting six times as long as they ran (the CUDA-L1 audit on an H100)."""
    judges: list[Worker] = []

    def spawn(*args, **kwargs):
        judges.append(real_spawn(*args, **kwargs))
        return judges[-1]

    real_spawn = baselines.spawn
    monkeypatch.setattr(baselines, "spawn", spawn)
    config = EvalConfig(device="cpu", min_pairs=7, lock_dir=tmp_path / "locks")
    task = SUITE.tasks[0]
    measured: dict = {}
    timed_phase = contextlib.ExitStack()
    timed_phase.enter_context(harness.device_lock(config.lock_path(), timing=True))
    try:
        thread = threading.Thread(
            target=lambda: measured.update(
                baselines.measure_task(task, ["eager"], config, cache=tmp_path / "cache")
            )
        )
        thread.start()
        _until(lambda: bool(judges) and judges[0].started, lambda: "the judge never started", 120)
        time.sleep(0.5)
        assert thread.is_alive() and not measured  # its device work waits for the lock
    finally:
        timed_phase.close()
    thread.join(120)
    assert measured["baselines"]["eager"]["samples"] >= 7
    # the record says where its time went: here, at least the 0.5 s the timed phase went on
    # holding the lock after the judge had started
    assert set(measured["seconds"]) == {"start", "shared_wait", "shared", "timed_wait", "timed"}
    assert measured["seconds"]["shared_wait"] >= 0.4


def test_one_judge_measures_task_after_task_as_fresh_ones_do(monkeypatch, tmp_path):
    """A run's baselines keep their judges from task to task (each start-up took 12.7 s a task
    under the H100 audit's load): one process measures three tasks, each record is what a
    judge of its own measures (FLOPs, bytes, which null answers pass), and a judge that died
    is replaced, never handed out again."""
    spawned: list[Worker] = []
    real_spawn = baselines.spawn

    def spawn(*args, **kwargs):
        spawned.append(real_spawn(*args, **kwargs))
        return spawned[-1]

    monkeypatch.setattr(baselines, "spawn", spawn)
    config = EvalConfig(device="cpu", min_pairs=7, lock_dir=tmp_path / "locks")
    tasks = SUITE.tasks[:3]
    with baselines.BaselineJudges(config) as judges:
        kept = [
            baselines.measure_task(t, ["eager"], config, tmp_path / "kept", judges) for t in tasks
        ]
        assert len(spawned) == 1
        spawned[0].kill()  # it dies between two tasks
        again = baselines.measure_task(tasks[0], ["eager"], config, tmp_path / "again", judges)
        assert len(spawned) == 2 and again["roofline"] == kept[0]["roofline"]
    own = [baselines.measure_task(t, ["eager"], config, tmp_path / "own") for t in tasks]
    assert len(spawned) == 5
    assert [m["roofline"] for m in kept] == [m["roofline"] for m in own]
    assert [m["hygiene"] for m in kept] == [m["hygiene"] for m in own]
    assert len({m["roofline"]["bytes"] for m in kept}) == 3  # three different tasks
    assert all(m["baselines"]["eager"]["samples"] >= 7 for m in kept)
    assert kept[1]["seconds"]["start"] < 0.1  # the kept judge had started long before
    assert all(w.proc.poll() is not None for w in spawned)  # none left running


def test_the_baselines_judges_run_off_the_cores_kept_for_timing(monkeypatch, tmp_path):
    """The evaluator times on cores kept for the evaluation that holds the device lock; a
    baselines' judge (torch's import, the fp64 reference) on those cores made the timed phase
    beside it wait for a CPU. It starts on the shared cores, times on the kept ones, and is
    back on the shared ones when it waits for the next task."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    part = harness.CpuPartition(frozenset(cpus[-1:]), frozenset(cpus[:-1]))
    monkeypatch.setattr(harness, "cpu_partition", lambda *a, **k: part)
    pinned: list[frozenset[int]] = []
    real_pin = harness.pin
    monkeypatch.setattr(
        harness, "pin", lambda pid, c, **k: (pinned.append(c), real_pin(pid, c, **k))
    )
    config = EvalConfig(device="cpu", min_pairs=7, lock_dir=tmp_path / "locks")
    with baselines.BaselineJudges(config) as judges:
        baselines.measure_task(SUITE.tasks[0], ["eager"], config, tmp_path / "cache", judges)
        with judges.take() as judge:
            assert os.sched_getaffinity(judge.pid) == part.shared
    assert pinned == [part.measuring, part.shared]


def _busy_neighbours(cpu: int, count: int) -> list[subprocess.Popen]:
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


@pytest.mark.slow
def test_a_busy_neighbour_is_flagged_never_charged(monkeypatch):
    """CPU backend: six processes spin on the core the evaluation runs on. The timing
    threads wait for a CPU most of each timed phase; after the re-measurements the result is
    correct, carries host_shared and no speedup, and nothing is refused. The limit is 0.2 of
    the phase here, not the CPU default 0.5: each worker starts its own session, so with the
    kernel's autogroup scheduling (on here) the spinners share the core with it half and half,
    and the timing loop's 2 ms sleeps after each call thin the wait further (36 % to 50 % of the
    phase measured with six spinners; under 0.5 in 2 of 3 full-suite runs with three)."""
    (case,) = [c for c in load_cases("honest", "cpu") if c.file == "softmax_via_logsumexp.py"]
    cpu = min(os.sched_getaffinity(0))
    own = os.sched_getaffinity(0)
    hogs = _busy_neighbours(cpu, 6)
    os.sched_setaffinity(0, {cpu})  # the evaluation's processes inherit this core
    try:
        config = EvalConfig(
            device="cpu",
            trials=1,
            timing_budget_s=0.1,
            min_pairs=7,
            max_pairs=14,
            interference_retries=1,
            max_host_wait=0.2,
        )
        result = evaluate(SUITE.get(case.task), case.source, config)
    finally:
        os.sched_setaffinity(0, own)
        for h in hogs:
            h.kill()
            h.wait()
    assert result.status == "ok" and result.reasons == [], result.reasons
    assert any(f.startswith("host_shared:") for f in result.flags), result.flags
    assert result.speedup is None and result.timing is not None
    assert result.phase_seconds["interfered"] >= 2  # the timing and its one re-measurement


GPU_HOG = (
    "import torch, time\n"
    "a = torch.randn(8192, 8192, device='cuda')\n"
    "t = time.time()\n"
    "while time.time() - t < 600:\n"
    "    a @ a\n"
    "    torch.cuda.synchronize()\n"
)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_hog_is_flagged_never_charged():
    """Another process runs matmuls on the GPU the whole time: the honest candidate is not
    refused (before: escaped_work); it is correct, flagged gpu_shared, and has no speedup."""
    case = next(c for c in load_cases("honest", "cuda") if c.file == "cuda_gelu_erff_vec4.py")
    hog = subprocess.Popen([sys.executable, "-c", GPU_HOG])
    try:
        time.sleep(5)  # its CUDA context and first products
        result = evaluate(SUITE.get(case.task), case.source, EvalConfig(interference_retries=1))
    finally:
        hog.kill()
        hog.wait()
    assert result.status == "ok" and result.reasons == [], (result.reasons, result.flags)
    assert any(f.startswith("gpu_shared:") for f in result.flags), result.flags
    assert result.speedup is None


def _descendants_named(name: str) -> list[int]:
    """Live processes called `name` anywhere under this test's process, less version queries
    (torch runs `ninja --version` before a build: gone in milliseconds, it is not the build)."""
    table = sandbox.processes()
    found = []
    for pid, (up, state, comm) in table.items():
        while up in table and up != os.getpid():
            up = table[up][0]
        if comm == name and state != "Z" and up == os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"--version" in f.read().split(b"\0"):
                        continue
            except OSError:
                continue
            found.append(pid)
    return found


@pytest.mark.slow
def test_a_build_in_forward_lets_the_device_lock_go(tmp_path):
    """A candidate that compiles its extension in its first forward, where the builder cannot
    reach: while its compiler runs, another evaluation's timed phase can take the device lock
    (before, the first call held it through the whole build; on the H200 such builds held the
    lock for 386 of 453 seconds). The candidate is evaluated as usual."""
    case = next(c for c in load_cases("honest", "cpu") if c.file == "gelu_cpp_erf.py")
    eager = "_ext = load_inline("
    assert eager in case.source
    lazy = case.source.replace(eager, "def _build():\n    return load_inline(").replace(
        "return _ext.gelu_forward(x)", "return _build().gelu_forward(x)"
    )
    lazy = lazy.replace('name="honest_gelu_cpp_erf"', f'name="lazy_gelu_{os.getpid()}"')
    config = EvalConfig(
        device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=14, lock_dir=tmp_path
    )
    seen: dict[str, bool] = {}

    def neighbour() -> None:
        for _ in range(6000):  # until the candidate's ninja starts (at most 10 minutes)
            ninjas = _descendants_named("ninja")
            if ninjas:
                break
            time.sleep(0.1)
        else:
            return
        with harness.device_lock(config.lock_path(), timing=True):
            seen["compiler still running"] = bool(set(ninjas) & set(_descendants_named("ninja")))

    watcher = threading.Thread(target=neighbour)
    watcher.start()
    result = evaluate(SUITE.get(case.task), lazy, config)
    watcher.join(60)
    assert result.status == "ok", result.reasons
    assert seen == {"compiler still running": True}
    assert result.phase_seconds["built_off_device"] > 0
    assert {"ninja", "cc1plus"} <= set(result.env["built_off_device_by"])  # what the build ran


def _waiting_at(lock: str) -> int:
    """Lock requests the kernel holds blocked on `lock` (flock's waiters in /proc/locks)."""
    inode = f":{os.stat(lock).st_ino} "
    with open("/proc/locks") as f:
        return sum("->" in line and inode in line for line in f)


def test_pool_workers_start_without_the_device_lock_and_warm_up_under_it_at_once(tmp_path):
    """A GPU pool's new workers import torch while a timed phase holds the device, and touch
    the device only once it is let go: starting a worker (seconds of imports) never keeps a
    timed phase of another evaluation waiting. Their warm-ups all wait at the lock at once, so
    none waits for another's to finish first (with two warm-up threads, a worker taken waited
    for every one queued before it). (On a CPU machine `hello` finds no CUDA and does nothing,
    but it is still asked for under the lock.)"""
    lock = str(tmp_path / "device.lock")
    timed_phase = contextlib.ExitStack()
    timed_phase.enter_context(harness.device_lock(lock, timing=True))
    pool = None
    try:
        pool = WorkerPool("cuda", size=3, lock_path=lock)
        warming = [w for role in ("judge", "candidate_worker") for w in pool.idle[role]]
        _until(lambda: all(w.started for w in warming), lambda: "workers never started", 120.0)
        _until(
            lambda: _waiting_at(lock) == 6,
            lambda: f"{_waiting_at(lock)} of 6 warm-ups wait at the device lock",
            120.0,
        )
        assert not any(w.warmed for w in warming)
        timed_phase.close()
        _until(lambda: all(w.warmed for w in warming), lambda: "warm-up never ran", 120.0)
    finally:
        timed_phase.close()  # first: closing the pool waits for warm-ups, which need the lock
        if pool is not None:
            pool.close()
