"""Choosing which earlier candidates a prompt shows (CUDA-L1 §3, contrastive exemplars).

- `BucketSampler` (the paper's): bin a task's correct candidates by score into equal-width
  buckets, draw N distinct buckets with probability softmax((bucket mean - mean of bucket
  means) / tau), then one candidate uniformly from each chosen bucket. High-scoring buckets are
  favoured, but lower ones keep appearing, which is what lets the model contrast fast and slow.
- `IslandSampler` (the ablation alternative, after FunSearch): candidates live on islands (a
  child on its parent's island); a prompt draws from one island; every `reset_every` draws, the
  weaker half of the islands is emptied and re-seeded with the best of a stronger one.
- `UniformSampler`: N distinct correct candidates uniformly (the paper's baseline).

All are deterministic given the `random.Random` passed in. With fewer distinct correct
candidates than N, every one of them is returned (the reference alone when nothing else is).
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Protocol

from cudal1.errors import Cudal1Error
from cudal1.exemplars.db import Exemplar, ExemplarDB


class Sampler(Protocol):
    n: int

    def sample(self, candidates: list[Exemplar], rng: random.Random) -> list[Exemplar]: ...


def score(e: Exemplar) -> float:
    return float(e.speedup or 0.0)


@dataclass
class BucketSampler:
    n: int = 2
    tau: float = 1.0
    """Softmax temperature over centred bucket means (in units of speedup)."""
    buckets: int = 5

    def __post_init__(self) -> None:
        if self.n < 1 or self.buckets < 1 or self.tau <= 0:
            raise Cudal1Error("bucket sampler needs n >= 1, buckets >= 1 and tau > 0")

    def bins(self, candidates: list[Exemplar]) -> list[list[Exemplar]]:
        """Non-empty equal-width score buckets, lowest first."""
        lo, hi = min(map(score, candidates)), max(map(score, candidates))
        if hi == lo:
            return [candidates]
        width = (hi - lo) / self.buckets
        out: list[list[Exemplar]] = [[] for _ in range(self.buckets)]
        for e in candidates:
            out[min(self.buckets - 1, int((score(e) - lo) / width))].append(e)
        return [b for b in out if b]

    def bucket_probabilities(self, bins: list[list[Exemplar]]) -> list[float]:
        means = [statistics.fmean(map(score, b)) for b in bins]
        centre = statistics.fmean(means)
        weights = [math.exp((m - centre) / self.tau) for m in means]
        total = sum(weights)
        return [w / total for w in weights]

    def sample(self, candidates: list[Exemplar], rng: random.Random) -> list[Exemplar]:
        candidates = _distinct_correct(candidates)
        if len(candidates) <= self.n:
            return sorted(candidates, key=score)
        bins = self.bins(candidates)
        if len(bins) < self.n:  # too few distinct scores: fall back to distinct candidates
            return sorted(rng.sample(candidates, self.n), key=score)
        probs = self.bucket_probabilities(bins)
        chosen: list[int] = []
        for _ in range(self.n):
            left = [i for i in range(len(bins)) if i not in chosen]
            weights = [probs[i] for i in left]
            chosen.append(rng.choices(left, weights=weights)[0])
        return sorted((rng.choice(bins[i]) for i in chosen), key=score)


@dataclass
class UniformSampler:
    n: int = 2

    def sample(self, candidates: list[Exemplar], rng: random.Random) -> list[Exemplar]:
        candidates = _distinct_correct(candidates)
        if len(candidates) <= self.n:
            return sorted(candidates, key=score)
        return sorted(rng.sample(candidates, self.n), key=score)


@dataclass
class IslandSampler:
    n: int = 2
    islands: int = 4
    reset_every: int = 20
    tau: float = 1.0

    def __post_init__(self) -> None:
        self.draws = 0

    def assign(self, db: ExemplarDB, candidates: list[Exemplar], rng: random.Random) -> None:
        """Give islandless candidates an island: their first parent's, or a random one."""
        by_id = {e.id: e for e in candidates}
        for e in sorted(candidates, key=lambda e: e.id):
            if e.island is not None:
                continue
            parent = next((by_id[p] for p in e.parents if p in by_id), None)
            island = (
                parent.island
                if parent and parent.island is not None
                else rng.randrange(self.islands)
            )
            if e.is_reference:
                island = -1  # the reference belongs to every island
            db.set_island([e.id], island)
            e.island = island

    def sample(self, candidates: list[Exemplar], rng: random.Random) -> list[Exemplar]:
        candidates = _distinct_correct(candidates)
        populated = sorted({e.island for e in candidates if e.island not in (None, -1)})
        self.draws += 1
        if not populated:
            return UniformSampler(self.n).sample(candidates, rng)
        island = rng.choice(populated)
        members = [e for e in candidates if e.island in (island, -1)]
        if len(members) <= self.n:
            return sorted(members, key=score)
        weights = [math.exp((score(e) - max(map(score, members))) / self.tau) for e in members]
        picked: list[Exemplar] = []
        while len(picked) < self.n:
            e = rng.choices(members, weights=weights)[0]
            if e not in picked:
                picked.append(e)
        return sorted(picked, key=score)

    def maybe_reset(self, db: ExemplarDB, candidates: list[Exemplar], rng: random.Random) -> bool:
        """Every `reset_every` draws: empty the weaker half of the islands, seeding each with the
        best candidate of a random stronger island (FunSearch's reset)."""
        if self.draws == 0 or self.draws % self.reset_every:
            return False
        correct = _distinct_correct(candidates)
        best = {
            i: max((e for e in correct if e.island == i), key=score, default=None)
            for i in range(self.islands)
        }
        ranked = sorted(range(self.islands), key=lambda i: score(best[i]) if best[i] else -1.0)
        weak, strong = ranked[: self.islands // 2], ranked[self.islands // 2 :]
        for i in weak:
            db.set_island([e.id for e in candidates if e.island == i], None)
            donor = best[rng.choice(strong)]
            if donor is not None:
                db.set_island([donor.id], i)  # the donor moves: the strong island keeps its others
        return True


def _distinct_correct(candidates: list[Exemplar]) -> list[Exemplar]:
    seen: set[str] = set()
    out = []
    for e in candidates:
        if e.correct and e.code_hash not in seen:
            seen.add(e.code_hash)
            out.append(e)
    return out


SAMPLERS = ("bucket", "island", "uniform")


def make_sampler(name: str, n: int = 2, tau: float = 1.0) -> Sampler:
    if name == "bucket":
        return BucketSampler(n=n, tau=tau)
    if name == "island":
        return IslandSampler(n=n, tau=tau)
    if name == "uniform":
        return UniformSampler(n=n)
    raise Cudal1Error(f"unknown sampler {name!r}: choose one of {', '.join(SAMPLERS)}")
