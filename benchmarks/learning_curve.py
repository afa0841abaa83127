"""Does the RL loop learn? Contrastive GRPO (TRL, LoRA) on the embedded SmolLM2-135M-Instruct over
the bundled suite's training split, every rollout evaluated for real, with the held-out split
evaluated every `--eval-every` steps; and the two controls measured the same way.

    # one call trains one arm up to --steps steps (resuming it), evaluating the held-out split
    # at each multiple of --eval-every on the way (the untrained arm only evaluates)
    PYTHONPATH=src:. python3 benchmarks/learning_curve.py --state DIR --arm contrastive --steps 25
    PYTHONPATH=src:. python3 benchmarks/learning_curve.py --state DIR --arm plain --steps 25
    PYTHONPATH=src:. python3 benchmarks/learning_curve.py --state DIR --arm untrained --repeats 3
    # then, from every arm's files: curve.png and summary.md (training rollouts by window, with
    # the share that repeated a program already in the arm's database and the correct ones new
    # to it; the held-out evaluations)
    PYTHONPATH=src:. python3 benchmarks/learning_curve.py --state DIR --report OUT

Arms: `contrastive` (the paper's method: two exemplars with their speedups in each prompt),
`plain` (the same, no exemplars: plain GRPO), `untrained` (the base model, not trained, under the
same held-out prompts; `--repeats` evaluations give the run-to-run spread). All use the compact
prompt, whose answer starts prefilled with the code's first lines (a 135M model does not follow
the paper's long prompt), and generate without the embedded policy's grammar, so parse rates are
the model's own. `--temperature` (default 0.7, where the untrained model parses most often)
samples both the rollouts and the held-out answers and is recorded in every row. The untrained
model's starting point, measured on the CPU
(`benchmarks/results/2026-12-04-cpu/summary.md`): greedy 6 of 12 held-out answers parse and 1
is correct; sampled, 32 of 48 parse at 0.7 and 18 of 48 at 1.0, none correct. Every failure
gets the lowest reward, so only groups with a correct rollout teach anything: hence 8 rollouts
per prompt and LoRA's usual learning rate (1e-4), not full fine-tuning's.

On the H200 (which has transformers 5.17, PEFT and accelerate, but not TRL, datasets or gguf):
carry the model in parts (`benchmarks/parts.py split --out .model`: three consecutive calls to a
machine kept warm carry one part each, the first with the manifest; `join` there) and, in the
third call, these wheels in `.whl/` (3 MB together), installed with
`pip install --no-index --no-deps --target /tmp/site .whl/*.whl`. The machine's own transformers
runs them: transformers 5.25 (this machine's) needs huggingface_hub 2.4, which needs httpx2,
which the machine lacks too.

    pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 --platform any -d .whl \
        trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 gguf==0.19.0 \
        peft==0.21.2 accelerate==1.16.0

State: DIR/ARM/run/ (TRL checkpoints with the LoRA adapter and optimiser state, the exemplar
database, the reward normaliser; not the base model), DIR/ARM/metrics.jsonl (one line per step:
shaped reward mean and std, parse, correct and refused fractions, refusals by reason,
GPU-seconds of evaluation, the step's wall seconds, whether its update was skipped for a
non-finite gradient; taken from the run's step log for the steps
its checkpoint holds, so a chunk cut short records what it saved), DIR/ARM/heldout.jsonl (one
line per held-out evaluation and decoding mode) and heldout_answers.jsonl (each answer's
verdict). `--budget-s` ends a call at a saved step before its limit, and the state is packed
even when the limit interrupts it. `--pack $OUT` ends a call by writing the state as a
gzipped tar (without the tokenizer, which resuming takes from the model) in 15 MiB parts with
their digests, and `--unpack DIR` starts the next call from them (an arm already on a machine
still warm keeps its own state). `--no-run` only unpacks and packs. The packed states are
committed (`benchmarks/results/2026-12-06-h100/learning-curve/state/`), since a new checkout
has no ignored files: the first 25 steps, with an adapter on every linear layer (a 28 MB
state an arm), were lost that way. The adapter now goes on q and v only (`--lora-modules`), a
fifth of the parameters and of the optimiser state.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import statistics
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from parts import FETCH_PART_MIB, PartsError, join, manifests, split

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.pool import LocalEvaluator
from cudal1.evaluate.result import reason_kind
from cudal1.exemplars import ExemplarDB
from cudal1.optimize import ReviewThresholds
from cudal1.policy import Prompt, chat_text, contrastive_prompt, parse_answer
from cudal1.tasks import load_suite
from cudal1.train.common import model_path
from cudal1.train.config import GRPOStageConfig, RunConfig
from cudal1.train.grpo import last_checkpoint, read_step_log, run_grpo, steps_saved
from cudal1.train.reward import ShapingConfig

ARMS = ("contrastive", "plain", "untrained")


def run_config(args: argparse.Namespace, arm: str) -> RunConfig:
    return RunConfig(
        out=args.state / arm / "run",
        model=args.model,
        device=args.device,
        eval_jobs=args.eval_jobs,
        eval_warm=args.eval_warm,
        seed=args.seed,
        report_to=[],
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def steps_done(state: Path, arm: str) -> int:
    return steps_saved(state / arm / "run" / "checkpoints")


def train_chunk(args: argparse.Namespace, arm: str, until: int, budget_s: float | None) -> int:
    """GRPO steps of `arm` (resumed from its last checkpoint) up to `until` or the next
    held-out evaluation, whichever comes first, or the first step past `budget_s`; the step
    count."""
    done = steps_done(args.state, arm)
    next_eval = (done // args.eval_every + 1) * args.eval_every  # chunks end on evaluations
    target = min(until, next_eval)
    if target <= done:
        return done
    stage = GRPOStageConfig(
        steps=args.total,  # the schedule spans the whole run; this call ends at `target`
        stop_after=target,
        num_generations=args.generations,
        prompts_per_step=args.prompts,
        max_completion_length=args.max_tokens,
        learning_rate=args.lr,
        temperature=args.temperature,
        exemplars=2 if arm == "contrastive" else 0,
        prompt_style="compact",
        lora=True,
        lora_rank=args.lora_rank,
        lora_modules=args.lora_modules,
        save_steps=args.steps,
        keep_checkpoints=1,  # what travels back after each call: adapter, optimiser, database
        time_budget_s=budget_s,
    )
    summary = run_grpo(
        run_config(args, arm),
        stage,
        EvalConfig(device=args.device),
        ShapingConfig(),
        ReviewThresholds(),
    )
    return summary["steps"]


def record_steps(args: argparse.Namespace, arm: str) -> None:
    """Append to the arm's metrics the steps its last checkpoint holds that it lacks, from the
    run's step log (written as each step ends, so a chunk cut short loses no saved step)."""
    path = args.state / arm / "metrics.jsonl"
    rows = read_jsonl(path)
    recorded = rows[-1]["step"] if rows else 0
    with path.open("a") as f:
        for m in read_step_log(args.state / arm / "run", steps_done(args.state, arm)):
            if m["step"] <= recorded:
                continue
            row = {
                "arm": arm,
                "step": m["step"],
                "temperature": args.temperature,
                "reward_mean": round(m["reward/shaped"], 4),
                "reward_std": round(m["reward/shaped_std"], 4),
                "parse": round(1 - m["reward/unparsed"], 4),
                "correct": round(m["reward/correct"], 4),
                "refused": round(m["reward/rejected"], 4),
                "refused_by_reason": m["refused"],
                "statuses": m["statuses"],
                "rollouts": sum(m["statuses"].values()),
                "mean_speedup_correct": round(m["reward/speedup"], 4),
                "eval_gpu_s": m["time/eval_device_s"],
                "reward_s": m["time/reward_s"],
                "wall_s": m["wall_s"],
                "update_skipped": m["update_skipped"],  # its gradient was not finite
            }
            f.write(json.dumps(row) + "\n")


