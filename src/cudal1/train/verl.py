"""The verl backend of stage 3, for Ray clusters: verl trains, cudal1 scores and builds prompts.

- `compute_score(data_source, solution_str, ground_truth, extra_info)` is verl's custom reward
  function: it evaluates the completion through the same evaluator and shaping as the TRL
  backend (`reward.py`), storing every rollout in the exemplar database.
- `ContrastiveAgentLoop` (registered as `cudal1_contrastive` when verl is importable) rebuilds
  each rollout's prompt from the current database, seeded by the rollout group's uid, so all
  members of a group see the same exemplars.
- `launch_verl` writes the parquet files and a JSON config for the two functions above, composes
  verl's overrides, and runs verl's own entry point (`python -m verl.trainer.main_ppo`).
  Evaluation GPUs stay separate from training GPUs: verl reserves only `trainer.n_gpus_per_node`
  GPUs per node, and the evaluator (a Ray actor per GPU with `--backend ray`, or the local pool)
  uses the GPUs named in CUDA_VISIBLE_DEVICES of its own processes.

verl pins library versions that conflict with TRL 1.x: install it in its own environment
(`pip install 'cudal1[verl]'`, see the README's Training section).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.optimize import ReviewThresholds
from cudal1.policy import contrastive_prompt
from cudal1.tasks import Task
from cudal1.train.config import GRPOStageConfig, RunConfig
from cudal1.train.prompts import draw_exemplars
from cudal1.train.reward import CudaL1Reward, RewardShaper, ShapingConfig, unmeasured_result

CONFIG_ENV = "CUDAL1_VERL_CONFIG"
DATA_SOURCE = "cudal1"


class _Context:
    """What the reward function and agent loop need in verl's worker processes, built once per
    process from the JSON file named by CUDAL1_VERL_CONFIG."""

    _instance: _Context | None = None

    def __init__(self, path: Path) -> None:
        from cudal1.train.common import evaluator_for, open_db, select_tasks

        raw = json.loads(path.read_text())
        self.run = RunConfig(**raw["run"])
        self.stage = GRPOStageConfig(**raw["grpo"])
        self.eval = EvalConfig(**raw["eval"])
        self.tasks = {t.id: t for t in select_tasks(self.run)}
        self.db = open_db(self.run)
        self.sampler = self.stage.exemplar_sampler()
        self.reward = CudaL1Reward(
            self.tasks,
            self.db,
            evaluator_for(self.run, self.eval),
            shaper=RewardShaper(ShapingConfig(**raw["shaping"])),
            review_thresholds=ReviewThresholds(**raw["review"]),
            run=self.run.out.name,
            source="grpo-verl",
            model=self.run.model,
        )

    @classmethod
    def get(cls) -> _Context:
        if cls._instance is None:
            path = os.environ.get(CONFIG_ENV)
            if not path:
                raise Cudal1Error(
                    f"{CONFIG_ENV} is not set: launch through `cudal1 train grpo --backend verl`"
                )
            cls._instance = cls(Path(path))
        return cls._instance


def group_prompt(task: Task, group_id: str, ctx: _Context | None = None) -> dict[str, Any]:
    """The contrastive prompt for one rollout group, from the database as it is now."""
    ctx = ctx or _Context.get()
    shown = []
    if ctx.stage.exemplars > 0:
        rng = random.Random(f"{ctx.run.seed}:{task.id}:{group_id}")
        shown = draw_exemplars(ctx.db, ctx.sampler, task, rng)
    prompt = contrastive_prompt(task, shown, device=ctx.eval.device)
    return {"messages": prompt.messages, "exemplar_ids": prompt.exemplar_ids}


async def compute_score_async(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None
) -> float:
    ctx = _Context.get()
    info = extra_info or {}
    raw, result = await ctx.reward.score_text(
        ground_truth, solution_str, list(info.get("exemplar_ids", [])), int(info.get("step", 0))
    )
    if unmeasured_result(result):  # disturbed timing: the normalised centre, no signal
        return 0.0
    return ctx.reward.shaper.shape([raw])[0]


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None
) -> float:
    """verl's custom reward function (`custom_reward_function.name=compute_score`)."""
    return asyncio.run(compute_score_async(data_source, solution_str, ground_truth, extra_info))


if importlib.util.find_spec("verl") is not None:
    try:
        from verl.experimental.agent_loop.agent_loop import register
        from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

        @register("cudal1_contrastive")
        class ContrastiveAgentLoop(SingleTurnAgentLoop):
            """Single-turn rollouts whose prompt is rebuilt from the live database per group."""

            async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
                info = kwargs.get("extra_info") or {}
                ctx = _Context.get()
                task = ctx.tasks[info["task_id"]]
                group = str(kwargs.get("uid") or info.get("index"))
                kwargs["raw_prompt"] = group_prompt(task, group, ctx)["messages"]
                return await super().run(sampling_params, **kwargs)
    except ImportError:  # verl without its runtime dependencies (config-only install)
        pass


