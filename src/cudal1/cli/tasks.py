"""`cudal1 tasks`: list, show and check the problems in a suite."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from cudal1.tasks import BUNDLED, Task, load_suite

app = typer.Typer(help="List, show and check tasks (bundled suite, KernelBench dir, CUDA-L1 file).")
console = Console()

SUITE_ARG = typer.Argument(
    BUNDLED, help="'bundled', a KernelBench directory (level1/...), or a CUDA-L1 .jsonl file."
)


def task_row(task: Task) -> dict:
    return {
        "id": task.id,
        "level": task.level,
        "name": task.name,
        "split": task.split,
        "hash": task.hash,
        "origin": task.origin,
    }


@app.command("list")
def list_tasks(
    suite: str = SUITE_ARG,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list and nothing else."),
) -> None:
    """List the tasks of SUITE with level, split (train/heldout) and content hash."""
    loaded = load_suite(suite)
    if as_json:
        typer.echo(json.dumps([task_row(t) for t in loaded.tasks], indent=1))
        return
    table = Table(title=f"{loaded.name}: {len(loaded.tasks)} tasks")
    for col in ("id", "level", "name", "split", "hash"):
        table.add_column(col)
    for t in loaded.tasks:
        table.add_row(t.id, str(t.level), t.name, t.split, t.hash)
    console.print(table)
    levels = sorted({t.level for t in loaded.tasks})
    parts = []
    for lv in levels:
        in_level = [t for t in loaded.tasks if t.level == lv]
        held = sum(t.split == "heldout" for t in in_level)
        parts.append(f"level {lv}: {len(in_level)} ({held} held out)")
    console.print("; ".join(parts))


@app.command("show")
def show(
    task_id: str = typer.Argument(..., metavar="ID", help="Task id (L1_3) or name."),
    suite: str = typer.Option(BUNDLED, "--suite", help="Suite to look in."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show one task: metadata, sizes (full and CPU) and source."""
    task = load_suite(suite, validate=False).get(task_id)
    tm = task.load("full")
    row = task_row(task) | {"sizes": tm.full_sizes, "cpu_sizes": tm.cpu_sizes}
    if as_json:
        typer.echo(json.dumps(row | {"source": task.source}, indent=1))
        return
    for key, value in row.items():
        console.print(f"[bold]{key}[/bold]: {value}")
    console.print(Syntax(task.source, "python", line_numbers=True))


@app.command("check")
def check(
    suite: str = SUITE_ARG,
    device: str = typer.Option("auto", help="cpu, cuda, or auto (cuda when available)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of reports."),
) -> None:
    """Run every reference and prove each task rejects null answers (zeros, constant, passthrough,
    an ignored input). Exit 1 when a task is degenerate under the calibrated tolerance."""
    from cudal1.cli.common import resolve_device
    from cudal1.evaluate.hygiene import check_task

    dev = resolve_device(device)
    loaded = load_suite(suite)
    reports = []
    with console.status("checking tasks") as status:
        for t in loaded.tasks:
            status.update(f"checking {t.id} ({t.name}) on {dev}")
            reports.append(check_task(t, dev))
    bad = [r for r in reports if not r.ok]
    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in reports], indent=1))
    else:
        table = Table(title=f"null-answer check of {loaded.name} on {dev}")
        for col in ("id", "output", "calibrated", "kernelbench (info)"):
            table.add_column(col)
        for r in reports:
            table.add_row(
                r.task_id,
                " ".join(str(list(s)) for s in r.output_shapes),
                "ok" if r.ok else "PASSES: " + ", ".join(r.passed_nulls["calibrated"]),
                ", ".join(r.passed_nulls["kernelbench"]) or "-",
            )
        console.print(table)
        console.print(f"{len(reports) - len(bad)}/{len(reports)} tasks reject every null answer")
    if bad:
        raise typer.Exit(1)