def generate(
    model: Any,
    tok: Any,
    prompts: list[Prompt],
    temperature: float | None,
    n: int,
    max_tokens: int,
) -> list[list[str]]:
    """Continue each prefilled answer: one greedy answer a prompt (temperature None), or `n`
    sampled. All prompts in one batch, left-padded, as GRPO's rollouts are generated (not one
    call a prompt: 24 calls of up to 320 tokens an evaluation); each prompt is the text and
    tokens the rollouts start from (`chat_text`)."""
    import torch

    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    texts = [chat_text(tok, p) for p in prompts]
    enc = tok(texts, return_tensors="pt", padding=True).to(model.device)
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=temperature is not None,
            temperature=temperature,
            top_p=None,
            top_k=None,
            max_new_tokens=max_tokens,
            num_return_sequences=n,
            pad_token_id=tok.pad_token_id,
        )
    start = enc["input_ids"].shape[1]
    answers = [tok.decode(row[start:], skip_special_tokens=True) for row in out]
    return [answers[i * n : (i + 1) * n] for i in range(len(prompts))]  # prompt-major


def heldout(args: argparse.Namespace, arm: str, step: int, repeat: int = 0) -> None:
    """The held-out split, greedy (one answer per task) and sampled (`--samples` per task),
    with the arm's adapter at `step` (none for the untrained arm)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = run_config(args, arm)
    base = model_path(run)
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base).to(args.device)
    checkpoint = last_checkpoint(run.out / "checkpoints")
    if arm != "untrained" and checkpoint is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(checkpoint))
    model.eval()
    torch.manual_seed(args.seed * 1000 + step + repeat)
    tasks = load_suite("bundled").split("heldout")
    prompts = [contrastive_prompt(task, [], device=args.device, style="compact") for task in tasks]
    t0 = time.perf_counter()
    answers: list[tuple[str, str, str]] = []  # (mode, task id, answer)
    for mode, temperature, n in (("greedy", None, 1), ("sampled", args.temperature, args.samples)):
        batch = generate(model, tok, prompts, temperature, n, args.max_tokens)
        for task, prompt, texts in zip(tasks, prompts, batch, strict=True):
            answers += [(mode, task.id, prompt.prefill + text) for text in texts]
    generate_s = time.perf_counter() - t0
    del model
    by_id = {t.id: t for t in tasks}
    t0 = time.perf_counter()
    config = EvalConfig(device=args.device)
    with LocalEvaluator(config, jobs=args.eval_jobs, warm=args.eval_warm) as ev:
        parsed = [parse_answer(text) for _, _, text in answers]
        futures = [
            ev.submit(by_id[tid], p.code) if p.ok and p.code else None
            for (_, tid, _), p in zip(answers, parsed, strict=True)
        ]
        results = [f.result() if f is not None else None for f in futures]
    evaluate_s = time.perf_counter() - t0
    with (args.state / arm / "heldout_answers.jsonl").open("a") as f:  # each answer's verdict
        for (mode, tid, _), r in zip(answers, results, strict=True):
            row = {"arm": arm, "step": step, "repeat": repeat, "mode": mode, "task": tid}
            if r is None:
                row["status"] = "unparsed"
            else:
                row |= {"status": r.status, "speedup": r.speedup, "reasons": r.reasons[:1]}
                row["flags"] = r.flags
            f.write(json.dumps(row) + "\n")
    with (args.state / arm / "heldout.jsonl").open("a") as f:
        for mode in ("greedy", "sampled"):
            mine = [r for (m, _, _), r in zip(answers, results, strict=True) if m == mode]
            speedups = [r.speedup for r in mine if r is not None and r.ok and r.speedup]
            row = {
                "arm": arm,
                "step": step,
                "repeat": repeat,
                "mode": mode,
                "temperature": None if mode == "greedy" else args.temperature,
                "answers": len(mine),
                "parse": round(sum(r is not None for r in mine) / len(mine), 4),
                "correct": round(sum(r is not None and r.ok for r in mine) / len(mine), 4),
                "mean_speedup": round(statistics.fmean(speedups), 4) if speedups else None,
                "geomean_speedup": (
                    round(math.exp(statistics.fmean(math.log(s) for s in speedups)), 4)
                    if speedups
                    else None
                ),
                "refused": round(
                    sum(r is not None and r.status == "rejected" for r in mine) / len(mine), 4
                ),
                "refused_by_reason": dict(
                    Counter(
                        reason_kind(r.reasons[0] if r.reasons else "")
                        for r in mine
                        if r is not None and r.status == "rejected"
                    )
                ),
                "statuses": dict(Counter(r.status if r else "unparsed" for r in mine)),
                "generate_s": round(generate_s, 1),  # both modes' answers, then all evaluated
                "evaluate_s": round(evaluate_s, 1),
            }
            f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


def windows(last_step: int, eval_every: int) -> list[tuple[int, int]]:
    """Steps 1-5 (the exemplar database is still empty, so both arms see the same prompts), then
    one window a held-out evaluation: 6-25, 26-50, ..."""
    bounds = [(1, 5)]
    while bounds[-1][1] < last_step:
        lo = bounds[-1][1] + 1
        bounds.append((lo, -(-lo // eval_every) * eval_every))  # to the next evaluation
    return [(lo, min(hi, last_step)) for lo, hi in bounds if lo <= last_step]


def rate(rows: list[dict[str, Any]], key: str) -> float:
    """A fraction over all the rows' rollouts (each row a step)."""
    return sum(r[key] * r["rollouts"] for r in rows) / sum(r["rollouts"] for r in rows)


