"""The candidate process (UNTRUSTED): loads one candidate, runs and times it, reports raw facts.

Everything in this process is reachable by candidate code, so nothing here decides a verdict
and nothing here knows an expected output. It receives seeds, draws inputs from the pristine
task file's `get_inputs()` (inputs drawn under a tampered torch simply fail the judge's
comparison), writes the candidate's outputs to files for the judge, and answers with facts and
raw timings. A fresh process serves exactly one candidate. Run by the evaluator as
`python -m cudal1.evaluate.candidate_worker RESULT_FD`.

What this process cannot stop, and what covers it: a candidate that rewrites this module's
functions or forges answers on the result pipe must still produce outputs the judge accepts for
inputs it cannot predict, and the static layer rejects the introspection, patching and ctypes
such rewriting needs.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from cudal1.evaluate import harness
from cudal1.evaluate.compare import flatten_outputs, foreign_outputs
from cudal1.evaluate.protocol import result_channel, serve
from cudal1.evaluate.reference import generate_inputs, prepare
from cudal1.evaluate.timing import host_batch, l2_flusher, launch_cover, synchronize, time_call

_exit = os._exit  # bound before any candidate code is imported into the process
HOST_BATCH_CALLS = 10
HOST_BATCHES = 3

# aten ops that move or allocate but compute nothing: allowed under policy `kernel`.
LAYOUT_OPS = frozenset(
    [
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "fill_",
        "zero_",
        "view",
        "_unsafe_view",
        "reshape",
        "permute",
        "transpose",
        "t",
        "contiguous",
        "clone",
        "copy_",
        "_to_copy",
        "to",
        "expand",
        "as_strided",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "select",
        "slice",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "detach",
        "lift_fresh",
        "_reshape_alias",
        "set_",
        "resize_",
        "view_as",
        "movedim",
        "unfold",
        "stride",
        "size",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "is_contiguous",
        "_local_scalar_dense",
        "item",
    ]
)


class _OpLog(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.__name__.split(".")[0])
        return func(*args, **(kwargs or {}))


class CandidateRunner:
    def _enter(self, msg: dict[str, Any]) -> None:
        """Work in the evaluation's directory, build in the candidate's own."""
        self.device = msg["device"]
        os.chdir(msg["workdir"])
        os.environ.update(msg["env"])  # this candidate's own build and temporary directories
        tempfile.tempdir = None  # taken from TMPDIR again

    def build(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Builder (no GPU): import the candidate and construct ModelNew on the CPU, so that
        what it compiles at import or construction is built before the candidate process
        loads it on the GPU. Only a failed build is a verdict; anything else that fails here
        (code that needs the GPU) is left to the candidate process."""
        self._enter(msg)
        task_module = harness.load_task(msg["task"], msg["sizes"])
        t0 = time.perf_counter()
        try:
            module = harness.import_candidate(Path(msg["candidate_path"]))
            model_cls = getattr(module, "ModelNew", None)
            if isinstance(model_cls, type):
                torch.manual_seed(msg["init_seed"])
                model_cls(*task_module.init_inputs())
        except BaseException as e:
            if harness.is_build_error(e):
                return {"build_failed": True, **_failure("compile_error", "the build failed", e)}
        return {"status": "ok", "compile_s": time.perf_counter() - t0}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._enter(msg)
        harness.set_numerics(self.device, msg["tolerance"])
        if self.device == "cuda":
            torch.cuda.init()
        self.numerics_before = harness.numerics_state()
        self.task_module = harness.load_task(msg["task"], msg["sizes"])
        init_seed = msg["init_seed"]
        self.reference = prepare(
            self.task_module.make_model(init_seed), self.device, msg["module_mode"]
        )
        TRUSTED.capture_reference(self.reference)
        # Taken before any candidate code runs: every later thread or child is the candidate's.
        self.threads_before, self.native_before = harness.thread_counts()

        t0 = time.perf_counter()
        try:
            module = harness.import_candidate(Path(msg["candidate_path"]))
        except BaseException as e:  # SystemExit included: the candidate ends, not the harness
            return _failure(harness.classify_load_error(e), "loading the candidate failed", e)
        compile_s = time.perf_counter() - t0
        model_cls = getattr(module, "ModelNew", None)
        if not isinstance(model_cls, type):
            return {"status": "compile_error", "error": "the candidate defines no class ModelNew"}
        t0 = time.perf_counter()
        try:
            torch.manual_seed(init_seed)
            model = model_cls(*self.task_module.init_inputs())
            if not isinstance(model, torch.nn.Module):
                return {"status": "runtime_error", "error": "ModelNew is not a torch.nn.Module"}
            self.model = prepare(model, self.device, msg["module_mode"])
            synchronize(self.device)
        except BaseException as e:
            return _failure(
                harness.classify_load_error(e), "ModelNew(*get_init_inputs()) raised", e
            )
        self.state_before = harness.model_state(
            self.model, include_buffers=msg["module_mode"] == "eval"
        )
        return {"status": "ok", "compile_s": compile_s, "init_s": time.perf_counter() - t0}

    def first_call(self, msg: dict[str, Any]) -> dict[str, Any]:
        """One call before the checked ones: what a candidate builds or tunes on its first
        call (an extension compiled in forward, torch.compile, autotuning) is done here."""
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                self.model(*generate_inputs(self.task_module, msg["seed"], self.device))
            synchronize(self.device)
        except BaseException as e:
            return _failure(harness.classify_load_error(e), "the first call of forward raised", e)
        return {"status": "ok", "first_call_s": time.perf_counter() - t0}

    def _activity(self) -> dict[str, Any]:
        """Threads and processes the candidate left running, and changed global settings."""
        return {
            "python_threads_left": len(_ThreadWatch(self.threads_before).alive()),
            "children": harness.child_processes(),
            "numerics_changed": harness.changed_numerics(self.numerics_before),
        }

    def correctness(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Run the plan's calls; save each output as it was when the call returned."""
        output_bytes = msg["output_bytes"]  # the reference's outputs: the memory poisoned
        warm = generate_inputs(self.task_module, msg["warmup_seed"], self.device)
        try:
            for _ in range(2):  # lazy initialisation (JIT, handles) settles here
                with torch.no_grad():
                    self.model(*warm)
                synchronize(self.device)
        except BaseException as e:
            return _failure("runtime_error", "forward raised", e)
        del warm
        _, native_before = harness.thread_counts()
        threads = _ThreadWatch(self.threads_before)
        calls = []
        buffers: list[Any] | None = None
        for step in msg["plan"]:
            fresh = generate_inputs(self.task_module, step["seed"], self.device, step["scale"])
            if step["reuse_buffers"] and buffers is not None:
                harness.refill(buffers, fresh)
                inputs = buffers
            else:
                inputs = buffers = fresh
            pristine = harness.clone_inputs(inputs)
            harness.poison_free_memory(self.device, output_bytes)
            synchronize(self.device)
            try:
                threads.calling()
                with torch.no_grad():
                    out = self.model(*inputs)
                foreign = foreign_outputs(out)
                if foreign:  # never touched: a lazy tensor computes when it is inspected
                    calls.append({"foreign": foreign})
                    break
                try:
                    snapshot = [t.clone() for t in flatten_outputs(out)[0]]
                except Exception:
                    snapshot = []
                if self.device == "cpu":
                    time.sleep(0.005)  # a background thread still writing would show up now
                synchronize(self.device)
            except BaseException as e:
                return _failure("runtime_error", f"forward raised on call {len(calls)}", e)
            facts = harness.output_facts(
                out, inputs, pristine, self.model, self.state_before, snapshot
            )
            harness.write_outputs(snapshot, step["stem"])
            calls.append(facts)
            del out, snapshot
            threads.settled()
        _, native_after = harness.thread_counts()
        return {
            "status": "ok",
            "calls": calls,
            "native_threads_delta": native_after - native_before,
            "threads_worked": [threads.worked, threads.calls],
            **self._activity(),
        }

    def time(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Paired timing: reference and candidate alternate in random order, each call on fresh
        inputs copied into fixed buffers after an L2 flush. Whether a candidate call's output
        goes to the judge is drawn only after the call has returned (selection sampling: exactly
        `check` of them), so no call can know in advance that it will be checked. Without
        reference seeds the candidate runs alone, back to back, as the judge times the clean
        reference."""
        rng = random.Random(int.from_bytes(os.urandom(8), "little"))
        flush = l2_flusher(self.device)
        cand_seeds, ref_seeds = msg["candidate_seeds"], msg["reference_seeds"]
        pairs = len(cand_seeds)
        cand_buf = generate_inputs(self.task_module, msg["buffer_seeds"][0], self.device)
        ref_buf = generate_inputs(self.task_module, msg["buffer_seeds"][1], self.device)
        to_check = min(msg["check"], pairs)
        cand_ms, ref_ms, order, escaped, saved = [], [], [], 0, []
        try:
            with torch.no_grad():
                for _ in range(msg["warmup"]):
                    time_call(self.device, self.model, cand_buf)
                    if ref_seeds:
                        time_call(self.device, self.reference, ref_buf)
                cover = {
                    "cand": launch_cover(self.device, self.model, cand_buf),
                    "ref": (
                        launch_cover(self.device, self.reference, ref_buf)
                        if ref_seeds
                        else (0.0, 0)
                    ),
                }
                for i in range(pairs):
                    if not ref_seeds:
                        whos: tuple[str, ...] = ("cand",)
                    else:
                        whos = ("cand", "ref") if rng.random() < 0.5 else ("ref", "cand")
                    order.append("".join(who[0] for who in whos))
                    for who in whos:
                        model, buf, seed = (
                            (self.model, cand_buf, cand_seeds[i])
                            if who == "cand"
                            else (self.reference, ref_buf, ref_seeds[i])
                        )
                        harness.refill(buf, generate_inputs(self.task_module, seed, self.device))
                        flush()
                        call = time_call(self.device, model, buf, cover[who][1])
                        if who == "ref":
                            ref_ms.append(call.ms)
                            continue
                        cand_ms.append(call.ms)
                        escaped += call.escaped
                        if rng.random() * (pairs - i) < to_check - len(saved):
                            harness.write_outputs(
                                call.snapshot, f"{msg['out_dir']}/{msg['stem']}{i}"
                            )
                            saved.append(i)
                host = host_batch(self.device, self.model, cand_buf, HOST_BATCH_CALLS, HOST_BATCHES)
                reference_host = (
                    host_batch(self.device, self.reference, ref_buf, HOST_BATCH_CALLS, HOST_BATCHES)
                    if ref_seeds
                    else None
                )
        except BaseException as e:
            return _failure("runtime_error", "forward raised while timing", e)
        return {
            "status": "ok",
            "candidate_ms": cand_ms,
            "reference_ms": ref_ms,
            "order": order,
            "escaped_calls": escaped,
            "saved": saved,
            "host_ms_per_call": host.wall_ms,
            "stream_ms_per_call": host.stream_ms,
            "reference_host_ms_per_call": reference_host.wall_ms if reference_host else None,
            "cover_us": {who: round(us, 1) for who, (us, _) in cover.items()},
            **self._activity(),
        }

    def profile(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Which kernels one call ran (all streams), which PyTorch ops `forward` executed, and
        the reference's kernels for one call (how busy it keeps the GPU)."""
        inputs = generate_inputs(self.task_module, msg["seed"], self.device)
        log = _OpLog()
        try:
            with torch.no_grad(), log:
                self.model(*inputs)
            synchronize(self.device)
            kernels: list[dict[str, Any]] = []
            reference_kernels: list[dict[str, Any]] = []
            call_ms = None
            if self.device == "cuda":
                kernels, call_ms = _profile_kernels(self.model, inputs)
                reference_kernels, _ = _profile_kernels(self.reference, inputs)
        except BaseException as e:
            return _failure("runtime_error", "forward raised while profiling", e)
        return {
            "status": "ok",
            "aten_ops": sorted(op for op in log.ops if not _is_layout(op)),
            "kernels": kernels,
            "call_ms": call_ms,
            "reference_kernels": reference_kernels,
            **self._activity(),
        }


class _ThreadWatch:
    """The Python threads the candidate started and left running, and whether they work in
    the checked calls. Deferred work (HACKS.md #2: a thread handed the output, or the kernels
    to launch, that finishes after forward returns, or before it by chance) works call after
    call; a helper a library leaves parked does not (CUDA-L1's L2_72 was refused for
    torch.compile's two idle threads while any thread left running was refused), and a
    monitor that wakes on its own clock (tqdm's, every 10 s) works in a few calls at most."""

    def __init__(self, before: set[int]) -> None:
        self.before = before
        self.at_call: dict[int, int] = {}
        self.calls = 0
        self.worked = 0
        """Calls in which a candidate thread ran, started or ended (from the call's start to
        the end of the harness's work after it)."""

    def alive(self) -> set[int]:
        """Native ids of the candidate's live Python threads."""
        return {
            t.native_id
            for t in threading.enumerate()
            if t.ident not in self.before and t.native_id is not None
        }

    def calling(self) -> None:
        """A call of forward starts."""
        self.at_call = harness.thread_cpu_ns(self.alive())

    def settled(self) -> None:
        """The harness's work after that call is done (snapshot, synchronisation, checks)."""
        alive = self.alive()
        now = harness.thread_cpu_ns(alive)
        self.calls += 1
        self.worked += bool(alive - self.at_call.keys()) or any(
            now.get(tid) != ns for tid, ns in self.at_call.items()
        )


def _is_layout(op: str) -> bool:
    return op in LAYOUT_OPS or op.rstrip("_") in LAYOUT_OPS


class _Trusted:
    """The harness's own callables, captured before any candidate code exists. After every
    command the worker reports which of them no longer are what they were (monkeypatching of
    timers, comparators, the harness or the reference: HACKS.md #4, #24)."""

    NAMES: ClassVar[dict[str, tuple[str, ...]]] = {
        "time": ("perf_counter", "sleep", "monotonic"),
        "torch": ("equal", "from_file"),
        "torch.cuda": ("synchronize", "Event", "current_stream", "_sleep"),
        "torch.Tensor": ("clone", "copy_", "cpu", "contiguous", "view"),
        "torch.cuda.Event": ("record", "elapsed_time", "synchronize"),
        "cudal1.evaluate.harness": (
            "output_facts",
            "refill",
            "clone_inputs",
            "model_state",
            "thread_counts",
            "thread_cpu_ns",
            "child_processes",
            "changed_numerics",
            "numerics_state",
            "poison_free_memory",
            "write_outputs",
        ),
        "cudal1.evaluate.timing": (
            "time_call",
            "l2_flusher",
            "host_batch",
            "launch_cover",
            "same_bits",
            "bits",
        ),
        "cudal1.evaluate.reference": ("generate_inputs", "prepare"),
        "cudal1.evaluate.compare": ("flatten_outputs",),
        "__main__": ("time_call", "generate_inputs", "harness", "flatten_outputs"),
    }

    def __init__(self) -> None:
        self.captured = {
            (owner, name): self._lookup(owner, name)
            for owner, names in self.NAMES.items()
            for name in names
        }

    @staticmethod
    def _lookup(owner: str, name: str) -> Any:
        obj: Any = sys.modules.get(owner)
        if obj is None:  # a class path such as torch.cuda.Event
            module, _, cls = owner.rpartition(".")
            obj = getattr(sys.modules[module], cls)
        return getattr(obj, name, None) if not isinstance(obj, dict) else obj.get(name)

    def capture_reference(self, reference: torch.nn.Module) -> None:
        self.reference_forward = type(reference).forward
        self.reference_class = type(reference)
        self.reference = reference

    def check(self) -> list[str]:
        changed = [
            f"{owner}.{name}"
            for (owner, name), obj in self.captured.items()
            if self._lookup(owner, name) is not obj
        ]
        if getattr(self, "reference", None) is not None and (
            type(self.reference) is not self.reference_class
            or self.reference_class.forward is not self.reference_forward
            or "forward" in vars(self.reference)
        ):
            changed.append("the reference model's forward")
        return changed


PROFILE_WARM_S = 0.05


def _profile_kernels(
    model: torch.nn.Module, inputs: list[Any]
) -> tuple[list[dict[str, Any]], float]:
    """Every GPU activity (kernels, copies, memsets) of one call, on every stream, and the
    call's own time by events on the current stream: work outside that call's events escaped
    them, whatever the timed calls took. (CUDA-L1's L3_17, torch.compile with cuDNN benchmark,
    showed 1.02-1.03 ms of kernels in its profiled call against 0.587 ms of events in its
    timed calls, in two runs, and was refused for escaped work.) Calls for PROFILE_WARM_S
    first, so that the profiled call is not the first after the op-log pass."""
    from torch.profiler import ProfilerActivity, profile

    calls, start = 0, time.perf_counter()
    with torch.no_grad():
        while calls < 2 or time.perf_counter() - start < PROFILE_WARM_S:
            model(*inputs)
            torch.cuda.synchronize()
            calls += 1
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        begin.record()
        model(*inputs)
        end.record()
        torch.cuda.synchronize()
    kernels = [
        {
            "name": ev.name,
            "stream": ev.device_resource_id,
            "start_us": ev.time_range.start,
            "us": ev.time_range.elapsed_us(),
        }
        for ev in prof.events()
        if ev.device_type == torch.autograd.DeviceType.CUDA
    ]
    return kernels, begin.elapsed_time(end)


def _failure(status: str, what: str, e: BaseException) -> dict[str, Any]:
    text = f"{type(e).__name__}: {e}"
    if status == "compile_error":
        text = harness.trim_compiler_output(text)
    return {"status": status, "error": f"{what}: {text[:4000]}"}


TRUSTED = _Trusted()


def main() -> None:
    runner = CandidateRunner()
    serve(
        {
            "hello": lambda msg: harness.warm_device(msg.get("device")),
            "build": runner.build,
            "load": harness.releasing(runner.load),
            "first_call": harness.releasing(runner.first_call),
            "correctness": harness.releasing(runner.correctness),
            "time": runner.time,
            "profile": harness.releasing(runner.profile),
        },
        result_channel(),
        integrity=TRUSTED.check,
        preload=harness.preload,
    )
    # Stopped: end now. The parent waits for the channel to close (every copy of it: nothing
    # more can be written then), and the interpreter's teardown of torch would keep it waiting
    # for nothing (0.5 s for torch alone on the CPU machine).
    for stream in (sys.stdout, sys.stderr):  # the worker's log
        with contextlib.suppress(Exception):  # whatever the candidate made of its streams
            stream.flush()
    _exit(0)


if __name__ == "__main__":
    main()
