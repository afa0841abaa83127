"""The inference-time contrastive loop (CUDA-L1's "fixed-parameter solution optimization").

Each round: the sampler picks N earlier candidates from the database, the prompt shows them
with their speedups, the policy writes G answers, each answer is parsed and evaluated, and every
result is stored. Generation of round r+1 starts as soon as round r's answers are in, so it
overlaps round r's evaluations. With `turns > 1`, a failed or slow answer goes back to the model
with the evaluator's feedback for another attempt; with `retries > 0`, an answer with no usable
`ModelNew` is asked for again from the same prompt (a fresh sample: small models often lose the
code's thread, and a served model's failures cost a request). Suspiciously large wins are re-measured and
optionally reviewed (`review.py`). The database and the round log are the state: a second
invocation with the same run name resumes after the last finished round.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalResult
from cudal1.evaluate.service import Evaluator
from cudal1.exemplars import Exemplar, ExemplarDB, IslandSampler, make_sampler
from cudal1.optimize.review import Reviewer, ReviewThresholds, review
from cudal1.policy import (
    Policy,
    PolicyExhausted,
    Prompt,
    contrastive_prompt,
    feedback,
    parse_answer,
)
from cudal1.policy.prompts import STYLES
from cudal1.tasks import Task

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class OptimizeConfig:
    rounds: int = 3
    """Total rounds for this run (a resumed run continues up to this number)."""
    samples: int = 4
    """G: answers per round, all from the same prompt."""
    exemplars: int = 2
    """N: earlier candidates shown in each prompt."""
    turns: int = 1
    """Attempts per answer; > 1 sends failed or slow answers back with the evaluator's feedback."""
    sampler: str = "bucket"
    tau: float = 1.0
    seed: int = 0
    device: str = "cuda"
    low_precision: bool = False
    """Tell the model lower precision is allowed (use with --tolerance kernelbench)."""
    prompt: str = "paper"
    """`paper` (CUDA-L1's three-part prompt) or `compact` (for small models: short, few-shot,
    the code's start prefilled; see `cudal1.policy.prompts`)."""
    retries: int = 0
    """Fresh samples asked for, per answer, while the answer has no usable `ModelNew`. Each
    unusable answer is still stored (status `unparsed`)."""
    eval_jobs: int = 4
    """Evaluations in flight at once (device phases still take turns on the device lock)."""
    run: str = "optimize"
    review: ReviewThresholds = field(default_factory=ReviewThresholds)
    """When a win is re-measured, and how far two measurements may differ."""

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.samples < 1 or self.exemplars < 1 or self.turns < 1:
            raise Cudal1Error("rounds, samples, exemplars and turns must all be >= 1")
        if self.retries < 0:
            raise Cudal1Error(f"retries must be >= 0, got {self.retries}")
        if self.prompt not in STYLES:
            raise Cudal1Error(
                f"unknown prompt style {self.prompt!r}: choose one of {', '.join(STYLES)}"
            )


@dataclass
class RoundSummary:
    round: int
    candidates: int
    correct: int
    best_speedup: float | None
    best_so_far: float
    statuses: dict[str, int] = field(default_factory=dict)


@dataclass
class OptimizeSummary:
    task_id: str
    rounds: list[RoundSummary]
    best: Exemplar | None
    resumed_from: int
    failures: dict[str, int]


