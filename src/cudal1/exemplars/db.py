"""The exemplar database: every evaluated candidate per task, with its measured result.

One SQLite file in WAL mode, safe for several writers on one machine (each write is a short
transaction; readers never block writers). The reference is each task's first exemplar, with
speedup 1.0. Rows are keyed by (task hash, code hash): the same code for the same task is stored
once, whoever produced it first. A `hack_cases` table holds confirmed reward hacks, which the
reviewing step shows to a reviewer next to a suspicious candidate.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudal1.errors import Cudal1Error
from cudal1.evaluate import EvalResult
from cudal1.tasks import Task, source_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS exemplars (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    task_hash TEXT NOT NULL,
    code TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    speedup REAL,
    flags TEXT NOT NULL DEFAULT '[]',
    result TEXT,
    parents TEXT NOT NULL DEFAULT '[]',
    source TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    run TEXT NOT NULL DEFAULT '',
    step INTEGER NOT NULL DEFAULT 0,
    island INTEGER,
    is_reference INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    UNIQUE (task_hash, code_hash)
);
CREATE INDEX IF NOT EXISTS exemplars_task ON exemplars (task_id, status);
CREATE TABLE IF NOT EXISTS rounds (
    run TEXT NOT NULL,
    task_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    best_speedup REAL,
    finished REAL NOT NULL,
    PRIMARY KEY (run, task_id, round)
);
CREATE TABLE IF NOT EXISTS hack_cases (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    code TEXT NOT NULL,
    code_hash TEXT NOT NULL UNIQUE,
    reason TEXT NOT NULL,
    created REAL NOT NULL
);
"""


