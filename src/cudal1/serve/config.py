"""The service's configuration: one keyword-only dataclass, every field documented and checked.
The evaluator's own settings are an `EvalConfig` beside it (`--set eval.field=value`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cudal1.errors import Cudal1Error
from cudal1.exemplars import SAMPLERS


@dataclass(kw_only=True)
class ServeConfig:
    token_file: Path
    """File holding the shared secret that every request but `/v1/health` must carry as
    `Authorization: Bearer TOKEN`. The token lets its holder run task code in the judge, so
    keep it as you would a login."""
    host: str = "127.0.0.1"
    """Address to bind: loopback unless told otherwise (`0.0.0.0` for every interface)."""
    port: int = 8000
    jobs: int = 4
    """Evaluations at once (the pool size): each holds a judge and a candidate process; the
    device lock still serialises timing on each GPU while the others compile and check."""
    max_queue: int = 64
    """Requests waiting for one of the `jobs` beyond those running; one more gets 503 with
    `Retry-After`. Steps of environment sessions wait instead (sessions are capped)."""
    ticket_grace_s: float = 30.0
    """A 503's ticket holds its place in line until its `Retry-After` plus this long; a client
    that does not come back by then has gone, and its place goes to the next."""
    gpus: int | None = None
    """Spread evaluations over the first `gpus` visible CUDA devices (None: the first one)."""
    max_body_bytes: int = 1 << 20
    """Largest request body (and WebSocket message); larger ones get 413."""
    suite: str = "bundled"
    """Tasks `/v1/evaluate` knows by id, and that the environment draws from."""
    split: str = "train"
    """The environment's tasks: `train` (default, never the held-out ones), `heldout` or `all`.
    `/v1/evaluate` takes any task of the suite."""
    db: Path = Path("runs/serve/exemplars.db")
    """The environment's exemplar database: every step's answer enters it, and the prompts of
    later episodes show the correct ones."""
    exemplars: int = 2
    """N: earlier candidates shown in each environment prompt (0: the plain prompt)."""
    sampler: str = "bucket"
    """How the environment picks exemplars: bucket (the paper's), island or uniform."""
    tau: float = 1.0
    env_sessions: int = 64
    """Environment sessions (WebSocket connections) open at once."""
    failure_reward: float = 0.0
    """The environment's reward for an answer that is not a correct, honest candidate (a
    correct one earns its speedup, rounded toward 1.0)."""

    def __post_init__(self) -> None:
        self.token_file, self.db = Path(self.token_file), Path(self.db)
        if not 0 < self.port < 65536:
            raise Cudal1Error(f"port must be 1-65535, not {self.port}")
        if self.jobs < 1 or self.max_queue < 0 or self.env_sessions < 1:
            raise Cudal1Error("need jobs >= 1, max_queue >= 0 and env_sessions >= 1")
        if self.ticket_grace_s < 0:
            raise Cudal1Error(f"ticket_grace_s must be >= 0, not {self.ticket_grace_s}")
        if self.max_body_bytes < 1024:
            raise Cudal1Error(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        if self.split not in ("train", "heldout", "all"):
            raise Cudal1Error(f"split must be train, heldout or all, not {self.split!r}")
        if self.sampler not in SAMPLERS:
            raise Cudal1Error(
                f"unknown sampler {self.sampler!r}: choose one of {', '.join(SAMPLERS)}"
            )
