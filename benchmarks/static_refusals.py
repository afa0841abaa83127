"""CUDA-L1's release through the static layer alone (CPU, no execution): how many entries each
refusal reason covers under this checkout's rules and under an earlier revision's.

    PYTHONPATH=src python3 benchmarks/static_refusals.py ../shared/data/cuda-l1-h100.jsonl \\
        --before 3758037 --out benchmarks/results/DATE-cpu/static_refusals.md

A refusal reason is a flag of the static report that rejects under policy `any` (REJECT_ANY of
each revision); an entry counts once per reason it carries. The earlier revision's
`evaluate/static.py` is read with `git show` and run beside the current one.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from cudal1.evaluate import static as current


def static_at(revision: str) -> ModuleType:
    text = subprocess.run(
        ["git", "show", f"{revision}:src/cudal1/evaluate/static.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "static_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("static_before", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def refusals(module: ModuleType, code: str) -> set[str]:
    report = module.analyze(code)
    return {f.split(":", 1)[0] for f in report.flags} & module.REJECT_ANY


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("release", type=Path)
    parser.add_argument("--before", required=True, help="The revision to compare with.")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    before = static_at(args.before)
    entries = [json.loads(line) for line in args.release.read_text().splitlines() if line.strip()]
    codes = [(f"L{e['level_id']}_{e['task_id']}", e.get("custom_code")) for e in entries]
    codes = [(tid, c) for tid, c in codes if c]
    counts: dict[str, collections.Counter[str]] = {
        "before": collections.Counter(),
        "now": collections.Counter(),
    }
    refused = {"before": 0, "now": 0}
    changed = []
    for tid, code in codes:
        old, new = refusals(before, code), refusals(current, code)
        counts["before"].update(old)
        counts["now"].update(new)
        refused["before"] += bool(old)
        refused["now"] += bool(new)
        if old != new:
            changed.append((tid, sorted(old), sorted(new)))
    reasons = sorted(set(counts["before"]) | set(counts["now"]))
    lines = [
        f"# CUDA-L1's release through the static layer: {args.before} against this checkout",
        "",
        f"`PYTHONPATH=src python3 benchmarks/static_refusals.py {args.release.name} "
        f"--before {args.before}` over the {len(codes)} entries with a solution.",
        "",
        "| refusal reason (policy any) | entries before | entries now |",
        "|---|---|---|",
        *(f"| {r} | {counts['before'][r]} | {counts['now'][r]} |" for r in reasons),
        f"| **entries refused by the static layer** | **{refused['before']}** | "
        f"**{refused['now']}** |",
        "",
        "Entries whose static refusals changed:",
        "",
        *(
            f"- {tid}: {', '.join(o) or 'none'} -> {', '.join(n) or 'none'}"
            for tid, o, n in changed
        ),
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
