"""Stage 3: contrastive RL with TRL's GRPO trainer.

cudal1 supplies the pieces, TRL trains: the dataset builds each prompt when it is drawn from the
current exemplar database (one prompt per GRPO group), the reward function evaluates every
rollout, stores it in the database and shapes the speedups (`reward.py`), and two callbacks keep
the run auditable: every checkpoint carries a snapshot of the database and of the reward
normaliser, and the speedup distribution goes to TensorBoard as a histogram. A second
invocation with the same run directory resumes from the last checkpoint, database and
normaliser included. A step whose gradient is not finite is skipped (`guards.py`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.optimize import Reviewer, ReviewThresholds
from cudal1.policy import make_policy
from cudal1.train.common import evaluator_for, model_path, open_db, select_tasks
from cudal1.train.config import GRPOStageConfig, RunConfig
from cudal1.train.prompts import ContrastivePrompts
from cudal1.train.reward import CudaL1Reward, RewardShaper, ShapingConfig

SHAPER_STATE = "reward_shaper.json"
DB_SNAPSHOT = "exemplars.db"
STEP_LOG = "steps.jsonl"
"""One line per finished step in the run directory: the step's reward metrics, statuses and
refusals by reason, and its wall seconds; written as each step ends, so a run cut short keeps
them (steps after its last checkpoint are dropped when it resumes, as they run again)."""


def read_step_log(run_dir: Path, last_step: int | None = None) -> list[dict[str, Any]]:
    """The step log's rows, up to `last_step` if given."""
    path = run_dir / STEP_LOG
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
    return [r for r in rows if last_step is None or r["step"] <= last_step]


