"""Why does one candidate's profiled call show more kernel time than its timed calls?

CUDA-L1's L3_17 (torch.compile of a fire module, cuDNN benchmark on) is refused for
`escaped_work`: the profiler saw 1.02-1.03 ms of kernels in the one profiled call, where the
timed calls' events gave 0.587-0.588 ms (two H100 runs, two commits), though host time per call
agreed with the events. This script runs the candidate the way the worker does, in a plain
process on the GPU box (a diagnostic: the release's source runs unsandboxed here), and prints,
call by call, each profiled by the worker's own function (warm-up calls, then one call in a
profiler session with events around it): the events' time and the kernels the profiler saw
(their union over streams, count and names), before and after the op-log pass (a dispatch
mode) the worker runs first; and the timed median before and after profiling.

    PYTHONPATH=src python3 benchmarks/profile_gap.py --suite .device_data/cuda-l1-h100.jsonl \
        --task L3_17 --out $OUT/profile_gap.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import types
from pathlib import Path
from typing import Any

import torch

from cudal1.evaluate import harness
from cudal1.evaluate.candidate_worker import _OpLog, _profile_kernels
from cudal1.evaluate.evaluator import _busy_ms
from cudal1.evaluate.reference import generate_inputs
from cudal1.evaluate.timing import l2_flusher
from cudal1.report.bench import read_solutions
from cudal1.tasks import load_suite


def event_ms(model: Any, inputs: list[Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    model(*inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def profiled_call(model: Any, inputs: list[Any]) -> dict[str, Any]:
    """One call profiled by the worker's own function (its warm-up calls first): the call's
    events' time and the kernels the profiler saw on every stream."""
    kernels, ms = _profile_kernels(model, inputs)
    kernels.sort(key=lambda k: k["start_us"])
    return {
        "events_ms": round(ms, 4),
        "busy_ms": round(_busy_ms(kernels), 4),
        "kernels": len(kernels),
        "streams": len({k["stream"] for k in kernels}),
        "names": [k["name"][:80] for k in kernels],
        "us": [round(k["us"], 1) for k in kernels],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    task = load_suite(args.suite, validate=False).get(args.task)
    (solution,) = [s for s in read_solutions(args.suite) if s.task_id == args.task and s.code]
    harness.set_numerics("cuda", "calibrated")
    tm = task.load("full")
    module = types.ModuleType("candidate")
    exec(compile(solution.code, "candidate.py", "exec"), module.__dict__)
    torch.manual_seed(0)
    model = module.ModelNew(*tm.init_inputs()).cuda().eval()
    inputs = generate_inputs(tm, 1, "cuda")
    flush = l2_flusher("cuda")
    report: dict[str, Any] = {"task": args.task, "gpu": torch.cuda.get_device_name()}
    with torch.no_grad():
        for _ in range(10):
            event_ms(model, inputs)
        timed = []
        for _ in range(30):
            flush()
            timed.append(event_ms(model, inputs))
        report["timed_ms_median"] = round(statistics.median(timed), 4)
        report["before_op_log"] = [profiled_call(model, inputs) for _ in range(3)]
        with _OpLog():
            model(*inputs)
        torch.cuda.synchronize()
        report["after_op_log"] = [profiled_call(model, inputs) for _ in range(3)]
        timed_after = []
        for _ in range(30):
            flush()
            timed_after.append(event_ms(model, inputs))
        report["timed_ms_median_after_profiling"] = round(statistics.median(timed_after), 4)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(
        f"{args.task} on {report['gpu']}: timed median {report['timed_ms_median']} ms, "
        f"after profiling {report['timed_ms_median_after_profiling']} ms"
    )
    for part in ("before_op_log", "after_op_log"):
        for i, c in enumerate(report[part]):
            print(
                f"{part:14s} call {i}: events {c['events_ms']:.4f} ms, kernels busy "
                f"{c['busy_ms']:.4f} ms, {c['kernels']} kernels on {c['streams']} stream(s)"
            )


if __name__ == "__main__":
    main()
