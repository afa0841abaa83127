"""Prompts built when drawn: a dataset whose items show each task's *current* exemplars.

TRL's GRPO sampler draws every index G times in a row (one group); the G draws of one group get
the same prompt and exemplars (the item is cached per group), and the next group of the same task
is built afresh from the database, which by then holds the earlier rollouts. With `exemplars =
False` the prompt shows no earlier candidates: the plain-GRPO ablation.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from torch.utils.data import Dataset

from cudal1.exemplars import ExemplarDB, IslandSampler, Sampler
from cudal1.policy import contrastive_prompt
from cudal1.tasks import Task


class ContrastivePromptDataset(Dataset):
    def __init__(
        self,
        tasks: list[Task],
        db: ExemplarDB,
        sampler: Sampler,
        *,
        group_size: int,
        device: str = "cuda",
        exemplars: bool = True,
        low_precision: bool = False,
        seed: int = 0,
    ) -> None:
        self.tasks, self.db, self.sampler = tasks, db, sampler
        self.group_size, self.device, self.exemplars = group_size, device, exemplars
        self.low_precision, self.seed = low_precision, seed
        self.draws: Counter[int] = Counter()
        self.cache: dict[int, tuple[int, dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> dict[str, Any]:
        group = self.draws[index] // self.group_size
        self.draws[index] += 1
        cached = self.cache.get(index)
        if cached is not None and cached[0] == group:
            return cached[1]
        item = self.build(index, group)
        self.cache[index] = (group, item)
        return item

    def build(self, index: int, group: int) -> dict[str, Any]:
        task = self.tasks[index]
        rng = random.Random(f"{self.seed}:{task.id}:{group}")
        shown = []
        if self.exemplars:
            candidates = self.db.exemplars(task.id, correct_only=True)
            if isinstance(self.sampler, IslandSampler):
                self.sampler.assign(self.db, candidates, rng)
            shown = self.sampler.sample(candidates, rng)
        prompt = contrastive_prompt(
            task, shown, device=self.device, low_precision=self.low_precision
        )
        return {
            "prompt": prompt.messages,
            "task_id": task.id,
            "exemplar_ids": json.dumps(prompt.exemplar_ids),
        }
