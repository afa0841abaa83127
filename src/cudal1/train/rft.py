"""Stage 2: self-supervised refinement. Each round samples from the current model, keeps the
answers that run and are correct (speed ignored, binary reward), and fine-tunes on them; the
next round samples from the fine-tuned model. Rounds already finished are skipped on resume."""

from __future__ import annotations

import json
from typing import Any

from cudal1.evaluate import EvalConfig
from cudal1.policy import LocalPolicy, contrastive_prompt, parse_answer
from cudal1.train.common import evaluator_for, model_path, open_db, select_tasks
from cudal1.train.config import RFTConfig, RunConfig, SFTConfig
from cudal1.train.sft import run_sft


async def run_rft(
    run: RunConfig, cfg: RFTConfig, sft: SFTConfig, eval_config: EvalConfig
) -> dict[str, Any]:
    tasks = select_tasks(run)
    db = open_db(run)
    model = model_path(run)
    evaluator = evaluator_for(run, eval_config)
    rounds = []
    try:
        for r in range(cfg.rounds):
            out = run.out / f"rft-round{r}"
            if (out / "config.json").is_file():  # finished earlier: resume after it
                model = str(out)
                continue
            policy = LocalPolicy(
                model, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature
            )
            rows, sampled = [], 0
            for task in tasks:
                db.ensure_reference(task)
                prompt = contrastive_prompt(task, [], device=eval_config.device)
                for answer in await policy.complete(prompt, cfg.samples):
                    sampled += 1
                    parsed = parse_answer(answer.text)
                    result = await evaluator.evaluate(task, parsed.code) if parsed.ok else None
                    db.add(
                        task,
                        parsed.code or answer.text,
                        result,
                        source="rft",
                        model=model,
                        run="rft",
                        step=r,
                    )
                    if result is not None and result.ok:
                        rows.append(
                            {
                                "messages": [
                                    *prompt.messages,
                                    {"role": "assistant", "content": answer.text},
                                ]
                            }
                        )
            data = run.out / f"rft-round{r}.jsonl"
            data.write_text("".join(json.dumps(row) + "\n" for row in rows))
            summary: dict[str, Any] = {"round": r, "sampled": sampled, "kept": len(rows)}
            if rows:
                summary |= run_sft(run, sft, model, data, out)
                model = str(out)
            rounds.append(summary)
    finally:
        evaluator.close()
    return {"model": model, "rounds": rounds}
