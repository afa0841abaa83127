"""The slowed-baseline rule (HACKS.md #10) on timings as the H200 measured them: host-bound
noise costs an honest candidate its paired speedup but never a refusal; a reference slowed by
more than that noise reaches is refused."""

from pathlib import Path

import pytest

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.evaluator import _check_baseline, _Run
from cudal1.evaluate.result import EvalResult, Timing, TimingStats
from cudal1.evaluate.static import analyze
from cudal1.tasks import load_suite

TASK = load_suite("bundled", validate=False).get("L1_20")


def _stats(median_ms: float, spread: float = 0.03) -> TimingStats:
    return TimingStats(140, median_ms, median_ms * (1 - spread), median_ms * (1 + spread))


def _check(beside_ms: float, clean_ms: float, candidate_ms: float, device: str = "cuda"):
    config = EvalConfig(device=device)
    result = EvalResult("ok", TASK.id, TASK.hash, "c", device, "any", "calibrated")
    run = _Run(config, TASK, result, analyze("class ModelNew: pass"), Path("."))
    timing = Timing(
        candidate=_stats(candidate_ms),
        reference=_stats(beside_ms),
        reference_clean=_stats(clean_ms),
        speedup=beside_ms / candidate_ms,
        speedup_low=beside_ms / candidate_ms,
        speedup_high=beside_ms / candidate_ms,
        bucket_speedups=[],
        bucket_spread=0.0,
        remeasured=0,
    )
    _check_baseline(run, timing)
    return run, timing


def test_host_bound_drift_is_flagged_and_neutralised_not_refused():
    # L1_39 (an honest pure-PyTorch L2 norm): 0.1027 ms beside the candidate, 0.0478 ms alone
    run, timing = _check(0.1027, 0.0478, 0.05)
    assert run.rejections == []
    assert any(f.startswith("baseline_drift:") for f in run.result.flags)
    assert timing.speedup_basis == "clean reference"
    assert timing.speedup == pytest.approx(0.0478 / 0.05)


def test_reference_slowed_beyond_the_noise_is_refused():
    run, timing = _check(2.5, 0.4, 0.35)  # a GEMM held back by a GPU hog for 2 ms a call
    assert [r.split(":")[0] for r in run.rejections] == ["slowed_baseline"]
    assert timing.speedup == pytest.approx(0.4 / 0.35)


def test_reference_beside_the_candidate_no_slower_leaves_the_paired_speedup():
    run, timing = _check(0.031, 0.032, 0.02)
    assert run.result.flags == [] and timing.speedup_basis == "paired"


@pytest.mark.parametrize(
    ("beside", "clean", "refused"), [(4.0, 1.0, False), (30.0, 1.0, True), (25.0, 10.0, False)]
)
def test_cpu_needs_both_a_threefold_ratio_and_five_milliseconds(beside, clean, refused):
    run, _ = _check(beside, clean, 1.0, device="cpu")
    assert bool(run.rejections) is refused
