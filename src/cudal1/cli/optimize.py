"""`cudal1 optimize TASK`: the contrastive loop with a fixed model, writing best.py and a report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudal1.cli.common import no_sandbox_option, resolve_device
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.service import BACKENDS, make_evaluator
from cudal1.exemplars import SAMPLERS, ExemplarDB
from cudal1.optimize import OptimizeConfig, Optimizer, Reviewer, write_outputs
from cudal1.policy import make_policy
from cudal1.tasks import BUNDLED, resolve_task

console = Console()


def optimize_command(
    task: str = typer.Argument(..., help="A task file path, or a task id/name in --suite."),
    llm: str = typer.Option(
        "local",
        help="OpenAI-compatible URL, 'local' (embedded SmolLM2), 'local:PATH', or 'replay:FILE'.",
    ),
    model: str = typer.Option(None, help="Model name served at the --llm URL."),
    rounds: int = typer.Option(
        3, help="Total rounds of the run (a resumed run continues up to this)."
    ),
    samples: int = typer.Option(4, help="G: answers per round from the same prompt."),
    exemplars: int = typer.Option(2, help="N: earlier candidates shown in each prompt."),
    turns: int = typer.Option(1, help="Attempts per answer; >1 feeds evaluator feedback back."),
    sampler: str = typer.Option("bucket", help=f"Exemplar sampler: {', '.join(SAMPLERS)}."),
    db: Path = typer.Option(None, help="Exemplar database (default OUT/exemplars.db)."),
    out: Path = typer.Option(None, help="Output directory (default runs/optimize-TASK)."),
    run: str = typer.Option(
        "optimize", help="Run name: resuming continues the rounds of this run."
    ),
    device: str = typer.Option("auto", help="cuda, cpu, or auto."),
    policy: str = typer.Option("any", help="Evaluator policy: any or kernel."),
    tolerance: str = typer.Option("calibrated", help="calibrated or kernelbench."),
    review_llm: str = typer.Option(
        None, help="A reviewing LLM for suspicious wins (same forms as --llm)."
    ),
    max_new_tokens: int = typer.Option(768, help="Answer length limit for the local model."),
    eval_jobs: int = typer.Option(4, help="Evaluations in flight at once."),
    backend: str = typer.Option("local", help=f"Evaluation backend: {', '.join(BACKENDS)}."),
    address: str = typer.Option(
        None, help="Ray cluster address for --backend ray (default: local)."
    ),
    seed: int = typer.Option(0, help="Seed of the exemplar sampler."),
    suite: str = typer.Option(BUNDLED, help="Suite in which TASK is looked up by id."),
    no_sandbox: bool = no_sandbox_option(),
) -> None:
    """Optimize TASK: show the model earlier candidates with their speedups, evaluate what it
    writes, keep every result in the database, and write the best ModelNew to OUT/best.py."""
    the_task = resolve_task(task, suite)
    dev = resolve_device(device)
    out_dir = out or Path("runs") / f"optimize-{the_task.id}"
    store = ExemplarDB(db or out_dir / "exemplars.db")
    extra = {"max_new_tokens": max_new_tokens} if llm.startswith("local") else {}
    the_policy = make_policy(llm, model, **extra)
    reviewer = Reviewer(make_policy(review_llm, model)) if review_llm else None
    eval_config = EvalConfig(device=dev, policy=policy, tolerance=tolerance, sandbox=not no_sandbox)  # type: ignore[arg-type]
    config = OptimizeConfig(
        rounds=rounds,
        samples=samples,
        exemplars=exemplars,
        turns=turns,
        sampler=sampler,
        seed=seed,
        device=dev,
        low_precision=tolerance == "kernelbench",
        eval_jobs=eval_jobs,
        run=run,
    )

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(f"optimize {the_task.id}", total=rounds, note="generating")

        def on_event(e: dict) -> None:
            if e["event"] == "round":
                progress.update(bar, completed=e["round"] + 1, note=f"best {e['best_so_far']:.3f}x")
            elif e["event"] == "result":
                progress.update(bar, note=f"round {e['round']}: {e['status']} {e['speedup'] or ''}")
            elif e["event"] == "exhausted":
                progress.update(bar, note="policy has no more answers")

        progress.update(bar, completed=store.rounds_done(run, the_task.id))
        evaluator = make_evaluator(backend, eval_config, jobs=eval_jobs, address=address)
        try:
            optimizer = Optimizer(
                the_task, the_policy, store, evaluator, config, reviewer=reviewer, on_event=on_event
            )
            summary = asyncio.run(optimizer.run())
        finally:
            evaluator.close()
    write_outputs(out_dir, summary, store)
    best = summary.best
    console.print((out_dir / "report.md").read_text(), markup=False)
    if best is not None and not best.is_reference:
        console.print(f"best {best.speedup:.3f}x -> {out_dir / 'best.py'}")
    else:
        console.print("no candidate beat the reference yet")
    u = the_policy.usage
    console.print(
        f"LLM: {u.requests} answers, {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
    )
