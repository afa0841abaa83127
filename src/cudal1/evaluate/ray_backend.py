"""The Ray backend: one supervising evaluation actor per GPU of a Ray cluster (or CPU actors
when the device is the CPU), each running the local evaluator (its own pre-started workers,
compile pool and device lock) on its node. Ray restarts an actor that dies; the candidate it was
evaluating comes back as `runtime_error`, never lost and never counted twice.

Start or attach: `cudal1 serve` creates named, detached actors on a cluster; `--backend ray`
attaches to them by name (or creates them for the duration of the run). On one machine a
loopback cluster (`ray.init()`) serves tests.

Compilation happens inside each actor's own candidate processes (bounded by its compile pool),
or, with `builders`, on CPU-only build actors (any node): each runs the candidate's build in
the same sandboxed builder, packs it (`artefact.py`), and the archive goes by Ray's object store
straight to the evaluation actor, which unpacks it only if it hashes to the digest this router
passed on. A cluster then adds compile capacity without adding GPUs. Candidates are routed to
the actor with the fewest evaluations (or builds) in flight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate.artefact import BuildReceipt
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.result import EvalResult
from cudal1.tasks import Task, source_hash

NAMESPACE = "cudal1"
RESEND_LIMIT = 5
RESEND_DELAY_S = 2.0
CLOSE_TIMEOUT_S = 30.0


class EvalActor:
    """Lives in a Ray worker process; one per GPU."""

    def __init__(self, config: dict[str, Any], jobs: int) -> None:
        from cudal1.evaluate.pool import LocalEvaluator

        self.evaluator = LocalEvaluator(EvalConfig(**config), jobs=jobs, cpu_lane=_cpu_lane())

    def evaluate(
        self,
        task: dict[str, Any],
        source: str,
        fresh: bool,
        receipt: dict[str, Any] | None = None,
        blob: bytes = b"",
    ) -> dict[str, Any]:
        """`receipt` and `blob`: a build actor's build of this candidate (Ray resolves the
        blob's reference here, from whichever node holds it)."""
        prebuilt = (BuildReceipt(**receipt), blob) if receipt is not None else None
        result = self.evaluator.submit(Task(**task), source, fresh=fresh, prebuilt=prebuilt)
        return result.result().to_dict()

    def ping(self) -> str:
        return f"{os.uname().nodename}:{os.environ.get('CUDA_VISIBLE_DEVICES', '-')}"

    def close(self) -> None:
        """End the workers and remove the pool directories before Ray kills this process,
        which runs no exit handler."""
        self.evaluator.close()

    def arch(self) -> str | None:
        """The GPU architectures builds for this actor must target."""
        from cudal1.evaluate import harness

        return harness.cuda_arch_list()


class BuildActor:
    """Lives in a Ray worker process with CPUs and no GPU; builds candidates for the
    evaluation actors. Keeps its last `KEPT_BUILDS` archives: a candidate measured again (a
    suspicious win re-measured with `fresh`) is not built again."""

    KEPT_BUILDS = 64

    def __init__(self, config: dict[str, Any]) -> None:
        from cudal1.evaluate import pch

        self.config = EvalConfig(**config)
        self.kept: OrderedDict[tuple[str, str, str | None], tuple[dict[str, Any], bytes]] = (
            OrderedDict()
        )
        self.lock = threading.Lock()
        self.prefixed: set[str] = set()
        if self.config.precompiled_headers and self.config.device == "cuda":
            pch.ensure_in_background(self.config.pch_root)

    @staticmethod
    def _node() -> str:
        return os.uname().nodename

    def build(
        self, task: dict[str, Any], source: str, arch: str | None
    ) -> tuple[dict[str, Any], bytes]:
        """({"result": verdict}, b"") when the build settles the candidate, else
        ({"receipt": ...}, archive)."""
        from cudal1.evaluate.evaluator import build_only

        the_task = Task(**task)
        self.host_prefixes(arch)
        key = (the_task.hash, source_hash(source), arch)
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key]
        out = build_only(the_task, source, self.config, arch=arch, node=self._node())
        if isinstance(out, EvalResult):
            return {"result": out.to_dict()}, b""
        receipt, blob = out
        answer = {"receipt": dataclasses.asdict(receipt)}, blob
        with self.lock:
            self.kept[key] = answer
            while len(self.kept) > self.KEPT_BUILDS:
                self.kept.popitem(last=False)
        return answer

    def host_prefixes(self, arch: str | None) -> threading.Thread | None:
        """Start making the host prefixes for `arch` (`pch.ensure_host_prefixes`), once per
        architecture and in the background: the GPUs' architectures reach a build actor with
        each build, not when it starts. The thread, or None where there is nothing to start."""
        from cudal1.evaluate import pch
        from cudal1.evaluate.evaluator import host_prefix_toolchain

        toolchain = host_prefix_toolchain(self.config, arch) if arch else None
        if toolchain is None:
            return None
        with self.lock:
            if toolchain[1] in self.prefixed:
                return None
            self.prefixed.add(toolchain[1])
        thread = threading.Thread(
            target=pch.ensure_host_prefixes,
            args=(self.config.pch_root, *toolchain),
            name="cudal1-host-prefix",
            daemon=True,
        )
        thread.start()
        return thread

    def ping(self) -> str:
        return self._node()


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


