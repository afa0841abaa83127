"""`cudal1 report`: a bench run directory as Markdown and as one self-contained HTML page.

Both formats are rendered from the same list of blocks (headings, paragraphs, tables of string
cells, solution/reference pairs), so the two always state the same numbers. The HTML page adds
plots (matplotlib) and shows every correct solution beside its
reference; the Markdown keeps the ten fastest. Nothing here prints: the CLI decides what to show.
`export_csv` and `export_json` give the same rows and summary as files for scripts.
"""

from __future__ import annotations

import base64
import functools
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from cudal1.evaluate.baselines import BASELINES
from cudal1.report.agreement import agreement
from cudal1.report.export import write_csv, write_json
from cudal1.report.runs import read_meta, run_rows, suite_tasks
from cudal1.report.summary import (
    FAST_P,
    RULES,
    refusal_counts,
    refused,
    sample_summary,
    samples_in,
    speedup_of,
    summary,
    technique_table,
    unmeasured,
)

CLAIM_ROWS = 15
"""How many of the largest claimed/measured disagreements the report lists."""
MD_CODE_TASKS = 10
"""Markdown shows only the fastest tasks' code; the HTML page shows every correct one."""
RULE_NOTE = (
    "Two counting rules. Paper rule (CUDA-L1's convention): a missing, failing or refused "
    "task counts as 1.0x. Strict rule: it counts as a failure (0x in the mean and quantiles, "
    "never fast), and so does a correct solution faster than the roofline allows or on a "
    "degenerate task (one a null answer passes); the geomean is then over the tasks it counts "
    "as correct only. fast_p (KernelBench's metric) is the fraction of all "
    "tasks that are correct and more than p times faster than the baseline; fast_0 is the "
    "fraction correct. A correct solution whose timing other work disturbed is unmeasured: it "
    "has no speedup, counts like a failure, and is counted apart (`+N unmeasured`)."
)
SAMPLES_NOTE = (
    "This run holds {k} samples per task: the summary counts each task by its best sample "
    "(best of {k}); the table below gives each sample number alone."
)


# --- the run ------------------------------------------------------------------------------


@dataclass
class Run:
    """A bench run as the report sees it: rows, run.json, baselines present, reference sources."""

    name: str
    rows: list[dict[str, Any]]
    meta: dict[str, Any]
    baselines: list[str]
    references: dict[str, str]
    compared: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Other runs of the same entries, each named, with its agreement with this one."""

    @property
    def primary(self) -> str:
        """The baseline used to rank tasks and tag techniques: eager when it was measured."""
        return "eager" if "eager" in self.baselines else self.baselines[0]

    @functools.cached_property
    def claims(self) -> list[tuple[dict[str, Any], float, float]]:
        """(row, claimed, measured) for rows whose source claimed a speedup against eager and
        that measured one here."""
        out = []
        for r in self.rows:
            claimed = (r.get("claimed") or {}).get("eager")
            measured = speedup_of(r, "eager")
            if claimed and claimed > 0 and measured:
                out.append((r, claimed, measured))
        return out


def load_run(run_dir: Path, compare: Sequence[Path] = ()) -> Run:
    """A bench run (results.jsonl) or an optimize run (exemplars.db), with its run.json; with
    `compare`, other runs of the same entries to set beside it (a repeat, an earlier audit)."""
    meta = read_meta(run_dir)
    rows = run_rows(run_dir, meta)
    compared = [
        (name, agreement(rows, run_rows(path, read_meta(path))))
        for name, path in zip(_names(compare), compare, strict=True)
    ]
    return Run(
        name=run_dir.resolve().name,
        rows=rows,
        meta=meta,
        baselines=_baselines_present(meta, rows),
        references={k: t.source for k, t in suite_tasks(meta.get("suite")).items()},
        compared=compared,
    )


def _baselines_present(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """Baselines named in run.json or measured in any row (a resumed run may hold more), in
    the canonical order eager, compile, compile-ro, cudagraph."""
    seen = set(meta.get("baselines") or [])
    for r in rows:
        seen |= set(r.get("speedups") or {})
    ordered = [b for b in BASELINES if b in seen] + sorted(seen - set(BASELINES))
    return ordered or ["eager"]


# --- blocks: the content both formats share -----------------------------------------------


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str
    """Plain text; `backticks` mark code in both formats."""


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]


@dataclass
class CodePair:
    title: str
    solution: str
    reference: str | None


@dataclass
class Image:
    alt: str
    png: bytes


Block = Heading | Para | Table | CodePair | Image


def fmt(x: float | None) -> str:
    """Three decimals; a tiny non-zero value keeps three significant digits; missing is '-'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x != 0 and abs(x) < 0.01:
        return f"{x:.3g}"
    return f"{x:.3f}"