class Optimizer:
    def __init__(
        self,
        task: Task,
        policy: Policy,
        db: ExemplarDB,
        evaluator: Evaluator,
        config: OptimizeConfig,
        *,
        reviewer: Reviewer | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.task, self.policy, self.db, self.evaluator, self.cfg = (
            task,
            policy,
            db,
            evaluator,
            config,
        )
        self.reviewer = reviewer
        self.on_event = on_event or (lambda e: None)
        self.sampler = make_sampler(config.sampler, config.exemplars, config.tau)
        self.eval_slots = asyncio.Semaphore(config.eval_jobs)
        self.failures: dict[str, int] = {}

    # the loop -------------------------------------------------------------------------------------
    async def run(self) -> OptimizeSummary:
        self.db.ensure_reference(self.task)
        start = self.db.rounds_done(self.cfg.run, self.task.id)
        rounds: list[RoundSummary] = []
        pending: asyncio.Task | None = None
        if start < self.cfg.rounds:
            pending = asyncio.create_task(self._generate(start))
        for r in range(start, self.cfg.rounds):
            assert pending is not None
            try:
                prompt, completions = await pending
            except PolicyExhausted as e:
                log.info("stopping: %s", e)
                self.on_event({"event": "exhausted", "round": r, "reason": str(e)})
                break
            # Start the next round's generation now: it overlaps this round's evaluations.
            pending = (
                asyncio.create_task(self._generate(r + 1)) if r + 1 < self.cfg.rounds else None
            )
            results = await asyncio.gather(
                *(
                    self._attempt(prompt, c.text, r, turn=1, retries=self.cfg.retries)
                    for c in completions
                )
            )
            rounds.append(self._close_round(r, [x for group in results for x in group]))
        if pending is not None:
            pending.cancel()
        return OptimizeSummary(self.task.id, rounds, self._best(), start, dict(self.failures))

    async def _generate(self, r: int) -> tuple[Prompt, list[Any]]:
        rng = random.Random(f"{self.cfg.seed}:{self.task.id}:{self.cfg.run}:{r}")
        candidates = self.db.exemplars(self.task.id, correct_only=True)
        if isinstance(self.sampler, IslandSampler):
            self.sampler.assign(self.db, candidates, rng)
            self.sampler.maybe_reset(self.db, candidates, rng)
        shown = self.sampler.sample(candidates, rng)
        prompt = contrastive_prompt(
            self.task,
            shown,
            device=self.cfg.device,
            low_precision=self.cfg.low_precision,
            style=self.cfg.prompt,
        )
        self.on_event(
            {"event": "prompt", "round": r, "exemplars": [(e.id, e.speedup) for e in shown]}
        )
        completions = await self.policy.complete(prompt, self.cfg.samples)
        return prompt, completions

    async def _attempt(
        self, prompt: Prompt, text: str, r: int, turn: int, retries: int = 0
    ) -> list[Exemplar]:
        """Parse, evaluate, review, store one answer; then, with retries left and no usable code,
        ask the same prompt again; with turns left, ask again with the evaluator's feedback."""
        parsed = parse_answer(text)
        result: EvalResult | None = None
        if parsed.ok:
            assert parsed.code is not None
            best_before = self._best_speedup()
            async with self.eval_slots:
                result = await self.evaluator.evaluate(self.task, parsed.code)
            result = await review(
                self.task,
                parsed.code,
                result,
                best_before,
                self.cfg.review,
                self.db,
                self.reviewer,
                lambda: self._reevaluate(parsed.code),  # type: ignore[arg-type]
            )
        stored = self.db.add(
            self.task,
            parsed.code or text,
            result,
            parents=prompt.exemplar_ids,
            source=self.policy.name,
            model=self.policy.model,
            run=self.cfg.run,
            step=r,
        )
        key = result.status if result is not None else "unparsed"
        if key != "ok":
            self.failures[key] = self.failures.get(key, 0) + 1
        retry = None
        if not parsed.ok and retries > 0:
            try:
                retry = (await self.policy.complete(prompt, 1))[0]
            except PolicyExhausted:
                retry = None
        self.on_event(
            {
                "event": "result",
                "round": r,
                "turn": turn,
                "status": key,
                "speedup": result.speedup if result else None,
                "id": stored.id,
                "final": retry is None,
                "error": parsed.error,
            }
        )
        out = [stored]
        if retry is not None:  # asked again: the new answer stands in for this one
            return out + await self._attempt(prompt, retry.text, r, turn, retries - 1)
        slow = result is not None and result.ok and (result.speedup or 0.0) < self._best_speedup()
        if turn < self.cfg.turns and (result is None or not result.ok or slow):
            follow = prompt.with_turn(text, feedback(result, parsed.error))
            try:
                answer = (await self.policy.complete(follow, 1))[0]
            except PolicyExhausted:
                return out
            out += await self._attempt(follow, answer.text, r, turn + 1, self.cfg.retries)
        return out

    async def _reevaluate(self, code: str) -> EvalResult:
        """An independent measurement: fresh processes and seeds, never a cached result."""
        async with self.eval_slots:
            return await self.evaluator.evaluate(self.task, code, fresh=True)

    # bookkeeping ----------------------------------------------------------------------------------
    def _best(self) -> Exemplar | None:
        return self.db.best(self.task.id)

    def _best_speedup(self) -> float:
        best = self._best()
        return float(best.speedup or 1.0) if best else 1.0

    def _close_round(self, r: int, stored: list[Exemplar]) -> RoundSummary:
        statuses: dict[str, int] = {}
        for e in stored:
            statuses[e.status] = statuses.get(e.status, 0) + 1
        correct = [e for e in stored if e.correct]
        # an unmeasured answer (correct, timing disturbed) has no speedup to be the best
        best_round = max((e.speedup for e in correct if e.speedup is not None), default=None)
        summary = RoundSummary(
            r, len(stored), len(correct), best_round, self._best_speedup(), statuses
        )
        self.db.finish_round(self.cfg.run, self.task.id, r, summary.best_so_far)
        self.on_event({"event": "round", **summary.__dict__})
        return summary
