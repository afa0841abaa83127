"""Tasks: KernelBench-format problems, the bundled suite and loaders for external suites."""

from cudal1.tasks.suites import (
    BUNDLED,
    Suite,
    default_split,
    load_suite,
    load_task_file,
    read_cudal1_solutions,
    resolve_task,
)
from cudal1.tasks.task import SizeProfile, Split, Task, TaskError, TaskModule, source_hash

__all__ = [
    "BUNDLED",
    "SizeProfile",
    "Split",
    "Suite",
    "Task",
    "TaskError",
    "TaskModule",
    "default_split",
    "load_suite",
    "load_task_file",
    "read_cudal1_solutions",
    "resolve_task",
    "source_hash",
]
