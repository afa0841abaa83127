"""The HTTP service: the evaluator and its worker pool behind an authenticated API.

- `GET /v1/health` (no token): device, pool size, running and queued evaluations, version.
- `POST /v1/evaluate` (token): one candidate against one task (`request.py` reads the body);
  200 with the `EvalResult` JSON, the same object `cudal1 eval --json` prints, and a
  `Server-Timing` header saying how long it queued and how long it was evaluated.
- `/openenv/...`: the OpenEnv environment (`env.py`), on the same evaluators and queue.

Status codes: 401 without the right token, 413 for a body over the limit, 400 for malformed
JSON, a bad field or a task given as source that cannot run, 503 with `Retry-After` when the
queue is full, and a ticket that keeps the client's place in line (`admission.py`). A
candidate's crash, hang or hack is a verdict (200), never an error: it ran in processes of
its own. Shutdown (SIGTERM, Ctrl-C) stops accepting connections, answers every
request already received, queued ones included, then stops the worker processes.
"""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from cudal1 import __version__
from cudal1.client import TICKET, read_token
from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.serve.auth import BearerAuth
from cudal1.serve.config import ServeConfig
from cudal1.serve.env import env_app, make_world
from cudal1.serve.pool import Evaluations
from cudal1.serve.request import parse_evaluate
from cudal1.tasks import load_suite


def create_app(config: ServeConfig, eval_config: EvalConfig) -> FastAPI:
    """The application, with its evaluators started (their workers warm up meanwhile)."""
    token = read_token(config.token_file)
    suite = load_suite(config.suite, validate=False)  # task files run in the judge, not here
    evaluations = Evaluations(config, eval_config)
    world = make_world(
        config,
        suite,
        evaluations,
        device=eval_config.device,
        low_precision=eval_config.tolerance == "kernelbench",
    )

    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        try:
            yield
        finally:  # uvicorn gets here after the last in-flight request was answered
            evaluations.close()

    app = FastAPI(
        title="cudal1 evaluation service",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        max_body_size=config.max_body_bytes,  # 413 past it, mounted routes included
    )

    @app.get("/v1/health")
    async def health() -> dict:
        return {
            "status": "ok",
            "device": eval_config.device,
            "pool_size": config.jobs,
            "running": evaluations.admission.running,
            "queue_length": evaluations.admission.waiting,
            "tickets": evaluations.admission.outstanding(),
            "max_queue": config.max_queue,
            "policy": eval_config.policy,
            "tolerance": eval_config.tolerance,
            "version": __version__,
        }

    @app.post("/v1/evaluate")
    async def evaluate(request: Request) -> Response:
        try:
            body = await request.body()
        except ClientDisconnect:  # nobody is left to answer
            return Response(status_code=400)
        try:
            req = parse_evaluate(body, suite)
        except Cudal1Error as e:  # BadRequest, or a task source that does not parse
            raise HTTPException(400, str(e)) from None
        refused = evaluations.admission.admit(_ticket(request))
        if refused is not None:
            ticket, wait = refused
            count = evaluations.admission
            return JSONResponse(
                {
                    "detail": f"the queue is full ({count.waiting} waiting, {count.running} "
                    f"running): retry in {wait} s with header {TICKET}: {ticket}"
                },
                status_code=503,
                headers={"Retry-After": str(wait), TICKET: str(ticket)},
            )
        try:
            ran = await evaluations.run(
                req.task, req.source, policy=req.policy, tolerance=req.tolerance, fresh=req.fresh
            )
        except Cudal1Error as e:  # no evaluation could be carried out: the reference failed
            if req.task_in_body:
                raise HTTPException(400, f"field 'task': {e}") from None
            raise
        timing = f"queue;dur={ran.queued_s * 1e3:.1f}, evaluate;dur={ran.evaluate_s * 1e3:.1f}"
        return Response(
            ran.result.to_json(),  # NaN and Infinity as `cudal1 eval --json` writes them
            media_type="application/json",
            headers={"Server-Timing": timing},
        )

    app.mount("/openenv", env_app(world, config.env_sessions))
    app.add_middleware(BearerAuth, token=token)  # outermost: nothing is read before the token
    return app


def _ticket(request: Request) -> int | None:
    """The place in line a 503 gave this client (see `admission.py`), if it shows one."""
    given = request.headers.get(TICKET, "")
    try:
        return int(given) if given else None
    except ValueError:
        raise HTTPException(400, f"header {TICKET} must be the integer a 503 gave") from None


def serve(config: ServeConfig, eval_config: EvalConfig) -> None:
    """Run until SIGTERM or Ctrl-C; a second Ctrl-C stops without waiting for requests."""
    app = create_app(config, eval_config)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            ws_max_size=config.max_body_bytes,
            timeout_graceful_shutdown=None,  # evaluations are bounded by the evaluator's limits
            log_level="info",
        )
    )
    server.run()
