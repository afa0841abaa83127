"""Reading a `/v1/evaluate` body into a task and a candidate, or one clear line on what is wrong.

    {"task": "L1_20" | "<task file source>", "source": "<candidate source>",
     "policy": "any" | "kernel", "tolerance": "calibrated" | "kernelbench",
     "task_id": "<name for a task given as source>", "fresh": false}

`task` and `source` are required. A task with a line break is a KernelBench-format file's
source; anything else is an id (or name) in the server's suite. A task given as source is only
parsed here; it runs in the judge's process, never in the server's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cudal1.errors import Cudal1Error
from cudal1.evaluate.compare import TOLERANCE_MODES
from cudal1.evaluate.config import POLICIES
from cudal1.tasks import Suite, Task, source_hash

FIELDS = ("task", "source", "policy", "tolerance", "task_id", "fresh")
_TASK_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class BadRequest(Cudal1Error):
    """A body the server cannot act on; the message names the field."""


@dataclass(frozen=True)
class EvaluateRequest:
    task: Task
    source: str
    policy: str | None
    tolerance: str | None
    fresh: bool
    task_in_body: bool
    """The task came as source (so a reference that fails is the request's fault)."""


def parse_evaluate(body: bytes, suite: Suite) -> EvaluateRequest:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(
            f"the body is not valid JSON ({e}); send an object with {_fields()}"
        ) from None
    if not isinstance(data, dict):
        raise BadRequest(
            f"the body must be a JSON object with {_fields()}, not {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(map(repr, unknown))}: send only {_fields()}")
    task_text = _text(data, "task", required=True)
    source = _text(data, "source", required=True)
    policy = _choice(data, "policy", POLICIES)
    tolerance = _choice(data, "tolerance", TOLERANCE_MODES)
    fresh = data.get("fresh", False)
    if not isinstance(fresh, bool):
        raise BadRequest(f"field 'fresh' must be true or false, not {fresh!r}")
    task_id = _text(data, "task_id", required=False)
    if task_id is not None and not _TASK_ID.match(task_id):
        raise BadRequest(
            f"field 'task_id' must be 1-100 letters, digits, '_', '.' or '-', not {task_id[:120]!r}"
        )
    in_body = "\n" in task_text
    if in_body:
        task = Task(
            id=task_id or f"custom_{source_hash(task_text)[:8]}",
            level=0,
            name=task_id or "custom",
            source=task_text,
            origin="field 'task'",
        )
        task.check_static()  # raises TaskError naming "field 'task'" and the line
    else:
        if task_id is not None:
            raise BadRequest("field 'task_id' names a task given as source; 'task' is an id here")
        try:
            task = suite.get(task_text)
        except Cudal1Error as e:
            raise BadRequest(f"field 'task': {e} (or send a task file's source)") from None
    return EvaluateRequest(task, source, policy, tolerance, fresh, in_body)


def _fields() -> str:
    return "the fields " + ", ".join(FIELDS[:2]) + " (required) and " + ", ".join(FIELDS[2:])


def _text(data: dict, name: str, *, required: bool) -> str | None:
    value = data.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        got = "missing" if value is None else f"{type(value).__name__} {str(value)[:40]!r}"
        raise BadRequest(f"field {name!r} must be a non-empty string; got {got}")
    return value


def _choice(data: dict, name: str, choices: tuple[str, ...]) -> str | None:
    value = data.get(name)
    if value is not None and value not in choices:
        raise BadRequest(f"field {name!r} must be one of {', '.join(choices)}, not {value!r}")
    return value
