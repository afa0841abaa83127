"""The three-stage recipe in miniature on one machine: stage 1 data from a replay teacher (honest
corpus candidates as the teacher's answers, evaluated for real), SFT of the built-in tiny model on
it, then stage-3 GRPO from that checkpoint with real evaluation of every rollout.

    PYTHONPATH=src:. python3 benchmarks/train_pipeline.py --out DIR [--device cuda] [--steps 4]

A randomly initialised model never writes a parseable answer, so GRPO from it would evaluate
nothing; SFT on the teacher's answers first is what the paper does too. A tiny model memorises
rather than generalises: trained on stage 1's one-shot prompts only, it answers GRPO's longer
contrastive prompts (exemplars shown) with an end-of-turn at once. So the SFT set also pairs
each answer with contrastive prompts drawn from the database GRPO starts from. The figures (steps/s,
seconds in generation, evaluation and optimisation, evaluation GPU-seconds, peak memory) are
printed from DIR/grpo.json at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HONEST = Path(__file__).resolve().parents[1] / "tests" / "honest" / "candidates"
TORCH_GELU = (
    "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
    "    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n"
)
TASK = "L1_20"
TEACHER = {  # the teacher's answers for TASK, per device: a PyTorch rewrite and own kernels
    "cuda": [TORCH_GELU, (HONEST / "triton_gelu_erf.py").read_text()],
    "cpu": [TORCH_GELU, (HONEST / "gelu_cpp_erf.py").read_text()],
}


def answer(code: str) -> str:
    return (
        "## Performance analysis\nGELU is memory-bound: one read and one write per element.\n\n"
        "## Algorithm design\nOne pass over the data, erf-based GELU.\n\n"
        f"## Code\n```python\n{code}```\n"
    )


def contrastive_rows(out: Path, device: str, draws: int) -> list[dict]:
    """Each stage-1 answer under `draws` contrastive prompts, built from the run's database the
    way `cudal1 train grpo` builds them (same sampler and exemplar count)."""
    from cudal1.exemplars import ExemplarDB
    from cudal1.tasks import resolve_task
    from cudal1.train.config import GRPOStageConfig
    from cudal1.train.prompts import ContrastivePrompts

    task = resolve_task(TASK)
    db = ExemplarDB(out / "exemplars.db")
    sampler = GRPOStageConfig().exemplar_sampler()
    prompts = ContrastivePrompts([task], db, sampler, device=device, seed=1)
    answers = [json.loads(line)["messages"][-1] for line in (out / "augment.jsonl").open()]
    return [
        {"messages": [*prompts.build(task)["prompt"], a]} for a in answers for _ in range(draws)
    ]


def cli(*args: str) -> None:
    cmd = [sys.executable, "-m", "cudal1", "train", *args]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--sft-epochs", type=float, default=40)
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    replay = out / "teacher.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"response": answer(c), "task": TASK}) + "\n" for c in TEACHER[args.device]
        )
    )
    common = ["--device", args.device, "--out", str(out), "--set", f'run.tasks=["{TASK}"]']
    t0 = time.perf_counter()
    cli("augment", *common, "--teacher", f"replay:{replay}",
        "--set", "augment.attempts=2", "--set", "augment.keep=2")  # fmt: skip
    sft_data = out / "sft-data.jsonl"
    rows = [json.loads(line) for line in (out / "augment.jsonl").open()]
    rows += contrastive_rows(out, args.device, draws=4)
    sft_data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli("sft", *common, "--set", f"sft.dataset={json.dumps(str(sft_data))}",
        "--set", f"sft.epochs={args.sft_epochs}",
        "--set", "sft.learning_rate=0.003", "--set", "sft.max_length=4096")  # fmt: skip
    cli("grpo", *common, "--model", str(out / "sft"), "--steps", str(args.steps),
        "--set", "grpo.num_generations=4", "--set", "grpo.max_completion_length=800",
        "--set", "grpo.temperature=0.7", "--set", "grpo.learning_rate=1e-5",
        "--set", "grpo.save_steps=2")  # fmt: skip
    grpo = json.loads((out / "grpo.json").read_text())
    sft = json.loads((out / "sft.json").read_text())
    print(f"\npipeline wall {time.perf_counter() - t0:.0f} s")
    print(
        f"SFT: {sft['examples']} examples, {sft['steps']} steps, loss {sft['losses'][0]:.3f} -> {sft['losses'][-1]:.3f}"
    )
    print("GRPO timing:", json.dumps(grpo["timing"]))
    for i, m in enumerate(grpo["rewards"]):
        keys = (
            "reward/correct",
            "reward/unparsed",
            "reward/compile_error",
            "reward/speedup",
            "time/eval_device_s",
        )
        print(f"  reward call {i}:", {k.split("/")[1]: round(m[k], 3) for k in keys})
    print("exemplars in database:", grpo["exemplars"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
