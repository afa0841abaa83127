"""The RL reward (CUDA-L1 §4): evaluator speedups, shaped before the group advantage.

- Raw reward: a correct candidate's speedup (the median of bucket means), rounded toward 1.0 at
  two decimals so timing noise around 1.0 earns nothing; anything else (incorrect, failed,
  rejected, no code) gets the lowest reward.
- Shaping: normalised with running statistics of recent correct rewards, refreshed every
  `refresh_every` batches (frozen in between, so rewards in one period are comparable), then
  clipped to +-k (k = 1.5). Failures get -k.
- Wins above 3x, or above 2x the task's best, are measured again independently and dropped when
  the two differ by more than 10 % (`optimize.review`), optionally also shown to a reviewer.
- A correct rollout whose timing other work disturbed (`gpu_shared`, `host_shared`: no
  speedup) is worth nothing either way: it gets the mean shaped reward of its group's measured
  rollouts, so its advantage is about zero, and it does not enter the running statistics.
- Every evaluated rollout enters the exemplar database, so later prompts can show it.

`CudaL1Reward` is a plain async callable over prompts and completions returning one float per
completion, so TRL's `GRPOTrainer` takes it as a reward function unchanged; `score_text` is the
per-completion form the verl adapter uses.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from cudal1.evaluate import EvalResult
from cudal1.evaluate.result import reason_kind
from cudal1.evaluate.service import Evaluator
from cudal1.exemplars import ExemplarDB
from cudal1.optimize import Reviewer, ReviewThresholds, review
from cudal1.policy import parse_answer
from cudal1.tasks import Task


def round_toward_one(speedup: float, digits: int = 2) -> float:
    scale = 10**digits
    if speedup >= 1.0:
        return math.floor(speedup * scale) / scale
    return math.ceil(speedup * scale) / scale


@dataclass(kw_only=True)
class ShapingConfig:
    clip: float = 1.5
    """k: shaped rewards lie in [-k, k]; failures get -k."""
    window: int = 1024
    """Recent correct raw rewards kept for the running statistics."""
    refresh_every: int = 8
    """Batches between refreshes of the normalisation statistics."""
    min_samples: int = 8
    """Until this many correct rewards were seen, normalise around 1.0 with unit scale."""
    min_std: float = 0.05


@dataclass
class RewardShaper:
    config: ShapingConfig = field(default_factory=ShapingConfig)

    def __post_init__(self) -> None:
        self.recent: deque[float] = deque(maxlen=self.config.window)
        self.mean, self.std = 1.0, 1.0
        self.batches = 0

    def shape(self, raw: list[float | None]) -> list[float]:
        """None (a failure) -> -k; a speedup -> clip((r - mean) / std, -k, k)."""
        k = self.config.clip
        out = [-k if r is None else max(-k, min(k, (r - self.mean) / self.std)) for r in raw]
        self.recent.extend(r for r in raw if r is not None)
        self.batches += 1
        if (
            self.batches % self.config.refresh_every == 0
            and len(self.recent) >= self.config.min_samples
        ):
            self.mean = statistics.fmean(self.recent)
            self.std = max(self.config.min_std, statistics.pstdev(self.recent))
        return out

    def state(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "std": self.std,
            "batches": self.batches,
            "recent": list(self.recent),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.mean, self.std, self.batches = state["mean"], state["std"], state["batches"]
        self.recent.extend(state["recent"])


def unmeasured_result(result: EvalResult | None) -> bool:
    """Correct, but every timing was disturbed by other work: no speedup, no reward."""
    return result is not None and result.ok and result.speedup is None


def fill_unmeasured(rewards: list[float | None], groups: list[str]) -> list[float]:
    """Each None (an unmeasured rollout) takes the mean of its group's other rewards (0.0 when
    the whole group is unmeasured): its advantage is about zero, so it teaches nothing."""
    out = []
    for r, g in zip(rewards, groups, strict=True):
        if r is None:
            peers = [p for p, pg in zip(rewards, groups, strict=True) if pg == g and p is not None]
            r = statistics.fmean(peers) if peers else 0.0
        out.append(r)
    return out


def completion_text(completion: Any) -> str:
    """TRL passes conversational completions as message lists, plain ones as strings."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return str(completion)