def optional_rate(rows: list[dict[str, Any]], key: str) -> str:
    """`rate` to three places, or "-" where a row lacks the measure (no database to read)."""
    return f"{rate(rows, key):.3f}" if rows and all(key in r for r in rows) else "-"


def paired_difference(
    a: list[dict[str, Any]], b: list[dict[str, Any]], key: str, draws: int = 10_000
) -> tuple[float, float, float]:
    """`a`'s rate minus `b`'s over the steps both have, and a 95 % bootstrap interval that
    resamples whole steps (a step's rollouts share prompts, so they are not independent)."""
    by_step = {r["step"]: r for r in b}
    pairs = [(r, by_step[r["step"]]) for r in a if r["step"] in by_step]
    if not pairs:
        return math.nan, math.nan, math.nan
    rng = random.Random(0)
    diffs = []
    for _ in range(draws):
        drawn = rng.choices(pairs, k=len(pairs))
        diffs.append(rate([x for x, _ in drawn], key) - rate([y for _, y in drawn], key))
    diffs.sort()
    point = rate([x for x, _ in pairs], key) - rate([y for _, y in pairs], key)
    return point, diffs[int(0.025 * draws)], diffs[int(0.975 * draws) - 1]


def with_originality(state: Path, arm: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step's row with `repeated`, the share of its rollouts whose program was already in
    the database (the step log's `reward/cached`: a contrastive prompt shows earlier programs,
    which the model can copy), and `new_correct`, the correct programs evaluated for the first
    time at that step, per rollout (the database keeps one row a program, with its step)."""
    run = state / arm / "run"
    db_path = run / "exemplars.db"
    if not db_path.is_file():
        return rows
    repeated = {r["step"]: r["reward/cached"] for r in read_step_log(run)}
    db = ExemplarDB(db_path)
    first_correct: Counter[int] = Counter()
    for task_id in db.task_ids():
        for e in db.exemplars(task_id, correct_only=True):
            if e.source == "grpo":
                first_correct[e.step + 1] += 1  # evaluated while `step` steps were done
    out = []
    for r in rows:
        if r["step"] in repeated:  # a row the step log lacks keeps its own measures ("-")
            new_correct = first_correct[r["step"]] / r["rollouts"]
            r = r | {"repeated": repeated[r["step"]], "new_correct": new_correct}
        out.append(r)
    return out


def training_table(metrics: dict[str, list[dict[str, Any]]], eval_every: int) -> list[str]:
    """Training rollouts by window: each arm's correct rate (with the share of repeated programs
    and the correct programs new to the database), parse and refused rates, and whether
    contrastive's lead over plain is larger than its step-to-step spread."""
    trained = [rows[-1]["step"] for arm, rows in metrics.items() if rows and arm != "untrained"]
    last = min(trained, default=0)
    lines = [
        "| steps | arm | rollouts | correct | repeated | new correct | parse "
        "| refused (by reason) | updates skipped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    compare = [
        "| steps | measure | contrastive - plain | 95 % interval (steps resampled) |",
        "|---|---|---|---|",
    ]
    for lo, hi in windows(last, eval_every):
        span = {
            arm: [r for r in metrics[arm] if lo <= r["step"] <= hi]
            for arm in ("contrastive", "plain")
        }
        for arm, rows in span.items():
            reasons: Counter[str] = Counter()
            for r in rows:
                reasons.update(r["refused_by_reason"])
            by_reason = ", ".join(f"{kind} {n}" for kind, n in sorted(reasons.items()))
            lines.append(
                f"| {lo}-{hi} | {arm} | {sum(r['rollouts'] for r in rows)} | "
                f"{rate(rows, 'correct'):.3f} | {optional_rate(rows, 'repeated')} | "
                f"{optional_rate(rows, 'new_correct')} | {rate(rows, 'parse'):.3f} | "
                f"{rate(rows, 'refused'):.3f}{f' ({by_reason})' if by_reason else ''} | "
                f"{sum(bool(r.get('update_skipped')) for r in rows)} |"  # rows before it: none
            )
        for key in ("correct", "new_correct"):
            if all(key in r for rows in span.values() for r in rows):
                point, low, high = paired_difference(span["contrastive"], span["plain"], key)
                compare.append(
                    f"| {lo}-{hi} | {key.replace('_', ' ')} | {point:+.3f} | "
                    f"{low:+.3f} to {high:+.3f} |"
                )
    return [*lines, "", *compare]


