"""A task: one KernelBench-format Python file, and how to turn its text into a runnable module.

A task file defines `class Model(nn.Module)`, module-level sizes (`batch_size = 16`, ...),
`get_inputs()` and `get_init_inputs()`. cudal1 adds one optional global, `CPU_SIZES`, a dict
that overrides some sizes for CPU runs so every task also runs on a machine without a GPU.

Task files are trusted code (they define the problem); candidate files never pass through here.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import types
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from cudal1.errors import Cudal1Error

Split = Literal["train", "heldout"]
SizeProfile = Literal["full", "cpu"]

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
CPU_SIZES_NAME = "CPU_SIZES"


class TaskError(Cudal1Error):
    """A task file that cannot be used; the message names the file and the problem."""


def source_hash(text: str) -> str:
    """Stable short content hash (16 hex digits of SHA-256); identical text, identical hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Task:
    """One problem: the reference source and where it came from. Loading it never runs it."""

    id: str
    """Unique within its suite, `L{level}_{number}`; also the file name of a solution for it."""
    level: int
    name: str
    source: str
    origin: str
    """Where the text came from (a path, or `file.jsonl:LINE`); every error message starts with it."""
    split: Split = "train"

    @property
    def hash(self) -> str:
        return source_hash(self.source)

    def check_static(self) -> ast.Module:
        """Parse the source and check the required names exist, without executing anything."""
        try:
            tree = ast.parse(self.source, filename=self.origin)
        except SyntaxError as e:
            raise TaskError(f"{self.origin}: line {e.lineno}: syntax error: {e.msg}") from None
        defined = _top_level_names(tree)
        missing = [n for n in REQUIRED_NAMES if n not in defined]
        if missing:
            raise TaskError(
                f"{self.origin}: missing {', '.join(missing)} (a task defines class Model(nn.Module), "
                "get_inputs() and get_init_inputs())"
            )
        return tree

    def load(self, sizes: SizeProfile = "full") -> TaskModule:
        """Execute the task file (and only it) in a fresh module; `sizes="cpu"` applies CPU_SIZES."""
        self.check_static()
        module = types.ModuleType(f"cudal1_task_{self.id}")
        module.__file__ = self.origin
        # Registering the text lets tracebacks, inspect.getsource and torch.compile see it.
        lines = self.source.splitlines(keepends=True)
        linecache.cache[self.origin] = (len(self.source), None, lines, self.origin)
        try:
            exec(compile(self.source, self.origin, "exec"), module.__dict__)
        except Exception as e:
            raise TaskError(f"{self.origin}: raises while loading: {type(e).__name__}: {e}") from e
        model_cls = module.__dict__.get("Model")
        if not (isinstance(model_cls, type) and issubclass(model_cls, nn.Module)):
            raise TaskError(f"{self.origin}: `Model` must be a class derived from torch.nn.Module")
        for fn in ("get_inputs", "get_init_inputs"):
            if not callable(module.__dict__.get(fn)):
                raise TaskError(f"{self.origin}: `{fn}` must be a function")
        full_sizes = _sizes(module)
        cpu_sizes = _cpu_sizes(module, full_sizes, self.origin)
        if sizes == "cpu":
            module.__dict__.update(cpu_sizes)
        return TaskModule(task=self, module=module, full_sizes=full_sizes, cpu_sizes=cpu_sizes)


@dataclass
class TaskModule:
    """A task's executed module, with the size profile already applied to its globals."""

    task: Task
    module: types.ModuleType
    full_sizes: dict[str, int | float]
    cpu_sizes: dict[str, int | float] = field(default_factory=dict)

    @property
    def sizes(self) -> dict[str, int | float]:
        """The sizes in effect now (module globals), after any CPU override."""
        return {k: self.module.__dict__[k] for k in self.full_sizes}

    def init_inputs(self) -> list[Any]:
        return list(self.module.get_init_inputs())

    def inputs(self) -> list[Any]:
        return list(self.module.get_inputs())

    def make_model(self, seed: int) -> nn.Module:
        """Build `Model` the way KernelBench does: seed the global RNGs, then construct on the CPU."""
        torch.manual_seed(seed)
        return self.module.Model(*self.init_inputs())

    def make_inputs(self, seed: int) -> list[Any]:
        torch.manual_seed(seed)
        return self.inputs()


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _sizes(module: types.ModuleType) -> dict[str, int | float]:
    """Module-level numbers (KernelBench's sizes and hyper-parameters)."""
    return {
        k: v
        for k, v in vars(module).items()
        if not k.startswith("_") and isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def _cpu_sizes(
    module: types.ModuleType, sizes: dict[str, int | float], origin: str
) -> dict[str, int | float]:
    cpu = vars(module).get(CPU_SIZES_NAME, {})
    if not isinstance(cpu, dict):
        raise TaskError(f"{origin}: {CPU_SIZES_NAME} must be a dict of size name -> number")
    for k, v in cpu.items():
        if k not in sizes:
            raise TaskError(
                f"{origin}: {CPU_SIZES_NAME} names {k!r}, which is not a module-level size "
                f"(sizes: {', '.join(sorted(sizes)) or 'none'})"
            )
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise TaskError(f"{origin}: {CPU_SIZES_NAME}[{k!r}] must be a number, not {v!r}")
    return dict(cpu)