def _blocks(run: Run, *, html_page: bool) -> list[Block]:
    """The whole report in order; the HTML page adds plots and every task's code."""
    blocks: list[Block] = [Heading(1, f"cudal1 {_kind(run)} report: {run.name}"), _header(run)]
    blocks += _round_blocks(run)
    blocks += _summary_blocks(run)
    blocks += _agreement_blocks(run)
    if html_page:
        blocks += _plot_blocks(run)
    blocks += _claim_blocks(run)
    blocks += _refused_blocks(run.rows)
    blocks += _technique_blocks(run)
    blocks += [Heading(2, "Per task"), _task_table(run)]
    blocks += _code_blocks(run, None if html_page else MD_CODE_TASKS)
    return blocks


def _kind(run: Run) -> str:
    return "optimize" if run.meta.get("kind") == "optimize" else "bench"


def _round_blocks(run: Run) -> list[Block]:
    """An optimize run's answers round by round (each round's answers share one prompt)."""
    if _kind(run) != "optimize":
        return []
    rows = []
    for task, by_round in _by_round(run.rows).items():
        best_so_far = 1.0  # the reference
        for rnd, answers in sorted(by_round.items()):
            speedups = [s for r in answers if (s := speedup_of(r, "eager")) is not None]
            best_so_far = max([best_so_far, *speedups])
            statuses: dict[str, int] = {}
            for r in answers:
                key = _status(r) if r.get("result") else "unparsed"
                statuses[key] = statuses.get(key, 0) + 1
            rows.append(
                [
                    task,
                    str(rnd),
                    str(len(answers)),
                    str(len(speedups)),
                    fmt(max(speedups, default=None)),
                    fmt(best_so_far),
                    ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
                ]
            )
    columns = ["task", "round", "answers", "correct", "best this round", "best so far"]
    return [
        Heading(2, "Rounds"),
        Para(
            "Every answer of the model, evaluated or not (`unparsed`: no usable `ModelNew`); "
            "speedups against eager, the reference counting as 1.0x."
        ),
        Table([*columns, "statuses"], rows),
    ]


def _by_round(rows: list[dict[str, Any]]) -> dict[str, dict[int, list[dict[str, Any]]]]:
    out: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in rows:
        out.setdefault(r["task_id"], {}).setdefault(r.get("round") or 0, []).append(r)
    return out


def _header(run: Run) -> Table:
    ev = run.meta.get("eval") or {}
    envs = [r["result"].get("env") or {} for r in run.rows if r.get("result")]
    # a row refused by the static check never reached the device: take one that did
    env = next((e for e in envs if e.get("gpu")), envs[0] if envs else {})
    unscored = sum(r.get("level") is None for r in run.rows)
    rows = f"{len(run.rows)}" + (f" ({unscored} outside the suite, not scored)" if unscored else "")
    items = [
        ("suite", run.meta.get("suite")),
        ("device", ev.get("device")),
        ("policy", ev.get("policy")),
        ("tolerance", ev.get("tolerance")),
        ("baselines", ", ".join(run.baselines)),
        ("rows", rows),
        ("cudal1", _versions(run)),
        (
            "environment",
            f"GPU {_text(env.get('gpu'))}, torch {_text(env.get('torch'))}, "
            f"CUDA {_text(env.get('cuda'))}",
        ),
    ]
    return Table(["run", ""], [[k, _text(v)] for k, v in items])


def _versions(run: Run) -> str:
    """The code the run was made with, and how many rows say another version did theirs (a
    bench row names it; an optimize answer's result does)."""
    version = run.meta.get("cudal1")
    made_by = [
        r.get("cudal1") or ((r.get("result") or {}).get("env") or {}).get("cudal1")
        for r in run.rows
    ]
    others = sum(1 for v in made_by if v and v != version)
    return _text(version) + (f" ({others} rows from other versions)" if others else "")


