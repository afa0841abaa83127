"""Optimize: the contrastive search loop with fixed model weights (`cudal1 optimize`)."""

from cudal1.optimize.loop import OptimizeConfig, Optimizer, OptimizeSummary, RoundSummary
from cudal1.optimize.outputs import write_outputs
from cudal1.optimize.review import Reviewer, ReviewThresholds, review

__all__ = [
    "OptimizeConfig",
    "OptimizeSummary",
    "Optimizer",
    "ReviewThresholds",
    "Reviewer",
    "RoundSummary",
    "review",
    "write_outputs",
]
