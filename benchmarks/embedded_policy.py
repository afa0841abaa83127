"""How many answers of the embedded model (SmolLM2-135M-Instruct, CPU) become candidates.

Runs `cudal1 optimize`'s loop (the same Optimizer, prompt, parser and evaluator) on four bundled
tasks with the embedded model and counts, over every answer: parsed (a usable `ModelNew`),
correct (evaluated `ok`), and seconds per answer (generation alone, and the whole loop). With
retries, an answer is the last of its attempts; `generations` counts every attempt.

    python3 benchmarks/embedded_policy.py --out benchmarks/results/2026-12-04-cpu/embedded_policy.json \
        --label compact [--prompt compact --retries 2]

The defaults are `cudal1 optimize`'s for the embedded model; `--prompt paper --retries 0
--temperature 0.8 --max-new-tokens 768` is the loop as it was before the compact prompt
(issue 19's "before"). Other processes on the machine slow generation: the load averages at
start and at the last task written are recorded. `--label` names the configuration in the output
file (several runs merge into one). The file is written after every task, so a run cut short
keeps the tasks it finished (`complete` says whether all were).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.service import make_evaluator
from cudal1.exemplars import ExemplarDB
from cudal1.optimize import OptimizeConfig, Optimizer
from cudal1.policy import LocalPolicy
from cudal1.tasks import resolve_task

TASKS = "L2_8,L1_20,L1_11,L2_1"


class TimedPolicy:
    """The policy, with the seconds spent generating added up."""

    def __init__(self, policy: LocalPolicy) -> None:
        self.policy = policy
        self.name, self.model, self.usage = policy.name, policy.model, policy.usage
        self.generate_s = 0.0

    async def complete(self, prompt, n):
        t0 = time.perf_counter()
        try:
            return await self.policy.complete(prompt, n)
        finally:
            self.generate_s += time.perf_counter() - t0


async def run_task(task_id: str, policy: TimedPolicy, args: argparse.Namespace, work: Path) -> dict:
    task = resolve_task(task_id, "bundled")
    results: list[dict] = []

    def on_event(e: dict) -> None:
        if e["event"] == "result":
            results.append(
                {
                    "status": e["status"],
                    "speedup": e["speedup"],
                    "final": e.get("final", True),
                    "error": e.get("error"),
                }
            )

    config = OptimizeConfig(
        rounds=args.rounds,
        samples=args.samples,
        device="cpu",
        eval_jobs=args.eval_jobs,
        prompt=args.prompt,
        retries=args.retries,
    )
    evaluator = make_evaluator("local", EvalConfig(device="cpu"), jobs=args.eval_jobs)
    gen_before = policy.generate_s
    t0 = time.perf_counter()
    try:
        db = ExemplarDB(work / f"{task_id}.db")
        await Optimizer(task, policy, db, evaluator, config, on_event=on_event).run()
    finally:
        evaluator.close()
    return {
        "task": task_id,
        "answers": results,
        "wall_s": time.perf_counter() - t0,
        "generate_s": policy.generate_s - gen_before,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="default")
    parser.add_argument("--tasks", default=TASKS)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=400)
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--prompt", default="compact", choices=["paper", "compact"])
    parser.add_argument("--retries", type=int, default=2)
    parser.add_argument("--eval-jobs", type=int, default=4)
    args = parser.parse_args()

    load_before = os.getloadavg()
    policy = TimedPolicy(
        LocalPolicy(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    )
    t0 = time.perf_counter()
    policy.policy.load()
    load_s = time.perf_counter() - t0
    tasks = args.tasks.split(",")
    per_task: list[dict] = []
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        for task_id in tasks:
            # one event loop for every task: the policy's lock belongs to the loop it first
            # waited in (a loop per task failed on the third task with 5 samples)
            per_task.append(loop.run_until_complete(run_task(task_id, policy, args, Path(tmp))))
            # written after every task: a run cut short keeps the tasks it finished
            row = summarise(args, policy, per_task, tasks, load_s, load_before)
            save(args.out, args.label, row)
            done = per_task[-1]
            print(
                f"  {done['task']}: {[a['status'] for a in done['answers'] if a['final']]} "
                f"({done['wall_s']:.0f} s)",
                flush=True,
            )
    n = row["answers"]
    print(
        f"{args.label}: {n} answers ({row['generations']} generations), "
        f"parsed {row['parsed']} ({row['parse_rate']:.0%}), "
        f"correct {row['correct']} ({row['correct_rate']:.0%}), "
        f"{row['generate_s_per_answer']:.1f} s generating and {row['wall_s_per_answer']:.1f} s "
        "in all per answer"
    )
    return 0


def summarise(
    args: argparse.Namespace,
    policy: TimedPolicy,
    per_task: list[dict],
    tasks: list[str],
    load_s: float,
    load_before: tuple[float, float, float],
) -> dict:
    generations = [a for t in per_task for a in t["answers"]]
    answers = [a for a in generations if a["final"]]
    n = len(answers)
    parsed = sum(a["status"] != "unparsed" for a in answers)
    correct = sum(a["status"] == "ok" for a in answers)
    return {
        "label": args.label,
        "model": policy.model,
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "label")},
        "tasks_done": [t["task"] for t in per_task],
        "complete": len(per_task) == len(tasks),
        "answers": n,
        "generations": len(generations),
        "parsed": parsed,
        "correct": correct,
        "parse_rate": parsed / n if n else None,
        "correct_rate": correct / n if n else None,
        "generate_s_per_answer": sum(t["generate_s"] for t in per_task) / n if n else None,
        "wall_s_per_answer": sum(t["wall_s"] for t in per_task) / n if n else None,
        "model_load_s": load_s,
        "completion_tokens": policy.usage.completion_tokens,
        "per_task": per_task,
        "git_revision": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "environment": {
            "torch": torch.__version__,
            "cpu_threads": torch.get_num_threads(),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_1_5_15_at_start": load_before,
            "loadavg_1_5_15_now": os.getloadavg(),
        },
    }


def save(out: Path, label: str, row: dict) -> None:
    existing = json.loads(out.read_text()) if out.is_file() else {}
    existing[label] = row
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(existing, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
