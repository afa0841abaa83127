"""The evaluator: the trusted judge of candidates, and the reward every other box learns from.

`evaluate(task, candidate_source, config) -> EvalResult` is the one entry point (`evaluator.py`
reads top to bottom as the whole procedure). `judge.py` is the trusted process;
`candidate_worker.py` is the only module that runs candidate code.
"""

from cudal1.evaluate.config import EvalConfig
from cudal1.evaluate.evaluator import evaluate
from cudal1.evaluate.result import STATUSES, EvalResult, Status

__all__ = ["STATUSES", "EvalConfig", "EvalResult", "Status", "evaluate"]
