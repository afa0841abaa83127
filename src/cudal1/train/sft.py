"""Supervised fine-tuning (stages 1 and 2) on chat-format data with TRL's SFT trainer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.train.config import RunConfig, SFTConfig


def read_chat_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows with a `messages` list (system/user/assistant); a bad line is an error naming it."""
    if not path.is_file():
        raise Cudal1Error(f"SFT dataset {path} does not exist: run `cudal1 train augment` first")
    rows = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            messages = row["messages"]
            assert isinstance(messages, list) and messages[-1]["role"] == "assistant"
        except (ValueError, KeyError, TypeError, AssertionError, IndexError):
            raise Cudal1Error(
                f'{path}:{lineno}: expected {{"messages": [..., assistant]}}'
            ) from None
        rows.append({"messages": messages})
    if not rows:
        raise Cudal1Error(f"SFT dataset {path} is empty: no successful candidates to learn from")
    return rows


def run_sft(run: RunConfig, cfg: SFTConfig, model: str, dataset: Path, out: Path) -> dict[str, Any]:
    """Fine-tune `model` on `dataset`; the result is saved to `out` (full weights or adapter)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    rows = read_chat_jsonl(dataset)
    # transformers' tensorboard callback reads its directory from here only; set, not
    # setdefault: a second run in one process would otherwise log into the first run's
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(run.out / "tensorboard")
    tokenizer = AutoTokenizer.from_pretrained(model)
    args = TRLSFTConfig(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.learning_rate,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation,
        max_length=cfg.max_length,
        logging_steps=1,
        save_strategy="no",
        report_to=run.report_to,
        use_cpu=run.device == "cpu",
        bf16=run.device == "cuda",
        seed=run.seed,
    )
    peft_config = None
    if cfg.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=cfg.lora_rank,
            lora_alpha=2 * cfg.lora_rank,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {
        "model": str(out),
        "examples": len(rows),
        "steps": trainer.state.global_step,
        "losses": losses,
    }