def snapshot_db(db_path: Path, dest: Path) -> None:
    """A consistent copy of a live SQLite database (the backup API, safe under WAL)."""
    src = sqlite3.connect(db_path)
    dst = sqlite3.connect(dest)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def last_checkpoint(checkpoints: Path) -> Path | None:
    found = sorted(
        (p for p in checkpoints.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
        key=lambda p: int(p.name.split("-")[-1]),
    )
    return found[-1] if found else None


def steps_saved(checkpoints: Path) -> int:
    """The step of the newest checkpoint (0 for none): where a resumed run starts."""
    found = last_checkpoint(checkpoints)
    return int(found.name.split("-")[-1]) if found else 0


def run_grpo(
    run: RunConfig,
    stage: GRPOStageConfig,
    eval_config: EvalConfig,
    shaping: ShapingConfig,
    review: ReviewThresholds,
) -> dict[str, Any]:
    """Train; returns a summary (steps, checkpoint, database size, reward history)."""
    import torch
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from cudal1.train.guards import NonFiniteGradGuard

    checkpoints = run.out / "checkpoints"
    done = steps_saved(checkpoints)
    if stage.stop_after is not None and not done < stage.stop_after <= stage.steps:
        raise Cudal1Error(
            f"grpo.stop_after={stage.stop_after}: the run is at step {done} of {stage.steps}; "
            "give a step after the one it is at, up to grpo.steps"
        )
    run.out.mkdir(parents=True, exist_ok=True)
    tasks = select_tasks(run)
    db = open_db(run)
    resume = last_checkpoint(checkpoints)
    if resume is not None and (resume / DB_SNAPSHOT).is_file():
        # as the checkpoint's step left it: the steps after it (a run cut short) run again, and
        # their evaluations must not reach the prompts of the steps that replace them
        snapshot_db(resume / DB_SNAPSHOT, db.path)
    for t in tasks:
        db.ensure_reference(t)
    path = model_path(run)
    tokenizer = AutoTokenizer.from_pretrained(path)
    prompts = ContrastivePrompts(
        tasks,
        db,
        stage.exemplar_sampler(),
        device=eval_config.device,
        exemplars=stage.exemplars > 0,
        low_precision=eval_config.tolerance == "kernelbench",
        seed=run.seed,
        style=stage.prompt_style,
        tokenizer=tokenizer,
    )
    evaluator = evaluator_for(run, eval_config)
    shaper = RewardShaper(shaping)
    kept = read_step_log(run.out, done)
    (run.out / STEP_LOG).write_text("".join(json.dumps(r) + "\n" for r in kept))
    if resume is not None and (resume / SHAPER_STATE).is_file():
        shaper.load_state(json.loads((resume / SHAPER_STATE).read_text()))
    reviewer = Reviewer(make_policy(stage.review_llm)) if stage.review_llm else None
    reward = CudaL1Reward(
        {t.id: t for t in tasks},
        db,
        evaluator,
        shaper=shaper,
        review_thresholds=review,
        reviewer=reviewer,
        run=run.out.name,
        source="grpo",
        model=run.model,
    )

    class Snapshots(TrainerCallback):
        """Database and normaliser snapshots in every checkpoint; speedup histograms."""

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            ckpt.mkdir(parents=True, exist_ok=True)
            snapshot_db(db.path, ckpt / DB_SNAPSHOT)
            (ckpt / SHAPER_STATE).write_text(json.dumps(shaper.state()))

        def on_log(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            speedups = [s for h in reward.history for s in h["speedups"]]
            if speedups and "tensorboard" in run.report_to:
                from torch.utils.tensorboard import SummaryWriter

                with SummaryWriter(str(run.out / "tensorboard")) as w:
                    w.add_histogram(
                        "reward/speedup_distribution", torch.tensor(speedups), state.global_step
                    )

    class PhaseClock(TrainerCallback):
        """Wall seconds of each step split into generation, reward (evaluation) and the rest
        (log-probabilities, loss, backward, optimiser): where a step's time goes."""

        def __init__(self) -> None:
            self.seconds = {"generation": 0.0, "reward": 0.0, "step": 0.0}
            self.steps = 0

        def wrap_generation(self, trainer: Any) -> None:
            # TRL has no hook around generation; time its `_generate` on this instance only.
            generate = trainer._generate

            def timed(*a: Any, **kw: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return generate(*a, **kw)
                finally:
                    self.seconds["generation"] += time.perf_counter() - t0

            trainer._generate = timed

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.seconds["step"] += time.perf_counter() - self.t0
            self.steps += 1

        def summary(self) -> dict[str, Any]:
            reward_s = sum(h["metrics"]["time/reward_s"] for h in reward.history)
            device_s = sum(h["metrics"]["time/eval_device_s"] for h in reward.history)
            step_s = self.seconds["step"]
            gen_s = self.seconds["generation"]
            return {
                "steps": self.steps,
                "steps_per_s": round(self.steps / step_s, 4) if step_s else None,
                "seconds": {
                    "step": round(step_s, 2),
                    "generation": round(gen_s, 2),
                    "reward": round(reward_s, 2),
                    "eval_device": round(device_s, 2),
                    "optimisation": round(max(0.0, step_s - gen_s - reward_s), 2),
                },
                "peak_gpu_memory_gb": (
                    round(torch.cuda.max_memory_allocated() / 2**30, 3)
                    if torch.cuda.is_available()
                    else None
                ),
            }

    class StepLog(TrainerCallback):
        """Appends each finished step's reward record to the step log."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()
            self.calls = len(reward.history)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            wall = round(time.perf_counter() - self.t0, 2)
            with (run.out / STEP_LOG).open("a") as f:
                for h in reward.history[self.calls :]:  # one reward call a step
                    row = {"step": state.global_step, "wall_s": wall, **h["metrics"]}
                    row |= {"statuses": h["statuses"], "refused": h["refused"]}
                    row["update_skipped"] = state.global_step in guard.skipped
                    f.write(json.dumps(row) + "\n")

    class Deadline(TrainerCallback):
        """Ends training at the first step past `stage.time_budget_s`, or at step
        `stage.stop_after`, with a checkpoint there, so the next invocation resumes it."""

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            budget = stage.time_budget_s
            late = budget is not None and time.perf_counter() - self.t0 >= budget
            if late or (stage.stop_after is not None and state.global_step >= stage.stop_after):
                control.should_save = True
                control.should_training_stop = True

    clock = PhaseClock()
    # transformers' tensorboard callback reads its directory from here only; set, not
    # setdefault: a second run in one process would otherwise log into the first run's
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(run.out / "tensorboard")
    batch = stage.prompts_per_step * stage.num_generations
    args = GRPOConfig(
        output_dir=str(checkpoints),
        max_steps=stage.steps,
        per_device_train_batch_size=batch,
        num_generations=stage.num_generations,
        max_completion_length=stage.max_completion_length,
        learning_rate=stage.learning_rate,
        beta=stage.beta,
        epsilon=stage.epsilon,
        temperature=stage.temperature,
        use_vllm=stage.use_vllm,
        logging_steps=1,
        save_steps=stage.save_steps,
        save_total_limit=stage.keep_checkpoints,
        report_to=run.report_to,
        use_cpu=run.device == "cpu",
        seed=run.seed,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        bf16=run.device == "cuda",
    )
    peft_config = None
    if stage.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=stage.lora_rank,
            lora_alpha=2 * stage.lora_rank,
            target_modules=(
                stage.lora_modules
                if stage.lora_modules == "all-linear"
                else [m.strip() for m in stage.lora_modules.split(",")]
            ),
            task_type="CAUSAL_LM",
        )
    trainer = GRPOTrainer(
        model=path,
        reward_funcs=[reward],
        args=args,
        train_dataset=prompts.dataset(),
        processing_class=tokenizer,
        callbacks=[Snapshots(), clock, StepLog(), Deadline()],
        peft_config=peft_config,
    )
    clock.wrap_generation(trainer)
    guard = NonFiniteGradGuard(trainer.model)
    trainer.add_callback(guard)
    try:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        final = run.out / "final"
        trainer.save_model(str(final))
        tokenizer.save_pretrained(str(final))
        snapshot_db(db.path, final / DB_SNAPSHOT)
    finally:
        evaluator.close()
    return {
        "steps": trainer.state.global_step,
        "resumed_from": str(resume) if resume else None,
        "final": str(run.out / "final"),
        "exemplars": db.count(),
        "rewards": [  # one per reward call (a step's rollouts), refusals counted by reason
            {**h["metrics"], "statuses": h["statuses"], "refused": h["refused"]}
            for h in reward.history
        ],
        "timing": clock.summary(),
        "skipped_updates": guard.skipped,  # step -> tensors whose gradient was not finite
    }
