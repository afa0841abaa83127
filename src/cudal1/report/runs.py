"""The rows a report is made of, from either kind of run directory.

A bench run (`cudal1 bench --out RUN_DIR`) streams its rows to `RUN_DIR/results.jsonl`. An
optimize run (`cudal1 optimize --out RUN_DIR`) keeps its state in `RUN_DIR/exemplars.db`: every
answer the model gave, evaluated or not. Its rows are built here in the bench row's form, one per
answer, numbered as samples of their task in the order they were written (so the report counts
each task by its best answer, and gives each answer alone), with `round` set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.report.summary import load_rows
from cudal1.report.techniques import tag_techniques
from cudal1.tasks import Task, load_suite, load_task_file

RESULTS = "results.jsonl"
EXEMPLARS = "exemplars.db"
UNPARSED = "unparsed: no usable ModelNew in the answer"


def run_rows(run_dir: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """A bench run's rows, or an optimize run's answers as rows."""
    if (run_dir / RESULTS).is_file():
        return load_rows(run_dir / RESULTS)
    if (run_dir / EXEMPLARS).is_file():
        return optimize_rows(run_dir / EXEMPLARS, suite_tasks(meta.get("suite")))
    raise Cudal1Error(
        f"{run_dir} holds neither {RESULTS} nor {EXEMPLARS}: give the --out directory of "
        "`cudal1 bench` or `cudal1 optimize`"
    )


def suite_tasks(suite: str | None) -> dict[str, Task]:
    """The tasks of the run's suite (a suite spec or one task file); a suite that no longer
    loads gives none, and the report only loses levels and references."""
    if not suite:
        return {}
    try:
        if suite.endswith(".py"):
            task = load_task_file(suite)
            return {task.id: task}
        return {t.id: t for t in load_suite(suite, validate=False).tasks}
    except (Cudal1Error, OSError, ValueError):
        return {}


def optimize_rows(db_path: Path, tasks: dict[str, Task]) -> list[dict[str, Any]]:
    from cudal1.exemplars import ExemplarDB

    db = ExemplarDB(db_path)
    rows = []
    for task_id in db.task_ids():
        task = tasks.get(task_id)
        answers = [e for e in db.exemplars(task_id) if not e.is_reference]
        for sample, e in enumerate(answers):
            result = e.result
            rows.append(
                {
                    "key": f"{task_id}#{e.id}",
                    "task_id": task_id,
                    "sample": sample,
                    "round": e.step,
                    "origin": f"{db_path}#{e.id}",
                    "level": task.level if task else _level(task_id),
                    "name": task.name if task else None,
                    "split": task.split if task else None,
                    "error": None if result else UNPARSED,
                    "claimed": {},
                    "result": result,
                    "techniques": tag_techniques(e.code, result.get("flags")) if result else [],
                    "code": e.code if result else None,
                    "model": e.model,
                }
            )
    return rows


def _level(task_id: str) -> int | None:
    """`L2_8` -> 2, for a task the run's suite no longer has."""
    head = task_id.split("_", 1)[0]
    return int(head[1:]) if head.startswith("L") and head[1:].isdigit() else None


def read_meta(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    return json.loads(path.read_text()) if path.is_file() else {}
