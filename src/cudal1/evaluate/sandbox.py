"""The operating system's boundary around candidate processes (TRUSTED).

Every process that runs candidate code (the candidate worker, the CPU-only builder, and the
compilers they start) is started through this module's launcher, which puts it in new user,
mount, pid, network and IPC namespaces before Python loads anything of the candidate's:

- the whole file system is read-only; only directories the parent grants are writable: the
  evaluation's exchange directory and the candidate's own build directory (another candidate's
  cached build, site-packages, the evaluator's source and start-up files are out of reach, by
  whatever writer: numpy, torch.save, pathlib, os.open or a C++ fopen);
- `/tmp` is an empty tmpfs of the process's own: scratch files at fixed paths there work and
  vanish with it (granted directories under the host's /tmp are bound in);
- `/dev` holds only null, zero, full, random, urandom and, for a process that measures on a GPU,
  the NVIDIA device files (no disks, no terminals); `/dev/shm` is the host's, read-only;
- a pid namespace of its own: no view of other processes, so the judge and the evaluator can be
  neither signalled nor read (`/proc/PID/mem`); when the candidate process ends, the
  namespace's init ends too, and the kernel ends everything the candidate started;
- no network (a namespace with only a loopback device that is down), no System V IPC shared
  with the host;
- no capabilities after `exec` and `no_new_privs`: the read-only mounts cannot be undone from
  inside (a nested user namespace gets them locked).

Host memory has a ceiling (`--memory BYTES`), in two layers:

- the program and everything it starts get it as RLIMIT_DATA, so an allocation beyond it fails
  at once in the process that asked (torch raises "can't allocate memory"). Without it, a
  GRPO candidate's `nn.Linear(256**3 * 128, 512)` (1.1e12 weights) spent 131.5 s loading on
  the H100 box, while the evaluator waited on it, until a SIGKILL (most likely the kernel's
  out-of-memory killer) ended it;
- the launcher sums, four times a second, what the namespace's processes hold in host memory
  (their anonymous pages, the shared memory they map and their memfd files: what RLIMIT_DATA
  does not count) and ends the namespace when the sum passes the ceiling.

What it does not block: reading files the user could read (the task and the candidate's own
source are no secrets; expected outputs never exist in the candidate's process), CPU and GPU time
(bounded by the evaluator's timeouts, and measured), and what the candidate does inside its own
process (the static and dynamic checks of the evaluator cover that).

How. `python -I -S sandbox.py --ctl R,W [--rw DIR]... [--gpu] [--memory BYTES] -- PROGRAM
ARGS` (stdlib only, so nothing of site-packages runs before the boundary exists). The
launcher unshares, mounts, forks the program as the new pid namespace's init and stays behind
as its parent, outside that pid namespace but inside the mount namespace, with the namespace's
capabilities: on its control pipe the parent (the evaluator) can grant one more directory
write access (`rw PATH`) when an evaluation takes a pre-started worker. The namespace's init
(pid 1 there) is a small process of the launcher's that starts the program as its only child,
so signals reach the program as they reach any process. The launcher reports the init's pid
as the host sees it first (`pid N`), and exits with the program's status (98 when it ended
the namespace for its memory).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MOUNT_ATTR_RDONLY = 0x1
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # the same numbers on every architecture (Linux 5.2)
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added in Linux 5.12)
OPEN_TREE_CLONE, MOVE_MOUNT_F_EMPTY_PATH = 0x1, 0x4
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
REFUSED_EXIT = 97
"""The launcher's exit status when the kernel refuses a mechanism (its one line is on stderr)."""
OVER_MEMORY_EXIT = 98
"""The launcher's exit status when it ended the namespace for its host memory (one line on
stderr says how much)."""
MEMORY_POLL_S = 0.25

PRIVATE_TMP_SIZE = "1g"
"""The private /tmp's ceiling (a tmpfs, in memory): scratch files, not builds (those go to the
build directory)."""
BASE_DEVICES = ("null", "zero", "full", "random", "urandom")
GPU_DEVICE_PREFIX = "nvidia"


class SandboxError(Exception):
    pass


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _set_readonly(path: str, readonly: bool, recursive: bool) -> None:
    attr = _MountAttr(MOUNT_ATTR_RDONLY if readonly else 0, 0 if readonly else MOUNT_ATTR_RDONLY)
    flags = AT_RECURSIVE if recursive else 0
    _check(
        _libc.syscall(
            SYS_MOUNT_SETATTR,
            AT_FDCWD,
            path.encode(),
            ctypes.c_uint(flags),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        ),
        f"mount_setattr {path}",
    )


_host_tmp: int | None = None
"""The launcher's handle on the host's /tmp, under the private one: granted directories there
are bound in from it. The launcher keeps it for later grants; the program never has it."""


