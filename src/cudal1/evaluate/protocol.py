"""The channel between the parent and its worker processes: JSON lines over a pipe it owns.

Each worker gets commands on its stdin and answers on a separate pipe whose read end only the
parent holds; its stdout and stderr go to a log file that nobody parses. JSON (never pickle)
crosses the boundary, so a malicious answer is at worst malformed, which counts as a failure.
Tensors travel as raw-byte files in the evaluation's private directory; the judge reads them as
the dtypes and shapes it expects.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudal1.evaluate import sandbox

MAX_LINE_BYTES = 16 << 20
RESULT_FD_ENV = "CUDAL1_RESULT_FD"
PRELOAD_ENV = "CUDAL1_PRELOAD"


def worker_env(device: str) -> dict[str, str]:
    """The environment every worker starts with. On the CPU one thread each (the host is the
    device there). On a GPU the host-side imports run when the worker starts, before `ready`
    (`Worker.wait_started`), so outside the device lock: a baseline judge that imported
    torch._dynamo in its first command did so under the lock (about 5 s on the H200 machine),
    and every timed phase waiting to start waited for it."""
    return {"OMP_NUM_THREADS": "1"} if device == "cpu" else {PRELOAD_ENV: "1"}


class WorkerGone(Exception):
    """The worker exited or closed its channel before answering."""


class WorkerTimeout(Exception):
    """The worker did not answer in time."""


class ProtocolError(Exception):
    """The worker's answer was not a well-formed message."""


@dataclass(frozen=True)
class SandboxSpec:
    """How a worker is sandboxed (`sandbox.py`): `gpu` gives it the GPU device files; `memory`
    bounds the host memory of the worker and all it starts (bytes; None: no bound)."""

    gpu: bool
    memory: int | None = None


