"""`cudal1 serve`: evaluation actors on a Ray cluster, for `--backend ray` to attach to."""

from __future__ import annotations

import time

import typer
from rich.console import Console

from cudal1.cli.common import no_sandbox_option, resolve_device
from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig

console = Console()


def serve_command(
    address: str = typer.Option(
        None, help="A running Ray cluster (host:port or 'auto'); default: start one here and block."
    ),
    device: str = typer.Option("auto", help="cuda (one actor per GPU) or cpu."),
    actors: int = typer.Option(None, help="Number of actors (default: one per GPU; 1 on CPU)."),
    jobs: int = typer.Option(2, help="Evaluations in flight per actor."),
    policy: str = typer.Option("any", help="Evaluator policy: any or kernel."),
    tolerance: str = typer.Option("calibrated", help="calibrated or kernelbench."),
    no_sandbox: bool = no_sandbox_option(),
) -> None:
    """Start named, detached evaluation actors (`--backend ray` finds them by name)."""
    try:
        import ray

        from cudal1.evaluate.ray_backend import NAMESPACE, actor_names, start_actors
    except ImportError:
        raise Cudal1Error("cudal1 serve needs Ray: pip install 'cudal1[dist]'") from None
    config = EvalConfig(
        device=resolve_device(device), policy=policy, tolerance=tolerance, sandbox=not no_sandbox
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
