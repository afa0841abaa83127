"""Choosing the evaluation backend: `local` (this machine's worker pool) or `ray` (actors on a
Ray cluster). Both give the same interface: `submit(task, source) -> Future[EvalResult]`,
`await evaluate(task, source)`, a plain call, and `close()`."""

from __future__ import annotations

from typing import Any, Protocol

from cudal1.errors import Cudal1Error
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.result import EvalResult
from cudal1.tasks import Task

BACKENDS = ("local", "ray")


class Evaluator(Protocol):
    def submit(self, task: Task, source: str, *, fresh: bool = False) -> Any: ...

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult: ...

    def __call__(self, task: Task, source: str) -> EvalResult: ...

    def close(self) -> None: ...


def make_evaluator(
    backend: str,
    config: EvalConfig,
    *,
    jobs: int = 4,
    address: str | None = None,
    gpus: int | None = None,
    builders: int = 0,
    warm: int | None = None,
) -> Evaluator:
    """`gpus`: how many GPUs to spread over (local: the first visible ones, a worker pool and
    a device lock each; ray: that many actors, one GPU each; None: one, or every GPU of the
    Ray cluster). `builders` (ray only): CPU-only build actors that compile every candidate
    before a GPU actor measures it. `warm` (local only): workers kept started a role and GPU
    (None: one a job)."""
    if backend == "local":
        from cudal1.evaluate.pool import LocalEvaluator

        if builders:
            raise Cudal1Error("--builders needs --backend ray (the local backend builds itself)")
        return LocalEvaluator(config, jobs=jobs, gpus=gpus, warm=warm)
    if warm is not None:
        raise Cudal1Error(f"warm workers are the local backend's, not {backend}'s")
    if backend == "ray":
        from cudal1.evaluate.ray_backend import RayEvaluator

        return RayEvaluator(config, address=address, jobs=jobs, actors=gpus, builders=builders)
    raise Cudal1Error(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