def report(state: Path, out: Path, eval_every: int) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    metrics = {arm: read_jsonl(state / arm / "metrics.jsonl") for arm in ARMS}
    for arm in ("contrastive", "plain"):
        metrics[arm] = with_originality(state, arm, metrics[arm])
    held = {arm: read_jsonl(state / arm / "heldout.jsonl") for arm in ARMS}
    color = {arm: f"C{i}" for i, arm in enumerate(ARMS)}  # one colour an arm in every panel
    fig, (left, *right) = plt.subplots(1, 3, figsize=(15, 4))
    for arm, rows in metrics.items():
        if rows:
            steps = [r["step"] for r in rows]
            rewards = [r["reward_mean"] for r in rows]
            left.plot(steps, rewards, color=color[arm], alpha=0.3)
            smooth = [statistics.fmean(rewards[max(0, i - 4) : i + 1]) for i in range(len(rows))]
            left.plot(steps, smooth, color=color[arm], label=f"{arm} (mean of the last 5 steps)")
    left.set(xlabel="GRPO step", ylabel="shaped reward (mean of the step's rollouts)")
    for ax, mode in zip(right, ("greedy", "sampled"), strict=True):
        start = [r["correct"] for r in held["untrained"] if r["mode"] == mode]
        if start:  # not trained: its repeats' mean and range, the start of both trained arms
            ax.axhline(
                statistics.fmean(start), color=color["untrained"], ls="--", label="untrained"
            )
            ax.axhspan(min(start), max(start), color=color["untrained"], alpha=0.15)
        for arm in ("contrastive", "plain"):
            rows = [r for r in held[arm] if r["mode"] == mode]
            if rows:
                steps = [0] + [r["step"] for r in rows]
                values = [statistics.fmean(start) if start else math.nan] + [
                    r["correct"] for r in rows
                ]
                style = "o-" if arm == "contrastive" else "x--"  # both seen where equal
                ax.plot(steps, values, style, color=color[arm], label=arm)
        ax.set(xlabel="GRPO step", ylabel=f"held-out correct rate ({mode})", xlim=(-2, None))
    for ax in (left, *right):
        if ax.get_legend_handles_labels()[0]:  # a panel with nothing yet has no legend
            ax.legend()
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)
    for name, rows in (("metrics.jsonl", metrics), ("heldout.jsonl", held)):
        (out / name).write_text("".join(json.dumps(r) + "\n" for arm in ARMS for r in rows[arm]))
    lines = ["# Learning curve", "", "## Held-out split", ""]
    lines += [
        "| arm | step | mode | parse | correct | geomean | refused |",
        "|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        for r in held[arm]:
            lines.append(
                f"| {arm} | {r['step']} | {r['mode']} | {r['parse']} | {r['correct']} | "
                f"{r['geomean_speedup']} | {r['refused']} |"
            )
    if metrics["contrastive"] and metrics["plain"]:
        lines += ["", "## Training rollouts", "", *training_table(metrics, eval_every)]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "chat_template.jinja", "vocab.json", "merges.txt"}  # fmt: skip