def _text(v: Any) -> str:
    return "-" if v is None or v == "" else str(v)


def rule_label(rule: str, stats: dict[str, Any]) -> str:
    if rule == "paper":
        return "paper rule: failures count as 1.0x"
    return (
        "strict rule: failures count as failures; geomean over correct tasks only "
        f"(n={stats.get('geomean_over', 0)})"
    )


def _group_title(group: str) -> str:
    return "heldout (held-out tasks, reported separately)" if group == "heldout" else group


def _summary_blocks(run: Run) -> list[Block]:
    """Per group (overall, each level, train, heldout): one row per baseline and rule."""
    fast = [f"fast_{p:g}" for p in FAST_P]
    columns = ["baseline", "rule", "mean", "max", "75%", "median", "25%", "geomean"]
    columns += ["correct/total", "tasks > 1.01x", *fast]
    blocks: list[Block] = [Heading(2, "Summary"), Para(RULE_NOTE)]
    samples = samples_in(run.rows)
    if samples:
        blocks.append(Para(SAMPLES_NOTE.format(k=len(samples))))
    for group, by_baseline in summary(run.rows, run.baselines).items():
        blocks += [Heading(3, _group_title(group)), Table(columns, _rule_rows(by_baseline, fast))]
    per_sample = sample_summary(run.rows, run.baselines)
    if per_sample:
        rows = [
            [name, *row]
            for name, by_baseline in per_sample.items()
            for row in _rule_rows(by_baseline, fast)
        ]
        blocks += [Heading(3, "Per sample (all tasks)"), Table(["samples", *columns], rows)]
    return blocks


def _rule_rows(by_baseline: dict[str, Any], fast: list[str]) -> list[list[str]]:
    """One row per baseline and counting rule."""
    return [
        [baseline, rule_label(rule, by_rule[rule]), *_stat_cells(by_rule[rule], fast)]
        for baseline, by_rule in by_baseline.items()
        for rule in RULES
    ]


def _stat_cells(s: dict[str, Any], fast: list[str]) -> list[str]:
    if not s.get("tasks"):
        return ["-"] * (8 + len(fast))
    numbers = [fmt(s[k]) for k in ("mean", "max", "p75", "median", "p25", "geomean")]
    correct = f"{s['correct']}/{s['tasks']}"
    if s.get("unmeasured"):
        correct += f" (+{s['unmeasured']} unmeasured)"
    return [*numbers, correct, str(s["above_1.01"])] + [fmt(s[k]) for k in fast]


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f} %"


def _names(paths: Sequence[Path]) -> list[str]:
    """Each run's directory name, with its parent's where two would read the same."""
    names = [p.resolve().name for p in paths]
    return [
        f"{p.resolve().parent.name}/{n}" if names.count(n) > 1 else n
        for p, n in zip(paths, names, strict=True)
    ]


def _agreement_blocks(run: Run) -> list[Block]:
    return [b for other, agree in run.compared for b in _agreement_with(run, other, agree)]


def _agreement_with(run: Run, other: str, agree: dict[str, Any]) -> list[Block]:
    """This run beside another of the same entries: deviations, largest ones, status flips."""
    speed, ref = agree["speedup_deviation"], agree["reference_deviation"]
    figures = [
        ["entries in both runs", str(agree["common"])],
        ["only in this run / only in the other", f"{agree['only_a']} / {agree['only_b']}"],
        ["ok and measured in both", str(agree["ok_both"])],
        ["status flips", str(len(agree["flips"]))],
    ]
    for name, dev in (("speedup", speed), ("reference time", ref)):
        figures += [[f"{name} deviation, {k}", _percent(dev[k])] for k in ("median", "p90", "max")]
    largest = [
        [d["key"], fmt(d["a"]), fmt(d["b"]), _percent(d["deviation"])] for d in agree["largest"]
    ]
    flips = [
        [
            f["key"],
            f["a"],
            f["b"],
            "; ".join(f["reasons_a"]) or "-",
            "; ".join(f["reasons_b"]) or "-",
        ]
        for f in agree["flips"]
    ]
    return [
        Heading(2, f"Agreement with {other}"),
        Para(
            "The same entries in another run. An entry's deviation is larger/smaller - 1 of its "
            "two speedups against eager (and of its reference's two times), over the entries "
            "`ok` and measured in both; a flip is an entry whose status differs."
        ),
        Table(["", "value"], figures),
        Heading(3, "Largest speedup deviations"),
        Table(["entry", f"this run ({run.name})", f"other ({other})", "deviation"], largest),
        Heading(3, "Status flips"),
        Table(["entry", "this run", "other", "reasons here", "reasons there"], flips),
    ]