def grant_writable(path: str) -> None:
    """Make `path` (a directory of the host's, read-only in the launcher's view) writable.
    A directory under the host's /tmp, hidden by the private /tmp, is bound in from it."""
    path = os.path.normpath(path)
    if _host_tmp is not None and path.startswith("/tmp/"):
        _bind_from_host_tmp(path.removeprefix("/tmp/"), path)
    elif os.path.isdir(path):
        _mount(path, path, None, MS_BIND | MS_REC)
    else:
        raise SandboxError(f"{path} is not a directory")
    _set_readonly(path, readonly=False, recursive=False)


def _bind_from_host_tmp(relative: str, target: str) -> None:
    """Bind the host's /tmp/RELATIVE on TARGET by file descriptor (open_tree, move_mount): the
    launcher's /proc is the sandbox's once its init mounts one, so no /proc path reaches it."""
    assert _host_tmp is not None
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE
    tree = _libc.syscall(SYS_OPEN_TREE, _host_tmp, relative.encode(), ctypes.c_uint(flags))
    if tree < 0:
        raise SandboxError(f"open_tree /tmp/{relative}: {os.strerror(ctypes.get_errno())}")
    try:
        os.makedirs(target, exist_ok=True)  # the mount point, in the private /tmp
        moved = _libc.syscall(
            SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH
        )
        _check(moved, f"move_mount {target}")
    finally:
        os.close(tree)