def start_builders(config: EvalConfig, count: int, *, cpus: int = 2, jobs: int = 2) -> list[Any]:
    """`count` build actors of `cpus` CPUs each, building `jobs` candidates at once."""
    import ray

    remote = ray.remote(
        num_gpus=0, num_cpus=cpus, max_restarts=-1, max_task_retries=0, max_concurrency=jobs
    )(BuildActor)
    return [remote.remote(config.to_dict()) for _ in range(count)]


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
        builders: int = 0,
        builder_cpus: int = 2,
    ) -> None:
        """`builders`: build actors (CPU only) that compile every candidate before an
        evaluation actor measures it; 0: each evaluation actor builds its own."""
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
        self.builders = start_builders(config, builders, cpus=builder_cpus, jobs=jobs)
        self.building = [0] * len(self.builders)
        self.arch = (
            ray.get(self.actors[0].arch.remote())
            if self.builders and config.device == "cuda"
            else None
        )
        self.lock = threading.Lock()

    def submit(self, task: Task, source: str, *, fresh: bool = False) -> Future[EvalResult]:
        out: Future[EvalResult] = Future()
        if self.builders:
            self._build(task, source, fresh, out, attempt=0)
        else:
            self._measure(task, source, fresh, out, None, attempt=0)
        return out

    def _build(
        self, task: Task, source: str, fresh: bool, out: Future[EvalResult], attempt: int
    ) -> None:
        """On the least busy build actor; its receipt (kept here) and the archive's reference
        go on to `_measure`, the archive itself never passing through this process."""
        with self.lock:
            i = min(range(len(self.builders)), key=self.building.__getitem__)
            self.building[i] += 1
        fields = dataclasses.asdict(task)
        meta, blob = self.builders[i].build.options(num_returns=2).remote(fields, source, self.arch)

        def built(answer: dict[str, Any]) -> None:
            if "result" in answer:  # refused statically, or the build failed
                out.set_result(EvalResult.from_dict(answer["result"]))
            else:
                self._measure(task, source, fresh, out, (answer["receipt"], blob), attempt=0)

        def again() -> None:
            self._build(task, source, fresh, out, attempt + 1)

        meta.future().add_done_callback(
            self._settle(self.building, i, task, source, out, attempt, "build", built, again)
        )

    def _measure(
        self,
        task: Task,
        source: str,
        fresh: bool,
        out: Future[EvalResult],
        build: tuple[dict[str, Any], Any] | None,
        attempt: int,
    ) -> None:
        """On the least busy evaluation actor, with the build actor's build if there is one."""
        with self.lock:
            i = min(range(len(self.actors)), key=self.in_flight.__getitem__)
            self.in_flight[i] += 1
        fields = dataclasses.asdict(task)
        ref = self.actors[i].evaluate.remote(fields, source, fresh, *(build or ()))

        def again() -> None:
            self._measure(task, source, fresh, out, build, attempt + 1)

        ref.future().add_done_callback(
            self._settle(
                self.in_flight,
                i,
                task,
                source,
                out,
                attempt,
                "evaluation",
                lambda answer: out.set_result(EvalResult.from_dict(answer)),
                again,
            )
        )

    def _settle(
        self,
        counts: list[int],
        i: int,
        task: Task,
        source: str,
        out: Future[EvalResult],
        attempt: int,
        what: str,
        answered: Callable[[Any], None],
        again: Callable[[], None],
    ) -> Callable[[Future], None]:
        """A call that reached an actor while Ray restarted it was never started there: it is
        sent again (a few times); a call whose actor died while it ran is that candidate's
        `runtime_error`. Either way exactly one result per candidate."""
        import ray

        def done(f: Future) -> None:
            with self.lock:
                counts[i] -= 1
            try:
                answer = f.result()
            except ray.exceptions.ActorUnavailableError as e:
                if attempt < RESEND_LIMIT:
                    threading.Timer(RESEND_DELAY_S, again).start()
                else:
                    out.set_result(
                        _lost(task, source, self.config, f"{what} actor unavailable ({e})")
                    )
                return
            except ray.exceptions.RayActorError as e:  # the actor died: Ray restarts it
                out.set_result(_lost(task, source, self.config, f"{what} actor died ({e})"))
                return
            except Exception as e:  # any other transport failure is this candidate's
                out.set_result(_lost(task, source, self.config, f"{what} failed in Ray ({e})"))
                return
            answered(answer)

        return done

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        import asyncio

        return await asyncio.wrap_future(self.submit(task, source, fresh=fresh))

    def __call__(self, task: Task, source: str) -> EvalResult:
        return self.submit(task, source).result()

    def close(self) -> None:
        """End the actors this evaluator started; those started by `cudal1 serve` keep serving."""
        import ray

        own = [a for n, a in zip(self.names, self.actors, strict=True) if n not in self.served]
        with contextlib.suppress(Exception):  # an actor that cannot answer is killed as it is
            ray.get([actor.close.remote() for actor in own], timeout=CLOSE_TIMEOUT_S)
        for actor in own:
            ray.kill(actor)
        for builder in self.builders:
            ray.kill(builder)
        self.actors, self.builders = [], []

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