"""What a checkpoint holds of the tokenizer (3.4 MB): resuming loads it from the model, so a
checkpoint's copy is not packed."""


def pack(state: Path, arm: str, out: Path) -> list[Path]:
    """The arm's state as a gzipped tar in parts small enough to come back from the device;
    without the final model, which the next chunk writes again, or the tokenizer."""
    final, checkpoints = f"{arm}/run/final", f"{arm}/run/checkpoints/"

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        cut = info.name == final or info.name.startswith(final + "/")
        tokenizer = info.name.startswith(checkpoints) and Path(info.name).name in TOKENIZER_FILES
        return None if cut or tokenizer else info

    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / f"{arm}-state.tgz"
        with tarfile.open(archive, "w:gz") as tar:
            for path in [state / arm, *sorted((state / arm).rglob("*"))]:
                name = path.relative_to(state).as_posix()
                # a run cut short may still close its database, and SQLite then removes its
                # shared-memory file between the listing and the adding
                with contextlib.suppress(FileNotFoundError):
                    tar.add(path, arcname=name, recursive=False, filter=keep)
        return split(archive, out, FETCH_PART_MIB)


def unpack(parts_dir: Path, state: Path) -> None:
    """Every arm state packed under `parts_dir`, into `state`; an arm already there (a machine
    still warm from the call that packed it) keeps its own."""
    for manifest in manifests(parts_dir):
        with tempfile.TemporaryDirectory() as tmp:
            archive = join(manifest, Path(tmp) / "state.tgz")
            with tarfile.open(archive) as tar:
                arms = {m.name.split("/")[0] for m in tar.getmembers()}
                if len(arms) != 1 or not arms <= set(ARMS):
                    raise PartsError(f"{manifest.name} holds {sorted(arms)}, not one arm's state")
                arm = arms.pop()
                if (state / arm).exists():
                    print(f"{arm}: its state is already under {state}; the packed one is left")
                    continue
                tar.extractall(state, filter="data")
                print(f"{arm}: state unpacked at step {steps_done(state, arm)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--arm", choices=ARMS)
    parser.add_argument("--report", type=Path, help="Write the plot and summary here and stop.")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--steps", type=int, default=25, help="Steps this call, at most.")
    parser.add_argument(
        "--budget-s",
        type=float,
        help="Seconds from the arm's start, held-out evaluations included, after which no "
        "chunk starts; a chunk's training (its start-up not counted) stops at the first step "
        "past them, saved there, so a device call's limit ends it cleanly and the next call "
        "resumes it.",
    )
    parser.add_argument("--total", type=int, default=150)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--prompts", type=int, default=4, help="Prompts (tasks) per step.")
    parser.add_argument("--generations", type=int, default=8, help="Rollouts per prompt.")
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--lr", type=float, default=1e-4, help="LoRA's learning rate.")
    parser.add_argument(
        "--temperature", type=float, default=0.7, help="Rollouts and sampled held-out answers."
    )
    parser.add_argument("--lora-rank", type=int, default=8)
    parser.add_argument(
        "--lora-modules",
        default="q_proj,v_proj",
        help="`all-linear` or module names: q and v keep an arm's state small enough to commit.",
    )
    parser.add_argument("--samples", type=int, default=4, help="Sampled answers per task.")
    parser.add_argument("--repeats", type=int, default=1, help="Untrained arm: evaluations in all.")
    parser.add_argument(
        "--eval-jobs",
        type=int,
        default=4,
        help="Evaluations at once, per arm. A CUDA pool holds up to four CUDA contexts a job "
        "(a judge and a candidate worker running, one of each ready), 718 MiB each on the H100: "
        "three arms at 8 filled its 80 GB and a judge ran out of memory; at 4 they peaked at "
        "50.6 GB.",
    )
    parser.add_argument(
        "--eval-warm",
        type=int,
        help="Workers kept started for each role of an evaluation, per arm (default: one a "
        "job). With one a job, the evaluations of steps 26-50 spent 35-46 %% of their time "
        "waiting for fresh ones. Each started or running judge and candidate worker holds a "
        "CUDA context (718 MiB): two arms at 4 jobs and 8 warm hold 2 x (8 + 4) x 2 = 48, as "
        "many as three arms at 4 jobs, 3 x (4 + 4) x 2, which peaked at 50.6 GB.",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--unpack", type=Path, help="First unpack the arm states packed (by --pack) here."
    )
    parser.add_argument(
        "--pack", type=Path, help="Last pack the arm's state here, in parts that come back."
    )
    parser.add_argument(
        "--run",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--no-run: only unpack and pack the state.",
    )
    args = parser.parse_args()
    if args.unpack:
        try:
            unpack(args.unpack, args.state)
        except PartsError as e:
            print(f"--unpack {args.unpack}: {e}", file=sys.stderr)
            return 1
    if args.report:
        return report(args.state, args.report, args.eval_every)
    if args.arm is None:
        if args.unpack:
            return 0  # only unpacked: the arms then run side by side from the state
        parser.error("give --arm, --report or --unpack")
    (args.state / args.arm).mkdir(parents=True, exist_ok=True)
    try:
        if args.run:
            run_arm(args)
    finally:  # a call cut at its limit still brings its saved state back
        if args.pack:
            written = pack(args.state, args.arm, args.pack)
            print(f"{args.arm}: state in {len(written)} parts under {args.pack}", flush=True)
    return 0


