"""End-to-end evaluator behaviour on the CPU backend: verdicts, isolation, the CLI contract."""

import json
import os
import time
from pathlib import Path

import pytest
import torch

from cudal1.evaluate import EvalConfig, evaluate, evaluator, nvcc_driver
from cudal1.tasks import load_suite

from .conftest import REPO
from .corpus import unmeasured

GELU = load_suite("bundled", validate=False).get("L1_20")
FAST = dict(device="cpu", trials=2, timing_budget_s=0.1, min_pairs=7, max_pairs=14)

HONEST = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)
"""


def _eval(source, **overrides):
    return evaluate(GELU, source, EvalConfig(**(FAST | overrides)))


def _with_forward(body: str, header: str = "") -> str:
    return (
        "import torch\nimport torch.nn as nn\n" + header + "\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n" + "".join(f"        {ln}\n" for ln in body.splitlines())
    )


def test_honest_candidate_is_ok_with_full_record():
    r = _eval(HONEST)
    assert r.status == "ok", r.reasons
    if r.speedup is None:  # a busy host disturbed every timing: correct, but unmeasured
        assert unmeasured(r), r.flags
    else:
        assert r.candidate_ms and r.reference_ms and r.timing.reference_clean is not None
    assert r.correctness.passed == r.correctness.trials == 5  # 2 fresh, refill, repeat, stress
    assert r.correctness.timed_outputs_checked >= 1
    assert len(r.timing.bucket_speedups) == 7
    assert r.task_hash == GELU.hash and len(r.candidate_hash) == 16
    phases = {"workers", "reference", "load", "correctness", "timing", "teardown", "total"}
    assert phases <= set(r.phase_seconds)
    named = sum(v for k, v in r.phase_seconds.items() if k in phases - {"total"})
    assert named <= r.phase_seconds["total"] + 1e-3  # the phases follow one another
    assert r.env["torch"]


def test_a_candidate_that_fails_to_load_costs_no_reference_work():
    """Most failing candidates fail in their import or in ModelNew(...) (most of the runtime
    errors in the learning curve's GRPO steps): their verdict comes before the judge computes
    the reference's outputs and times it, once the judge has run that task's reference in this
    process (before that, a task that fails on its own must be named, not the candidate)."""
    failing = HONEST.replace(
        "class ModelNew(nn.Module):",
        "class ModelNew(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n",
    )
    config = EvalConfig(**FAST)
    evaluator.REFERENCES_THAT_RAN.discard(evaluator.reference_key(GELU, config))
    first = _eval(failing + "# 1\n")
    again = _eval(failing + "# 2\n")
    for r in (first, again):
        assert r.status == "runtime_error" and "ModelNew(*get_init_inputs())" in r.reasons[0]
    assert "reference" in first.phase_seconds and "reference" not in again.phase_seconds


def test_wrong_answer_is_incorrect():
    r = _eval(_with_forward("return torch.nn.functional.gelu(x) * 1.001"))
    assert r.status == "incorrect"
    assert "exceeds" in r.reasons[0]


@pytest.mark.parametrize(
    ("source", "status", "reason"),
    [
        ("def broken(:\n", "compile_error", "syntax error"),
        ("import torch\n", "compile_error", "no class ModelNew"),
        ("import not_a_module_xyz\nclass ModelNew: pass\n", "compile_error", "not_a_module_xyz"),
        (
            "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
            "        raise ValueError('bad init')\n",
            "runtime_error",
            "bad init",
        ),
    ],
)
def test_load_failures(source, status, reason):
    r = _eval(source)
    assert r.status == status
    assert reason in " ".join(r.reasons)


def test_segfault_costs_only_the_candidate():
    r = _eval(_with_forward("faulthandler._sigsegv()\nreturn x", header="import faulthandler"))
    assert r.status == "runtime_error"
    assert "SIGSEGV" in r.reasons[0]
    assert _eval(HONEST).status == "ok"  # the next evaluation runs normally


def test_hang_is_a_timeout():
    r = _eval(_with_forward("while True:\n    pass"), run_timeout_s=6)
    assert r.status == "timeout"


@pytest.mark.slow
def test_the_same_hanging_source_evaluated_twice_at_once_times_out_twice(tmp_path):
    """Two evaluations of one source share its build directory and take turns on its lock (two
    runs, or two backends, on one machine). The first times out and empties the directory
    while the second waits: the second must still find a directory to build in. On CI it once
    found none (the first had removed it) and the hang came back as a runtime error."""
    from concurrent.futures import ThreadPoolExecutor

    source = _with_forward("while True:\n    pass") + "\n# twice at once\n"
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(_eval, source, run_timeout_s=4, build_root=tmp_path) for _ in range(2)]
        results = [r.result() for r in runs]
    assert [r.status for r in results] == ["timeout", "timeout"], [r.reasons for r in results]


def test_a_build_lock_whose_directory_was_removed_is_taken_again(tmp_path):
    """A process that waited on the lock of a directory since removed locks the new one."""
    import shutil
    import threading
    import time

    from cudal1.evaluate import harness

    build_dir = tmp_path / "cand"
    holding, removed = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with harness.build_lock(build_dir):
            holding.set()
            removed.wait(10)
            shutil.rmtree(build_dir)  # as an older evaluator did on a failed build

    def second() -> None:
        holding.wait(10)
        with harness.build_lock(build_dir):
            seen.append(build_dir.is_dir() and (build_dir / harness.BUILD_LOCK_NAME).is_file())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    holding.wait(10)
    time.sleep(0.5)  # the second thread is waiting on the lock by now
    removed.set()
    for t in threads:
        t.join(20)
    assert seen == [True]


def test_dynamic_exit_is_a_runtime_error():
    """The static gate rejects the obfuscated name; with it off, the process structure still
    contains the exit: the candidate ends, the evaluation reports it."""
    r = _eval(_with_forward("getattr(os, '_e' + 'xit')(0)", header="import os"), static_gate=False)
    assert r.status == "runtime_error"
    assert "ended" in r.reasons[0]


def test_exception_in_forward():
    r = _eval(_with_forward("return torch.empty(1 << 62)"))
    assert r.status == "runtime_error"


def test_cli_json_contract(cli, tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST)
    code, out, err = cli("eval", "L1_20", str(cand), "--device", "cpu", "--json")
    assert code == 0, err
    row = json.loads(out)  # exactly one JSON object, nothing else on stdout
    for key in [
        "status",
        "reasons",
        "flags",
        "speedup",
        "candidate_ms",
        "reference_ms",
        "correctness",
        "timing",
        "provenance",
        "env",
        "task_hash",
        "candidate_hash",
        "phase_seconds",
    ]:
        assert key in row
    assert row["status"] == "ok"


def test_cli_bad_input_exit_2(cli, tmp_path):
    code, out, err = cli("eval", "L1_20", str(tmp_path / "missing.py"), "--device", "cpu")
    assert code == 2 and "does not exist" in err and out == ""
    bad_task = tmp_path / "task.py"
    bad_task.write_text("import torch\n")
    cand = tmp_path / "c.py"
    cand.write_text(HONEST)
    code, _, err = cli("eval", str(bad_task), str(cand), "--device", "cpu", "--json")
    assert code == 2 and "missing Model" in err
    if not torch.cuda.is_available():
        code, _, err = cli("eval", "L1_20", str(cand), "--device", "cuda")
        assert code == 2 and "no CUDA device" in err


def test_main_job_example_is_honest():
    task = load_suite("bundled", validate=False).get("L2_8")
    source = (REPO / "examples" / "L2_8_fold_batchnorm.py").read_text()
    r = evaluate(task, source, EvalConfig(**FAST))
    assert r.status == "ok", r.reasons


@pytest.mark.slow
def test_a_build_killed_midway_does_not_block_the_next_evaluation(tmp_path):
    """An interrupted run leaves torch's build-in-progress marker behind; the next evaluation of
    that candidate must build, not wait on it until the compile timeout."""
    from cudal1.tasks import source_hash

    source = (REPO / "tests" / "honest" / "candidates" / "gelu_cpp_erf.py").read_text()
    marker = tmp_path / source_hash(source) / "torch_extensions" / "honest_gelu_cpp_erf" / "lock"
    marker.parent.mkdir(parents=True)
    marker.touch()
    r = _eval(source, build_root=tmp_path, compile_timeout_s=240)
    assert r.status == "ok", r.reasons
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.skipif(len(__import__("os").sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_the_measuring_process_runs_on_cores_kept_for_it():
    """Loading runs on the shared cores, the device-locked steps on the kept ones. Each set of
    cores a call runs on is printed once: the log keeps only its tail, and the timing loop's
    many calls pushed the loading line out of it on a slow machine."""
    import os

    cores = sorted(os.sched_getaffinity(0))
    source = _with_forward(
        "cores = sorted(os.sched_getaffinity(0))\n"
        "if str(cores) not in SEEN:\n"
        "    SEEN.add(str(cores))\n"
        '    print("forward on", cores)\n'
        "return torch.nn.functional.gelu(x)",
        header='import os\nprint("loaded on", sorted(os.sched_getaffinity(0)))\nSEEN = set()',
    )
    r = _eval(source, measure_cpus=1)
    assert r.status == "ok", r.reasons
    assert f"loaded on {cores[:-1]}" in r.log_tail
    assert f"forward on {cores[-1:]}" in r.log_tail
    assert f"forward on {cores}" not in r.log_tail


RNN_STATE_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.gru = nn.GRU(n, n, batch_first=True)
        self.h0 = torch.randn(1, 4, n)  # a plain attribute, as in KernelBench's RNN tasks

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        return self.gru(x, self.h0)[0]


def get_inputs():
    return [torch.randn(4, 8, 16)]


def get_init_inputs():
    return [16]
"""

FP32_ONLY_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        w = torch.ones(x.shape[1], 8, dtype=torch.float32, device=x.device)
        return x @ w  # fails in fp64: the weight's dtype is hard-coded


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
"""


def _task_file(tmp_path, source):
    from cudal1.tasks.suites import load_task_file

    path = tmp_path / "task.py"
    path.write_text(source)
    return load_task_file(path)


def _honest_copy(task_source):
    return task_source.replace("class Model(", "class ModelNew(")


CLOSURE_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.ModuleDict(dict(fc=nn.Linear(16, 32), proj=nn.Linear(32, 16)))
        m = self.mlp
        self.mlpf = lambda x: m.proj(torch.relu(m.fc(x)))  # as minGPT's block does

    def forward(self, x):
        return x + self.mlpf(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""


@pytest.mark.slow
@pytest.mark.parametrize("source", [RNN_STATE_TASK, CLOSURE_TASK], ids=["rnn_state", "closure"])
def test_fp64_twin_of_state_kept_outside_parameters(tmp_path, source):
    """A plain tensor attribute and a closure over a submodule: both must be fp64 in the twin
    (KernelBench's RNN tasks and minGPT block), or calibration would fail."""
    task = _task_file(tmp_path, source)
    r = evaluate(task, _honest_copy(source), EvalConfig(**FAST))
    assert r.status == "ok", r.reasons
    assert not any(f.startswith("tolerance_fallback") for f in r.flags)
    assert r.correctness.tolerance[0]["mode"] == "calibrated"


@pytest.mark.slow
def test_a_reference_that_cannot_run_in_fp64_is_judged_with_kernelbench_tolerance(tmp_path):
    task = _task_file(tmp_path, FP32_ONLY_TASK)
    honest = evaluate(task, _honest_copy(FP32_ONLY_TASK), EvalConfig(**FAST))
    assert honest.status == "ok", honest.reasons
    assert any(f.startswith("tolerance_fallback:fp64 reference failed") for f in honest.flags)
    wrong = _honest_copy(FP32_ONLY_TASK).replace("return x @ w", "return x @ w + 0.5")
    assert evaluate(task, wrong, EvalConfig(**FAST)).status == "incorrect"


def test_cpu_partition_keeps_whole_physical_cores(monkeypatch):
    """16 logical CPUs, hyperthread pairs (i, i + 8): the kept cores take both siblings."""
    from cudal1.evaluate import harness

    monkeypatch.setattr(harness.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(harness, "_siblings", lambda cpu: frozenset({cpu % 8, cpu % 8 + 8}))
    part = harness.cpu_partition(2)
    assert part.measuring == {7, 15} and part.shared == set(range(16)) - {7, 15}
    part = harness.cpu_partition(3)
    assert part.measuring == {6, 7, 14, 15}
    assert harness.cpu_partition(0) is None
    # two GPUs measuring at once: each keeps its own cores, and neither's are shared
    lanes = [harness.cpu_partition(2, lane=i, lanes=2) for i in range(2)]
    assert [p.measuring for p in lanes] == [{7, 15}, {6, 14}]
    assert lanes[0].shared == lanes[1].shared == set(range(16)) - {6, 7, 14, 15}
    assert harness.cpu_partition(2, lane=0, lanes=5) is None  # 5 lanes need 20 CPUs
    monkeypatch.setattr(harness.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(harness, "_siblings", lambda cpu: frozenset({cpu}))
    assert harness.cpu_partition(2) is None  # fewer than twice as many: all stay shared


@pytest.mark.skipif(len(__import__("os").sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_a_spawned_worker_and_all_its_threads_start_on_the_given_cores(tmp_path):
    import os

    from cudal1.evaluate.protocol import spawn

    cores = sorted(os.sched_getaffinity(0))
    worker = spawn("judge", tmp_path, cpus=frozenset(cores[:1]))
    try:
        worker.request({"cmd": "hello", "device": "cpu"}, 120)  # torch imported
        tids = [int(t) for t in os.listdir(f"/proc/{worker.proc.pid}/task")]
        assert all(os.sched_getaffinity(t) == set(cores[:1]) for t in tids)
    finally:
        worker.kill()
    assert os.sched_getaffinity(0) == set(cores)  # the spawning thread got its own mask back


def test_a_candidate_process_starts_with_inductors_compile_pool_off(tmp_path):
    """A GPU worker imports torch._dynamo before its first evaluation, and Inductor decides its
    number of compile processes then: set later, the limit came too late, and torch.compile
    left a pool of compile workers running (CUDA-L1's L2_72, refused for a child process)."""
    from cudal1.evaluate.protocol import PRELOAD_ENV, spawn

    worker = spawn("candidate_worker", tmp_path, env={PRELOAD_ENV: "1"})
    try:
        worker.request({"cmd": "ready"}, 300)  # the preload (torch._dynamo) is done
        environ = Path(f"/proc/{worker.proc.pid}/environ").read_bytes().split(b"\0")
        assert b"TORCHINDUCTOR_COMPILE_THREADS=1" in environ
    finally:
        worker.kill()


def test_only_the_gpu_processes_that_need_torch_dynamo_preload_it(tmp_path):
    """The candidate process (its profiler) and a baselines judge (the flop counter) import
    torch._dynamo when they start; an evaluation's judge and its builder, which need it for
    nothing, do not spend the CPU (the import took about 5 s on the H200 machine; on the H100
    box the CPUs set the audit's pace)."""
    from cudal1.evaluate.evaluator import start_worker
    from cudal1.evaluate.protocol import PRELOAD_ENV, worker_env

    env = worker_env("cuda")
    workers = [
        start_worker(role, "cuda", tmp_path, env, None, False)
        for role in ("judge", "candidate_worker", "builder")
    ]
    try:
        environs = [_environ(Path(f"/proc/{w.proc.pid}/environ")) for w in workers]
    finally:
        for w in workers:
            w.kill()
    preloaded = [any(e.startswith(PRELOAD_ENV.encode() + b"=") for e in ev) for ev in environs]
    assert preloaded == [False, True, False]
    assert PRELOAD_ENV in env  # what a baselines judge starts with


def _environ(path: Path) -> list[bytes]:
    """A started process's environment. The kernel may show it empty for a moment after
    Popen returns (exec has passed the point where Popen learns it worked, not yet the point
    where the new image's environment is recorded): 42 of 300 reads straight after Popen on
    the idle CPU machine. A process always has some, so read until it is there."""
    for _ in range(600):
        if found := path.read_bytes():
            return found.split(b"\0")
        time.sleep(0.05)
    raise AssertionError(f"{path} stayed empty")


def test_a_machine_that_cannot_sandbox_stops_with_one_line(cli, tmp_path, monkeypatch):
    """Where the kernel refuses user namespaces: one line naming the cause and the way out,
    exit 2, nothing evaluated; --no-sandbox evaluates and flags the result."""
    from cudal1.evaluate import sandbox

    def refused() -> None:
        raise sandbox.SandboxError(
            "unshare (user, mount, pid, net, ipc namespaces): Operation not permitted"
        )

    monkeypatch.setattr(sandbox, "check_available", refused)
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST)
    code, out, err = cli("eval", "L1_20", str(cand), "--device", "cpu", "--json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Operation not permitted" in err and "--no-sandbox" in err
    code, out, _ = cli("eval", "L1_20", str(cand), "--device", "cpu", "--json", "--no-sandbox")
    result = json.loads(out)
    assert code == 0 and result["status"] == "ok"
    assert any(f.startswith("no_sandbox:") for f in result["flags"])


def test_the_evaluator_reads_only_prefix_names_from_regular_files_beside_objects(tmp_path):
    """The marks sit in the candidate's build directory, which its code can write: a link
    (to a file of the evaluator's), a FIFO (a read that would block) or text that is not a
    prefix's name is passed over; what is read is only a record, never a verdict's input."""
    name = nvcc_driver.prefix_name("some host prefix")
    unit = tmp_path / "ext"
    unit.mkdir()
    (unit / f"cuda.cuda.o{nvcc_driver.PREFIX_MARK}").write_text(name)
    (unit / f"other.o{nvcc_driver.PREFIX_MARK}").write_text("../../etc/passwd")
    secret = tmp_path / "secret.h"
    secret.write_text(nvcc_driver.prefix_name("the evaluator's own"))
    (unit / f"linked.o{nvcc_driver.PREFIX_MARK}").symlink_to(secret)
    os.mkfifo(unit / f"fifo.o{nvcc_driver.PREFIX_MARK}")
    assert evaluator.host_prefixes_reported(tmp_path) == [name]
    assert evaluator.host_prefixes_reported(tmp_path / "absent") == []
