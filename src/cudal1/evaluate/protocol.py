"""The channel between the parent and its worker processes: JSON lines over a pipe it owns.

Each worker gets commands on its stdin and answers on a separate pipe whose read end only the
parent holds; its stdout and stderr go to a log file that nobody parses. JSON (never pickle)
crosses the boundary, so a malicious answer is at worst malformed, which counts as a failure.
Tensors travel as `torch.save` files in the evaluation's private directory and are read back
with `weights_only=True`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LINE_BYTES = 16 << 20


class WorkerGone(Exception):
    """The worker exited or closed its channel before answering."""


class WorkerTimeout(Exception):
    """The worker did not answer in time."""


class ProtocolError(Exception):
    """The worker's answer was not a well-formed message."""


@dataclass
class Worker:
    """A worker process and the parent's ends of its pipes."""

    role: str
    proc: subprocess.Popen
    result_fd: int
    log_path: Path
    _buffer: bytes = b""

    def send(self, message: dict[str, Any]) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
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
        return message

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a command and wait for the answer to it (answers echo the command name)."""
        self.send(message)
        answer = self.recv(timeout_s)
        if answer.get("reply") != message["cmd"]:
            raise ProtocolError(
                f"{self.role} answered {answer.get('reply')!r} to {message['cmd']!r}"
            )
        return answer

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
        with contextlib.suppress(OSError):
            self.log_path.unlink()

    def kill(self) -> None:
        """End the worker and everything it started (compilers included)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for f in (self.proc.stdin,):
            if f:
                with contextlib.suppress(OSError):
                    f.close()
        with contextlib.suppress(OSError):
            os.close(self.result_fd)


def spawn(role: str, log_dir: Path, env: dict[str, str] | None = None) -> Worker:
    """Start `python -m cudal1.evaluate.<role>` in its own process group. It imports torch and
    waits for its first command, which names the directory it works in."""
    read_fd, write_fd = os.pipe()
    log_path = log_dir / f"{role}-{uuid.uuid4().hex[:12]}.log"
    log = log_path.open("wb")
    proc_env = dict(os.environ)
    proc_env.update(env or {})
    proc_env["PYTHONUNBUFFERED"] = "1"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", f"cudal1.evaluate.{role}", str(write_fd)],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            cwd=log_dir,
            env=proc_env,
            start_new_session=True,
        )
    finally:
        os.close(write_fd)
        log.close()
    return Worker(role, proc, read_fd, log_path)


def serve(handlers: dict[str, Any], result_fd: int) -> None:
    """Worker side: answer commands from stdin until `stop` or end of input. A pre-started
    worker initialises CUDA before its first command when CUDAL1_WARM=cuda."""
    if os.environ.get("CUDAL1_WARM") == "cuda":
        import torch

        torch.cuda.init()
    out = os.fdopen(result_fd, "w", buffering=1)
    for line in sys.stdin:
        message = json.loads(line)
        cmd = message["cmd"]
        if cmd == "stop":
            break
        try:
            answer = handlers[cmd](message)
        except Exception as e:  # reported to the parent, which decides what it means
            answer = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        out.write(json.dumps({"reply": cmd, **answer}) + "\n")
        out.flush()