def _claim_blocks(run: Run) -> list[Block]:
    """The source's own speedups beside the measured ones, largest disagreements first, with
    what the solution does (techniques) and where its time goes (its longest kernels)."""
    if not run.claims:
        return []
    pairs = sorted(run.claims, key=lambda p: -abs(math.log(p[2] / p[1])))
    ratios = [m / c for _, c, m in pairs]
    within = sum(1 for x in ratios if 0.8 <= x <= 1.25)
    rows = [
        [
            r.get("task_id") or r["key"],
            fmt(claimed),
            fmt(measured),
            fmt(measured / claimed),
            ", ".join(r.get("techniques") or []) or "-",
            _top_kernels(r),
        ]
        for r, claimed, measured in pairs[:CLAIM_ROWS]
    ]
    return [
        Heading(2, "Claimed against measured"),
        Para(
            f"{len(pairs)} correct solutions whose source reported a speedup against eager; the "
            f"measured one is within 0.8x to 1.25x of the claim for {within} of them. The "
            f"{len(rows)} largest disagreements:"
        ),
        Table(
            ["task", "claimed", "measured", "measured / claimed", "techniques", "longest kernels"],
            rows,
        ),
    ]


def _top_kernels(row: dict[str, Any], count: int = 2) -> str:
    kernels = ((row.get("result") or {}).get("provenance") or {}).get("kernels") or []
    longest = sorted(kernels, key=lambda k: -k.get("ms", 0.0))[:count]
    return "; ".join(f"{k['name'][:48]} ({fmt(k['ms'])} ms)" for k in longest) or "-"


def _refused_blocks(rows: list[dict[str, Any]]) -> list[Block]:
    """The audit: every solution not accepted as an honest speedup, and whether its source
    claimed one anyway."""
    out = refused(rows)
    claimed = sum(r["claimed_speedup"] for r in out)
    table = Table(
        ["task", "status", "reasons", "flags", "source claimed a speedup"],
        [
            [
                r["task_id"] + (f" sample {r['sample']}" if r["sample"] is not None else ""),
                r["status"],
                "; ".join(r["reasons"]) or "-",
                ", ".join(r["flags"]) or "-",
                _claim(r),
            ]
            for r in out
        ],
    )
    counts = Table(["reason", "rows"], [[k, str(v)] for k, v in refusal_counts(rows).items()])
    return [
        Heading(2, f"Refused or flagged ({claimed} of them claimed a speedup by the source)"),
        Para(
            f"{len(out)} solutions were refused or flagged; their source reported a speedup "
            f"over eager for {claimed} of them."
        ),
        table,
        Heading(3, "Refusals by reason"),
        counts,
    ]


def _claim(r: dict[str, Any]) -> str:
    if r["claimed"] is None:
        return "-"
    return f"{'yes' if r['claimed_speedup'] else 'no'} ({fmt(r['claimed'])}x)"


def _technique_blocks(run: Run) -> list[Block]:
    rows = [
        [t["technique"], str(t["n"]), fmt(t["median"]), fmt(t["geomean"])]
        for t in technique_table(run.rows, run.primary)
    ]
    return [
        Heading(2, f"Techniques (correct solutions, speedup vs {run.primary})"),
        Table(["technique", "n", "median", "geomean"], rows),
    ]


def _task_order(row: dict[str, Any]) -> tuple[int, int, str, int]:
    """L1_2 before L1_10: by level, then task number."""
    key = row.get("task_id") or row.get("key") or ""
    sample = row.get("sample") or 0
    m = re.fullmatch(r"L(\d+)_(\d+)", key)
    return (int(m.group(1)), int(m.group(2)), key, sample) if m else (1 << 30, 0, key, sample)