@dataclass(eq=False)  # identity: a pool tracks the workers it handed out
class Worker:
    """A worker process and the parent's ends of its pipes."""

    role: str
    proc: subprocess.Popen
    result_fd: int
    log_path: Path
    control: sandbox.Control | None = None
    """The sandbox launcher's control pipe (None: not sandboxed)."""
    started: bool = False
    """It has answered `ready`: its start-up (torch's import) is done."""
    warmed: bool = False
    """Its device warm-up (`hello`) is done."""
    _buffer: bytes = b""
    _pending: tuple[str, str] | None = None
    _closed: bool = False

    @property
    def pid(self) -> int:
        """The worker's own pid (inside a sandbox `proc` is its launcher)."""
        return self.control.pid() if self.control is not None else self.proc.pid

    def grant(self, path: Path) -> None:
        """Let a sandboxed worker write under `path` (a no-op without a sandbox)."""
        if self.control is not None:
            try:
                self.control.grant(str(path))
            except sandbox.SandboxError as e:
                raise WorkerGone(f"{self.role}: {e}") from None

    def wait_started(self, timeout_s: float) -> None:
        """Wait out its start-up (Python, the sandbox, torch's import: seconds). Callers do
        this before taking the device lock, so a start-up never keeps a timed phase waiting."""
        if not self.started:
            self.request({"cmd": "ready"}, timeout_s)
            self.started = True

    def send(self, message: dict[str, Any]) -> None:
        """Send a command with a fresh nonce; its answer must echo both (one answer per command:
        a forged or extra answer on the channel shows up as a mismatch)."""
        if self._pending is not None:
            raise ProtocolError(f"{self.role}: a command is still unanswered")
        nonce = secrets.token_hex(8)
        self._pending = (message["cmd"], nonce)
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({**message, "nonce": nonce}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerGone(f"{self.role} process is gone ({e})") from None

    def recv(self, timeout_s: float) -> dict[str, Any]:
        """The next message, or WorkerTimeout / WorkerGone / ProtocolError."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout(f"{self.role} gave no answer within {timeout_s:.0f} s")
            ready, _, _ = select.select([self.result_fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self.result_fd, 1 << 20)
            if not chunk:
                raise WorkerGone(f"{self.role} process ended{self._exit_note()}")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ProtocolError(f"{self.role} sent an oversized message")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise ProtocolError(f"{self.role} sent a malformed message") from None
        if not isinstance(message, dict):
            raise ProtocolError(f"{self.role} sent a non-object message")
        expected, self._pending = self._pending, None
        if expected is None or (message.get("reply"), message.get("nonce")) != expected:
            raise ProtocolError(f"{self.role} sent an answer to no pending command")
        if self._buffer.strip():
            raise ProtocolError(f"{self.role} sent more than one answer")
        return message

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a command and wait for its answer."""
        self.send(message)
        return self.recv(timeout_s)

    def finish(self, timeout_s: float = 10.0) -> None:
        """Ask the worker to stop and check that nothing beyond its answers was ever written on
        its channel (a candidate that forged an answer leaves the genuine one behind)."""
        self.send({"cmd": "stop"})
        self._pending = None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.result_fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self.result_fd, 1 << 16)
            if not chunk:
                break
            self._buffer += chunk
        if self._buffer.strip():
            raise ProtocolError(f"{self.role} wrote messages nobody asked for")

    def _exit_note(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return ""
        if code < 0:
            try:
                return f" (killed by {signal.Signals(-code).name})"
            except ValueError:
                return f" (signal {-code})"
        if code == sandbox.OVER_MEMORY_EXIT and self.control is not None:
            said = [ln for ln in self.log_tail().splitlines() if ln.startswith("sandbox: ")]
            return f": {said[-1].removeprefix('sandbox: ')}" if said else " (over its memory)"
        return f" (exit code {code})"

    def log_tail(self, max_chars: int = 3000) -> str:
        try:
            with self.log_path.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - max_chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def discard_log(self) -> None:
        """Remove the log (and a sandboxed worker's private temporary directory)."""
        with contextlib.suppress(OSError):
            self.log_path.unlink()
        shutil.rmtree(self.log_path.with_suffix(".tmp"), ignore_errors=True)

    def terminate(self) -> None:
        """End the worker's processes (compilers included) but leave the pipes to the thread
        that uses them: it sees the channel close and cleans up with `kill`."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()

    def kill(self) -> None:
        """End the worker and everything it started, and close the parent's ends of its pipes."""
        self.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self._closed:  # closing a descriptor number twice could close another thread's file
            return
        self._closed = True
        for f in (self.proc.stdin,):
            if f:
                with contextlib.suppress(OSError):
                    f.close()
        with contextlib.suppress(OSError):
            os.close(self.result_fd)
        if self.control is not None:
            self.control.close()


def spawn(
    role: str,
    log_dir: Path,
    env: dict[str, str] | None = None,
    cpus: frozenset[int] | None = None,
    sandboxed: SandboxSpec | None = None,
) -> Worker:
    """Start `python -m cudal1.evaluate.<role>` in its own process group, on `cpus` if given
    (the child inherits the mask at fork, so every thread and process it starts has it too),
    inside the sandbox if `sandboxed`. It imports torch and waits for its first command, which
    names the directory it works in."""
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, True)
    log_path = log_dir / f"{role}-{uuid.uuid4().hex[:12]}.log"
    log = log_path.open("wb")
    proc_env = dict(os.environ)
    proc_env.update(env or {})
    proc_env["PYTHONUNBUFFERED"] = "1"
    proc_env[RESULT_FD_ENV] = str(write_fd)
    if role == "candidate_worker":
        # torch.compile's parallel compile workers would be child processes left running.
        # Set at spawn: inductor reads it once, when a GPU worker's preload imports
        # torch._dynamo, before any evaluation's own environment arrives.
        proc_env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    own_cpus = os.sched_getaffinity(0)  # this thread's mask: a fork inherits it
    argv = [sys.executable, "-m", f"cudal1.evaluate.{role}"]
    popen: dict[str, Any] = {
        "stdin": subprocess.PIPE,
        "stdout": log,
        "stderr": subprocess.STDOUT,
        "pass_fds": (write_fd,),
        "cwd": log_dir,
        "env": proc_env,
        "start_new_session": True,
    }
    control = None
    try:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        if sandboxed is None:
            proc = subprocess.Popen(argv, **popen)
        else:
            # a private temporary directory from the start (imports ask for one); each
            # evaluation then gives the worker its own
            private_tmp = log_path.with_suffix(".tmp")
            private_tmp.mkdir()
            proc_env["TMPDIR"] = str(private_tmp)
            proc, control = sandbox.start(
                argv,
                writable=[str(private_tmp)],
                gpu=sandboxed.gpu,
                memory=sandboxed.memory,
                **popen,
            )
    finally:
        if cpus is not None:
            os.sched_setaffinity(0, own_cpus)
        os.close(write_fd)
        log.close()
    return Worker(role, proc, read_fd, log_path, control)


def result_channel() -> int:
    """Worker side: take the result pipe from the environment and move it to an unpredictable
    descriptor number, so candidate code cannot find it from argv or the environment."""
    fd = int(os.environ.pop(RESULT_FD_ENV))
    hidden = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100 + secrets.randbelow(900))
    os.close(fd)
    return hidden


def serve(
    handlers: dict[str, Any],
    result_fd: int,
    integrity: Callable[[], list[str]] | None = None,
    preload: Callable[[], Any] | None = None,
) -> None:
    """Worker side: answer commands from stdin until `stop` or end of input. Each answer echoes
    its command's nonce; `integrity` (trusted functions still the ones captured at start?) is
    checked after every command and reported. A pre-started worker for a GPU runs `preload`
    (host-side imports only: nothing touches the GPU before the parent asks, under the device
    lock) when CUDAL1_PRELOAD is set; `ready` is answered once that is done, and does nothing."""
    if os.environ.pop(PRELOAD_ENV, None) and preload is not None:
        preload()
    handlers = {"ready": lambda message: {}, **handlers}
    write = os.write  # bound now, before any candidate code exists
    dumps = json.dumps
    for line in sys.stdin:
        message = json.loads(line)
        cmd = message["cmd"]
        if cmd == "stop":
            break
        try:
            answer = handlers[cmd](message)
        except Exception as e:  # reported to the parent, which decides what it means
            answer = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        if integrity is not None:
            answer["tampered"] = integrity()
        data = (dumps({"reply": cmd, "nonce": message.get("nonce"), **answer}) + "\n").encode()
        while data:
            data = data[write(result_fd, data) :]
