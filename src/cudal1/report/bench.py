"""`cudal1 bench`: every (task, solution) pair of a suite through the evaluator, streamed to
`RUN_DIR/results.jsonl` as each finishes, so an interrupted run resumes where it stopped, under
the same settings and the same code only (`check_run_dir`): a run's rows come from one evaluator.

Solutions come from a CUDA-L1 release file (JSON lines; `custom_code` null or "None" means no
submission; the paper's own scores are kept to audit them), a directory of candidate files
named by task id (`L1_3.py`), a KernelBench run directory (`runs/NAME` of KernelBench's
generation scripts: `level_{L}_problem_{P}_sample_{S}_kernel.py`, several samples per problem,
each evaluated and reported by sample and best of k), or an exemplar database's best per task
(`db:PATH`). A bad entry (malformed line, unknown task, missing code) becomes a row with an
`error`, never an abort.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalConfig
from cudal1.evaluate.baselines import BaselineJudges, measure_task, roofline_ms
from cudal1.evaluate.service import Evaluator, make_evaluator
from cudal1.report.techniques import tag_techniques
from cudal1.tasks import Suite, Task
from cudal1.version import code_version

PAPER_SCORES = (
    "score_default",
    "score_torch_compile_default",
    "score_torch_compile_reduce_overhead",
    "score_cuda_graph",
)
"""CUDA-L1's reported speedups against eager, compile, compile reduce-overhead, CUDA graphs."""
BASELINE_OF_SCORE = dict(
    zip(PAPER_SCORES, ("eager", "compile", "compile-ro", "cudagraph"), strict=True)
)
KERNELBENCH_SAMPLE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
"""A file of a KernelBench run directory: problem P of level L is task `L{L}_{P}`."""


@dataclass
class Solution:
    task_id: str | None
    code: str | None
    origin: str
    error: str | None = None
    claimed: dict[str, float] = field(default_factory=dict)
    """The source's own reported speedups (CUDA-L1's scores), by baseline."""
    sample: int | None = None
    """The sample number when the source holds several solutions per task (KernelBench runs)."""

    @property
    def key(self) -> str:
        """Unique per entry of a run: what `results.jsonl` rows are resumed by."""
        base = self.task_id or self.origin
        return base if self.sample is None else f"{base}#sample{self.sample}"


def read_solutions(source: str) -> list[Solution]:
    """Solutions from a CUDA-L1 JSON-lines file, a directory of TASK_ID.py files, a KernelBench
    run directory, or db:PATH."""
    if source.startswith("db:"):
        from cudal1.exemplars import ExemplarDB

        db = ExemplarDB(source.removeprefix("db:"))
        out = []
        for task_id in db.task_ids():
            best = db.best(task_id)
            if best is not None and not best.is_reference:
                out.append(Solution(task_id, best.code, f"{source}#{best.id}"))
        return out
    path = Path(source)
    if path.is_dir():
        return _read_directory(path)
    if not path.is_file():
        raise Cudal1Error(
            f"solutions {source!r} not found: give a CUDA-L1 .jsonl file, a directory of "
            "TASK_ID.py files, a KernelBench run directory, or db:PATH"
        )
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        origin = f"{path}:{lineno}"
        try:
            row = json.loads(line)
            task_id = f"L{int(row['level_id'])}_{int(row['task_id'])}"
        except (ValueError, KeyError, TypeError) as e:
            out.append(Solution(None, None, origin, f"malformed entry ({type(e).__name__}: {e})"))
            continue
        code = row.get("custom_code")
        claimed = {
            BASELINE_OF_SCORE[k]: v for k in PAPER_SCORES if (v := _score(row.get(k))) is not None
        }
        if code in (None, "", "None"):
            out.append(Solution(task_id, None, origin, "no submission", claimed))
        else:
            out.append(Solution(task_id, str(code), origin, None, claimed))
    return out


def _read_directory(path: Path) -> list[Solution]:
    """TASK_ID.py files, or a KernelBench run directory (`level_1_problem_3_sample_0_kernel.py`:
    task L1_3, sample 0). One directory holds one layout: a mix would be ambiguous."""
    files = sorted(path.glob("*.py"))
    samples = [(p, m) for p in files if (m := KERNELBENCH_SAMPLE.match(p.name))]
    if not samples:
        if not files:
            raise Cudal1Error(
                f"solutions directory {path} holds no .py files: give TASK_ID.py files (L1_3.py) "
                "or a KernelBench run directory (level_1_problem_3_sample_0_kernel.py)"
            )
        return [Solution(p.stem, _read_code(p), str(p)) for p in files]
    others = [p.name for p in files if not KERNELBENCH_SAMPLE.match(p.name)]
    if others:
        raise Cudal1Error(
            f"{path / others[0]}: a KernelBench run directory holds only files named "
            "level_L_problem_P_sample_S_kernel.py; move the other .py files elsewhere"
        )
    out = [
        Solution(
            f"L{int(m.group(1))}_{int(m.group(2))}", _read_code(p), str(p), sample=int(m.group(3))
        )
        for p, m in samples
    ]
    return sorted(out, key=lambda s: (s.task_id or "", s.sample or 0))


