"""Suites: the bundled one, a KernelBench-layout directory, or a CUDA-L1 release file.

Every loader returns `Task`s with ids `L{level}_{number}`, so the same KernelBench problem has the
same id whether it comes from KernelBench's directory or from CUDA-L1's JSON lines. Loading reads
and validates task sources; it never executes a candidate (CUDA-L1's `custom_code` is only read
by `read_cudal1_solutions`, as text).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cudal1.errors import Cudal1Error
from cudal1.tasks.task import Split, Task, TaskError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

BUNDLED = "bundled"
SPLIT_FILE = "suite.toml"
_TASK_FILE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL_DIR = re.compile(r"^level(\d+)$")


@dataclass(frozen=True)
class Suite:
    name: str
    tasks: tuple[Task, ...]

    def get(self, key: str) -> Task:
        """Find a task by id (`L1_3`) or by name; an unknown key lists what exists."""
        for t in self.tasks:
            if key in (t.id, t.name):
                return t
        shown = ", ".join(t.id for t in self.tasks[:12])
        more = f", ... ({len(self.tasks)} in all)" if len(self.tasks) > 12 else ""
        raise Cudal1Error(f"no task {key!r} in suite {self.name!r}; ids: {shown}{more}")

    def split(self, split: Split) -> list[Task]:
        return [t for t in self.tasks if t.split == split]


def load_suite(spec: str = BUNDLED, *, validate: bool = True) -> Suite:
    """Load `bundled`, a KernelBench directory or a CUDA-L1 JSON-lines file.

    With `validate`, every task file is executed once (in this process: task files are trusted)
    so a broken one is reported now, naming the file, rather than in the middle of a run.
    """
    if spec == BUNDLED:
        suite = _load_bundled()
    else:
        path = Path(spec)
        if path.is_dir():
            suite = _load_kernelbench_dir(path)
        elif path.is_file() and path.suffix in (".jsonl", ".json"):
            suite = _load_cudal1_file(path)
        elif path.exists():
            raise Cudal1Error(
                f"suite {spec!r} is a file but not .jsonl/.json: give 'bundled', a KernelBench "
                "directory (level1/, level2/, ...) or a CUDA-L1 JSON-lines file"
            )
        else:
            raise Cudal1Error(
                f"suite {spec!r} does not exist: give 'bundled', a KernelBench directory "
                "(level1/, level2/, ...) or a CUDA-L1 JSON-lines file"
            )
    if validate:
        for task in suite.tasks:
            task.load("full")
    return suite


def load_task_file(path: str | Path, split: Split = "train") -> Task:
    """One KernelBench-format file given on its own (`cudal1 eval path/to/task.py`)."""
    path = Path(path)
    if not path.is_file():
        raise Cudal1Error(f"task file {str(path)!r} does not exist")
    match = _TASK_FILE.match(path.name)
    level_match = _LEVEL_DIR.match(path.parent.name)
    level = int(level_match.group(1)) if level_match else 0
    number, name = (match.group(1), match.group(2)) if match else (None, path.stem)
    task_id = f"L{level}_{number}" if number else path.stem
    return Task(
        id=task_id, level=level, name=name, source=_read_text(path), origin=str(path), split=split
    )


def resolve_task(key: str, suite: str = BUNDLED) -> Task:
    """A task given on the command line: a path to a task file, or an id/name in `suite`."""
    if key.endswith(".py") or Path(key).is_file():
        task = load_task_file(key)
        task.load("full")
        return task
    return load_suite(suite).get(key)


def default_split(task_id: str) -> Split:
    """Held-out split for suites without metadata: a fixed quarter of the ids, by hash.

    Deterministic and independent of the suite's file, so KernelBench's directory and CUDA-L1's
    release agree on which problems are held out.
    """
    digest = hashlib.sha256(task_id.encode()).digest()
    return "heldout" if digest[0] % 4 == 0 else "train"


def read_cudal1_solutions(path: str | Path) -> dict[str, str | None]:
    """CUDA-L1's `custom_code` per task id, as text (None where the release has none)."""
    out: dict[str, str | None] = {}
    for lineno, row in _jsonl_rows(Path(path)):
        task_id = _cudal1_id(row, path, lineno)
        code = row.get("custom_code")
        out[task_id] = None if code in (None, "", "None") else str(code)
    return out


def _load_bundled() -> Suite:
    root = resources.files("cudal1.tasks") / "bundled"
    with resources.as_file(root) as root_path:
        suite = _load_kernelbench_dir(Path(root_path), name=BUNDLED)
    return suite