def _private_tmp() -> None:
    """An empty tmpfs of its own on /tmp: code that keeps scratch files at a fixed path under
    /tmp (CUDA-L1's L3_43 writes its sources to /tmp/cuda_extensions) runs, and nothing it
    writes there outlives the process or reaches another evaluation or the host."""
    global _host_tmp
    if os.path.islink("/tmp") or not os.path.isdir("/tmp"):
        return
    _host_tmp = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={PRIVATE_TMP_SIZE}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_namespaces() -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare (user, mount, pid, net, ipc namespaces)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _build_view(writable: list[str], readable: list[str], gpu: bool) -> None:
    """Everything read-only; a minimal /dev; the granted directories writable; the `readable`
    directories of the host's /tmp, which the private /tmp hides, shown read-only."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount reaches the host
    host_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    _set_readonly("/", readonly=True, recursive=True)
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m")
    names = [n for n in os.listdir(f"/proc/self/fd/{host_dev}") if n in BASE_DEVICES]
    if gpu:
        names += [
            n for n in os.listdir(f"/proc/self/fd/{host_dev}") if n.startswith(GPU_DEVICE_PREFIX)
        ]
    for name in [*names, "shm"]:
        source = f"/proc/self/fd/{host_dev}/{name}"
        target = f"/dev/{name}"
        if os.path.isdir(source):
            os.mkdir(target)
            _mount(source, target, None, MS_BIND | MS_REC)
        elif os.path.exists(source):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(source, target, None, MS_BIND)
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(link, f"/dev/{name}")
    os.symlink("/proc/self/fd/1", "/dev/stdout")
    os.symlink("/proc/self/fd/2", "/dev/stderr")
    os.close(host_dev)
    _set_readonly("/dev", readonly=True, recursive=False)
    _private_tmp()
    for path in readable:
        if _host_tmp is not None and path.startswith("/tmp/"):
            _bind_from_host_tmp(path.removeprefix("/tmp/"), path)
            _set_readonly(path, readonly=True, recursive=True)
    for path in writable:
        grant_writable(path)


def _drop_privileges() -> None:
    """No capabilities survive exec: the bounding set is emptied, then every set is cleared."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def _namespace_memory() -> int:
    """Bytes of host memory the processes in this launcher's /proc hold: resident anonymous
    pages, mapped shared memory, and the size of memfd files they keep open (written, not
    mapped, they show in no process's resident set). A page counted twice (a mapped memfd)
    only errs towards ending sooner."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith(("RssAnon:", "RssShmem:")):
                        total += int(line.split()[1]) << 10
            fds = f"/proc/{entry}/fd"
            for fd in os.listdir(fds):
                with contextlib.suppress(OSError):
                    if os.readlink(f"{fds}/{fd}").startswith("/memfd:"):
                        total += os.stat(f"{fds}/{fd}").st_blocks * 512
    return total


def _over_memory(child: int, limit: int, host_proc: int) -> bool:
    """End the namespace (its init: the kernel ends the rest) when it holds more than `limit`
    bytes of host memory, saying so on stderr. Only once the init has mounted the namespace's
    /proc over the host's (`host_proc`, its device number before): until then the launcher
    would be reading every process of the host."""
    if os.stat("/proc").st_dev == host_proc:
        return False
    held = _namespace_memory()
    if held <= limit:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    sys.stderr.write(
        f"sandbox: its processes held {held / 2**30:.1f} GiB of host memory, over the "
        f"sandbox's limit of {limit / 2**30:.1f} GiB; all of them were ended\n"
    )
    return True


def _serve_control(
    child: int, ctl_in: int, ctl_out: int, status_r: int, memory: int | None, host_proc: int
) -> int:
    """The launcher's life after the fork: answer grants and watch the namespace's memory until
    the program ends, then end with its status."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    os.write(ctl_out, f"pid {child}\n".encode())
    buffer = b""
    while not os.waitpid(child, os.WNOHANG)[0]:
        if memory is not None and _over_memory(child, memory, host_proc):
            return OVER_MEMORY_EXIT
        poll_s = 5.0 if memory is None else MEMORY_POLL_S
        ready, _, _ = select.select([ctl_in, wake_r], [], [], poll_s)
        if wake_r in ready:
            os.read(wake_r, 4096)
        if ctl_in not in ready:
            continue
        chunk = os.read(ctl_in, 4096)
        if not chunk:
            # No more grants. A dead parent (a killed Ray actor, a crash) ends this launcher
            # and so the namespace's init through the parent-death signals; a live one that
            # closed its end early is said in the log, and the program runs on: ending it here
            # would turn a stray close in the evaluator into a candidate's runtime error.
            sys.stderr.write(f"sandbox: the control pipe closed (parent {os.getppid()})\n")
            os.close(ctl_in)
            os.waitpid(child, 0)
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            verb, _, path = line.decode().partition(" ")
            try:
                if verb != "rw":
                    raise SandboxError(f"unknown command {verb!r}")
                grant_writable(path)
                reply = "ok"
            except (SandboxError, OSError) as e:
                reply = f"error {e}"
            os.write(ctl_out, (reply + "\n").encode())
    raw = os.read(status_r, 4)
    if len(raw) != 4:  # init failed before the program started
        return REFUSED_EXIT
    status = int.from_bytes(raw, "little")
    if os.WIFSIGNALED(status):  # end the same way, so the parent sees the signal
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # the two with no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, program = argv[:split], argv[split + 1 :]
    writable = [options[i + 1] for i, o in enumerate(options) if o == "--rw"]
    readable = [options[i + 1] for i, o in enumerate(options) if o == "--ro"]
    ctl_in, ctl_out = (int(x) for x in options[options.index("--ctl") + 1].split(","))
    gpu = "--gpu" in options
    memory = int(options[options.index("--memory") + 1]) if "--memory" in options else None
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the evaluator gone: so are we
    try:
        _enter_namespaces()
        _build_view(writable, readable, gpu)
    except (SandboxError, OSError) as e:
        sys.stderr.write(f"sandbox: {e}\n")
        return REFUSED_EXIT
    status_r, status_w = os.pipe()
    launcher_r, launcher_w = os.pipe()  # the write end stays open as long as this process lives
    host_proc = os.stat("/proc").st_dev
    child = os.fork()
    if child == 0:
        if _host_tmp is not None:
            os.close(_host_tmp)
        os.close(ctl_in)
        os.close(ctl_out)
        os.close(status_r)
        os.close(launcher_w)
        _init(program, status_w, launcher_r, memory)
    os.close(status_w)
    os.close(launcher_r)
    return _serve_control(child, ctl_in, ctl_out, status_r, memory, host_proc)


