"""What every training stage shares: picking tasks, the database, the evaluator, the model."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.config import default_build_root
from cudal1.evaluate.service import Evaluator, make_evaluator
from cudal1.exemplars import ExemplarDB
from cudal1.tasks import Task, load_suite
from cudal1.train.config import RunConfig
from cudal1.train.tiny import resolve_model

EMBEDDED = "embedded"


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
        warm=run.eval_warm,
    )


def model_path(run: RunConfig) -> str:
    if run.model == EMBEDDED or run.model.endswith(".gguf"):
        return str(materialize_gguf(None if run.model == EMBEDDED else run.model))
    return resolve_model(run.model, Path(run.out) / "models")


def materialize_gguf(path: str | None) -> Path:
    """A GGUF model (None: the embedded SmolLM2) as a model directory the trainers load:
    transformers reads the GGUF (dequantising it) once, and the directory is kept in this
    machine's cache, outside any run directory."""
    from cudal1.policy.clients import resolve_local_model

    directory, gguf = resolve_local_model(path)
    assert gguf is not None
    target = default_build_root().parent / "models" / Path(gguf).stem
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    # each process writes its own partial copy: runs started side by side convert at once
    partial = Path(tempfile.mkdtemp(prefix=target.name + ".partial-", dir=target.parent))
    AutoTokenizer.from_pretrained(directory, gguf_file=gguf).save_pretrained(partial)
    loaded = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf)
    # transformers will not save a model it read from GGUF: the same weights in a plain one
    config = loaded.config
    config.__dict__.pop("quantization_config", None)
    plain = AutoModelForCausalLM.from_config(config, dtype=loaded.dtype)
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(partial)
    return publish_dir(partial, target)


def publish_dir(partial: Path, target: Path) -> Path:
    """Move a fully written directory to `target` in one rename, so a half-written one is never
    taken for a model; when another process published it first, its copy stays and this one
    goes."""
    try:
        partial.rename(target)
    except OSError:
        if not target.is_dir():
            raise
        shutil.rmtree(partial)
    return target
