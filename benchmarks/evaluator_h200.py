"""Evaluator on the H200: the red-team and honest corpora with their verdicts, repeatability of
the speedup, and GPU-seconds per evaluation.

    PYTHONPATH=src:. python3 benchmarks/evaluator_h200.py --out $OUT [--jobs 6] [--repeat 5]

Evaluations run concurrently (`--jobs`): process start-up and compilation overlap, and every
phase that uses the device takes the device lock, so no two measurements share the GPU.
Writes `corpora.jsonl`, `repeatability.jsonl` and `summary.md` under --out; prints the summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from cudal1.evaluate import EvalConfig, evaluate
from cudal1.tasks import load_suite
from tests.corpus import Case, load_cases

REPEAT_CASES = [
    "triton_gelu_erf@L1_20",
    "conv_bn_relu_folded@L2_8",
    "mlp_addmm_relu_inplace@L3_1",
]
"""One honest candidate per level (policy `any`) for the repeatability and cost figures."""


def config_for(case: Case) -> EvalConfig:
    return EvalConfig(
        device=case.device,
        policy=case.policy,
        tolerance=case.tolerance,
        static_gate=case.static,  # type: ignore[arg-type]
    )


def run_case(case: Case) -> dict:
    task = load_suite("bundled", validate=False).get(case.task)
    t0 = time.perf_counter()
    result = evaluate(task, case.source, config_for(case))
    expected_flag_ok = case.flag_found(result.flags)
    return {
        "corpus": case.corpus,
        "case": case.id,
        "file": case.file,
        "device": case.device,
        "hack": case.hack,
        "expected": list(case.status),
        "expected_flag": case.flag,
        "pass": result.status in case.status and expected_flag_ok,
        "wall_s": round(time.perf_counter() - t0, 2),
        "result": result.to_dict(),
    }


def corpora(out: Path, jobs: int, device: str | None, only: set[str] | None = None) -> list[dict]:
    cases = load_cases("redteam", device) + load_cases("honest", device)
    if only:
        cases = [c for c in cases if c.id in only]
    rows = []
    with ThreadPoolExecutor(jobs) as pool, (out / "corpora.jsonl").open("w") as f:
        futures = {pool.submit(run_case, c): c for c in cases}
        for fut in as_completed(futures):
            case = futures[fut]
            try:
                row = fut.result()
            except Exception as e:  # a harness failure is a finding, not a crash of the script
                row = {"corpus": case.corpus, "case": case.id, "pass": False, "error": repr(e)}
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
            status = row.get("result", {}).get("status", "ERROR")
            print(
                f"{'PASS' if row['pass'] else 'FAIL'} {row['corpus']:8} {row['case']:45} {status}",
                flush=True,
            )
    return rows


def repeatability(out: Path, repeat: int, cases: list[str]) -> list[dict]:
    rows = []
    honest = {c.id: c for c in load_cases("honest", "cuda") if c.policy == "any"}
    with (out / "repeatability.jsonl").open("w") as f:
        for key in cases:
            key, _, count = key.partition("=")
            case = honest.get(key)
            if case is None:
                continue
            for i in range(int(count or repeat)):
                row = run_case(case)
                row["run"] = i
                rows.append(row)
                f.write(json.dumps(row) + "\n")
    return rows


def summarize(corpus_rows: list[dict], repeat_rows: list[dict]) -> str:
    lines = ["# Evaluator on the H200", ""]
    for corpus in ("redteam", "honest"):
        rows = [r for r in corpus_rows if r["corpus"] == corpus]
        passed = sum(r["pass"] for r in rows)
        lines.append(f"- {corpus}: {passed}/{len(rows)} cases give the expected verdict")
        for r in rows:
            if not r["pass"]:
                res = r.get("result", {})
                lines.append(
                    f"  - FAIL {r['case']}: got {res.get('status')} {res.get('reasons', [])[:2]} "
                    f"expected {r.get('expected')} flag {r.get('expected_flag')} {r.get('error', '')}"
                )
    lines += [
        "",
        "| case | runs | speedup min | speedup max | spread | candidate ms | GPU s/eval |",
        "|---|---|---|---|---|---|---|",
    ]
    by_case: dict[str, list[dict]] = {}
    for r in repeat_rows:
        by_case.setdefault(r["case"], []).append(r)
    for case, rows in by_case.items():
        ok = [r["result"] for r in rows if r["result"]["status"] == "ok"]
        if not ok:
            lines.append(
                f"| {case} | {len(rows)} | - | - | - | - | not ok: {rows[0]['result']['reasons'][:1]} |"
            )
            continue
        sp = [r["speedup"] for r in ok]
        gpu_s = [r["phase_seconds"].get("device", 0.0) for r in ok]  # device-lock seconds
        lines.append(
            f"| {case} | {len(ok)} | {min(sp):.4f} | {max(sp):.4f} | {max(sp) / min(sp) - 1:.2%} | "
            f"{statistics.median(r['candidate_ms'] for r in ok):.4f} | {statistics.median(gpu_s):.2f} |"
        )
    all_ok = [r["result"] for r in corpus_rows if r.get("result", {}).get("status") == "ok"]
    if all_ok:
        gpu_s = [
            r["phase_seconds"].get("device", 0.0)  # device-lock seconds
            for r in all_ok
            if r["device"] == "cuda"
        ]
        if gpu_s:
            lines.append(
                f"\nGPU-seconds per ok CUDA evaluation over the corpora (correctness+timing+profile): "
                f"median {statistics.median(gpu_s):.2f}, max {max(gpu_s):.2f} (n={len(gpu_s)})"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-corpora", action="store_true")
    parser.add_argument("--device", choices=["cuda", "cpu"], default=None, help="Only these cases.")
    parser.add_argument("--only", default=None, help="Comma-separated case ids (file@task) to run.")
    parser.add_argument(
        "--repeat-cases",
        default=",".join(REPEAT_CASES),
        help="Comma-separated case ids for repeatability, each optionally =COUNT (else --repeat).",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    corpus_rows = (
        []
        if args.skip_corpora
        else corpora(
            args.out, args.jobs, args.device, set(args.only.split(",")) if args.only else None
        )
    )
    t1 = time.perf_counter()
    repeat_rows = (
        repeatability(args.out, args.repeat, args.repeat_cases.split(",")) if args.repeat else []
    )
    summary = summarize(corpus_rows, repeat_rows)
    summary += f"\n\nwall: corpora {t1 - t0:.0f} s, repeatability {time.perf_counter() - t1:.0f} s"
    (args.out / "summary.md").write_text(summary + "\n")
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
