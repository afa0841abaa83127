"""The server's evaluators behind one admission queue (`admission.py`).

`jobs` evaluations run at once, whatever policy and tolerance each asks for. Each (policy,
tolerance) pair gets its own `LocalEvaluator` (the evaluator's config is fixed per instance),
started when first asked for; the server's default pair starts with the server. Everything
here runs on the event loop's thread, so the counters need no lock: between `admit()` and the
start of `run()` nothing else runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass

from cudal1.evaluate import EvalConfig, EvalResult
from cudal1.evaluate.service import Evaluator, make_evaluator
from cudal1.serve.admission import Admission
from cudal1.serve.config import ServeConfig
from cudal1.tasks import Task


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
        self.admission = Admission(config.jobs, config.max_queue, grace_s=config.ticket_grace_s)
        self._evaluator(eval_config.policy, eval_config.tolerance)

    def _evaluator(self, policy: str, tolerance: str) -> Evaluator:
        key = (policy, tolerance)
        if key not in self.evaluators:
            config = dataclasses.replace(self.base, policy=policy, tolerance=tolerance)  # type: ignore[arg-type]
            self.evaluators[key] = make_evaluator(
                "local", config, jobs=self.config.jobs, gpus=self.config.gpus
            )
        return self.evaluators[key]

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
        count = self.admission
        asked = time.perf_counter()
        count.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            count.waiting -= 1
        started = time.perf_counter()
        count.running += 1
        try:
            result = await evaluator.evaluate(task, source, fresh=fresh)
        finally:
            count.running -= 1
            self.slots.release()
        done = time.perf_counter()
        if not result.cached:
            count.record(done - started)
        return Ran(result, started - asked, done - started)

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        """The evaluator interface, with the server's policy and tolerance (the environment's
        reward calls this; its steps wait for a slot without asking `admission`, since the
        number of sessions is capped)."""
        return (await self.run(task, source, fresh=fresh)).result

    def close(self) -> None:
        for evaluator in self.evaluators.values():
            evaluator.close()
