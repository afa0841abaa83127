"""What every training stage shares: picking tasks, the database, the evaluator, the model."""

from __future__ import annotations

from pathlib import Path

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.service import Evaluator, make_evaluator
from cudal1.exemplars import ExemplarDB
from cudal1.tasks import Task, load_suite
from cudal1.train.config import RunConfig
from cudal1.train.tiny import resolve_model


def select_tasks(run: RunConfig) -> list[Task]:
    """The run's tasks: its split of the suite (the training split by default), or the ids given."""
    suite = load_suite(run.suite)
    tasks = list(suite.tasks) if run.split == "all" else suite.split(run.split)  # type: ignore[arg-type]
    if run.tasks:
        known = {t.id: t for t in suite.tasks}
        missing = [t for t in run.tasks if t not in known]
        if missing:
            raise Cudal1Error(f"unknown task(s) {missing} in suite {run.suite}")
        held = [t for t in run.tasks if known[t].split == "heldout" and run.split == "train"]
        if held:
            raise Cudal1Error(
                f'task(s) {held} are held out: set run.split = "all" to train on them'
            )
        tasks = [known[t] for t in run.tasks]
    if not tasks:
        raise Cudal1Error(f"no tasks to train on in {run.suite} split {run.split}")
    return tasks


def open_db(run: RunConfig) -> ExemplarDB:
    return ExemplarDB(run.out / "exemplars.db")


def evaluator_for(run: RunConfig, config: EvalConfig) -> Evaluator:
    if run.eval_backend == "http":
        try:
            from cudal1.client import ServiceEvaluator, read_token
        except ImportError as e:
            raise Cudal1Error(
                f"eval_backend http needs {e.name}: pip install 'cudal1[client]'"
            ) from None

        assert run.eval_url is not None and run.eval_token_file is not None  # RunConfig checks
        return ServiceEvaluator(
            run.eval_url, read_token(run.eval_token_file), config, jobs=run.eval_jobs
        )
    return make_evaluator(
        run.eval_backend,
        config,
        jobs=run.eval_jobs,
        address=run.ray_address,
        builders=run.ray_builders,
    )


def model_path(run: RunConfig) -> str:
    return resolve_model(run.model, Path(run.out) / "models")