def _init(program: list[str], status_w: int, launcher_r: int, memory: int | None) -> None:
    """The pid namespace's init: start the program as its only child, reap whatever else ends
    up here, and pass the program's wait status to the launcher. The program is not init
    itself, so signals reach it as they reach any process (the kernel ignores a signal an init
    sends itself, `raise(SIGSEGV)` included). It ends with the launcher, which ends with the
    evaluator (parent-death signals): a dead evaluator leaves no candidate running, however
    long it hangs."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _drop_privileges()
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if select.select([launcher_r], [], [], 0)[0]:  # end of file: it died before that
            os._exit(REFUSED_EXIT)
    except (SandboxError, OSError) as e:
        sys.stderr.write(f"sandbox: {e}\n")
        os._exit(REFUSED_EXIT)
    worker = os.fork()
    if worker == 0:
        os.close(status_w)
        try:
            if memory is not None:  # for the program and all it starts; none can raise it
                resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
            os.execvp(program[0], program)
        except OSError as e:
            sys.stderr.write(f"sandbox: cannot start {program[0]}: {e}\n")
        os._exit(REFUSED_EXIT)
    for fd in range(3):  # the program's pipes: its end of them closes when it does
        os.close(fd)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == worker:
            os.write(status_w, status.to_bytes(4, "little"))
            os._exit(0)


# ---- the parent's side -----------------------------------------------------------------------


@dataclass
class Control:
    """The parent's ends of a launcher's control pipe."""

    to_launcher: int
    from_launcher: int
    _pid: int | None = None

    def _line(self, timeout_s: float = 30.0) -> str:
        data = b""
        while not data.endswith(b"\n"):
            ready, _, _ = select.select([self.from_launcher], [], [], timeout_s)
            chunk = os.read(self.from_launcher, 1) if ready else b""
            if not chunk:
                raise SandboxError("the sandbox launcher ended or did not answer")
            data += chunk
        return data.decode().strip()

    def pid(self) -> int:
        """The sandboxed program's pid as this process sees it: the only child of the
        namespace's init, whose pid the launcher says first."""
        if self._pid is None:
            verb, _, value = self._line().partition(" ")
            if verb != "pid":
                raise SandboxError(f"unexpected first line from the launcher: {verb!r}")
            for _ in range(3000):
                found = _children(int(value))
                if found:
                    self._pid = found[0]
                    break
                time.sleep(0.001)
            else:
                raise SandboxError("the sandboxed program did not start")
        return self._pid

    def grant(self, path: str) -> None:
        """Make `path` writable for the sandboxed program and everything it starts."""
        if "\n" in path:
            raise SandboxError("a path with a newline cannot be granted")
        self.pid()  # the first line is the pid; answers follow it
        os.write(self.to_launcher, f"rw {path}\n".encode())
        answer = self._line()
        if answer != "ok":
            raise SandboxError(f"granting {path} failed: {answer.removeprefix('error ')}")

    def close(self) -> None:
        for fd in (self.to_launcher, self.from_launcher):
            with contextlib.suppress(OSError):
                os.close(fd)


def processes() -> dict[int, tuple[int, str, str]]:
    """Every process on this machine: pid -> (parent pid, state, name), from /proc (this
    machine's kernels have no /proc/PID/.../children)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
            found[int(entry)] = (int(parent), state, stat[stat.index("(") + 1 : stat.rindex(")")])
    return found


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid`."""
    return [child for child, (parent, _, _) in processes().items() if parent == pid]


def start(
    argv: list[str],
    writable: list[str],
    gpu: bool,
    memory: int | None = None,
    readable: tuple[str, ...] = (),
    **popen: Any,
) -> tuple[subprocess.Popen, Control]:
    """Start `argv` sandboxed, with at most `memory` bytes of host memory if given; `popen`
    goes to `subprocess.Popen` (its `pass_fds` are kept). The sandbox's /tmp is its own; of
    the host's it shows, read-only, where this Python and cudal1 run from (a venv made under
    /tmp) and the directories in `readable`."""
    cmd_r, cmd_w = os.pipe()
    ans_r, ans_w = os.pipe()
    launcher = [sys.executable, "-I", "-S", __file__, "--ctl", f"{cmd_r},{ans_w}"]
    for path in writable:
        launcher += ["--rw", path]
    for path in in_host_tmp({*_python_in_host_tmp(), *readable}):
        launcher += ["--ro", path]
    if gpu:
        launcher.append("--gpu")
    if memory is not None:
        launcher += ["--memory", str(memory)]
    pass_fds = (*popen.pop("pass_fds", ()), cmd_r, ans_w)
    try:
        proc = subprocess.Popen([*launcher, "--", *argv], pass_fds=pass_fds, **popen)
    finally:
        os.close(cmd_r)
        os.close(ans_w)
    return proc, Control(cmd_w, ans_r)


def in_host_tmp(paths: set[str]) -> list[str]:
    """Those of `paths` that are directories under /tmp, none inside another of them."""
    found = sorted({os.path.normpath(p) for p in paths if os.path.normpath(p).startswith("/tmp/")})
    outermost = [p for p in found if not any(p.startswith(q + "/") for q in found)]
    return [p for p in outermost if os.path.isdir(p)]


@functools.cache
def _python_in_host_tmp() -> list[str]:
    """Where this interpreter, its packages and cudal1 live, as far as the host's /tmp holds
    them: a candidate process runs the same interpreter and imports the same packages."""
    places = {sys.prefix, sys.exec_prefix, str(Path(__file__).resolve().parents[2])}
    return in_host_tmp(places | {os.path.realpath(p) for p in places})


@functools.cache
def check_available() -> None:
    """Raise SandboxError with the kernel's one-line answer when this machine cannot sandbox."""
    proc, control = start(
        [sys.executable, "-S", "-c", "pass"], writable=[], gpu=False, stderr=subprocess.PIPE
    )
    _, err = proc.communicate(timeout=60)
    control.close()
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines() or [f"exit {proc.returncode}"]
        raise SandboxError(lines[-1].removeprefix("sandbox: "))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