def _status(row: dict[str, Any]) -> str:
    result = row.get("result")
    if not result:
        return f"error ({row.get('error') or 'not evaluated'})"
    return "ok (unmeasured)" if unmeasured(row) else result["status"]


def _task_table(run: Run) -> Table:
    """One row per solution (per sample when the run has several per task)."""
    with_samples = bool(samples_in(run.rows))
    columns = ["task", *(["sample"] if with_samples else []), "level", "split", "status"]
    columns += [f"vs {b}" for b in run.baselines] + ["roofline fraction", "techniques"]
    rows = []
    for r in sorted(run.rows, key=_task_order):
        roof = r.get("roofline") or {}
        fraction = fmt(roof.get("fraction")) + (" (beyond roofline)" if roof.get("beyond") else "")
        rows.append(
            [r.get("task_id") or r.get("key") or "-"]
            + ([_text(r.get("sample"))] if with_samples else [])
            + [_text(r.get("level")), _text(r.get("split")), _status(r)]
            + [fmt(speedup_of(r, b)) for b in run.baselines]
            + [fraction, ", ".join(r.get("techniques") or []) or "-"]
        )
    return Table(columns, rows)


def _code_blocks(run: Run, limit: int | None) -> list[Block]:
    """Correct solutions beside their references, fastest first (`limit` of them, or all)."""
    correct = [
        r for r in run.rows if (r.get("result") or {}).get("status") == "ok" and r.get("code")
    ]
    correct.sort(key=lambda r: -(speedup_of(r, run.primary) or 0.0))
    shown = correct if limit is None else correct[:limit]
    if not shown:
        return []
    title = "Solutions beside their references"
    if limit is not None and len(correct) > limit:
        title += f" (the fastest {limit} of {len(correct)}; the HTML report has all)"
    blocks: list[Block] = [Heading(2, title)]
    for r in shown:
        task = r.get("task_id") or r["key"]
        name = f" {r['name']}" if r.get("name") else ""
        sample = f" (sample {r['sample']})" if r.get("sample") is not None else ""
        head = f"{task}{name}{sample}: {fmt(speedup_of(r, run.primary))}x vs {run.primary}"
        blocks.append(CodePair(head, r["code"], run.references.get(task)))
    return blocks


# --- plots (HTML only) --------------------------------------------------------------------


def _plot_blocks(run: Run) -> list[Block]:
    """Speedup per level against each baseline, and speedup against roofline fraction (a bench
    run) or each answer's speedup in the order written (an optimize run, which measures no
    roofline)."""
    from matplotlib.figure import Figure  # imported here: it costs start-up time elsewhere

    blocks: list[Block] = [Heading(2, "Plots")]
    second = (
        ("speedup of each answer, in the order written", _draw_answers)
        if _kind(run) == "optimize"
        else ("speedup against roofline fraction", _draw_roofline)
    )
    plots = [("speedup per level against each baseline", _draw_levels), second]
    if run.claims:
        plots.append(("claimed against measured speedup", _draw_claims))
    for alt, draw in plots:
        fig = Figure(layout="constrained")
        if draw(fig, run):
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=100)
            blocks.append(Image(alt, buf.getvalue()))
        else:
            blocks.append(Para(f"No data for a plot of {alt}."))
    return blocks


