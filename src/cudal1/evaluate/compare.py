"""Trusted output comparison: tolerance calibration and the pass/fail rule for one output set.

Runs only where candidate code never ran (the judge process, or task hygiene checks).

Calibrated mode (the default): the fp32 reference's own error against an fp64 run of the same
model on the same inputs sets the bar. A candidate passes when, element by element,
`|y - y64| <= atol + rtol * |y64|` with `atol = FACTOR * max|y32 - y64|` (floored at a tiny
fraction of the output's RMS) and `rtol = FACTOR * eps(fp32)`, and its relative L2 error is at
most `FACTOR` times the reference's. FACTOR = 16 leaves room for another summation order
(errors of the same size as the reference's) but not for TF32 (about 2^13 times fp32's epsilon)
or bf16 arithmetic, which is the point: a hidden precision downgrade fails.

KernelBench mode: `allclose(y, y32, atol=1e-2, rtol=1e-2)`, for comparison with published numbers.

Both modes require the same structure, dtype and shape, and non-finite values (NaN, +inf, -inf)
exactly where the fp32 reference has them. Integer and boolean outputs must match the fp32
reference exactly, up to FACTOR times the number of elements where fp32 and fp64 disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import torch

ToleranceMode = Literal["calibrated", "kernelbench"]
TOLERANCE_MODES: tuple[ToleranceMode, ...] = ("calibrated", "kernelbench")

FACTOR = 16.0
FP32_EPS = float(torch.finfo(torch.float32).eps)
RMS_FLOOR = 1e-6
"""atol never falls below this fraction of the output's RMS (exact references, like max-pool)."""
KERNELBENCH_TOL = 1e-2


class OutputStructureError(ValueError):
    """The model returned something other than tensors, or tuples/lists of tensors."""


def flatten_outputs(out: Any) -> tuple[list[torch.Tensor], str]:
    """Tensors of a (possibly nested) tuple/list output, and a structure string to compare."""
    if isinstance(out, torch.Tensor):
        return [out], "T"
    if isinstance(out, (tuple, list)):
        tensors: list[torch.Tensor] = []
        parts = []
        for item in out:
            t, s = flatten_outputs(item)
            tensors += t
            parts.append(s)
        return tensors, "(" + ",".join(parts) + ")"
    raise OutputStructureError(
        f"output of type {type(out).__name__}: forward must return tensors (or tuples of them)"
    )


def foreign_outputs(out: Any) -> list[str]:
    """Type names of the outputs that are tensors but not plain `torch.Tensor`s, found without
    calling anything on them: a subclass's hooks run on every torch call it is given, so a lazy
    one computes when it is inspected (cloned, compared, saved)."""
    try:
        tensors, _ = flatten_outputs(out)
    except OutputStructureError:
        return []
    return [type(t).__name__ for t in tensors if type(t) is not torch.Tensor]


@dataclass(frozen=True)
class OutputTolerance:
    """The bar for one output tensor; `max_rel_l2`/`max_mismatches` apply in calibrated mode."""

    mode: ToleranceMode
    atol: float
    rtol: float
    max_rel_l2: float | None = None
    max_mismatches: int | None = None
    """For integer/bool outputs: how many elements may differ from the fp32 reference."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str
    max_abs_err: float
    max_rel_err: float
    rel_l2: float
    tolerance_ratio: float
    """Worst |err| / (atol + rtol*|y|) over elements; <= 1 passes."""


def _is_exact(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex())


def calibrate(
    ref32: list[torch.Tensor], ref64: list[torch.Tensor], mode: ToleranceMode = "calibrated"
) -> list[OutputTolerance]:
    """Per-output tolerance from one trial's fp32 and fp64 reference outputs."""
    if mode == "kernelbench":
        return [OutputTolerance("kernelbench", KERNELBENCH_TOL, KERNELBENCH_TOL) for _ in ref32]
    tols = []
    for y32, y64 in zip(ref32, ref64, strict=True):
        if _is_exact(y32):
            mismatches = int((y32 != y64.to(y32.dtype)).sum())
            tols.append(OutputTolerance(mode, 0.0, 0.0, None, int(FACTOR * mismatches)))
            continue
        finite = torch.isfinite(y32) & torch.isfinite(y64)
        a = y32.double()[finite]
        b = y64.double()[finite]
        if b.numel() == 0:
            tols.append(OutputTolerance(mode, 0.0, 0.0, 0.0))
            continue
        err = (a - b).abs()
        rms = float(b.pow(2).mean().sqrt())
        norm = float(b.norm())
        rel_l2 = float((a - b).norm()) / norm if norm > 0 else 0.0
        atol = max(FACTOR * float(err.max()), RMS_FLOOR * rms)
        tols.append(
            OutputTolerance(
                mode,
                atol=atol,
                rtol=FACTOR * FP32_EPS,
                max_rel_l2=max(FACTOR * rel_l2, 4 * FP32_EPS),
            )
        )
    return tols


def merge(a: list[OutputTolerance], b: list[OutputTolerance]) -> list[OutputTolerance]:
    """The looser of two calibrations, per output (calibrating over several trials)."""
    out = []
    for x, y in zip(a, b, strict=True):
        out.append(
            OutputTolerance(
                x.mode,
                max(x.atol, y.atol),
                max(x.rtol, y.rtol),
                None if x.max_rel_l2 is None else max(x.max_rel_l2, y.max_rel_l2 or 0.0),
                None if x.max_mismatches is None else max(x.max_mismatches, y.max_mismatches or 0),
            )
        )
    return out


