"""The red-team and honest corpora: candidate files plus a manifest of what each must produce.

`tests/redteam/manifest.toml` and `tests/honest/manifest.toml` hold `[[case]]` tables:
file (under candidates/), task (bundled id), device (cpu|cuda), status (allowed statuses),
flag (optional: a flag name the result must carry; `a|b`: either, when which check catches
the hack first depends on timing), hack (HACKS.md class, red team only),
policy / tolerance (optional evaluator settings), note.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from cudal1.evaluate import EvalConfig, EvalResult, evaluate
from cudal1.tasks import load_suite

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Case:
    corpus: str
    file: str
    task: str
    device: str
    status: tuple[str, ...]
    flag: str | None = None
    hack: int | None = None
    policy: str = "any"
    tolerance: str = "calibrated"
    static: bool = True
    """False: the static gate only records flags, so the case tests the dynamic checks."""
    max_speedup: float | None = None
    """A hack left measured rather than refused must earn no more than this."""
    writes: str | None = None
    """A path the candidate tries to write outside its work and build directories
    (placeholders: {purelib}, {torch}, {build_root}, {tmp}); it must not appear."""
    note: str = ""
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    def flag_found(self, flags: list[str]) -> bool:
        """The result carries the expected flag (or one of the alternatives), if any."""
        names = {f.split(":", 1)[0] for f in flags}
        return self.flag is None or bool(names & set(self.flag.split("|")))

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.py')}@{self.task}"

    @property
    def source(self) -> str:
        return (HERE / self.corpus / "candidates" / self.file).read_text()


def load_cases(corpus: str, device: str | None = None) -> list[Case]:
    data = tomllib.loads((HERE / corpus / "manifest.toml").read_text())
    cases = []
    for row in data.get("case", []):
        row = dict(row)
        status = row.pop("status")
        case = Case(
            corpus=corpus, status=tuple([status] if isinstance(status, str) else status), **row
        )
        if device is None or case.device == device:
            cases.append(case)
    return cases


def test_config(case: Case) -> EvalConfig:
    """Small timing budgets: the corpora test verdicts, not speed."""
    if case.device == "cpu":
        return EvalConfig(
            device="cpu",
            policy=case.policy,  # type: ignore[arg-type]
            tolerance=case.tolerance,  # type: ignore[arg-type]
            static_gate=case.static,
            trials=2,
            timing_budget_s=0.1,
            min_pairs=7,
            max_pairs=14,
            timed_samples_checked=2,
        )
    return EvalConfig(
        device="cuda", policy=case.policy, tolerance=case.tolerance, static_gate=case.static
    )  # type: ignore[arg-type]


def run_case(case: Case) -> EvalResult:
    task = load_suite("bundled", validate=False).get(case.task)
    return evaluate(task, case.source, test_config(case))


def unmeasured(result: EvalResult) -> bool:
    """Correct, but every timing disturbed by other work: no speedup, so no reward."""
    names = {f.split(":", 1)[0] for f in result.flags}
    return result.ok and result.speedup is None and bool(names & {"gpu_shared", "host_shared"})


def explain(result: EvalResult) -> str:
    return f"status={result.status} reasons={result.reasons} flags={result.flags}\nlog:\n{result.log_tail[-1500:]}"
