"""`cudal1 train augment|sft|rft|grpo`: the CUDA-L1 stages. Each reads one config file
(`--config FILE`, sections documented in `cudal1.train.config`) with `--set section.field=value`
overrides; the common fields also have their own options."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from cudal1.errors import Cudal1Error
from cudal1.train.config import load_config
from cudal1.train.tiny import TINY

app = typer.Typer(
    help="Training stages: augment (stage 1 data), sft, rft (stage 2), grpo (stage 3)."
)
console = Console()

CONFIG = typer.Option(
    None, "--config", help=r"A TOML file with \[run], \[eval], \[grpo], ... sections."
)
SET = typer.Option(None, "--set", help="Override: section.field=value (repeatable).")
OUT = typer.Option(None, help="Run directory (run.out).")
MODEL = typer.Option(None, help="Model path or name, or tiny-random (run.model).")
DEVICE = typer.Option(
    None, help="cuda or cpu, for training and evaluation (run.device, eval.device)."
)


def _sections(
    config: Path | None,
    sets: list[str] | None,
    out: Path | None,
    model: str | None,
    device: str | None,
    **extra: Any,
) -> dict[str, Any]:
    overrides = list(sets or [])
    if out is not None:
        overrides.append(f"run.out={out}")
    if model is not None:
        overrides.append(f"run.model={model}")
    if device is not None:
        if device not in ("cuda", "cpu"):
            raise Cudal1Error(f"unknown device {device!r}: choose cuda or cpu")
        overrides += [f"run.device={device}", f"eval.device={device}"]
    for key, value in extra.items():
        if value is not None:
            overrides.append(f"{key}={json.dumps(value) if not isinstance(value, str) else value}")
    return load_config(config, overrides)


def _report(summary: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1, default=str))
    console.print_json(
        json.dumps({k: v for k, v in summary.items() if k != "rewards"}, default=str)
    )


@app.command("augment")
def augment(
    config: Path = CONFIG,
    sets: list[str] = SET,
    out: Path = OUT,
    device: str = DEVICE,
    teacher: list[str] = typer.Option(
        None, help="Teacher policy (repeatable): URL, local, replay:FILE."
    ),
) -> None:
    """Stage 1 data: teachers' one-shot rewrites, evaluated; the correct ones become a dataset."""
    from cudal1.train.augment import run_augment

    s = _sections(
        config, sets, out, None, device, **({"augment.teachers": teacher} if teacher else {})
    )
    summary = asyncio.run(run_augment(s["run"], s["augment"], s["eval"]))
    _report(summary, s["run"].out / "augment.json")


@app.command("sft")
def sft(
    config: Path = CONFIG,
    sets: list[str] = SET,
    out: Path = OUT,
    model: str = MODEL,
    device: str = DEVICE,
) -> None:
    """Fine-tune on the augment dataset (or [sft].dataset) with TRL's SFT trainer."""
    from cudal1.train.augment import DATASET
    from cudal1.train.common import model_path
    from cudal1.train.sft import run_sft

    s = _sections(config, sets, out, model, device)
    run = s["run"]
    dataset = s["sft"].dataset or run.out / DATASET
    summary = run_sft(run, s["sft"], model_path(run), dataset, run.out / "sft")
    _report(summary, run.out / "sft.json")


@app.command("rft")
def rft(
    config: Path = CONFIG,
    sets: list[str] = SET,
    out: Path = OUT,
    model: str = MODEL,
    device: str = DEVICE,
) -> None:
    """Stage 2: rounds of sample -> evaluate -> keep the correct -> fine-tune."""
    from cudal1.train.rft import run_rft

    s = _sections(config, sets, out, model, device)
    summary = asyncio.run(run_rft(s["run"], s["rft"], s["sft"], s["eval"]))
    _report(summary, s["run"].out / "rft.json")


@app.command("grpo")
def grpo(
    config: Path = CONFIG,
    sets: list[str] = SET,
    out: Path = OUT,
    model: str = MODEL,
    device: str = DEVICE,
    backend: str = typer.Option(
        None, help="trl (this machine) or verl (Ray cluster) (grpo.backend)."
    ),
    steps: int = typer.Option(None, help="Training steps (grpo.steps)."),
    plain: bool = typer.Option(
        False, "--plain", help="Plain-GRPO ablation: no exemplars in prompts."
    ),
) -> None:
    """Stage 3: contrastive GRPO; prompts from the live database, rewards from the evaluator.

    Smoke test of a set-up: cudal1 train grpo --backend trl --model tiny-random --steps 2 --device cpu --out DIR
    """
    from cudal1.train.grpo import run_grpo

    extra: dict[str, Any] = {"grpo.backend": backend, "grpo.steps": steps}
    if plain:
        extra["grpo.exemplars"] = 0
    s = _sections(config, sets, out, model, device, **extra)
    run, stage = s["run"], s["grpo"]
    if run.model == TINY and not any(
        x.startswith("grpo.max_completion_length") for x in sets or []
    ):
        stage.max_completion_length = min(
            stage.max_completion_length, 128
        )  # a tiny model writes noise
    if stage.backend == "verl":
        from cudal1.train.verl import launch_verl

        summary = launch_verl(run, stage, s["eval"], s["shaping"], s["review"])
    elif stage.backend == "trl":
        summary = run_grpo(run, stage, s["eval"], s["shaping"], s["review"])
    else:
        raise Cudal1Error(f"unknown backend {stage.backend!r}: choose trl or verl")
    _report(summary, run.out / "grpo.json")