@dataclass
class Exemplar:
    id: int
    task_id: str
    task_hash: str
    code: str
    code_hash: str
    status: str
    speedup: float | None
    flags: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    parents: list[int] = field(default_factory=list)
    source: str = ""
    """What produced it: `reference`, a policy name (`openai`, `replay`, ...), `import`."""
    model: str = ""
    run: str = ""
    step: int = 0
    island: int | None = None
    is_reference: bool = False
    created: float = 0.0

    @property
    def correct(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HackCase:
    id: int
    task_id: str
    code: str
    reason: str


class ExemplarDB:
    """`ExemplarDB(path)`; every method opens its own short transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._connect() as con:
                con.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise Cudal1Error(f"{self.path}: not a cudal1 exemplar database ({e})") from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA busy_timeout=60000")
            con.row_factory = sqlite3.Row
            yield con
        finally:
            con.close()

    # writing ------------------------------------------------------------------------------------
    def ensure_reference(self, task: Task) -> Exemplar:
        """The task's reference as its first exemplar (speedup 1.0), added once."""
        existing = self.find(task, task.source)
        if existing is not None:
            return existing
        return self._insert(
            task, task.source, status="ok", speedup=1.0, source="reference", is_reference=True
        )

    def add(
        self,
        task: Task,
        code: str,
        result: EvalResult | None,
        *,
        parents: list[int] | None = None,
        source: str = "",
        model: str = "",
        run: str = "",
        step: int = 0,
        island: int | None = None,
    ) -> Exemplar:
        """Store an evaluated candidate (result None: it never reached the evaluator, e.g. the
        answer had no code). Returns the stored row; a repeat of known code returns the old row."""
        status = result.status if result is not None else "unparsed"
        return self._insert(
            task,
            code,
            status=status,
            speedup=result.speedup if result is not None and result.ok else None,
            flags=result.flags if result is not None else [],
            result=result.to_dict() if result is not None else None,
            parents=parents or [],
            source=source,
            model=model,
            run=run,
            step=step,
            island=island,
        )

    def _insert(self, task: Task, code: str, **fields: Any) -> Exemplar:
        code_hash = source_hash(code)
        row = {
            "task_id": task.id,
            "task_hash": task.hash,
            "code": code,
            "code_hash": code_hash,
            "flags": json.dumps(fields.pop("flags", [])),
            "result": json.dumps(fields.pop("result", None)),
            "parents": json.dumps(fields.pop("parents", [])),
            "created": time.time(),
            **fields,
        }
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._connect() as con:
            con.execute(
                f"INSERT OR IGNORE INTO exemplars ({cols}) VALUES ({marks})", tuple(row.values())
            )
            found = con.execute(
                "SELECT * FROM exemplars WHERE task_hash = ? AND code_hash = ?",
                (task.hash, code_hash),
            ).fetchone()
        return _exemplar(found)

    def set_island(self, exemplar_ids: list[int], island: int | None) -> None:
        with self._connect() as con:
            con.executemany(
                "UPDATE exemplars SET island = ? WHERE id = ?", [(island, i) for i in exemplar_ids]
            )

    def finish_round(
        self, run: str, task_id: str, round_index: int, best_speedup: float | None
    ) -> None:
        """Record a finished round of a run: the resume point of loops and training."""
        with self._connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO rounds (run, task_id, round, best_speedup, finished) "
                "VALUES (?, ?, ?, ?, ?)",
                (run, task_id, round_index, best_speedup, time.time()),
            )

    def rounds_done(self, run: str, task_id: str) -> int:
        """How many rounds of `run` finished for the task (rounds are numbered from 0)."""
        with self._connect() as con:
            row = con.execute(
                "SELECT MAX(round) FROM rounds WHERE run = ? AND task_id = ?", (run, task_id)
            ).fetchone()
        return 0 if row[0] is None else row[0] + 1

    # reading ------------------------------------------------------------------------------------
    def find(self, task: Task, code: str) -> Exemplar | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT * FROM exemplars WHERE task_hash = ? AND code_hash = ?",
                (task.hash, source_hash(code)),
            ).fetchone()
        return _exemplar(row) if row else None

    def exemplars(self, task_id: str, *, correct_only: bool = False) -> list[Exemplar]:
        """The task's rows; `correct_only`: correct and measured (a correct candidate whose
        timing other work disturbed has no speedup to show or to rank by)."""
        query = "SELECT * FROM exemplars WHERE task_id = ?"
        if correct_only:
            query += " AND status = 'ok' AND speedup IS NOT NULL"
        with self._connect() as con:
            return [_exemplar(r) for r in con.execute(query + " ORDER BY id", (task_id,))]

    def best(self, task_id: str) -> Exemplar | None:
        correct = self.exemplars(task_id, correct_only=True)
        return max(correct, key=lambda e: e.speedup or 0.0) if correct else None

    def task_ids(self) -> list[str]:
        with self._connect() as con:
            return [
                r[0] for r in con.execute("SELECT DISTINCT task_id FROM exemplars ORDER BY task_id")
            ]

    def hack_cases(self) -> list[HackCase]:
        with self._connect() as con:
            return [
                HackCase(r["id"], r["task_id"], r["code"], r["reason"])
                for r in con.execute("SELECT * FROM hack_cases ORDER BY id")
            ]

    def add_hack_case(self, task_id: str, code: str, reason: str) -> None:
        with self._connect() as con:
            con.execute(
                "INSERT OR IGNORE INTO hack_cases (task_id, code, code_hash, reason, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (task_id, code, source_hash(code), reason, time.time()),
            )

    def count(self, task_id: str | None = None) -> int:
        with self._connect() as con:
            if task_id is None:
                return con.execute("SELECT COUNT(*) FROM exemplars").fetchone()[0]
            return con.execute(
                "SELECT COUNT(*) FROM exemplars WHERE task_id = ?", (task_id,)
            ).fetchone()[0]

    # interchange --------------------------------------------------------------------------------
    def export_jsonl(self, path: str | Path) -> int:
        n = 0
        with Path(path).open("w") as f, self._connect() as con:
            for row in con.execute("SELECT * FROM exemplars ORDER BY id"):
                f.write(json.dumps(_exemplar(row).to_dict()) + "\n")
                n += 1
        return n

    def import_jsonl(self, path: str | Path) -> int:
        """Add rows exported by `export_jsonl` (ids are reassigned; known code is skipped)."""
        n = 0
        with Path(path).open() as f, self._connect() as con:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                    row = (
                        d["task_id"],
                        d["task_hash"],
                        d["code"],
                        d["code_hash"],
                        d["status"],
                        d.get("speedup"),
                        json.dumps(d.get("flags", [])),
                        json.dumps(d.get("result")),
                        json.dumps(d.get("parents", [])),
                        d.get("source", "import"),
                        d.get("model", ""),
                        d.get("run", ""),
                        int(d.get("step", 0)),
                        d.get("island"),
                        int(bool(d.get("is_reference"))),
                        float(d.get("created", time.time())),
                    )
                except (ValueError, KeyError, TypeError) as e:
                    raise Cudal1Error(f"{path}:{lineno}: not an exported exemplar ({e})") from None
                cur = con.execute(
                    "INSERT OR IGNORE INTO exemplars (task_id, task_hash, code, code_hash, status, "
                    "speedup, flags, result, parents, source, model, run, step, island, "
                    "is_reference, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    row,
                )
                n += cur.rowcount
        return n


def _exemplar(row: sqlite3.Row) -> Exemplar:
    d = dict(row)
    d["flags"] = json.loads(d["flags"])
    d["result"] = json.loads(d["result"]) if d["result"] else None
    d["parents"] = json.loads(d["parents"])
    d["is_reference"] = bool(d["is_reference"])
    return Exemplar(**d)
