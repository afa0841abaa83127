"""The Ray backend: one supervising evaluation actor per GPU of a Ray cluster (or CPU actors
when the device is the CPU), each running the local evaluator (its own pre-started workers,
compile pool and device lock) on its node. Ray restarts an actor that dies; the candidate it was
evaluating comes back as `runtime_error`, never lost and never counted twice.

Start or attach: `cudal1 serve` creates named, detached actors on a cluster; `--backend ray`
attaches to them by name (or creates them for the duration of the run). On one machine a
loopback cluster (`ray.init()`) serves tests.

Compilation happens inside each actor's own candidate processes (bounded by its compile pool);
candidates are routed to the actor with the fewest evaluations in flight.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.result import EvalResult
from cudal1.tasks import Task, source_hash

NAMESPACE = "cudal1"
RESEND_LIMIT = 5
RESEND_DELAY_S = 2.0
_TASK_FIELDS = ("id", "level", "name", "source", "origin", "split")


class EvalActor:
    """Lives in a Ray worker process; one per GPU."""

    def __init__(self, config: dict[str, Any], jobs: int) -> None:
        from cudal1.evaluate.pool import LocalEvaluator

        self.evaluator = LocalEvaluator(EvalConfig(**config), jobs=jobs, cpu_lane=_cpu_lane())

    def evaluate(self, task: dict[str, Any], source: str, fresh: bool) -> dict[str, Any]:
        result = self.evaluator.submit(Task(**task), source, fresh=fresh).result()
        return result.to_dict()

    def ping(self) -> str:
        import os

        return f"{os.uname().nodename}:{os.environ.get('CUDA_VISIBLE_DEVICES', '-')}"


def _cpu_lane() -> tuple[int, int]:
    """This actor's GPU's place among its node's GPUs: actors on one host each measure on their
    own kept cores, as the local evaluator's GPUs do."""
    import ray

    ctx = ray.get_runtime_context()
    gpu_ids = ctx.get_accelerator_ids().get("GPU", [])
    node_gpus = next(
        (n["Resources"].get("GPU", 0) for n in ray.nodes() if n["NodeID"] == ctx.get_node_id()), 0
    )
    if not gpu_ids or not node_gpus:
        return (0, 1)
    return (int(gpu_ids[0]) % int(node_gpus), int(node_gpus))


def actor_names(config: EvalConfig, count: int, group: str = "default") -> list[str]:
    """Names under which `cudal1 serve` publishes actors and `--backend ray` finds them."""
    return [f"cudal1-eval-{group}-{config.device}-{i}" for i in range(count)]


def start_actors(
    config: EvalConfig,
    *,
    count: int | None = None,
    jobs: int = 2,
    detached: bool = False,
    group: str = "default",
) -> list[Any]:
    """Get (or create) the named actors: one per GPU in the cluster, or `count` of them."""
    import ray

    if config.device == "cuda":
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus == 0:
            raise Cudal1Error("the Ray cluster has no GPUs: use --device cpu, or add GPU nodes")
        count = count or gpus
    count = count or 1
    remote = ray.remote(
        num_gpus=1 if config.device == "cuda" else 0,
        num_cpus=1,
        max_restarts=-1,
        max_task_retries=0,
        max_concurrency=jobs + 2,
    )(EvalActor)
    options: dict[str, Any] = {"namespace": NAMESPACE, "get_if_exists": True}
    if detached:
        options["lifetime"] = "detached"
    return [
        remote.options(name=name, **options).remote(config.to_dict(), jobs)
        for name in actor_names(config, count, group)
    ]


class RayEvaluator:
    """Same interface as `LocalEvaluator`: `submit`, `await evaluate`, call, `close`."""

    def __init__(
        self,
        config: EvalConfig,
        *,
        address: str | None = None,
        actors: int | None = None,
        jobs: int = 2,
        group: str = "default",
    ) -> None:
        try:
            import ray
        except ImportError:
            raise Cudal1Error("--backend ray needs Ray: pip install 'cudal1[dist]'") from None
        if not ray.is_initialized():
            ray.init(
                address=address, namespace=NAMESPACE, log_to_driver=False, include_dashboard=False
            )
        self.config = config
        self.served = _existing(actor_names(config, actors or 64, group))  # `cudal1 serve`'s: keep
        self.actors = start_actors(config, count=actors, jobs=jobs, group=group)
        self.names = actor_names(config, len(self.actors), group)
        self.in_flight = [0] * len(self.actors)
        self.lock = threading.Lock()

    def submit(self, task: Task, source: str, *, fresh: bool = False) -> Future[EvalResult]:
        out: Future[EvalResult] = Future()
        self._send(task, source, fresh, out, attempt=0)
        return out

    def _send(
        self, task: Task, source: str, fresh: bool, out: Future[EvalResult], attempt: int
    ) -> None:
        """Route to the least busy actor. A call that reaches an actor while Ray restarts it was
        never started there: it is sent again (a few times); a call whose actor died while it
        ran is that candidate's `runtime_error`. Either way exactly one result per candidate."""
        import ray

        with self.lock:
            i = min(range(len(self.actors)), key=self.in_flight.__getitem__)
            self.in_flight[i] += 1
        fields = {k: getattr(task, k) for k in _TASK_FIELDS}
        ref = self.actors[i].evaluate.remote(fields, source, fresh)

        def done(f: Future) -> None:
            with self.lock:
                self.in_flight[i] -= 1
            try:
                out.set_result(EvalResult.from_dict(f.result()))
            except ray.exceptions.ActorUnavailableError as e:
                if attempt < RESEND_LIMIT:
                    threading.Timer(
                        RESEND_DELAY_S, self._send, (task, source, fresh, out, attempt + 1)
                    ).start()
                else:
                    out.set_result(
                        _lost(task, source, self.config, f"evaluation actor unavailable ({e})")
                    )
            except ray.exceptions.RayActorError as e:  # the actor died: Ray restarts it
                out.set_result(_lost(task, source, self.config, f"evaluation actor died ({e})"))
            except Exception as e:  # any other transport failure is this candidate's
                out.set_result(_lost(task, source, self.config, f"evaluation failed in Ray ({e})"))

        ref.future().add_done_callback(done)

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        import asyncio

        return await asyncio.wrap_future(self.submit(task, source, fresh=fresh))

    def __call__(self, task: Task, source: str) -> EvalResult:
        return self.submit(task, source).result()

    def close(self) -> None:
        """End the actors this evaluator started; those started by `cudal1 serve` keep serving."""
        import ray

        for name, actor in zip(self.names, self.actors, strict=True):
            if name not in self.served:
                ray.kill(actor)
        self.actors = []

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _existing(names: list[str]) -> set[str]:
    import ray

    found = set()
    for name in names:
        try:
            ray.get_actor(name, namespace=NAMESPACE)
            found.add(name)
        except ValueError:
            pass
    return found


def _lost(task: Task, source: str, config: EvalConfig, reason: str) -> EvalResult:
    return EvalResult(
        status="runtime_error",
        task_id=task.id,
        task_hash=task.hash,
        candidate_hash=source_hash(source),
        device=config.device,
        policy=config.policy,
        tolerance_mode=config.tolerance,
        reasons=[reason],
    )
