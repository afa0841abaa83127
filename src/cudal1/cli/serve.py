"""`cudal1 serve`: evaluation actors on a Ray cluster (for `--backend ray` to attach to), or with
`--http`, the evaluator as an authenticated HTTP service with an OpenEnv environment."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import typer
from rich.console import Console

from cudal1.cli.common import no_sandbox_option, resolve_device
from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig

console = Console()


def serve_command(
    http: str = typer.Option(
        None,
        "--http",
        help="Serve over HTTP at HOST:PORT (or PORT alone: 127.0.0.1:PORT) instead of Ray.",
    ),
    token_file: Path = typer.Option(
        None, help="--http: file holding the secret every request must carry as a Bearer token."
    ),
    address: str = typer.Option(
        None, help="A running Ray cluster (host:port or 'auto'); default: start one here and block."
    ),
    device: str = typer.Option("auto", help="cuda (one actor per GPU) or cpu."),
    actors: int = typer.Option(None, help="Number of actors (default: one per GPU; 1 on CPU)."),
    jobs: int = typer.Option(
        None, help="Evaluations in flight per actor (Ray, default 2) or in all (--http, default 4)."
    ),
    max_queue: int = typer.Option(
        None, help="--http: requests waiting beyond those running before 503 (default 64)."
    ),
    policy: str = typer.Option("any", help="Evaluator policy: any or kernel."),
    tolerance: str = typer.Option("calibrated", help="calibrated or kernelbench."),
    no_sandbox: bool = no_sandbox_option(),
    sets: list[str] = typer.Option(
        None,
        "--set",
        help="--http: override a field, serve.FIELD=VALUE (cudal1.serve.config) or "
        "eval.FIELD=VALUE (cudal1.evaluate.config), repeatable.",
    ),
) -> None:
    """Serve the evaluator: named, detached Ray actors (`--backend ray` finds them by name), or
    with --http an HTTP service on one machine:

        cudal1 serve --http 127.0.0.1:8000 --token-file token.txt --device cuda --jobs 8
    """
    if http is not None:
        _serve_http(
            http, token_file, device, jobs, max_queue, policy, tolerance, not no_sandbox, sets or []
        )
        return
    if token_file is not None or max_queue is not None or sets:
        raise Cudal1Error("--token-file, --max-queue and --set belong to --http mode")
    _serve_ray(address, device, actors, jobs or 2, policy, tolerance, not no_sandbox)


def _serve_http(
    http: str,
    token_file: Path | None,
    device: str,
    jobs: int | None,
    max_queue: int | None,
    policy: str,
    tolerance: str,
    sandbox: bool,
    sets: list[str],
) -> None:
    try:
        from cudal1.serve.app import serve
    except ImportError as e:
        raise Cudal1Error(
            f"cudal1 serve --http needs {e.name}: pip install 'cudal1[serve]'"
        ) from None
    from cudal1.serve.config import ServeConfig
    from cudal1.train.config import build, parse_overrides

    if token_file is None:
        raise Cudal1Error("--http needs --token-file FILE holding the shared secret")
    host, port = _host_port(http)
    sections = parse_overrides(sets)
    unknown = set(sections) - {"serve", "eval"}
    if unknown:
        raise Cudal1Error(f"--set section(s) {sorted(unknown)}: choose serve or eval")
    given = {"token_file": token_file, "host": host, "port": port}
    given |= {k: v for k, v in (("jobs", jobs), ("max_queue", max_queue)) if v is not None}
    config = build(ServeConfig, {**given, **sections.get("serve", {})}, "serve")
    eval_fields = {
        "device": resolve_device(device),
        "policy": policy,
        "tolerance": tolerance,
        "sandbox": sandbox,
    }
    eval_config = build(EvalConfig, {**eval_fields, **sections.get("eval", {})}, "eval")
    console.print(
        f"serving {eval_config.device} evaluations at http://{host}:{port} "
        f"({config.jobs} at once, {config.max_queue} queued at most); "
        f"OpenEnv environment at http://{host}:{port}/openenv"
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the signal it stopped on
        serve(config, eval_config)
    console.print("stopped")


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not port.isdigit():
        raise Cudal1Error(f"--http {text!r}: give HOST:PORT or PORT, e.g. 127.0.0.1:8000")
    return (host.strip("[]") if sep else "127.0.0.1") or "127.0.0.1", int(port)


def _serve_ray(
    address: str | None,
    device: str,
    actors: int | None,
    jobs: int,
    policy: str,
    tolerance: str,
    sandbox: bool,
) -> None:
    try:
        import ray

        from cudal1.evaluate.ray_backend import NAMESPACE, actor_names, start_actors
    except ImportError:
        raise Cudal1Error("cudal1 serve needs Ray: pip install 'cudal1[dist]'") from None
    config = EvalConfig(
        device=resolve_device(device), policy=policy, tolerance=tolerance, sandbox=sandbox
    )  # type: ignore[arg-type]
    ray.init(address=address, namespace=NAMESPACE, include_dashboard=False)
    handles = start_actors(config, count=actors, jobs=jobs, detached=True)
    where = ray.get([h.ping.remote() for h in handles])
    for name, node in zip(actor_names(config, len(handles)), where, strict=True):
        console.print(f"serving {name} on {node}")
    if address is None:  # this process owns the cluster: keep it alive
        console.print(
            "Ray cluster started here; Ctrl-C stops it. Attach with --backend ray --address auto"
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            ray.shutdown()
