"""`cudal1 eval TASK CANDIDATE`: evaluate one candidate file against one task."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from cudal1.cli.common import no_sandbox_option, resolve_device
from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig, EvalResult, evaluate
from cudal1.tasks import BUNDLED, resolve_task

console = Console(stderr=False)


def eval_command(
    task: str = typer.Argument(..., help="A task file path, or a task id/name in --suite."),
    candidate: Path = typer.Argument(..., help="A Python file defining class ModelNew."),
    device: str = typer.Option("auto", help="cuda, cpu, or auto (cuda when available)."),
    policy: str = typer.Option("any", help="any (CUDA-L1's rule) or kernel (own kernels only)."),
    tolerance: str = typer.Option(
        "calibrated", help="calibrated (fp32 error vs fp64) or kernelbench (atol=rtol=1e-2)."
    ),
    suite: str = typer.Option(BUNDLED, help="Suite in which TASK is looked up by id."),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
    no_sandbox: bool = no_sandbox_option(),
) -> None:
    """Evaluate CANDIDATE against TASK: correctness, timing, hack checks, one verdict.

    Exit 0 whenever an evaluation was carried out (whatever the verdict); exit 2 when it could
    not be (missing file, task that does not load, no CUDA device for --device cuda)."""
    if not candidate.is_file():
        raise Cudal1Error(f"candidate file {str(candidate)!r} does not exist")
    config = EvalConfig(
        device=resolve_device(device), policy=policy, tolerance=tolerance, sandbox=not no_sandbox
    )  # type: ignore[arg-type]
    the_task = resolve_task(task, suite)
    source = candidate.read_text(encoding="utf-8", errors="replace")
    if as_json:
        result = evaluate(the_task, source, config)
        typer.echo(result.to_json(indent=1))
        return
    with console.status(f"evaluating {candidate.name} on {the_task.id} ({config.device})"):
        result = evaluate(the_task, source, config)
    print_summary(result)


def print_summary(r: EvalResult) -> None:
    color = {"ok": "green", "rejected": "red", "incorrect": "red"}.get(r.status, "yellow")
    console.print(f"[bold {color}]{r.status}[/]  task {r.task_id} on {r.device}, policy {r.policy}")
    if r.speedup is not None:
        t = r.timing
        assert t is not None
        console.print(
            f"speedup {r.speedup:.3f}x  (buckets {t.speedup_low:.3f}-{t.speedup_high:.3f}); "
            f"candidate {r.candidate_ms:.4f} ms, reference {t.reference.median_ms:.4f} ms beside it, "
            f"{r.reference_ms:.4f} ms alone"
        )
    elif r.ok:
        console.print(
            "correct, but not measured: other work disturbed every timing (see gpu_shared / "
            "host_shared below); no speedup, no reward"
        )
    if r.timing and r.timing.candidate_gpu_busy is not None:
        t = r.timing
        console.print(
            f"GPU busy {t.candidate_gpu_busy:.0%} of a candidate call, "
            f"{t.reference_gpu_busy or 0:.0%} of a reference call"
        )
    if r.correctness:
        c = r.correctness
        console.print(
            f"correctness {c.passed}/{c.trials} trials, worst abs error {c.max_abs_err:.3g}, "
            f"tolerance used {c.tolerance_ratio:.2f} of allowed; {c.timed_outputs_checked} timed outputs checked"
        )
    for reason in r.reasons:
        console.print(f"  reason: {reason}", markup=False)
    if r.flags:
        console.print("flags: " + "; ".join(r.flags), markup=False)
    if r.provenance and r.provenance.kernels:
        console.print(f"own-kernel share {r.provenance.own_kernel_share:.2f}")
