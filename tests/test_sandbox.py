"""The sandbox's host-memory ceiling, and how a sandboxed program's end reaches the evaluator."""

import signal
import subprocess
import sys
import textwrap

import pytest

from cudal1.evaluate import EvalConfig, evaluate, sandbox
from cudal1.tasks import load_suite

GELU = load_suite("bundled", validate=False).get("L1_20")
FAST = dict(device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=14)
MiB = 1 << 20


@pytest.fixture(autouse=True, scope="module")
def _needs_a_sandbox():
    try:
        sandbox.check_available()
    except sandbox.SandboxError as e:
        pytest.skip(f"this machine cannot sandbox: {e}")


def _run(
    code: str, memory: int | None, *args: str, readable: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    proc, control = sandbox.start(
        [sys.executable, "-S", "-c", code, *args],
        writable=[],
        gpu=False,
        memory=memory,
        readable=readable,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        control.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


ASK_FOR_A_GIB = (
    "try:\n    bytearray(1 << 30)\n    print('given')\nexcept MemoryError:\n    print('refused')\n"
)

TOUCH_SHARED = (
    "import mmap, time\n"
    "m = mmap.mmap(-1, {size})  # shared and anonymous: not data, for RLIMIT_DATA\n"
    "for i in range(0, len(m), 4096):\n    m[i] = 1\n"
    "print('held', flush=True)\ntime.sleep({hold})\n"
)

WRITE_MEMFD = (
    "import os, time\nfd = os.memfd_create('x')\nchunk = b'1' * (16 << 20)\n"
    "for _ in range(64):\n    os.write(fd, chunk)  # 1 GiB in memory, mapped nowhere\n"
    "print('held', flush=True)\ntime.sleep(60)\n"
)


def test_an_allocation_past_the_ceiling_fails_in_the_program_that_asked():
    """RLIMIT_DATA: the program's own allocator says no at once, and the program goes on."""
    assert _run(ASK_FOR_A_GIB, memory=None).stdout.strip() == "given"
    limited = _run(ASK_FOR_A_GIB, memory=512 * MiB)
    assert (limited.returncode, limited.stdout.strip()) == (0, "refused"), limited.stderr


@pytest.mark.parametrize(
    "code", [TOUCH_SHARED.format(size=1 << 30, hold=60), WRITE_MEMFD], ids=["shared", "memfd"]
)
def test_memory_the_data_limit_does_not_count_ends_the_sandbox(code):
    """Shared mappings and memfd files escape RLIMIT_DATA; the launcher's watch ends the whole
    namespace and says how much it held."""
    ended = _run(code, memory=512 * MiB)
    assert ended.returncode == sandbox.OVER_MEMORY_EXIT, (ended.returncode, ended.stderr)
    assert "over the sandbox's limit of 0.5 GiB" in ended.stderr


def test_memory_under_the_ceiling_is_left_alone():
    kept = _run(TOUCH_SHARED.format(size=64 * MiB, hold=1), memory=512 * MiB)
    assert (kept.returncode, kept.stdout.strip()) == (0, "held"), kept.stderr


def test_a_program_killed_by_sigkill_ends_its_launcher_the_same_way():
    """The launcher passes the program's signal on (before, re-raising SIGKILL failed in
    signal.signal and the launcher exited 1: an out-of-memory kill read as 'exit code 1')."""
    killed = _run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", memory=None)
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def _gelu(imports: str = "", init: str = "", forward: str = "") -> str:
    """A GELU candidate running `init` in its __init__ and `forward` before it answers."""
    lines = [imports, "import torch", "import torch.nn as nn", "", "", "class ModelNew(nn.Module):"]
    if init:
        lines += ["    def __init__(self):", "        super().__init__()"]
        lines += [textwrap.indent(init, " " * 8), ""]
    lines += [
        "    def forward(self, x):",
        *([textwrap.indent(forward, " " * 8)] if forward else []),
    ]
    lines += ["        return torch.nn.functional.gelu(x)", ""]
    return "\n".join(lines)


def test_a_layer_too_large_for_the_host_fails_at_once_naming_the_allocation():
    """A GRPO candidate built nn.Linear(256**3 * 128, 512), 1.1e12 weights, and spent 131.5 s
    loading on the H100 box until a SIGKILL. Under the ceiling torch's allocator refuses it."""
    source = _gelu(init="self.w = nn.Parameter(torch.empty(1 << 30))  # 4 GiB")
    result = evaluate(GELU, source, EvalConfig(**FAST, host_memory_gb=2.0))
    assert result.status == "runtime_error", result.reasons
    assert "can't allocate memory" in " ".join(result.reasons)


def test_shared_memory_past_the_ceiling_ends_the_candidate_naming_it():
    touch = "m = mmap.mmap(-1, 3 << 30)\nfor i in range(0, len(m), 4096):\n    m[i] = 1"
    config = EvalConfig(**FAST, host_memory_gb=2.0, static_gate=False)  # the OS layer alone
    result = evaluate(GELU, _gelu(imports="import mmap", forward=touch), config)
    assert result.status == "runtime_error", result.reasons
    assert "over the sandbox's limit of 2.0 GiB" in result.reasons[-1]


def test_a_load_that_holds_the_device_too_long_is_a_timeout_naming_it():
    """Importing the candidate and ModelNew's __init__ share the device with every other
    evaluation's timed phases: they get `load_device_s`, not the 900 s a build gets."""
    spin = "end = time.time() + 60\nwhile time.time() < end:\n    pass"
    source = _gelu(imports="import time", init=spin)
    result = evaluate(GELU, source, EvalConfig(**FAST, load_device_s=3.0))
    assert result.status == "timeout", result.reasons
    assert result.reasons == [
        "importing it and constructing ModelNew held the device for more than 3 s "
        "(builds not counted)"
    ]


@pytest.mark.parametrize(("value", "shown"), [("abc", "'abc'"), ("0", "0"), ("true", "True")])
def test_a_bad_ceiling_is_one_line_and_nothing_written(cli, tmp_path, value, shown):
    out = tmp_path / "run"
    code, _, err = cli(
        *("train", "grpo", "--model", "tiny-random", "--steps", "1", "--device", "cpu"),
        *("--out", str(out), "--set", f"eval.host_memory_gb={value}"),
    )
    assert code == 2 and not out.exists()
    assert err.strip().splitlines() == [
        "cudal1: error: host_memory_gb must be a number of GiB > 0, or null for no ceiling; "
        f"got {shown}"
    ]


READ_THEN_WRITE = (
    "import sys\n"
    "try:\n    print(open(sys.argv[1] + '/shown.txt').read())\n"
    "except FileNotFoundError:\n    print('hidden')\n"
    "try:\n    open(sys.argv[1] + '/written.txt', 'w')\n    print('written')\n"
    "except OSError as e:\n    print(e.strerror)\n"
)


def test_the_hosts_tmp_is_hidden_but_for_what_python_runs_from(tmp_path):
    """The sandbox's /tmp is its own, so a venv made under the host's /tmp would vanish with
    it; the directories Python and cudal1 run from are shown there read-only, nothing else."""
    assert str(tmp_path).startswith("/tmp/")
    (tmp_path / "shown.txt").write_text("from the host")
    outcomes = []
    for readable in ((), (str(tmp_path),)):
        done = _run(READ_THEN_WRITE, None, str(tmp_path), readable=readable)
        assert done.returncode == 0, done.stderr
        outcomes.append(done.stdout.split("\n")[:2])
    assert outcomes[0][0] == "hidden"
    assert outcomes[1] == ["from the host", "Read-only file system"]
    assert not (tmp_path / "written.txt").exists()
    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    shown = sandbox.in_host_tmp({"/tmp", str(venv), str(venv / "lib"), "/usr/lib", "/tmp/none"})
    assert shown == [str(venv)]


@pytest.mark.parametrize(
    ("failure", "advice", "wrong_advice"),
    [
        ("cannot start /gone/bin/python: No such file", "check that this Python", "namespaces"),
        ("unshare: Operation not permitted", "allow unprivileged user namespaces", "this Python"),
    ],
)
def test_a_machine_that_cannot_sandbox_is_told_what_failed_and_what_to_do(
    monkeypatch, failure, advice, wrong_advice
):
    """The advice follows the failure: a program the sandbox cannot start is not a kernel that
    refuses namespaces."""
    from cudal1.errors import Cudal1Error
    from cudal1.evaluate.evaluator import require_sandbox

    def refuse() -> None:
        raise sandbox.SandboxError(failure)

    monkeypatch.setattr(sandbox, "check_available", refuse)
    with pytest.raises(Cudal1Error) as caught:
        require_sandbox()
    message = str(caught.value)
    assert failure in message and advice in message and "--no-sandbox" in message
    assert wrong_advice not in message
