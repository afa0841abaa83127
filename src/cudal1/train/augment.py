"""Stage 1: data augmentation. Teacher models write one-shot rewrites of each training task; the
evaluator keeps the ones that run and are correct (speed is recorded, not required); at most K
per task (the fastest) enter a chat-format dataset with their provenance."""

from __future__ import annotations

import json
from typing import Any

from cudal1.evaluate import EvalConfig
from cudal1.policy import PolicyExhausted, contrastive_prompt, make_policy, parse_answer
from cudal1.train.common import evaluator_for, open_db, select_tasks
from cudal1.train.config import AugmentConfig, RunConfig

DATASET = "augment.jsonl"


async def run_augment(
    run: RunConfig, cfg: AugmentConfig, eval_config: EvalConfig
) -> dict[str, Any]:
    tasks = select_tasks(run)
    db = open_db(run)
    models = cfg.teacher_models + [None] * (len(cfg.teachers) - len(cfg.teacher_models))
    teachers = [make_policy(spec, model) for spec, model in zip(cfg.teachers, models, strict=True)]
    evaluator = evaluator_for(run, eval_config)
    run.out.mkdir(parents=True, exist_ok=True)
    rows, attempts_used = [], 0
    try:
        for task in tasks:
            db.ensure_reference(task)
            prompt = contrastive_prompt(task, [], device=eval_config.device)
            kept: list[tuple[float, str, str, str]] = []
            for teacher in teachers:
                tried = 0
                while tried < cfg.attempts and len(kept) < cfg.keep:
                    try:
                        answers = await teacher.complete(
                            prompt, min(cfg.keep, cfg.attempts - tried)
                        )
                    except PolicyExhausted:
                        break
                    tried += len(answers)
                    for answer in answers:
                        parsed = parse_answer(answer.text)
                        result = await evaluator.evaluate(task, parsed.code) if parsed.ok else None
                        stored = db.add(
                            task,
                            parsed.code or answer.text,
                            result,
                            source=f"teacher:{teacher.name}",
                            model=teacher.model,
                            run="augment",
                        )
                        if result is not None and result.ok:
                            kept.append(
                                (
                                    result.speedup or 0.0,
                                    answer.text,
                                    teacher.model,
                                    stored.code_hash,
                                )
                            )
                attempts_used += tried
            for speedup, text, model, code_hash in sorted(kept, reverse=True)[: cfg.keep]:
                rows.append(
                    {
                        "messages": [*prompt.messages, {"role": "assistant", "content": text}],
                        "task_id": task.id,
                        "teacher": model,
                        "speedup": speedup,
                        "candidate_hash": code_hash,
                    }
                )
    finally:
        evaluator.close()
    path = run.out / DATASET
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {
        "dataset": str(path),
        "examples": len(rows),
        "tasks": len(tasks),
        "attempts": attempts_used,
    }