def _load_kernelbench_dir(root: Path, name: str | None = None) -> Suite:
    level_dirs = sorted(
        (int(m.group(1)), p)
        for p in root.iterdir()
        if p.is_dir() and (m := _LEVEL_DIR.match(p.name))
    )
    if not level_dirs and _LEVEL_DIR.match(root.name):
        level_dirs = [(int(_LEVEL_DIR.match(root.name).group(1)), root)]  # type: ignore[union-attr]
    if not level_dirs:
        raise Cudal1Error(
            f"{root}: no level1/, level2/, ... folders: a KernelBench directory holds "
            "levelN/ folders of files named N_Name.py"
        )
    heldout = _read_heldout(root)
    tasks = []
    for level, folder in level_dirs:
        files = sorted(
            (int(m.group(1)), m.group(2), p)
            for p in folder.iterdir()
            if (m := _TASK_FILE.match(p.name))
        )
        for number, task_name, path in files:
            task_id = f"L{level}_{number}"
            split: Split = (
                ("heldout" if task_id in heldout else "train")
                if heldout is not None
                else default_split(task_id)
            )
            tasks.append(
                Task(
                    id=task_id,
                    level=level,
                    name=task_name,
                    source=_read_text(path),
                    origin=str(path),
                    split=split,
                )
            )
    if not tasks:
        raise Cudal1Error(f"{root}: the level folders hold no task files named N_Name.py")
    return Suite(name=name or str(root), tasks=tuple(tasks))


def _read_heldout(root: Path) -> set[str] | None:
    """The `heldout` id list of the directory's suite.toml, or None when there is none."""
    meta = root / SPLIT_FILE
    if not meta.is_file():
        return None
    try:
        data = tomllib.loads(meta.read_text())
    except tomllib.TOMLDecodeError as e:
        raise Cudal1Error(f"{meta}: not valid TOML: {e}") from None
    heldout = data.get("heldout")
    if not isinstance(heldout, list) or not all(isinstance(x, str) for x in heldout):
        raise Cudal1Error(f'{meta}: `heldout` must be a list of task ids like "L1_3"')
    return set(heldout)


def _load_cudal1_file(path: Path) -> Suite:
    tasks = []
    seen: dict[str, int] = {}
    for lineno, row in _jsonl_rows(path):
        task_id = _cudal1_id(row, path, lineno)
        if task_id in seen:
            raise Cudal1Error(
                f"{path}:{lineno}: task {task_id} already appeared on line {seen[task_id]}"
            )
        seen[task_id] = lineno
        ref = row.get("ref_code")
        if not isinstance(ref, str) or not ref.strip():
            raise Cudal1Error(f"{path}:{lineno}: `ref_code` is missing or empty")
        tasks.append(
            Task(
                id=task_id,
                level=int(row["level_id"]),
                name=describe(ref) or task_id,
                source=ref,
                origin=f"{path}:{lineno}",
                split=default_split(task_id),
            )
        )
    if not tasks:
        raise Cudal1Error(f"{path}: holds no tasks")
    return Suite(name=str(path), tasks=tuple(tasks))


def _jsonl_rows(path: Path):
    """Yield (line number, object) for each non-blank line; a bad line is an error naming it."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise Cudal1Error(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise Cudal1Error(
                    f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}"
                )
            yield lineno, row


def _cudal1_id(row: dict, path: str | Path, lineno: int) -> str:
    try:
        return f"L{int(row['level_id'])}_{int(row['task_id'])}"
    except (KeyError, TypeError, ValueError):
        raise Cudal1Error(
            f"{path}:{lineno}: needs integer `level_id` and `task_id` (CUDA-L1 release format)"
        ) from None


_FILLER = re.compile(
    r"^(a |an |the )?(simple |basic )?(pytorch )?(model|module|class)( that| which)?"
    r"( performs| computes| implements)?( a| an| the)?( single)?\s+",
    re.IGNORECASE,
)


def describe(source: str, max_words: int = 7) -> str:
    """A short snake_case name from the Model's docstring (CUDA-L1's file carries no names)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    doc = ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            init = next(
                (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"),
                None,
            )
            doc = ast.get_docstring(node) or (init and ast.get_docstring(init)) or ""
    doc = doc or ast.get_docstring(tree) or ""
    lines = [ln for ln in doc.strip().splitlines() if ln.strip() and not ln.strip().startswith(":")]
    text = _FILLER.sub("", lines[0].strip().removeprefix("Initialize the ")) if lines else ""
    words = re.findall(r"[a-z0-9]+", text.lower())[:max_words]
    return "_".join(words)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not UTF-8 text") from None
