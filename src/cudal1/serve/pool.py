"""The server's evaluators behind one admission queue.

`jobs` evaluations run at once, whatever policy and tolerance each asks for; `max_queue` more
may wait for a slot, and the HTTP route refuses one more with 503 and a `Retry-After` worked
out from recent evaluation times. Each (policy, tolerance) pair gets its own `LocalEvaluator`
(the evaluator's config is fixed per instance), started when first asked for; the server's
default pair starts with the server. Everything here runs on the event loop's thread, so the
counters need no lock: between `full()` and the start of `run()` nothing else runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from dataclasses import dataclass

from cudal1.evaluate import EvalConfig, EvalResult
from cudal1.evaluate.service import Evaluator, make_evaluator
from cudal1.serve.config import ServeConfig
from cudal1.tasks import Task

FIRST_GUESS_S = 10.0
"""Evaluation time assumed for `Retry-After` until one has been measured."""


@dataclass(frozen=True)
class Ran:
    result: EvalResult
    queued_s: float
    """Waiting for a slot."""
    evaluate_s: float
    """Holding the slot: the evaluation, as the server saw it."""


class Evaluations:
    def __init__(self, config: ServeConfig, eval_config: EvalConfig) -> None:
        self.config, self.base = config, eval_config
        self.evaluators: dict[tuple[str, str], Evaluator] = {}
        self.slots = asyncio.Semaphore(config.jobs)
        self.running = self.waiting = 0
        self.mean_s = FIRST_GUESS_S
        self._evaluator(eval_config.policy, eval_config.tolerance)

    def _evaluator(self, policy: str, tolerance: str) -> Evaluator:
        key = (policy, tolerance)
        if key not in self.evaluators:
            config = dataclasses.replace(self.base, policy=policy, tolerance=tolerance)  # type: ignore[arg-type]
            self.evaluators[key] = make_evaluator(
                "local", config, jobs=self.config.jobs, gpus=self.config.gpus
            )
        return self.evaluators[key]

    def full(self) -> bool:
        return self.running + self.waiting >= self.config.jobs + self.config.max_queue

    def retry_after_s(self) -> int:
        """When a slot is likely free for one more: the queue ahead, `jobs` at a time."""
        rounds = (self.waiting + 1) / self.config.jobs
        return max(1, min(600, math.ceil(rounds * self.mean_s)))

    async def run(
        self,
        task: Task,
        source: str,
        *,
        policy: str | None = None,
        tolerance: str | None = None,
        fresh: bool = False,
    ) -> Ran:
        evaluator = self._evaluator(policy or self.base.policy, tolerance or self.base.tolerance)
        asked = time.perf_counter()
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        started = time.perf_counter()
        self.running += 1
        try:
            result = await evaluator.evaluate(task, source, fresh=fresh)
        finally:
            self.running -= 1
            self.slots.release()
        done = time.perf_counter()
        if not result.cached:
            self.mean_s = 0.8 * self.mean_s + 0.2 * (done - started)
        return Ran(result, started - asked, done - started)

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        """The evaluator interface, with the server's policy and tolerance (the environment's
        reward calls this)."""
        return (await self.run(task, source, fresh=fresh)).result

    def close(self) -> None:
        for evaluator in self.evaluators.values():
            evaluator.close()