class CudaL1Reward:
    """Async reward function: evaluate each completion, store it, shape the speedups."""

    __name__ = "cudal1_speedup"

    def __init__(
        self,
        tasks: dict[str, Task],
        db: ExemplarDB,
        evaluator: Evaluator,
        *,
        shaper: RewardShaper | None = None,
        review_thresholds: ReviewThresholds | None = None,
        reviewer: Reviewer | None = None,
        run: str = "grpo",
        source: str = "grpo",
        model: str = "",
    ) -> None:
        self.tasks, self.db, self.evaluator = tasks, db, evaluator
        self.shaper = shaper or RewardShaper()
        self.review_thresholds = review_thresholds or ReviewThresholds()
        self.reviewer, self.run, self.source, self.model = reviewer, run, source, model
        self.history: list[dict[str, Any]] = []

    async def score_text(
        self, task_id: str, text: str, exemplar_ids: list[int], step: int = 0
    ) -> tuple[float | None, EvalResult | None]:
        """Raw reward (None for a failure) and the evaluation, with the rollout stored."""
        task = self.tasks[task_id]
        parsed = parse_answer(text)
        result = None
        if parsed.ok:
            assert parsed.code is not None
            best = self.db.best(task_id)
            best_before = float(best.speedup or 1.0) if best else 1.0
            result = await self.evaluator.evaluate(task, parsed.code)
            result = await review(
                task,
                parsed.code,
                result,
                best_before,
                self.review_thresholds,
                self.db,
                self.reviewer,
                lambda: self.evaluator.evaluate(task, parsed.code, fresh=True),  # type: ignore[arg-type]
            )
        self.db.add(
            task,
            parsed.code or text,
            result,
            parents=exemplar_ids,
            source=self.source,
            model=self.model,
            run=self.run,
            step=step,
        )
        if result is None or not result.ok or result.speedup is None:
            return None, result
        return round_toward_one(result.speedup), result

    async def __call__(
        self,
        prompts: list[Any],
        completions: list[Any],
        task_id: list[str],
        exemplar_ids: list[str],
        trainer_state: Any = None,
        log_metric: Any = None,
        prefill: list[str] | None = None,
        **_: Any,
    ) -> list[float]:
        """`prefill`: the prompt's prefilled start of each answer (compact prompts), which
        TRL's completions continue."""
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        t0 = time.perf_counter()
        starts = prefill or [""] * len(completions)
        scored = await asyncio.gather(
            *(
                self.score_text(tid, start + completion_text(c), json.loads(ex), step)
                for tid, c, ex, start in zip(
                    task_id, completions, exemplar_ids, starts, strict=True
                )
            )
        )
        unmeasured = [unmeasured_result(res) for _, res in scored]
        shaped = iter(self.shaper.shape([r for r, res in scored if not unmeasured_result(res)]))
        groups = [f"{tid}:{ex}" for tid, ex in zip(task_id, exemplar_ids, strict=True)]
        rewards = fill_unmeasured([None if u else next(shaped) for u in unmeasured], groups)
        self._log(scored, rewards, log_metric, time.perf_counter() - t0)
        return rewards

    def _log(
        self,
        scored: list[tuple[float | None, EvalResult | None]],
        rewards: list[float],
        log_metric: Any,
        seconds: float,
    ) -> None:
        n = len(scored)
        statuses = Counter(res.status if res else "unparsed" for _, res in scored)
        speedups = [r for r, _ in scored if r is not None]
        flags = Counter(f.split(":", 1)[0] for _, res in scored if res for f in res.flags)
        refused = Counter(  # reward hacking, by what the candidate did
            reason_kind(res.reasons[0] if res.reasons else "")
            for _, res in scored
            if res and res.status == "rejected"
        )
        metrics = {
            "reward/correct": statuses["ok"] / n,
            "reward/rejected": statuses["rejected"] / n,
            "reward/unparsed": statuses["unparsed"] / n,
            "reward/compile_error": statuses["compile_error"] / n,
            "reward/unmeasured": sum(unmeasured_result(res) for _, res in scored) / n,
            "reward/speedup": statistics.fmean(speedups) if speedups else 0.0,
            "reward/shaped": statistics.fmean(rewards),
            "reward/shaped_std": statistics.pstdev(rewards),
            "reward/norm_mean": self.shaper.mean,
            "reward/norm_std": self.shaper.std,
            "reward/cached": sum(1 for _, res in scored if res and res.cached) / n,
            # wall time of the whole reward call (compiles included), and the part of it the
            # evaluations held the device: the GPU-seconds that evaluation cost this step (an
            # answer from the evaluator's cache cost none)
            "time/reward_s": round(seconds, 3),
            "time/eval_device_s": round(
                sum(
                    res.phase_seconds.get("device", 0.0)
                    for _, res in scored
                    if res and not res.cached
                ),
                3,
            ),
        }
        metrics |= {f"flags/{k}": v / n for k, v in flags.items()}
        self.history.append(
            {
                "metrics": metrics,
                "speedups": speedups,
                "statuses": dict(statuses),
                "refused": dict(refused),
            }
        )
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(name, value)