def _draw_levels(fig: Any, run: Run) -> bool:
    """One panel per baseline: a box and the points of correct speedups per level, log scale."""
    panels = []
    for b in run.baselines:
        by_level: dict[int, list[float]] = {}
        for r in run.rows:
            s = speedup_of(r, b)
            if s and r.get("level") is not None:
                by_level.setdefault(r["level"], []).append(s)
        if by_level:
            panels.append((b, dict(sorted(by_level.items()))))
    if not panels:
        return False
    fig.set_size_inches(4.2 * len(panels), 3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (b, by_level) in zip(axes, panels, strict=True):
        positions = list(range(1, len(by_level) + 1))
        ax.boxplot(list(by_level.values()), positions=positions, widths=0.5, showfliers=False)
        for pos, values in zip(positions, by_level.values(), strict=True):
            jitter = [pos + 0.15 * math.sin(7.0 * i) for i in range(len(values))]
            ax.scatter(jitter, values, s=12, alpha=0.6, color="C0")
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        _log_scale(ax, "y")
        ax.set_xticks(positions, [f"level {lv}" for lv in by_level])
        ax.set_ylabel(f"speedup vs {b}")
        ax.set_title(f"vs {b} (correct solutions)")
    return True


def _draw_answers(fig: Any, run: Run) -> bool:
    """Per task: each correct answer's speedup against eager by its number, the best so far as
    a step line, and the answers that were not correct counted in the legend."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in run.rows:
        by_task.setdefault(r["task_id"], []).append(r)
    if not any(speedup_of(r, "eager") for rows in by_task.values() for r in rows):
        return False
    fig.set_size_inches(5.5, 3.6)
    ax = fig.subplots()
    for i, (task, rows) in enumerate(by_task.items()):
        points = [(r["sample"], s) for r in rows if (s := speedup_of(r, "eager")) is not None]
        failed = len(rows) - len(points)
        ax.scatter(
            [p[0] for p in points],
            [p[1] for p in points],
            s=24,
            color=f"C{i}",
            label=f"{task}: {len(points)} correct, {failed} not",
        )
        best, steps = 1.0, []
        for r in rows:
            best = max(best, speedup_of(r, "eager") or 0.0)
            steps.append(best)
        ax.step([r["sample"] for r in rows], steps, where="post", color=f"C{i}", alpha=0.5)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    _log_scale(ax, "y")
    ax.set_xlabel("answer (in the order written)")
    ax.set_ylabel("speedup vs eager")
    ax.legend(fontsize="small")
    return True


def _draw_roofline(fig: Any, run: Run) -> bool:
    """Speedup against the fraction of the roofline reached; points past the roofline are
    marked, since they point at a measurement the evaluator should not have trusted."""
    points = [
        (r["roofline"]["fraction"], s, bool(r["roofline"].get("beyond")), r.get("level"))
        for r in run.rows
        if (r.get("roofline") or {}).get("fraction") and (s := speedup_of(r, run.primary))
    ]
    if not points:
        return False
    fig.set_size_inches(5.5, 4.0)
    ax = fig.subplots()
    for level in sorted({p[3] for p in points}, key=str):
        mine = [p for p in points if p[3] == level]
        ax.scatter([p[0] for p in mine], [p[1] for p in mine], s=16, label=f"level {level}")
    beyond = [p for p in points if p[2]]
    if beyond:
        ax.scatter(
            [p[0] for p in beyond],
            [p[1] for p in beyond],
            s=80,
            facecolors="none",
            edgecolors="red",
            label="beyond roofline",
        )
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    _log_scale(ax, "x", "y")
    ax.set_xlabel("roofline fraction (floor time / candidate time)")
    ax.set_ylabel(f"speedup vs {run.primary}")
    ax.legend(fontsize="small")
    return True


def _draw_claims(fig: Any, run: Run) -> bool:
    """Claimed against measured speedup over eager, log axes, the line where they agree."""
    pairs = run.claims
    if not pairs:
        return False
    fig.set_size_inches(5.0, 4.6)
    ax = fig.subplots()
    for level in sorted({r.get("level") for r, _, _ in pairs}, key=str):
        mine = [(c, m) for r, c, m in pairs if r.get("level") == level]
        ax.scatter([c for c, _ in mine], [m for _, m in mine], s=16, label=f"level {level}")
    values = [v for _, c, m in pairs for v in (c, m)]
    lo, hi = min(values) / 1.2, max(values) * 1.2
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--", linewidth=1, label="as claimed")
    _log_scale(ax, "x", "y")
    ax.set_xlabel("claimed speedup vs eager (the source's)")
    ax.set_ylabel("measured speedup vs eager")
    ax.legend(fontsize="small")
    return True


def _log_scale(ax: Any, *which: str) -> None:
    """Log scale labelled 0.5, 1, 2, 5 rather than in powers of ten (speedups span little);
    only 1-2-5 ticks are labelled so wide ranges stay legible."""
    from matplotlib.ticker import FuncFormatter

    label = FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "125" else "")
    for name in which:
        getattr(ax, f"set_{name}scale")("log")
        axis = getattr(ax, f"{name}axis")
        axis.set_major_formatter(label)
        axis.set_minor_formatter(label)


# --- Markdown -----------------------------------------------------------------------------


def render_markdown(run_dir: Path, compare: Sequence[Path] = ()) -> str:
    return _markdown(load_run(run_dir, compare))


def _markdown(run: Run) -> str:
    return "\n\n".join(_md_block(b) for b in _blocks(run, html_page=False)) + "\n"


def _md_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {block.text}"
    if isinstance(block, Para):
        return block.text
    if isinstance(block, Table):
        return _md_table(block)
    if isinstance(block, CodePair):
        reference = _fence(block.reference) if block.reference else "(reference not available)"
        return f"### {block.title}\n\nSolution:\n\n{_fence(block.solution)}\n\nReference:\n\n{reference}"
    raise TypeError(f"no Markdown form for {type(block).__name__}")


def _md_table(table: Table) -> str:
    if not table.rows:
        return "(none)"

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join(
        [line(table.columns), line(["---"] * len(table.columns))] + [line(r) for r in table.rows]
    )


def _fence(code: str) -> str:
    """A fence longer than any run of backticks in the code, so the code cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}python\n{code.rstrip()}\n{ticks}"