def evaluation_due(args: argparse.Namespace, arm: str) -> int | None:
    """The arm's saved step if it ends a stretch of `--eval-every` (or the run) and its held-out
    evaluation is not recorded: also one a call's limit cut short, which the next call makes
    before training on. (The sampled row is written last.)"""
    done = steps_done(args.state, arm)
    recorded = {
        r["step"] for r in read_jsonl(args.state / arm / "heldout.jsonl") if r["mode"] == "sampled"
    }
    ends_stretch = done > 0 and (done % args.eval_every == 0 or done == args.total)
    return done if ends_stretch and done not in recorded else None


def run_arm(args: argparse.Namespace) -> None:
    """The untrained arm's held-out evaluations, or up to `--steps` steps of a training arm,
    with the held-out evaluation at each multiple of `--eval-every`, until `--budget-s`."""
    if args.arm == "untrained":  # resumed too: the repeats already recorded count
        recorded = {r["repeat"] for r in read_jsonl(args.state / "untrained" / "heldout.jsonl")}
        for repeat in range(len(recorded), args.repeats):
            heldout(args, "untrained", 0, repeat)
        return
    deadline = None if args.budget_s is None else time.monotonic() + args.budget_s
    before = steps_done(args.state, args.arm)
    until = min(args.total, before + args.steps)
    while True:  # chunks, each ending on a held-out evaluation, while the budget lasts
        missed = evaluation_due(args, args.arm)  # also one a call's limit cut short
        if missed is not None:
            heldout(args, args.arm, missed)
        done = steps_done(args.state, args.arm)
        left = None if deadline is None else deadline - time.monotonic()
        if done >= until or (left is not None and left <= 0):
            break
        try:
            after = train_chunk(args, args.arm, until, left)
        finally:  # an interrupted chunk still records the steps its checkpoint saved
            record_steps(args, args.arm)
        if after == done:
            break
    after = steps_done(args.state, args.arm)
    print(f"{args.arm}: steps {before} -> {after}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
