"""`cudal1 bench` and `cudal1 report`: a suite against a set of solutions, and its report."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudal1.cli.common import no_sandbox_option, resolve_device
from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.baselines import BASELINES
from cudal1.evaluate.service import make_evaluator
from cudal1.report.bench import (
    BenchConfig,
    check_run_dir,
    done_ids,
    read_solutions,
    run_bench,
    run_meta,
)
from cudal1.report.summary import FAST_P, load_rows, refused, sample_summary, summary
from cudal1.tasks import load_suite
from cudal1.train.config import build, parse_overrides

console = Console()


def bench_command(
    suite: str = typer.Argument(
        "bundled", help="'bundled', a KernelBench directory, or a CUDA-L1 .jsonl file."
    ),
    solutions: str = typer.Option(
        ...,
        help="CUDA-L1 .jsonl file, a directory of TASK_ID.py files, a KernelBench run directory "
        "(level_L_problem_P_sample_S_kernel.py), or db:PATH.",
    ),
    device: str = typer.Option("auto", help="cuda, cpu, or auto."),
    policy: str = typer.Option("any", help="any or kernel."),
    tolerance: str = typer.Option("calibrated", help="calibrated or kernelbench."),
    baselines: str = typer.Option("eager", help=f"Comma-separated from {','.join(BASELINES)}."),
    out: Path = typer.Option(Path("runs/bench"), help="Run directory (results.jsonl, report)."),
    resume: bool = typer.Option(True, help="Skip solutions already in RUN_DIR/results.jsonl."),
    jobs: int = typer.Option(4, help="Evaluations in flight; device phases take turns."),
    level: int = typer.Option(None, help="Only tasks of this level."),
    tasks: str = typer.Option(None, help="Only these task ids (comma-separated)."),
    backend: str = typer.Option("local", help="Evaluation backend: local or ray."),
    address: str = typer.Option(None, help="Ray cluster address for --backend ray."),
    builders: int = typer.Option(
        0, help="--backend ray: CPU-only actors that build candidates for the GPU actors."
    ),
    gpus: int = typer.Option(
        None, help="Spread evaluations over this many GPUs (local: one lock each; ray: actors)."
    ),
    no_sandbox: bool = no_sandbox_option(),
    sets: list[str] = typer.Option(
        None,
        "--set",
        help="Override an evaluator field, eval.FIELD=VALUE (cudal1.evaluate.config), "
        "repeatable; run.json records it, and a run resumes only under the same settings.",
    ),
) -> None:
    """Evaluate every solution of SOURCE on SUITE; rows stream to RUN_DIR/results.jsonl."""
    kinds = [k.strip() for k in baselines.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in BASELINES]
    if unknown:
        raise Cudal1Error(f"unknown baseline {unknown[0]!r}: choose from {', '.join(BASELINES)}")
    overrides = parse_overrides(sets or [])
    other = sorted(set(overrides) - {"eval"})
    if other:
        raise Cudal1Error(f"--set {other[0]}.…: bench takes eval.FIELD=VALUE only")
    the_suite = load_suite(suite)
    sols = read_solutions(solutions)
    if level is not None:
        by_id = {t.id: t.level for t in the_suite.tasks}
        sols = [s for s in sols if by_id.get(s.task_id or "") == level]
    covered = {t.id for t in the_suite.tasks if level is None or t.level == level}
    if tasks:
        wanted = {t.strip() for t in tasks.split(",")}
        sols = [s for s in sols if s.task_id in wanted]
        covered &= wanted
    given = {"device": resolve_device(device), "policy": policy, "tolerance": tolerance}
    eval_config = build(
        EvalConfig, {**given, "sandbox": not no_sandbox, **overrides.get("eval", {})}, "eval"
    )
    check_run_dir(out, run_meta(the_suite.name, eval_config, kinds), resume)
    config = BenchConfig(
        eval=eval_config,
        evaluator=make_evaluator(
            backend, eval_config, jobs=jobs, address=address, gpus=gpus, builders=builders
        ),
        baselines=kinds,
        jobs=jobs,
        resume=resume,
    )
    already = len(done_ids(out / "results.jsonl") & {s.key for s in sols}) if resume else 0
    counts = {"ok": 0, "failed": 0, "rejected": 0}
    logs: list[float] = []
    with Progress(
        TextColumn("[bold]bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        total = len(sols) + len(covered - {s.task_id for s in sols})
        bar = progress.add_task("bench", total=total, completed=already, note="")

        def on_row(row: dict) -> None:
            status = (row.get("result") or {}).get("status")
            if status == "ok":
                counts["ok"] += 1
                if row["result"]["speedup"] is not None:  # None: disturbed, not measured
                    logs.append(math.log(max(row["result"]["speedup"], 1e-9)))
            elif status == "rejected":
                counts["rejected"] += 1
            else:
                counts["failed"] += 1
            geo = math.exp(sum(logs) / len(logs)) if logs else float("nan")
            progress.update(
                bar,
                advance=1,
                note=f"ok {counts['ok']} failed {counts['failed']} rejected {counts['rejected']} geomean {geo:.3f}x",
            )

        try:
            results = run_bench(the_suite, sols, out, config, on_row, covered)
        finally:
            assert config.evaluator is not None
            config.evaluator.close()
    rows = load_rows(results)
    console.print(f"{len(rows)} rows in {results}")
    if "eager" in kinds and any(r.get("level") is not None for r in rows):
        per_sample = sample_summary(rows, ["eager"])
        if per_sample:
            console.print(f"{len(per_sample) - 1} samples per task; tasks counted by their best")
        for rule in ("paper", "strict"):
            s = summary(rows, ["eager"])["overall"]["eager"][rule]
            geo = f"{s['geomean']:.3f}" if s.get("geomean") else "-"
            console.print(
                f"{rule:6} rule vs eager: correct {_correct(s)}, mean {s['mean']:.3f}, "
                f"median {s['median']:.3f}, geomean {geo}, {_fast(s)}"
            )
        for name, by_rule in per_sample.items():
            s = by_rule["eager"]["strict"]
            console.print(f"{name:>9}: correct {_correct(s)}, {_fast(s)}")
    console.print(
        f"refused or flagged: {len(refused(rows))}; `cudal1 report {out} --html` for the report"
    )


def _correct(s: dict) -> str:
    """Correct of all tasks; those correct but unmeasured (timing disturbed) apart."""
    extra = f" (+{s['unmeasured']} unmeasured)" if s.get("unmeasured") else ""
    return f"{s['correct']}/{s['tasks']}{extra}"


def _fast(s: dict) -> str:
    """KernelBench's fast_p figures of a stats dict."""
    return " ".join(f"fast_{p:g} {s[f'fast_{p:g}']:.3f}" for p in FAST_P)


def report_command(
    run_dir: Path = typer.Argument(
        ..., help="A bench run directory (results.jsonl) or an optimize one (exemplars.db)."
    ),
    html: bool = typer.Option(False, "--html", help="Also write a self-contained report.html."),
    csv: bool = typer.Option(
        False, "--csv", help="Also write solutions.csv, one row per solution."
    ),
    json_: bool = typer.Option(
        False, "--json", help="Also write report.json: the summary and one record per solution."
    ),
    compare: list[Path] = typer.Option(
        None,
        help="Another run of the same entries (a repeat, an earlier audit; repeat the option "
        "for several): every format adds how far their speedups agree and which entries "
        "changed verdict.",
    ),
) -> None:
    """Write RUN_DIR/report.md (and report.html, solutions.csv, report.json): tables, plots,
    refusals, code side by side."""
    from cudal1.report.agreement import headline
    from cudal1.report.render import load_run, write_files

    run = load_run(run_dir, compare or [])
    for path in write_files(run, run_dir, html, csv, json_):
        console.print(f"wrote {path}")
    for other, agree in run.compared:
        console.print(headline(other, agree))