def compare(
    cand: list[torch.Tensor],
    ref32: list[torch.Tensor],
    ref64: list[torch.Tensor],
    tols: list[OutputTolerance],
) -> Comparison:
    """Judge one trial: candidate outputs against the fp32 reference and the fp64 ground truth."""
    if len(cand) != len(ref32):
        return _fail(f"returned {len(cand)} tensors, the reference returns {len(ref32)}")
    worst = Comparison(True, "", 0.0, 0.0, 0.0, 0.0)
    for i, (y, y32, y64, tol) in enumerate(zip(cand, ref32, ref64, tols, strict=True)):
        name = f"output {i}" if len(cand) > 1 else "output"
        c = _compare_one(y, y32, y64, tol, name)
        if not c.ok:
            return c
        worst = Comparison(
            True,
            "",
            max(worst.max_abs_err, c.max_abs_err),
            max(worst.max_rel_err, c.max_rel_err),
            max(worst.rel_l2, c.rel_l2),
            max(worst.tolerance_ratio, c.tolerance_ratio),
        )
    return worst


def _fail(reason: str, abs_err: float = float("inf"), rel: float = float("inf")) -> Comparison:
    return Comparison(False, reason, abs_err, rel, rel, float("inf"))


def _compare_one(
    y: torch.Tensor, y32: torch.Tensor, y64: torch.Tensor, tol: OutputTolerance, name: str
) -> Comparison:
    if y.dtype != y32.dtype:
        return _fail(f"{name} has dtype {y.dtype}, the reference {y32.dtype}")
    if y.shape != y32.shape:
        return _fail(f"{name} has shape {tuple(y.shape)}, the reference {tuple(y32.shape)}")
    y = y.to(y32.device)
    if _is_exact(y32):
        mismatches = int((y != y32).sum())
        allowed = tol.max_mismatches if tol.mode == "calibrated" else 0
        ok = mismatches <= (allowed or 0)
        frac = mismatches / max(1, y.numel())
        reason = "" if ok else f"{name}: {mismatches} of {y.numel()} elements differ (exact dtype)"
        return Comparison(ok, reason, float(mismatches), frac, frac, 0.0 if ok else float("inf"))

    nonfinite_ref = ~torch.isfinite(y32)
    nonfinite_cand = ~torch.isfinite(y)
    if not torch.equal(nonfinite_ref, nonfinite_cand):
        n = int((nonfinite_ref != nonfinite_cand).sum())
        return _fail(f"{name}: NaN/Inf at {n} positions where the reference differs")
    if bool(nonfinite_ref.any()):
        same = torch.equal(
            torch.nan_to_num(y[nonfinite_ref], nan=0.0),
            torch.nan_to_num(y32[nonfinite_ref], nan=0.0),
        ) and torch.equal(torch.isnan(y[nonfinite_ref]), torch.isnan(y32[nonfinite_ref]))
        if not same:
            return _fail(
                f"{name}: non-finite values differ from the reference's (NaN vs Inf, or sign)"
            )

    finite = ~nonfinite_ref
    truth = (y32 if tol.mode == "kernelbench" else y64).double()[finite]
    got = y.double()[finite]
    if truth.numel() == 0:
        return Comparison(True, "", 0.0, 0.0, 0.0, 0.0)
    err = (got - truth).abs()
    bound = tol.atol + tol.rtol * truth.abs()
    ratio = float((err / bound).max()) if bool((bound > 0).all()) else _ratio_with_zero(err, bound)
    max_abs = float(err.max())
    rms = float(truth.pow(2).mean().sqrt())
    max_rel = float((err / truth.abs().clamp_min(1e-3 * rms if rms > 0 else 1e-30)).max())
    norm = float(truth.norm())
    rel_l2 = (
        float((got - truth).norm()) / norm if norm > 0 else (0.0 if max_abs == 0 else float("inf"))
    )
    if ratio != ratio:  # NaN can only come from 0/0; treat as exact
        ratio = 0.0
    if ratio > 1.0:
        where = int((err - bound).argmax())
        return Comparison(
            False,
            f"{name}: max abs error {max_abs:.3g} exceeds tolerance "
            f"(atol {tol.atol:.3g}, rtol {tol.rtol:.3g}; worst at flat index {where})",
            max_abs,
            max_rel,
            rel_l2,
            ratio,
        )
    if tol.max_rel_l2 is not None and rel_l2 > tol.max_rel_l2:
        return Comparison(
            False,
            f"{name}: relative L2 error {rel_l2:.3g} exceeds {tol.max_rel_l2:.3g} "
            "(FACTOR x the fp32 reference's own error against fp64)",
            max_abs,
            max_rel,
            rel_l2,
            ratio,
        )
    return Comparison(True, "", max_abs, max_rel, rel_l2, ratio)


def _ratio_with_zero(err: torch.Tensor, bound: torch.Tensor) -> float:
    """Worst ratio when some bounds are zero: any error there is infinitely over."""
    zero = bound == 0
    if bool((err[zero] > 0).any()):
        return float("inf")
    rest = ~zero
    return float((err[rest] / bound[rest]).max()) if bool(rest.any()) else 0.0
