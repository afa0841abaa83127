"""Client of the evaluation service (`cudal1 serve --http`): the reward from another machine.

- `ServiceClient`: async, over httpx. `evaluate(task, source)` posts to `/v1/evaluate` and returns
  the `EvalResult` the server's evaluator produced. It retries what a busy or restarting server
  causes (503 with `Retry-After`, 502/504 from a proxy, refused or dropped connections), waiting
  as told (and showing the 503's ticket, which keeps its place in line) or backing off
  exponentially, for up to `retry_for_s`, and raises `ServiceError` at
  once for what retrying cannot fix (401 wrong token, 400 bad task or field, 413 too large). Retrying a dropped request
  is safe: an evaluation is a pure function of its inputs, and the server answers a repeat of an
  evaluation in flight from that evaluation (its cache).
- `ServiceEvaluator`: the evaluator interface of `cudal1.evaluate.service` over the service, so
  the TRL reward (`train.reward.CudaL1Reward`), verl's `compute_score` and the optimize loop run
  unchanged with the evaluator on another machine (`run.eval_backend = "http"`).

This module sits beside `evaluate` in the flow: it imports results and tasks, nothing above.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import ssl
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from cudal1 import __version__
from cudal1.errors import Cudal1Error
from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.result import EvalResult
from cudal1.tasks import Task

log = logging.getLogger(__name__)

RETRIED_STATUSES = (502, 503, 504)
TICKET = "Cudal1-Ticket"
"""A 503's place in line, sent back with the retry (see `cudal1.serve.admission`)."""
MIN_TOKEN_CHARS = 16


class ServiceError(Cudal1Error):
    """The service refused a request, or could not be reached within the retries."""


def read_token(path: str | Path) -> str:
    """The shared secret from a file (surrounding whitespace dropped), checked for length."""
    path = Path(path)
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise Cudal1Error(f"token file {str(path)!r}: {e.strerror}") from None
    if len(token) < MIN_TOKEN_CHARS:
        raise Cudal1Error(
            f"token file {str(path)!r} holds {len(token)} characters; write a secret of at least "
            f"{MIN_TOKEN_CHARS}, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))' "
            f"> {path}"
        )
    return token


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle, about 70 ms of CPU here,
    and a process opening a client per request (`ServiceEvaluator`) or dozens at once stalled
    its event loop by that much per client."""
    return httpx.create_ssl_context()


class ServiceClient:
    """`async with ServiceClient(url, token) as c: result = await c.evaluate("L1_20", code)`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout_s: float = 3600.0,
        retry_for_s: float = 1800.0,
        backoff_s: float = 0.5,
        max_wait_s: float = 60.0,
    ) -> None:
        """`timeout_s`: longest wait for one answer (an evaluation that builds CUDA code can
        take minutes). `retry_for_s`: how long to keep retrying a request the server is too
        busy for or cannot be reached for, before giving up with `ServiceError`; the wait
        before each retry is the server's `Retry-After`, else `backoff_s` doubling per attempt
        with jitter, and at most `max_wait_s`. A budget of time, not of attempts: under a full
        queue, a client that counted attempts would lose requests that waiting would save."""
        self.url = url.rstrip("/")
        self.retry_for_s, self.backoff_s, self.max_wait_s = retry_for_s, backoff_s, max_wait_s
        self.http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": f"cudal1/{__version__}"},
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            verify=_tls(),
        )
        self.retried = 0
        """Attempts repeated so far (503s and connection failures), for logs and benchmarks."""

    async def health(self) -> dict[str, Any]:
        return (await self._request("GET", "/v1/health")).json()

    async def evaluate(
        self,
        task: Task | str,
        source: str,
        *,
        policy: str | None = None,
        tolerance: str | None = None,
        fresh: bool = False,
    ) -> EvalResult:
        """`task`: a `Task` (its source is sent, so the server judges exactly this text), or a
        bundled task id, or a task file's source. `policy`/`tolerance`: None takes the
        server's. `fresh`: measure again even if the server has this result cached."""
        result, _ = await self.evaluate_timed(
            task, source, policy=policy, tolerance=tolerance, fresh=fresh
        )
        return result

    async def evaluate_timed(
        self, task: Task | str, source: str, **options: Any
    ) -> tuple[EvalResult, dict[str, float]]:
        """`evaluate` (the same arguments), with the server's own account in seconds (its
        `Server-Timing`): `queue`, waiting for a slot, and `evaluate`, holding one."""
        body = _body(task, source, **options)
        response = await self._request("POST", "/v1/evaluate", json=body)
        return EvalResult.from_dict(response.json()), _server_timing(response)

    async def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        give_up = time.monotonic() + self.retry_for_s
        ticket: dict[str, str] = {}  # a 503's place in line, shown again on each retry
        for attempt in itertools.count():
            try:
                response = await self.http.request(method, path, headers=ticket, **kw)
            except httpx.TransportError as e:
                failure = f"{type(e).__name__}: {e or 'connection failed'}"
                wait = self._backoff(attempt)
            else:
                if response.status_code < 400:
                    return response
                failure = f"HTTP {response.status_code}: {_detail(response)}"
                if response.status_code not in RETRIED_STATUSES:
                    raise ServiceError(f"{self.url}{path}: {failure}")
                wait = min(_retry_after(response) or self._backoff(attempt), self.max_wait_s)
                if TICKET in response.headers:
                    ticket = {TICKET: response.headers[TICKET]}
            if time.monotonic() + wait > give_up:
                raise ServiceError(
                    f"{self.url}{path}: {failure}, still after {attempt + 1} attempts in "
                    f"{self.retry_for_s:.0f} s; is `cudal1 serve --http` running there?"
                )
            log.info("%s%s: %s; retrying in %.1f s", self.url, path, failure, wait)
            self.retried += 1
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: itertools.count() does not end")

    def _backoff(self, attempt: int) -> float:
        # 0.5, 1, 2, 4 ... s with +-25 % jitter, so clients that failed together spread out
        return min(self.max_wait_s, self.backoff_s * 2**attempt) * random.uniform(0.75, 1.25)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> ServiceClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _body(
    task: Task | str,
    source: str,
    *,
    policy: str | None = None,
    tolerance: str | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"source": source, "fresh": fresh}
    if isinstance(task, Task):
        body |= {"task": task.source, "task_id": task.id}
    else:
        body["task"] = task
    if policy is not None:
        body["policy"] = policy
    if tolerance is not None:
        body["tolerance"] = tolerance
    return body


