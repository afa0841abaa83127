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
# The embedded 135M model (benchmarks/embedded_policy.py measures what they give): a low
# temperature keeps it close to the code it was shown, the answers it gets right are short
# classes, and retries draw new samples when the code comes out unusable.
EMBEDDED_RETRIES = 2
EMBEDDED_TEMPERATURE = 0.5
EMBEDDED_MAX_NEW_TOKENS = 400


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
    prompt: str = typer.Option(
        "auto",
        help="paper (CUDA-L1's three-part prompt), compact (short, few-shot, code start "
        "prefilled: for small models), or auto (compact for the embedded model).",
    ),
    retries: int = typer.Option(
        None,
        help="Fresh samples per answer while it has no usable ModelNew (default: 2 for the "
        "embedded model, 0 otherwise).",
    ),
    max_new_tokens: int = typer.Option(
        None, help="Answer length limit for a local model (default: 400 embedded, 768 otherwise)."
    ),
    eval_jobs: int = typer.Option(4, help="Evaluations in flight at once."),
    backend: str = typer.Option("local", help=f"Evaluation backend: {', '.join(BACKENDS)}."),
    address: str = typer.Option(
        None, help="Ray cluster address for --backend ray (default: local)."
    ),
    builders: int = typer.Option(
        0, help="--backend ray: CPU-only actors that build candidates for the GPU actors."
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
    embedded = llm == "local"  # the bundled 135M model: compact prompt, retries
    extra: dict = {}
    if llm.startswith("local"):
        default_tokens = EMBEDDED_MAX_NEW_TOKENS if embedded else 768
        extra = {"max_new_tokens": max_new_tokens or default_tokens, "seed": seed}
        if embedded:
            extra["temperature"] = EMBEDDED_TEMPERATURE
    style = ("compact" if embedded else "paper") if prompt == "auto" else prompt
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
        prompt=style,
        retries=(EMBEDDED_RETRIES if embedded else 0) if retries is None else retries,
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
        counts = {"generated": 0, "answers": 0, "parsed": 0, "correct": 0}

        def on_event(e: dict) -> None:
            if e["event"] == "result":
                counts["generated"] += 1
                counts["answers"] += e["final"]
                counts["parsed"] += e["final"] and e["status"] != "unparsed"
                counts["correct"] += e["status"] == "ok"
            if e["event"] == "round":
                progress.update(bar, completed=e["round"] + 1, note=f"best {e['best_so_far']:.3f}x")
            elif e["event"] == "result":
                progress.update(bar, note=f"round {e['round']}: {e['status']} {e['speedup'] or ''}")
            elif e["event"] == "exhausted":
                progress.update(bar, note="policy has no more answers")

        progress.update(bar, completed=store.rounds_done(run, the_task.id))
        evaluator = make_evaluator(
            backend, eval_config, jobs=eval_jobs, address=address, builders=builders
        )
        try:
            optimizer = Optimizer(
                the_task, the_policy, store, evaluator, config, reviewer=reviewer, on_event=on_event
            )
            summary = asyncio.run(optimizer.run())
        finally:
            evaluator.close()
    given_as_file = task.endswith(".py") or Path(task).is_file()
    meta = {"suite": the_task.origin if given_as_file else suite, "eval": eval_config.to_dict()}
    write_outputs(out_dir, summary, store, meta)
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
    retried = counts["generated"] - counts["answers"]
    console.print(
        f"answers: {counts['answers']}, parsed {counts['parsed']}, correct {counts['correct']}"
        + (f" ({retried} unusable answers asked for again)" if retried else "")
    )
    if style == "compact":
        console.print(
            "compact prompt: every answer continues a prefilled start (a ```python fence, the "
            "reference's imports and the `class ModelNew` line); the model wrote the rest"
        )
