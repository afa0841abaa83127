"""The OpenEnv environment: CUDA optimisation with a reward that cannot be gamed.

An episode is one task's contrastive prompt (CUDA-L1 stage 3) and up to `attempts` answers to
it (a GRPO group passes its size, or runs one episode per member with the same exemplars):

- `reset(task_id=None, seed=None, exemplar_ids=None, attempts=1)`: the task (given, or drawn
  from the server's split with `seed`), its prompt showing N earlier correct candidates from the
  exemplar database with their measured speedups, and their ids. `exemplar_ids` from an earlier
  reset rebuild exactly that prompt, so every member of a group sees the same one however the
  database grew in between.
- `step(KernelAction(answer=...))`: the answer is parsed, its `ModelNew` evaluated by the
  server's evaluator (through the same queue as `/v1/evaluate`), wins above 3x re-measured, and
  the answer stored in the database (`train.reward.CudaL1Reward.score_text`, the reward the TRL
  and verl trainers use). The observation carries the verdict, reasons, flags, the evaluator's
  feedback in words and the whole `EvalResult`; `reward` is the speedup rounded toward 1.0 for a
  correct, honest candidate, None for one whose every timing other work disturbed (status `ok`,
  no speedup: no reward either way) and `failure_reward` (0.0) for anything else.

Served with OpenEnv's own app factory (`create_fastapi_app`) under `/openenv`, behind the
server's token. Sessions hold state over the WebSocket (`/openenv/ws`, `rollout.KernelEnvClient`);
OpenEnv's stateless `/openenv/reset` and `/openenv/step` make a new environment per call, so a
step there has no episode and is refused with 400.
"""

from __future__ import annotations

import asyncio
import functools
import random
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server import Action, Environment, Observation, State, create_fastapi_app
from pydantic import Field

from cudal1.errors import Cudal1Error
from cudal1.exemplars import Exemplar, ExemplarDB, Sampler, make_sampler
from cudal1.policy import contrastive_prompt, feedback, parse_answer
from cudal1.serve.config import ServeConfig
from cudal1.serve.pool import Evaluations
from cudal1.tasks import Suite, Task
from cudal1.train.prompts import draw_exemplars
from cudal1.train.reward import CudaL1Reward, unmeasured_result

MAX_ATTEMPTS = 256


class EnvError(Cudal1Error):
    """A reset or step the environment cannot act on (400 over HTTP, an error message over
    the WebSocket)."""


class KernelAction(Action):
    answer: str = Field(
        description="The model's whole answer: performance analysis, algorithm design, and a "
        "fenced code block defining class ModelNew"
    )


class KernelObservation(Observation):
    task_id: str = ""
    prompt: list[dict[str, str]] = Field(
        default_factory=list, description="After reset: the chat messages to answer"
    )
    exemplar_ids: list[int] = Field(
        default_factory=list, description="Database ids of the candidates the prompt shows"
    )
    attempts_left: int = 0
    status: str = Field(
        default="",
        description="After a step: the verdict (ok, incorrect, compile_error, runtime_error, "
        "timeout, rejected), or 'unparsed' when the answer held no usable ModelNew",
    )
    speedup: float | None = Field(
        default=None, description="A correct, honest candidate's speedup, rounded toward 1.0"
    )
    reasons: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    feedback: str = Field(default="", description="The verdict in words, for another turn")
    result: dict[str, Any] | None = Field(default=None, description="The whole EvalResult")


class KernelState(State):
    task_id: str | None = None
    exemplar_ids: list[int] = Field(default_factory=list)
    attempts_left: int = 0


@dataclass
class KernelWorld:
    """What every session shares."""

    tasks: dict[str, Task]
    db: ExemplarDB
    sampler: Sampler
    reward: CudaL1Reward
    device: str
    low_precision: bool
    exemplars: bool
    failure_reward: float


def make_world(
    config: ServeConfig, suite: Suite, evaluations: Evaluations, device: str, low_precision: bool
) -> KernelWorld:
    tasks = list(suite.tasks) if config.split == "all" else suite.split(config.split)  # type: ignore[arg-type]
    if not tasks:
        raise Cudal1Error(f"suite {suite.name!r} has no {config.split!r} tasks for the environment")
    db = ExemplarDB(config.db)
    for task in tasks:
        db.ensure_reference(task)
    by_id = {t.id: t for t in tasks}
    return KernelWorld(
        tasks=by_id,
        db=db,
        sampler=make_sampler(config.sampler, max(config.exemplars, 1), config.tau),
        reward=CudaL1Reward(by_id, db, evaluations, run="serve", source="openenv"),  # type: ignore[arg-type]
        device=device,
        low_precision=low_precision,
        exemplars=config.exemplars > 0,
        failure_reward=config.failure_reward,
    )


