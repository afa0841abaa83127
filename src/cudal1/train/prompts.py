"""Prompts built when drawn: a stream of training items whose prompts show each task's *current*
exemplars.

The stream visits the tasks in a shuffled order, epoch after epoch, and builds each item at the
moment the trainer pulls it, from the database as it is then, which by then holds the rollouts
of earlier steps. TRL repeats each pulled item G times to form a GRPO group, so every member of
a group sees the same prompt and exemplars. With `exemplars=False` the prompt shows no earlier
candidates: the plain-GRPO ablation.

`style="compact"` (for small models, `policy.prompts`) ends the prompt with the assistant's
prefilled start of the code, and the item's `prefill` column reaches the reward, which puts it
back in front of the completion before parsing.

Given the model's tokenizer, the stream renders every prompt as text, the way the model is to
continue it (`policy.chat_text`): a prefilled one up to its open prefill. TRL renders a
conversational prompt with a new assistant turn after its last message, so a model given the
prefill as a message would answer the closed prefill afresh instead of continuing it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from cudal1.exemplars import Exemplar, ExemplarDB, IslandSampler, Sampler
from cudal1.policy import chat_text, contrastive_prompt
from cudal1.policy.prompts import ChatTokenizer
from cudal1.tasks import Task


def draw_exemplars(
    db: ExemplarDB, sampler: Sampler, task: Task, rng: random.Random
) -> list[Exemplar]:
    """The earlier candidates one prompt shows, from the task's correct rows as they are now
    (the island sampler first gives new rows their island)."""
    candidates = db.exemplars(task.id, correct_only=True)
    if isinstance(sampler, IslandSampler):
        sampler.assign(db, candidates, rng)
    return sampler.sample(candidates, rng)


class ContrastivePrompts:
    def __init__(
        self,
        tasks: list[Task],
        db: ExemplarDB,
        sampler: Sampler,
        *,
        device: str = "cuda",
        exemplars: bool = True,
        low_precision: bool = False,
        seed: int = 0,
        style: str = "paper",
        tokenizer: ChatTokenizer | None = None,
    ) -> None:
        """With `tokenizer`, prompts are text (`chat_text`); without, message lists (no prefill)."""
        self.tasks, self.db, self.sampler, self.style = tasks, db, sampler, style
        self.tokenizer = tokenizer
        self.device, self.exemplars, self.low_precision, self.seed = (
            device,
            exemplars,
            low_precision,
            seed,
        )
        self.draws: Counter[str] = Counter()

    def build(self, task: Task) -> dict[str, Any]:
        """One item for `task`, from the database as it is now."""
        draw = self.draws[task.id]
        self.draws[task.id] += 1
        rng = random.Random(f"{self.seed}:{task.id}:{draw}")
        shown = draw_exemplars(self.db, self.sampler, task, rng) if self.exemplars else []
        prompt = contrastive_prompt(
            task, shown, device=self.device, low_precision=self.low_precision, style=self.style
        )
        if self.tokenizer is None and prompt.prefill:
            raise ValueError(f"prompt style {self.style!r} prefills the answer: give a tokenizer")
        return {
            "prompt": chat_text(self.tokenizer, prompt) if self.tokenizer else prompt.messages,
            "task_id": task.id,
            "exemplar_ids": json.dumps(prompt.exemplar_ids),
            "prefill": prompt.prefill,
        }

    def stream(self) -> Iterator[dict[str, Any]]:
        """Endless: each epoch visits every task once, in a seeded shuffled order."""
        epoch = 0
        while True:
            order = list(self.tasks)
            random.Random(f"{self.seed}:epoch:{epoch}").shuffle(order)
            for task in order:
                yield self.build(task)
            epoch += 1

    def dataset(self) -> Any:
        """A `datasets.IterableDataset` over `stream()`, as TRL's trainers take it."""
        from datasets import Features, IterableDataset, List, Value

        chat = List({"role": Value("string"), "content": Value("string")})
        features = Features(
            {
                "prompt": Value("string") if self.tokenizer is not None else chat,
                "task_id": Value("string"),
                "exemplar_ids": Value("string"),
                "prefill": Value("string"),
            }
        )
        return IterableDataset.from_generator(
            _generate, gen_kwargs={"source": self}, features=features
        )


def _generate(source: ContrastivePrompts) -> Iterator[dict[str, Any]]:
    yield from source.stream()