def _server_timing(response: httpx.Response) -> dict[str, float]:
    """`queue;dur=12.5, evaluate;dur=3400.1` (milliseconds) -> {"queue": 0.0125, ...}."""
    out = {}
    for part in response.headers.get("Server-Timing", "").split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name and duration:
            out[name] = float(duration) / 1e3
    return out


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except ValueError:
        return response.text[:500]


class ServiceEvaluator:
    """The evaluator interface (`submit`, `await evaluate`, a plain call, `close`) over the
    service. The server's evaluator settings apply, except `policy` and `tolerance`, which come
    from `config` with every request. Each call opens its own connection: reward functions run
    under a new event loop per call (verl's `compute_score` uses `asyncio.run`), and an httpx
    client belongs to the loop it started on."""

    def __init__(self, url: str, token: str, config: EvalConfig, *, jobs: int = 4) -> None:
        self.url, self.token, self.config = url, token, config
        self.threads = ThreadPoolExecutor(jobs, thread_name_prefix="cudal1-service")
        self._check_device()

    def _check_device(self) -> None:
        """Fail now, with the fix, when the service is unreachable or measures elsewhere than
        the prompts say (they describe `config.device` to the model)."""
        try:
            health = httpx.get(f"{self.url.rstrip('/')}/v1/health", timeout=10.0).json()
        except (httpx.HTTPError, ValueError) as e:
            raise ServiceError(
                f"cannot reach the evaluation service at {self.url} ({type(e).__name__}: {e}); "
                "start it with `cudal1 serve --http HOST:PORT --token-file FILE`"
            ) from None
        if health.get("device") != self.config.device:
            raise Cudal1Error(
                f"the service at {self.url} evaluates on {health.get('device')!r} but the run's "
                f"[eval].device is {self.config.device!r}: set eval.device={health.get('device')}"
            )

    async def evaluate(self, task: Task, source: str, *, fresh: bool = False) -> EvalResult:
        async with ServiceClient(self.url, self.token) as client:
            return await client.evaluate(
                task,
                source,
                policy=self.config.policy,
                tolerance=self.config.tolerance,
                fresh=fresh,
            )

    def submit(self, task: Task, source: str, *, fresh: bool = False) -> Future[EvalResult]:
        return self.threads.submit(lambda: asyncio.run(self.evaluate(task, source, fresh=fresh)))

    def __call__(self, task: Task, source: str) -> EvalResult:
        return asyncio.run(self.evaluate(task, source))

    def close(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)