# --- HTML ---------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.pair { display: flex; gap: 1em; }
.pair > div { flex: 1; min-width: 0; }
pre { background: #f7f7f7; padding: 0.5em; overflow: auto; max-height: 40em; font-size: 0.8em; }
summary { cursor: pointer; margin: 0.3em 0; }
img { max-width: 100%; }
"""


def render_html(run_dir: Path, compare: Sequence[Path] = ()) -> str:
    return _html(load_run(run_dir, compare))


def _html(run: Run) -> str:
    body = "\n".join(_html_block(b) for b in _blocks(run, html_page=True))
    title = escape(f"cudal1 bench report: {run.name}")
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
        f"<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _inline(text: str) -> str:
    """Escaped text with `backticks` turned into <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        return f"<p>{_inline(block.text)}</p>"
    if isinstance(block, Table):
        return _html_table(block)
    if isinstance(block, CodePair):
        return _html_pair(block)
    png = base64.b64encode(block.png).decode()
    return f'<p><img alt="{escape(block.alt)}" src="data:image/png;base64,{png}"></p>'


def _html_table(table: Table) -> str:
    if not table.rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_pair(pair: CodePair) -> str:
    reference = (
        f"<pre>{escape(pair.reference)}</pre>" if pair.reference else "<p>(not available)</p>"
    )
    return (
        f'<details><summary>{escape(pair.title)}</summary>\n<div class="pair">'
        f"<div><h4>solution</h4><pre>{escape(pair.solution)}</pre></div>"
        f"<div><h4>reference</h4>{reference}</div></div></details>"
    )


# --- files --------------------------------------------------------------------------------


def write_report(
    run_dir: Path,
    html: bool,
    csv: bool = False,
    json_: bool = False,
    compare: Sequence[Path] = (),
) -> list[Path]:
    """RUN_DIR/report.md always; report.html, solutions.csv and report.json when asked; returns
    the paths written. With `compare`, every format sets other runs of the same entries beside
    this one."""
    return write_files(load_run(run_dir, compare), run_dir, html, csv, json_)


def write_files(run: Run, run_dir: Path, html: bool, csv: bool, json_: bool) -> list[Path]:
    """The report's files from a run loaded once (with its suite's reference sources) for all."""
    md_path = run_dir / "report.md"
    md_path.write_text(_markdown(run), encoding="utf-8")
    paths = [md_path]
    if html:
        paths.append(run_dir / "report.html")
        paths[-1].write_text(_html(run), encoding="utf-8")
    if csv:
        paths.append(write_csv(run_dir / "solutions.csv", run.rows, run.baselines))
    if json_:
        paths.append(
            write_json(
                run_dir / "report.json", run.name, run.meta, run.rows, run.baselines, run.compared
            )
        )
    return paths