class KernelEnv(Environment[KernelAction, KernelObservation, KernelState]):
    # sessions share only the database (SQLite in WAL mode) and the evaluation queue
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, world: KernelWorld) -> None:
        super().__init__()
        self.world = world
        self._state = KernelState()

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        exemplar_ids: list[int] | None = None,
        attempts: int = 1,
        **unknown: Any,
    ) -> KernelObservation:
        if unknown:
            raise EnvError(
                f"reset takes task_id, seed, exemplar_ids, attempts and episode_id; not {sorted(unknown)}"
            )
        task = self._task(task_id, seed)
        if not isinstance(attempts, int) or not 1 <= attempts <= MAX_ATTEMPTS:
            raise EnvError(
                f"attempts must be an integer from 1 to {MAX_ATTEMPTS}, not {attempts!r}"
            )
        shown = self._exemplars(task, seed, exemplar_ids)
        prompt = contrastive_prompt(
            task, shown, device=self.world.device, low_precision=self.world.low_precision
        )
        self._state = KernelState(
            episode_id=episode_id or uuid.uuid4().hex,
            task_id=task.id,
            exemplar_ids=prompt.exemplar_ids,
            attempts_left=attempts,
        )
        return KernelObservation(
            task_id=task.id,
            prompt=prompt.messages,
            exemplar_ids=prompt.exemplar_ids,
            attempts_left=attempts,
        )

    def _task(self, task_id: str | None, seed: int | None) -> Task:
        tasks = self.world.tasks
        if task_id is None:
            return tasks[random.Random(seed).choice(sorted(tasks))]
        if not isinstance(task_id, str) or task_id not in tasks:
            shown = ", ".join(sorted(tasks)[:12])
            raise EnvError(f"no task {task_id!r} in the environment's split; ids: {shown}, ...")
        return tasks[task_id]

    def _exemplars(
        self, task: Task, seed: int | None, exemplar_ids: list[int] | None
    ) -> list[Exemplar]:
        w = self.world
        if exemplar_ids is None:
            if not w.exemplars:
                return []
            return draw_exemplars(w.db, w.sampler, task, random.Random(f"{seed}:{task.id}"))
        known = {e.id: e for e in w.db.exemplars(task.id)}
        if not isinstance(exemplar_ids, list) or not all(
            isinstance(i, int) and i in known for i in exemplar_ids
        ):
            raise EnvError(
                f"exemplar_ids {exemplar_ids!r} are not all rows of task {task.id}: pass the "
                "exemplar_ids an earlier reset of this task returned"
            )
        return [known[i] for i in exemplar_ids]

    async def step_async(
        self, action: KernelAction, timeout_s: float | None = None, **kwargs: Any
    ) -> KernelObservation:
        """`timeout_s` is not used: the evaluator's own limits bound every phase."""
        s, w = self._state, self.world
        if s.task_id is None:
            raise EnvError(
                "step before reset: reset(task_id=...) first, in the same session (the WebSocket "
                "/openenv/ws; each plain-HTTP /openenv/step is a session of its own)"
            )
        if s.attempts_left < 1:
            raise EnvError("this episode is done: reset to start another")
        raw, result = await w.reward.score_text(s.task_id, action.answer, s.exemplar_ids)
        s.attempts_left -= 1
        s.step_count += 1
        parse_error = parse_answer(action.answer).error if result is None else None
        return KernelObservation(
            task_id=s.task_id,
            exemplar_ids=s.exemplar_ids,
            attempts_left=s.attempts_left,
            status=result.status if result else "unparsed",
            speedup=raw,
            reasons=result.reasons if result else [parse_error or ""],
            flags=result.flags if result else [],
            feedback=feedback(result, parse_error),
            result=result.to_dict() if result else None,
            done=s.attempts_left == 0,
            reward=(raw if raw is not None or unmeasured_result(result) else w.failure_reward),
        )

    def step(
        self, action: KernelAction, timeout_s: float | None = None, **kwargs: Any
    ) -> KernelObservation:
        """For callers without an event loop (the server always uses `step_async`)."""
        return asyncio.run(self.step_async(action, timeout_s))

    @property
    def state(self) -> KernelState:
        return self._state


def env_app(world: KernelWorld, sessions: int) -> FastAPI:
    """OpenEnv's application for the environment; a bad reset or step answers 400, not 500."""
    app = create_fastapi_app(
        functools.partial(KernelEnv, world),
        KernelAction,
        KernelObservation,
        max_concurrent_envs=sessions,
    )

    async def bad_request(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    app.add_exception_handler(Cudal1Error, bad_request)
    return app
