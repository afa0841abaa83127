"""The slowed-baseline rule (HACKS.md #10) on timings as the H200 measured them: host-bound
noise never costs an honest candidate a refusal, and when the reference drifts the clean one is
set against the candidate timed the same way (back to back); a reference slowed by more than
that noise reaches is refused."""

from pathlib import Path

import pytest

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.evaluator import _check_baseline, _Run
from cudal1.evaluate.result import EvalResult, Timing, TimingStats
from cudal1.evaluate.static import analyze
from cudal1.tasks import load_suite

from .corpus import load_cases, run_case
from .corpus import test_config as corpus_config

TASK = load_suite("bundled", validate=False).get("L1_20")


def _stats(median_ms: float, spread: float = 0.03) -> TimingStats:
    return TimingStats(140, median_ms, median_ms * (1 - spread), median_ms * (1 + spread))


def _check(
    beside_ms: float,
    clean_ms: float,
    candidate_ms: float,
    device: str = "cuda",
    alone_ms: float | None = None,
):
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
        candidate_alone=_stats(alone_ms) if alone_ms else None,
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


def test_drift_sets_the_clean_reference_against_the_candidate_timed_alone():
    # L1_49 on the H200: 0.0772 ms beside the candidate (0.0701 ms), 0.0265 ms alone; set
    # against the candidate's paired time the speedup fell from 1.20 to 0.38 between two runs
    run, timing = _check(0.077168, 0.02648, 0.07008, alone_ms=0.025)
    assert run.rejections == [] and timing.speedup_basis == "clean reference"
    assert timing.speedup == pytest.approx(0.02648 / 0.025)  # 1.06, not 0.38
    # the lower of the two stands: alone the candidate would seem 1.20x, paired it is 1.10x
    _, timing = _check(0.077168, 0.02648, 0.07008, alone_ms=0.022)
    assert timing.speedup_basis == "paired"
    assert timing.speedup == pytest.approx(0.077168 / 0.07008)


@pytest.mark.slow
def test_a_slowed_reference_gets_the_candidate_timed_alone_and_checked():
    """End to end on CPU: the candidate makes the reference beside it sleep 20 ms a call. The
    candidate is timed again alone, in the same hold of the device lock, and outputs sampled
    from both loops go to the judge."""
    (case,) = [
        c
        for c in load_cases("redteam", "cpu")
        if c.file == "slow_baseline_patch_via_module_dict.py"
    ]
    result = run_case(case)
    timing = result.timing
    assert result.status == "rejected", result.reasons
    assert "slowed_baseline" in {f.split(":")[0] for f in result.flags}
    assert timing is not None and timing.candidate_alone is not None
    assert timing.candidate_alone.samples == timing.candidate.samples
    assert timing.speedup_basis == "clean reference"
    assert timing.reference_clean is not None
    assert timing.speedup == pytest.approx(
        timing.reference_clean.median_ms / timing.candidate_alone.median_ms
    )
    assert result.correctness is not None
    assert result.correctness.timed_outputs_checked == 2 * corpus_config(case).timed_samples_checked


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