def write_inputs(
    run: RunConfig,
    stage: GRPOStageConfig,
    eval_config: EvalConfig,
    shaping: ShapingConfig,
    review: ReviewThresholds,
) -> dict[str, Path]:
    """The parquet files verl reads and the JSON config this module reads back in verl's workers."""
    import pandas as pd

    from cudal1.train.common import select_tasks

    run.out.mkdir(parents=True, exist_ok=True)
    tasks = select_tasks(run)
    rows = [
        {
            "data_source": DATA_SOURCE,
            "prompt": contrastive_prompt(t, [], device=eval_config.device).messages,
            "reward_model": {"style": "rule", "ground_truth": t.id},
            "extra_info": {"task_id": t.id, "index": i},
            "agent_name": "cudal1_contrastive",
        }
        for i, t in enumerate(tasks)
    ]
    train = run.out / "verl_train.parquet"
    pd.DataFrame(rows).to_parquet(train)
    config = run.out / "verl_cudal1.json"
    config.write_text(
        json.dumps(
            {
                "run": {**asdict(run), "out": str(run.out)},
                "grpo": asdict(stage),
                "eval": eval_config.to_dict(),
                "shaping": asdict(shaping),
                "review": asdict(review),
            },
            default=str,
        )
    )
    return {"train": train, "config": config}


def overrides(
    run: RunConfig,
    stage: GRPOStageConfig,
    files: dict[str, Path],
    model: str,
    gpus_per_node: int,
    nodes: int = 1,
) -> list[str]:
    """verl's Hydra overrides for a cudal1 run (GRPO estimator, our reward and agent loop)."""
    return [
        "algorithm.adv_estimator=grpo",
        f"data.train_files={files['train']}",
        f"data.val_files={files['train']}",
        f"data.train_batch_size={stage.prompts_per_step}",
        f"data.max_response_length={stage.max_completion_length}",
        f"actor_rollout_ref.model.path={model}",
        f"actor_rollout_ref.actor.optim.lr={stage.learning_rate}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={stage.prompts_per_step}",
        "actor_rollout_ref.actor.use_kl_loss=true",
        f"actor_rollout_ref.actor.kl_loss_coef={stage.beta}",
        f"actor_rollout_ref.actor.clip_ratio={stage.epsilon}",
        f"actor_rollout_ref.rollout.n={stage.num_generations}",
        f"actor_rollout_ref.rollout.temperature={stage.temperature}",
        "actor_rollout_ref.rollout.mode=async",
        f"custom_reward_function.path={Path(__file__).resolve()}",
        "custom_reward_function.name=compute_score",
        f"trainer.total_training_steps={stage.steps}",
        f"trainer.save_freq={stage.save_steps}",
        f"trainer.default_local_dir={run.out / 'checkpoints'}",
        f"trainer.n_gpus_per_node={gpus_per_node}",
        f"trainer.nnodes={nodes}",
        "trainer.project_name=cudal1",
        f"trainer.experiment_name={run.out.name}",
        "trainer.logger=[console,tensorboard]",
    ]


def verl_config_dir() -> Path:
    """verl's own Hydra config directory, found without importing verl."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise Cudal1Error(
            "the verl backend needs verl: see the README's Training section (separate environment)"
        )
    return Path(spec.submodule_search_locations[0]) / "trainer" / "config"


def compose(extra: list[str]) -> Any:
    """verl's `ppo_trainer` config with cudal1's overrides applied (Hydra's compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=extra)


def launch_verl(
    run: RunConfig,
    stage: GRPOStageConfig,
    eval_config: EvalConfig,
    shaping: ShapingConfig | None = None,
    review: ReviewThresholds | None = None,
) -> dict[str, Any]:
    from cudal1.train.common import model_path

    if stage.prompt_style != "paper":
        raise Cudal1Error(
            f"grpo.prompt_style = {stage.prompt_style!r} is for the trl backend: verl's rollouts "
            "get the paper prompt. Drop the setting or use --backend trl"
        )
    if stage.time_budget_s is not None:
        raise Cudal1Error(
            "grpo.time_budget_s is for the trl backend: verl's trainer runs its own steps. "
            "Drop the setting or use --backend trl"
        )
    files = write_inputs(
        run, stage, eval_config, shaping or ShapingConfig(), review or ReviewThresholds()
    )
    gpus = int(os.environ.get("CUDAL1_TRAIN_GPUS", "1"))
    args = overrides(run, stage, files, model_path(run), gpus)
    env = {**os.environ, CONFIG_ENV: str(files["config"])}
    cmd = [sys.executable, "-m", "verl.trainer.main_ppo", *args]
    (run.out / "verl_command.txt").write_text(" ".join(cmd) + "\n")
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0:
        raise Cudal1Error(
            f"verl exited with code {proc.returncode}; its command is in {run.out / 'verl_command.txt'}"
        )
    return {
        "backend": "verl",
        "command": str(run.out / "verl_command.txt"),
        "exemplars": _count(run),
    }


def _count(run: RunConfig) -> int:
    from cudal1.train.common import open_db

    return open_db(run).count()
