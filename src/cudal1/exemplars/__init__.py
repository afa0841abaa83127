"""Exemplars: the per-task database of evaluated candidates and the samplers that pick which of
them a contrastive prompt shows."""

from cudal1.exemplars.db import Exemplar, ExemplarDB, HackCase
from cudal1.exemplars.samplers import (
    SAMPLERS,
    BucketSampler,
    IslandSampler,
    Sampler,
    UniformSampler,
    make_sampler,
)

__all__ = [
    "SAMPLERS",
    "BucketSampler",
    "Exemplar",
    "ExemplarDB",
    "HackCase",
    "IslandSampler",
    "Sampler",
    "UniformSampler",
    "make_sampler",
]
