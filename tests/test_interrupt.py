"""Ctrl-C during `cudal1 bench`: the run stops at once, leaves no worker process behind, writes
no row for the interrupted entry, and `--resume` evaluates that entry again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HANGS = """\
import time

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        while True:  # never returns: only the interrupt ends this evaluation
            time.sleep(0.05)
"""


def _marked(marker: str) -> list[int]:
    """Live processes whose environment carries the marker (this test's bench and its workers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in env and state != "Z":
            found.append(int(pid))
    return found


def _wait(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.slow
def test_ctrl_c_stops_bench_and_leaves_no_process(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "L1_20.py").write_text(HANGS)
    run_dir = tmp_path / "run"
    marker = f"CUDAL1_TEST_RUN={uuid.uuid4().hex}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    env["CUDAL1_BUILD_DIR"] = str(tmp_path / "build")
    cmd = [sys.executable, "-m", "cudal1", "bench", "bundled", "--solutions", str(solutions)]
    cmd += ["--device", "cpu", "--tasks", "L1_20", "--out", str(run_dir), "--jobs", "1"]
    bench = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # the candidate is running once its process exists (and has had time to load)
        assert _wait(lambda: len(_marked(marker)) >= 3, 120), "no worker processes started"
        time.sleep(3)
        bench.send_signal(signal.SIGINT)
        bench.wait(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode != 0
    assert _wait(lambda: not _marked(marker), 15), f"left running: {_marked(marker)}"
    results = run_dir / "results.jsonl"
    rows = (
        [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    )
    assert [r for r in rows if r["task_id"] == "L1_20"] == []  # interrupted: not recorded


def test_a_sandboxed_program_ends_with_the_process_that_started_it():
    """An evaluator that dies without cleaning up (a Ray actor killed mid-evaluation, a crash)
    leaves no candidate behind: its sandbox launcher ends with it, and the candidate's pid
    namespace with the launcher (parent-death signals). Before, a hanging candidate of a killed
    actor spun on."""
    from cudal1.evaluate import sandbox

    try:
        sandbox.check_available()
    except sandbox.SandboxError as e:
        pytest.skip(f"this machine cannot sandbox: {e}")
    marker = f"CUDAL1_ORPHAN_{uuid.uuid4().hex}"
    starter = (
        "import sys, time\n"
        "from cudal1.evaluate import sandbox\n"
        "proc, control = sandbox.start(\n"
        "    [sys.executable, '-S', '-c', 'while True: pass'], writable=[], gpu=False\n"
        ")\n"
        "print(control.pid(), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", starter],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, marker: "1"},
        start_new_session=True,
    )
    try:
        spinning = int(parent.stdout.readline())
        # its environment reads empty while it is still inside exec (seen once under -n 2)
        assert _wait(lambda: spinning in _marked(marker), 30), "the program never started"
        parent.kill()  # the parent alone, as Ray kills an actor's process
        parent.wait()
        assert _wait(lambda: not _marked(marker), 30), "the sandboxed program outlived its parent"
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_killed_evaluators_pool_directory_is_removed_by_the_next_pool_only(tmp_path):
    """A pool's directory (its workers' logs and scratch) outlives a process killed without
    exit handlers (Ray's `kill`, the OOM killer); the next pool on the host removes it, and
    leaves a live pool's directory and any directory it did not make alone."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    foreign = temp / "cudal1-pool-not-a-pool"  # a name like a pool's, without a pool's lock
    foreign.mkdir()
    marker = f"CUDAL1_POOL_{uuid.uuid4().hex}"
    starter = (
        "import time\n"
        "from cudal1.evaluate.pool import WorkerPool\n"
        "pool = WorkerPool('cpu', size=1, sandboxed=False)\n"
        "print(pool.dir, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "TMPDIR": str(temp), marker: "1"}

    def start_pool() -> tuple[subprocess.Popen, Path]:
        proc = subprocess.Popen(
            [sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True, env=env
        )
        return proc, Path(proc.stdout.readline().strip())

    pools = []
    try:
        killed, killed_dir = start_pool()
        pools.append(killed)
        alive, alive_dir = start_pool()
        pools.append(alive)
        killed.kill()
        killed.wait()
        assert killed_dir.is_dir()  # nothing ran to remove it
        newest, newest_dir = start_pool()
        pools.append(newest)
        assert not killed_dir.exists()
        assert alive_dir.is_dir() and newest_dir.is_dir() and foreign.is_dir()
    finally:
        for proc in pools:
            proc.kill()
            proc.wait()
    assert _wait(lambda: not _marked(marker), 30), "a pool's workers outlived it"
