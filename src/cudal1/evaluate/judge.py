"""The judge process (trusted): expected outputs, clean reference timing, and the comparison.

It loads only the pristine task file, never candidate code. Expected outputs (fp32 and fp64) for
the correctness trials are computed here before the candidate process receives any seed, and
they never leave this process: the candidate's outputs come here, as files, to be compared.
Run as `python -m cudal1.evaluate.judge RESULT_FD` by the evaluator.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

from cudal1.evaluate import harness
from cudal1.evaluate.baselines import baseline_callable, measure_ceilings
from cudal1.evaluate.compare import (
    OutputTolerance,
    calibrate,
    compare,
    flatten_outputs,
    merge,
)
from cudal1.evaluate.hygiene import check_task
from cudal1.evaluate.protocol import result_channel, serve
from cudal1.evaluate.reference import double_model, generate_inputs, prepare, run, to_double
from cudal1.evaluate.timing import l2_flusher, launch_cover, time_call
from cudal1.tasks import Task


class Judge:
    def __init__(self) -> None:
        self.expected: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        self.tolerance: list[OutputTolerance] = []

    def prepare(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A task's reference, its expected outputs and tolerance. A judge measuring baselines
        prepares task after task: what the last one left goes first."""
        self.forget({})
        os.chdir(msg["workdir"])
        self.device = msg["device"]
        self.mode = msg["tolerance"]
        harness.set_numerics(self.device, msg["tolerance"])
        self.task_module = harness.load_task(msg["task"], msg["sizes"])
        model = self.task_module.make_model(msg["init_seed"])
        self.model = prepare(model, self.device, msg["module_mode"])
        # KernelBench's rule compares with the fp32 reference only: no fp64 twin to run
        self.model64 = (
            double_model(self.task_module, msg["init_seed"], self.device, msg["module_mode"])
            if self.mode == "calibrated"
            else None
        )
        self.fallback = ""
        tols = None
        structure = ""
        facts: dict[str, Any] = {}
        stress_ok = True
        for trial in msg["trials"]:
            seed = trial["seed"]
            inputs = generate_inputs(self.task_module, seed, self.device, trial["scale"])
            pristine = harness.clone_inputs(inputs)
            with torch.no_grad():
                out = self.model(*inputs)
            y32, structure = flatten_outputs(out)
            if not facts:  # does the reference itself alias or mutate its inputs?
                facts = harness.output_facts(
                    out, inputs, pristine, self.model, harness.model_state(self.model, True), y32
                )
            y64 = self._truth(pristine, y32)
            self.expected[seed] = (y32, y64)
            t = calibrate(y32, y64, self.mode)
            if trial["scale"] != 1.0:  # the stress trial: kept only if the reference stays finite
                stress_ok = all(bool(torch.isfinite(y).all()) for y in y32 if y.is_floating_point())
                continue  # and it does not loosen the tolerance of the ordinary trials
            tols = t if tols is None else merge(tols, t)
        if not self.fallback:  # after a fallback, `_truth` has set KernelBench's tolerance
            self.tolerance = tols or []
        return {
            "structure": structure,
            "outputs": [{"shape": list(y.shape), "dtype": str(y.dtype)} for y in y32],
            "tolerance": [t.to_dict() for t in self.tolerance],
            "stress_ok": stress_ok,
            "reference_aliases": bool(facts.get("aliases")),
            "reference_mutates": bool(facts.get("inputs_mutated")),
            "env": harness.device_env(self.device),
            "tolerance_fallback": self.fallback,
        }

    def forget(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Drop the task's state (a judge kept for the next task's baselines holds no device
        memory between tasks)."""
        self.expected, self.baseline_fns = {}, {}
        self.model = self.model64 = None
        if "torch._dynamo" in sys.modules:  # compiled baselines of the last task
            torch._dynamo.reset()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        return {}

    def _truth(self, inputs: list[Any], y32: list[torch.Tensor]) -> list[torch.Tensor]:
        """The fp64 ground truth. When the reference cannot run in fp64 (a dtype it hard-codes,
        or no memory for the fp64 activations) the task falls back to KernelBench's tolerance
        against the fp32 reference, said in `tolerance_fallback`, rather than no verdict."""
        if self.model64 is None:
            return y32
        try:
            return run(self.model64, to_double(inputs))
        except RuntimeError as e:  # torch.OutOfMemoryError is one
            self.model64, self.mode = None, "kernelbench"
            self.fallback = f"fp64 reference failed ({type(e).__name__}: {str(e)[:160]})"
            self.tolerance = calibrate(y32, y32, self.mode)
            if self.device == "cuda":
                torch.cuda.empty_cache()
            return y32

    def time_reference(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The reference alone, in a process that never saw candidate code: the clean baseline."""
        return {"ms": self._time_fn(self.model, msg["seeds"], msg["warmup"])}

    def _time_fn(
        self, fn: Any, seeds: list[int], warmup: int, buffers: list[Any] | None = None
    ) -> list[float]:
        """The evaluator's protocol: fresh inputs copied into fixed buffers, L2 flushed, events."""
        flush = l2_flusher(self.device)
        if buffers is None:
            buffers = generate_inputs(self.task_module, seeds[0], self.device)
        samples = []
        with torch.no_grad():
            for _ in range(warmup):
                time_call(self.device, fn, buffers)
            _, cover = launch_cover(self.device, fn, buffers)
            for seed in seeds:
                harness.refill(buffers, generate_inputs(self.task_module, seed, self.device))
                flush()
                samples.append(time_call(self.device, fn, buffers, cover).ms)
        return samples

    def build_baselines(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Build the reference as eager, torch.compile (default, reduce-overhead) and a
        CUDA-graph replay of eager, with their warm-up calls (compiling is not timed); a kind
        that fails says why when it is timed."""
        self.baseline_fns: dict[str, Any] = {}
        for kind in msg["kinds"]:
            try:
                buffers = generate_inputs(self.task_module, msg["seed"], self.device)
                fn = baseline_callable(kind, self.model, buffers, self.device)
                with torch.no_grad():
                    fn(*buffers)
                self.baseline_fns[kind] = (fn, buffers)
            except Exception as e:  # recorded, never silently dropped
                self.baseline_fns[kind] = f"{type(e).__name__}: {str(e)[:400]}"
        return {}

    def baselines(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Time each built baseline by the evaluator's protocol."""
        out: dict[str, Any] = {}
        for kind, built in self.baseline_fns.items():
            if isinstance(built, str):
                out[kind] = {"error": built}
                continue
            fn, buffers = built
            try:
                out[kind] = {"ms": self._time_fn(fn, msg["seeds"], msg["warmup"], buffers)}
            except Exception as e:
                out[kind] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
        return {"baselines": out}

    def roofline(self, msg: dict[str, Any]) -> dict[str, Any]:
        """FLOPs of one forward (PyTorch's counter) and the fewest bytes it must move."""
        from torch.utils.flop_counter import FlopCounterMode

        inputs = generate_inputs(self.task_module, msg["seed"], self.device)
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            out = self.model(*inputs)
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        tensors += list(self.model.parameters()) + list(self.model.buffers())
        tensors += flatten_outputs(out)[0]
        return {
            "flops": int(counter.get_total_flops()),
            "bytes": int(sum(t.numel() * t.element_size() for t in tensors)),
        }

    def hygiene(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Which null answers (zeros, a constant, an ignored input) pass this task's comparison:
        a task they pass is degenerate, and a "speedup" on it shows nothing (HACKS.md #36)."""
        task = Task(**msg["task"])
        try:
            report = check_task(task, self.device, msg["sizes"])
        except RuntimeError as e:  # no fp64 run or no memory for it: said, never fatal
            return {"hygiene": {"error": f"{type(e).__name__}: {str(e)[:200]}"}}
        return {"hygiene": {"ok": report.ok, "passed_nulls": report.passed_nulls}}

    def ceilings(self, msg: dict[str, Any]) -> dict[str, Any]:
        return measure_ceilings(self.device)

    def judge(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Compare candidate output files with the expected outputs of the seeds they answer
        (the parent names both: the files by the evaluation's directory, the seeds it drew)."""
        verdicts = []
        for item in msg["items"]:
            seed = item["seed"]
            if seed in self.expected:
                y32, y64 = self.expected[seed]
            else:  # a sampled timed call: its expectation is computed now, from the seed
                inputs = generate_inputs(self.task_module, seed, self.device)
                y32 = run(self.model, inputs)
                y64 = self._truth(inputs, y32)
            tols = merge(self.tolerance, calibrate(y32, y64, self.mode))
            try:
                cand = read_outputs(item["stem"], y32)
            except OutputFileError as e:
                verdicts.append({"ok": False, "reason": str(e)})
                continue
            c = compare(cand, y32, y64, tols)
            verdicts.append(
                {
                    "ok": c.ok,
                    "reason": c.reason,
                    "max_abs_err": c.max_abs_err,
                    "max_rel_err": c.max_rel_err,
                    "rel_l2": c.rel_l2,
                    "tolerance_ratio": c.tolerance_ratio,
                }
            )
        return {"verdicts": verdicts}


class OutputFileError(Exception):
    """A candidate's output files are missing, extra or of the wrong size."""


def read_outputs(stem: str, expected: list[torch.Tensor]) -> list[torch.Tensor]:
    """The raw output files `STEM_I.bin`, read as the expected outputs' dtypes and shapes."""
    if os.path.exists(f"{stem}_{len(expected)}.bin"):
        raise OutputFileError(f"more than the reference's {len(expected)} output tensors")
    out = []
    for i, y in enumerate(expected):
        path = f"{stem}_{i}.bin"
        if not os.path.isfile(path):
            raise OutputFileError(f"output {i} is missing (the reference returns {len(expected)})")
        size = os.path.getsize(path)
        if size != y.numel() * y.element_size():
            raise OutputFileError(
                f"output {i} holds {size} bytes, the reference's {tuple(y.shape)} {y.dtype} "
                f"needs {y.numel() * y.element_size()}"
            )
        if y.numel() == 0:
            out.append(torch.empty_like(y))
            continue
        flat = torch.from_file(path, shared=False, size=y.numel(), dtype=y.dtype)
        out.append(flat.view(y.shape).to(y.device))
    return out


def main() -> None:
    judge = Judge()
    handlers = {
        "prepare": judge.prepare,
        "time_reference": judge.time_reference,
        "judge": judge.judge,
        "build_baselines": judge.build_baselines,
        "baselines": judge.baselines,
        "roofline": judge.roofline,
        "ceilings": judge.ceilings,
        "hygiene": judge.hygiene,
        "forget": judge.forget,
    }
    serve(
        {
            "hello": lambda msg: harness.warm_device(msg.get("device")),
            **{name: harness.releasing(handler) for name, handler in handlers.items()},
        },
        result_channel(),
        preload=harness.preload,
    )


if __name__ == "__main__":
    main()