def _read_code(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _score(value: Any) -> float | None:
    """A reported speedup as a float (numbers or numeric strings; booleans and junk are None)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass(kw_only=True)
class BenchConfig:
    eval: EvalConfig
    evaluator: Evaluator | None = None
    """The backend evaluations go through (default: this machine's worker pool)."""
    baselines: list[str] = field(default_factory=lambda: ["eager"])
    jobs: int = 4
    """Evaluations in flight (device phases take turns on the device lock)."""
    resume: bool = True


def run_meta(suite_name: str, eval_config: EvalConfig, baselines: list[str]) -> dict[str, Any]:
    """What run.json records: the settings every row was evaluated under, and the code."""
    return {
        "suite": suite_name,
        "eval": eval_config.to_dict(),
        "baselines": baselines,
        "cudal1": code_version(),
    }


def check_run_dir(out_dir: Path, meta: dict[str, Any], resume: bool) -> None:
    """Refuse to add rows to a run made under other settings or by other code: every row of a
    run comes from one evaluator, or its figures cannot be compared (an audit written by two
    commits disagreed with itself). Checked before any worker starts."""
    meta_path = out_dir / "run.json"
    if not resume or not (out_dir / "results.jsonl").exists() or not meta_path.is_file():
        return
    try:
        held = json.loads(meta_path.read_text())
    except ValueError:
        raise Cudal1Error(f"{meta_path} is not JSON: use another --out, or --no-resume") from None
    if held.get("cudal1") != meta["cudal1"]:
        raise Cudal1Error(
            f"{out_dir} holds rows from cudal1 {held.get('cudal1') or '(version not recorded)'}; "
            f"this is {meta['cudal1']}: a run's rows come from one version. Use another --out, "
            "or --no-resume to start it again from empty"
        )
    if held != meta:
        raise Cudal1Error(
            f"{out_dir} holds a run with other settings: resume it with the same options, "
            "or use another --out (or --no-resume to start over)"
        )


def done_ids(results: Path) -> set[str]:
    if not results.is_file():
        return set()
    ids = set()
    for line in results.read_text().splitlines():
        try:
            ids.add(json.loads(line)["key"])
        except (ValueError, KeyError):
            continue  # a line cut short by an interruption is redone
    return ids


def run_bench(
    suite: Suite,
    solutions: list[Solution],
    out_dir: Path,
    config: BenchConfig,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    covered: set[str] | None = None,
) -> Path:
    """Evaluate every solution; append one JSON row per solution to out_dir/results.jsonl.
    Every task in `covered` (default: the whole suite) that has no solution gets a
    "no submission" row, so summaries count it the way the paper does."""
    meta = run_meta(suite.name, config.eval, config.baselines)
    check_run_dir(out_dir, meta, config.resume)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    if not config.resume and results.exists():
        results.unlink()
    (out_dir / "run.json").write_text(json.dumps(meta, indent=1))
    skip = done_ids(results)
    tasks = {t.id: t for t in suite.tasks}
    have = {s.task_id for s in solutions}
    missing = sorted((covered if covered is not None else set(tasks)) - have)
    solutions = [*solutions, *(Solution(t, None, "missing", "no submission") for t in missing)]
    todo = [s for s in solutions if s.key not in skip]
    evaluator = config.evaluator or make_evaluator("local", config.eval, jobs=config.jobs)
    # An entry's baselines are measured beside its evaluation, not after it: both wait for
    # the device lock much of their time (on the H100 the evaluations of 8 slots filled 4927
    # of their 8480 s; the baselines, measured after them in the same slots, the rest).
    measurer = ThreadPoolExecutor(config.jobs)
    judges = BaselineJudges(config.eval)

    stopping = threading.Event()

    def one(sol: Solution, fresh: bool = False) -> dict[str, Any] | None:
        """The entry's row, or None once the run is stopping (never written: resume redoes it)."""
        task = tasks.get(sol.task_id or "")
        row = _row(sol, task)
        if task is None and sol.error is None:
            row["error"] = f"task {sol.task_id} is not in suite {suite.name}"
        try:
            measuring = (
                measurer.submit(_measure, task, config, judges) if task is not None else None
            )
            if row["error"] is None and task is not None and sol.code is not None:
                result = evaluator.submit(task, sol.code, fresh=fresh).result()
                row["result"] = result.to_dict()
                row["techniques"] = tag_techniques(sol.code, result.flags)
            if stopping.is_set():
                return None
            if measuring is not None:
                row |= _measurements(measuring.result(), config, row.get("result"))
        except Exception as e:  # one entry's failure is a row, never the end of the run
            row["error"] = f"harness error: {type(e).__name__}: {e}"
        return None if stopping.is_set() else row

    def write(f: Any, row: dict[str, Any]) -> None:
        f.write(json.dumps(row) + "\n")  # only this thread writes
        f.flush()
        if on_row:
            on_row(row)

    pool = ThreadPoolExecutor(config.jobs)
    try:
        with results.open("a") as f:
            futures = {pool.submit(one, s): s for s in todo}
            crowded = []
            for fut in as_completed(futures):
                row = fut.result()
                if row is None:
                    continue
                if _crowded_out(row) or _unmeasured(row):
                    crowded.append(futures[fut])
                    continue
                write(f, row)
            # Out of device memory beside the other evaluations, or timed while other work was
            # on the device: once more, one at a time, after them; what fails again alone is
            # that entry's own verdict.
            for sol in crowded:
                row = one(sol, fresh=True)
                if row is None:
                    break
                write(f, row | {"retried_alone": True})
    finally:
        # Ctrl-C lands here too: rows not yet written are dropped, the evaluator's processes end
        # at once, and `--resume` evaluates the dropped entries again.
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        measurer.shutdown(wait=False, cancel_futures=True)
        judges.close()
        if config.evaluator is None:
            evaluator.close()
            pool.shutdown(wait=True)
        # else the caller owns the evaluator: closing it ends the evaluations still in flight
    return results


def _unmeasured(row: dict[str, Any]) -> bool:
    """Correct, but every timing was disturbed by other work on the device or the host."""
    result = row.get("result") or {}
    return result.get("status") == "ok" and result.get("speedup") is None


def _crowded_out(row: dict[str, Any]) -> bool:
    """The entry ran out of device memory (the reference in the judge, or the candidate)."""
    result = row.get("result") or {}
    if result.get("status") not in (None, "runtime_error"):
        return False
    text = " ".join([row.get("error") or "", *(result.get("reasons") or [])])
    return "out of memory" in text.lower()


def _row(sol: Solution, task: Task | None) -> dict[str, Any]:
    return {
        "key": sol.key,
        "task_id": sol.task_id,
        "sample": sol.sample,
        "origin": sol.origin,
        "cudal1": code_version(),
        "level": task.level if task else None,
        "name": task.name if task else None,
        "split": task.split if task else None,
        "error": sol.error,
        "claimed": sol.claimed,
        "result": None,
        "techniques": [],
        "code": sol.code,
    }


def _measure(task: Task, config: BenchConfig, judges: BaselineJudges) -> dict[str, Any]:
    """The task's baselines, roofline and ceilings; a failure to measure is recorded, not
    raised."""
    try:
        return measure_task(task, config.baselines, config.eval, judges=judges)
    except Cudal1Error as e:
        return {"measure_error": str(e)}


def _measurements(
    m: dict[str, Any], config: BenchConfig, result: dict[str, Any] | None
) -> dict[str, Any]:
    """Baselines, speedups against them and roofline for the row."""
    if "measure_error" in m:
        return {"baselines": {}, "roofline": None, "measure_error": m["measure_error"]}
    floor = roofline_ms(m["roofline"], m["ceilings"], config.eval.tolerance == "kernelbench")
    nbytes = m["roofline"].get("bytes")
    bandwidth = (m["ceilings"] or {}).get("copy_bytes_per_s")
    # The reference's FLOPs bound only the reference's algorithm (a diagonal matmul done as a
    # scaling is honest and far under them); the bytes that must move bound every algorithm.
    bytes_floor = 1e3 * nbytes / bandwidth if nbytes and bandwidth else None
    speedups: dict[str, float | None] = {}
    cand_ms = result.get("candidate_ms") if result and result.get("status") == "ok" else None
    for kind, b in m["baselines"].items():
        if kind == "eager" and result and result.get("speedup"):
            speedups[kind] = result["speedup"]  # the paired measurement, more precise
        elif cand_ms and "median_ms" in b:
            speedups[kind] = b["median_ms"] / cand_ms
        else:
            speedups[kind] = None
    beyond = (
        bytes_floor and cand_ms and config.eval.device == "cuda" and cand_ms < 0.9 * bytes_floor
    )
    roof = {
        **m["roofline"],
        "floor_ms": floor,
        "bytes_floor_ms": bytes_floor,
        "fraction": (floor / cand_ms) if floor and cand_ms else None,
        "beyond": bool(beyond),
    }
    return {
        "baselines": m["baselines"],
        "speedups": speedups,
        "roofline": roof,
        "hygiene": m.get("hygiene"),
        "ceilings": m["ceilings"],
        "measure_seconds": m.get("seconds"),
    }
