"""Two runs of the same entries side by side: how far their speedups agree and which entries
changed verdict. It is the reproducibility check of an audit (run-a against run-b, the same code
measured twice) and the record of what changed since an earlier audit (`cudal1 report RUN
--compare EARLIER`).

Entries are matched by their key (task id, and sample where a source has several). The
deviation of one entry is larger/smaller - 1 of its two speedups against eager (the paired
measurement), so it does not depend on which run is named first; the same for the reference's
own time. Only results `ok` and measured in both runs count; a flip is an entry whose status
differs (a row with no result counts as its error).
"""

from __future__ import annotations

from typing import Any

from cudal1.report.summary import quantile

LARGEST = 10
"""How many of the largest speedup deviations the report lists."""


def _status(row: dict[str, Any]) -> str:
    result = row.get("result")
    return result["status"] if result else "error"


def _reasons(row: dict[str, Any]) -> list[str]:
    result = row.get("result")
    return (result.get("reasons") or []) if result else [row.get("error") or "not evaluated"]


def _deviation(a: float | None, b: float | None) -> float | None:
    """larger/smaller - 1 (not the timing module's spread, which divides by the median)."""
    if not a or not b or a <= 0 or b <= 0:
        return None
    return max(a, b) / min(a, b) - 1.0


def _figures(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None, "max": None}
    return {"median": quantile(values, 0.5), "p90": quantile(values, 0.9), "max": max(values)}


def agreement(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]) -> dict[str, Any]:
    """The two runs' agreement: entries in both, the speedup and reference-time deviations over
    those ok and measured in both, the largest deviations, and every status flip."""
    a = {r["key"]: r for r in rows_a if r.get("key")}
    b = {r["key"]: r for r in rows_b if r.get("key")}
    common = sorted(a.keys() & b.keys())
    measured, reference, flips = [], [], []
    for key in common:
        ra, rb = a[key].get("result") or {}, b[key].get("result") or {}
        if _status(a[key]) != _status(b[key]):
            flips.append(
                {
                    "key": key,
                    "a": _status(a[key]),
                    "b": _status(b[key]),
                    "reasons_a": _reasons(a[key]),
                    "reasons_b": _reasons(b[key]),
                }
            )
            continue
        if _status(a[key]) != "ok":
            continue
        deviation = _deviation(ra.get("speedup"), rb.get("speedup"))
        if deviation is None:  # unmeasured in one of them: nothing to compare
            continue
        measured.append((deviation, key, ra["speedup"], rb["speedup"]))
        ref = _deviation(ra.get("reference_ms"), rb.get("reference_ms"))
        if ref is not None:
            reference.append(ref)
    measured.sort(reverse=True)
    return {
        "common": len(common),
        "only_a": len(a.keys() - b.keys()),
        "only_b": len(b.keys() - a.keys()),
        "ok_both": len(measured),
        "speedup_deviation": _figures([m[0] for m in measured]),
        "reference_deviation": _figures(reference),
        "largest": [
            {"key": key, "deviation": d, "a": sa, "b": sb} for d, key, sa, sb in measured[:LARGEST]
        ],
        "flips": flips,
    }


def headline(other: str, agree: dict[str, Any]) -> str:
    """One line for the terminal: the figures a reader checks first."""
    dev = agree["speedup_deviation"]
    if dev["median"] is None:
        spread = "no entry ok and measured in both"
    else:
        spread = (
            f"speedup deviation median {100 * dev['median']:.2f} %, "
            f"p90 {100 * dev['p90']:.2f} %, max {100 * dev['max']:.2f} %"
        )
    return (
        f"against {other}: {agree['common']} entries in both, {agree['ok_both']} ok and "
        f"measured in both; {spread}; {len(agree['flips'])} status flips"
    )
