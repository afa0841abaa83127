"""What the timing is compared with, on timings as the H200 measured them: the reference beside
the candidate against the reference alone in the judge (HACKS.md #10), where host-bound noise
never costs an honest candidate a refusal and a drifted reference is set against the candidate
timed the same way (back to back); and how much of a call keeps the GPU busy (`host_bound`)."""

from pathlib import Path

import pytest

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.evaluator import _check_baseline, _provenance, _Run, _timing_facts
from cudal1.evaluate.result import EvalResult, Timing, TimingStats
from cudal1.evaluate.static import analyze
from cudal1.tasks import load_suite

from .corpus import explain, load_cases, run_case
from .corpus import test_config as corpus_config

TASK = load_suite("bundled", validate=False).get("L1_20")


def _stats(median_ms: float, spread: float = 0.03) -> TimingStats:
    return TimingStats(140, median_ms, median_ms * (1 - spread), median_ms * (1 + spread))


def _run(device: str = "cuda") -> _Run:
    config = EvalConfig(device=device)
    result = EvalResult("ok", TASK.id, TASK.hash, "c", device, "any", "calibrated")
    return _Run(config, TASK, result, analyze("class ModelNew: pass"), Path("."))


def _timing_of(
    candidate: TimingStats, beside: TimingStats, clean: TimingStats, alone: TimingStats | None
) -> Timing:
    """A measurement as the timing loop reports it, the paired speedup from the medians."""
    paired = beside.median_ms / candidate.median_ms
    return Timing(
        candidate=candidate,
        reference=beside,
        reference_clean=clean,
        speedup=paired,
        speedup_low=paired,
        speedup_high=paired,
        bucket_speedups=[],
        bucket_spread=0.0,
        remeasured=0,
        candidate_alone=alone,
    )


def _timing(
    beside_ms: float, clean_ms: float, candidate_ms: float, alone_ms: float | None = None
) -> Timing:
    alone = _stats(alone_ms) if alone_ms else None
    return _timing_of(_stats(candidate_ms), _stats(beside_ms), _stats(clean_ms), alone)


def _check(
    beside_ms: float,
    clean_ms: float,
    candidate_ms: float,
    device: str = "cuda",
    alone_ms: float | None = None,
):
    run, timing = _run(device), _timing(beside_ms, clean_ms, candidate_ms, alone_ms)
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
    # L1_49 on the H200: 0.0772 ms beside the candidate (0.0701 ms), 0.0265 ms alone
    run, timing = _check(0.077168, 0.02648, 0.07008, alone_ms=0.025)
    assert run.rejections == [] and timing.speedup_basis == "clean reference"
    assert timing.speedup == pytest.approx(0.02648 / 0.025)
    # the lower of the two stands: alone the candidate would seem 1.20x, paired it is 1.10x
    _, timing = _check(0.077168, 0.02648, 0.07008, alone_ms=0.022)
    assert timing.speedup_basis == "paired"
    assert timing.speedup == pytest.approx(0.077168 / 0.07008)


def test_reference_slowed_beside_the_candidate_is_refused():
    run, _ = _check(2.5, 0.4, 0.35)  # a GEMM held back by a GPU hog for 2 ms a call
    assert [r.split(":")[0] for r in run.rejections] == ["slowed_baseline"]


def test_reference_as_fast_beside_the_candidate_leaves_the_paired_speedup():
    run, timing = _check(0.031, 0.032, 0.02)
    assert run.result.flags == [] and timing.speedup == pytest.approx(0.031 / 0.02)


@pytest.mark.parametrize(
    ("beside", "clean", "device", "refused"),
    [
        (1.10, 1.0, "cuda", False),  # within the two intervals and the ratio
        (1.40, 1.0, "cuda", True),
        (0.014, 0.009, "cuda", False),  # a host-bound 9 us reference: below the margin
        (4.0, 1.0, "cpu", False),  # a busy host can double CPU timings; 3 ms is noise
        (30.0, 1.0, "cpu", True),
        (25.0, 10.0, "cpu", False),
    ],
)
def test_ratio_and_margin(beside, clean, device, refused):
    run, _ = _check(beside, clean, 1.0, device=device)
    assert bool(run.rejections) is refused


# Rows of the 2026-12-06 H100 audit (run-b; L3_32 from run-a), all five refused at 7f9ac24:
# the candidate paired and alone, the reference beside it and alone in the judge.
AUDITED = {
    # host-bound level-3 models whose whole process ran slower in the paired loop
    "L3_30": (
        TimingStats(28, 22.7645, 22.3176, 23.0516),
        TimingStats(28, 11.9111, 11.8294, 11.9607),
        TimingStats(28, 21.3967, 20.8749, 21.7957),
        TimingStats(28, 13.9768, 12.0168, 15.1118),
        False,
    ),
    "L3_39": (
        TimingStats(21, 7.3929, 7.3865, 7.3957),
        TimingStats(21, 6.775, 6.767, 6.779),
        TimingStats(21, 40.1692, 39.5469, 41.3402),
        TimingStats(21, 32.3541, 32.22, 33.1382),
        False,
    ),
    "L3_41": (
        TimingStats(21, 20.2033, 20.1812, 20.2139),
        TimingStats(21, 18.218, 18.2078, 18.2326),
        TimingStats(21, 79.6109, 77.3001, 81.2062),
        TimingStats(21, 61.9421, 61.1793, 62.1134),
        False,
    ),
    # refused in one run, ok in the other; 0.197 ms over the paced clean one, under the margin
    "L3_32": (
        TimingStats(140, 0.6514, 0.65, 0.66),
        TimingStats(140, 0.647, 0.6468, 0.6475),
        TimingStats(140, 1.181, 1.1737, 1.1914),
        TimingStats(140, 0.9642, 0.9554, 0.9739),
        False,
    ),
    # refused in both runs: the reference slowed far more than the candidate did
    "L3_22": (
        TimingStats(140, 214.7428, 208.6158, 224.1977),
        TimingStats(140, 151.3257, 148.6425, 158.5934),
        TimingStats(140, 4.6608, 3.9912, 4.8196),
        TimingStats(140, 1.4567, 1.4557, 1.459),
        True,
    ),
}


@pytest.mark.parametrize("entry", sorted(AUDITED))
def test_a_host_that_slowed_both_is_not_a_slowed_baseline(entry):
    candidate, alone, beside, clean, refused = AUDITED[entry]
    timing = _timing_of(candidate, beside, clean, alone)
    run = _run()
    _check_baseline(run, timing)
    assert bool(run.rejections) is refused, run.result.flags
    assert any(f.startswith("baseline_drift:") for f in run.result.flags)
    # refused or not, the reward is the clean reference over the candidate timed alone
    assert timing.speedup == pytest.approx(
        min(beside.median_ms / candidate.median_ms, clean.median_ms / alone.median_ms)
    )


def test_a_candidate_slower_alone_does_not_make_the_refusal_easier():
    # alone 2x slower than paired: the pace stays 1 (not 0.5) and the plain ratio decides,
    # so a reference 1.2x slower beside it, within the two intervals and the ratio, passes
    run, _ = _check(1.20, 1.0, 1.0, alone_ms=2.0)
    assert run.rejections == [] and run.result.flags[0].startswith("baseline_drift:")
    run, _ = _check(1.40, 1.0, 1.0, alone_ms=2.0)
    assert [r.split(":")[0] for r in run.rejections] == ["slowed_baseline"]


@pytest.mark.slow
def test_a_reference_slowed_by_the_candidate_is_refused_end_to_end():
    """On CPU: the candidate makes the reference beside it sleep 20 ms a call."""
    (case,) = [
        c
        for c in load_cases("redteam", "cpu")
        if c.file == "slow_baseline_patch_via_module_dict.py"
    ]
    result = run_case(case)
    names = {f.split(":")[0] for f in result.flags}
    timing = result.timing
    if result.speedup is None:  # every timing disturbed: unmeasured, no reward either way
        assert names & {"host_shared", "gpu_shared"}, explain(result)
        return
    if result.status == "ok":
        # Once, on a loaded 2-core machine, this came back ok with no reason (its flags were
        # not printed then). An ok here is only right when the drift was seen but the
        # refusal's bound was not reached (with 14 pairs the clean reference's upper bound is
        # its 9th-fastest call, which stalls on a busy core can lift): the hack still gains
        # nothing, the speedup is the clean reference over the candidate timed alone.
        assert timing is not None, explain(result)
        assert "baseline_drift" in names and timing.speedup_basis == "clean reference", (
            f"{explain(result)}\ntiming: {timing}"
        )
        return
    assert result.status == "rejected", f"{explain(result)}\ntiming: {timing}"
    assert "slowed_baseline" in names
    assert timing is not None and timing.candidate_alone is not None
    assert timing.speedup_basis == "clean reference"
    assert result.correctness is not None  # outputs sampled from both loops went to the judge
    assert result.correctness.timed_outputs_checked == 2 * corpus_config(case).timed_samples_checked


def _kernels(*spans_us: tuple[float, float]) -> list[dict]:
    return [
        {"name": "k", "stream": 7, "start_us": start, "us": length} for start, length in spans_us
    ]


def test_launch_bound_calls_are_flagged_host_bound():
    # a 6 us kernel in a call the events time at 25 us: the rest is launch overhead
    run = _run()
    timing = _timing(0.1, 0.1, 0.025)
    prof = {
        "aten_ops": [],
        "kernels": _kernels((0.0, 6.0)),
        "reference_kernels": _kernels((0.0, 40.0), (50.0, 40.0)),
    }
    _provenance(run, prof, timing, compare_times=True)
    assert timing.candidate_gpu_busy == pytest.approx(6.0 / 25.0)
    assert timing.reference_gpu_busy == pytest.approx(0.8)
    (flag,) = [f for f in run.result.flags if f.startswith("host_bound")]
    assert "candidate 24%" in flag and "reference" not in flag
    assert run.rejections == []


def test_host_time_per_call_counts_when_the_events_see_only_the_gpu():
    """The GPU-side wait ahead of each timed call hides launching from the events: a 4 us
    kernel times at 4 us. The host's time per call in a batch (30 us) still shows that a
    stream of these calls is launch-bound."""
    run = _run()
    timing = _timing(0.005, 0.005, 0.0045)
    timing.host_ms_per_call = timing.stream_ms_per_call = 0.030
    timing.reference_host_ms_per_call = 0.008
    prof = {
        "aten_ops": [],
        "kernels": _kernels((0.0, 4.0)),
        "reference_kernels": _kernels((0.0, 4.8)),
    }
    _provenance(run, prof, timing, compare_times=True)
    assert timing.candidate_gpu_busy == pytest.approx(4.0 / 30.0, abs=1e-4)
    assert timing.reference_gpu_busy == pytest.approx(4.8 / 8.0)
    (flag,) = [f for f in run.result.flags if f.startswith("host_bound")]
    assert "candidate 13%" in flag and "reference" not in flag


def test_host_time_beyond_the_timed_stream_is_escaped_work():
    """A launch-bound call keeps the host and the timed stream equally long: not an escape, however
    far both are above the event time. The host waiting well past the stream's span is work
    outside the stream."""
    run = _run()
    timing = _timing(0.005, 0.005, 0.004)
    timing.host_ms_per_call, timing.stream_ms_per_call = 0.120, 0.118
    _timing_facts(run, 0, timing, compare_times=True)
    assert run.rejections == []
    run = _run()
    timing.host_ms_per_call, timing.stream_ms_per_call = 0.400, 0.118
    _timing_facts(run, 0, timing, compare_times=True)
    assert [r.split(":")[0] for r in run.rejections] == ["escaped_work"]
    assert "0.1180 ms" in run.rejections[0]


def test_busy_calls_are_not_host_bound():
    run = _run()
    timing = _timing(2.0, 2.0, 1.0)
    prof = {
        "aten_ops": [],
        "kernels": _kernels((0.0, 950.0)),
        "reference_kernels": _kernels((0.0, 1900.0)),
    }
    _provenance(run, prof, timing, compare_times=True)
    assert not any(f.startswith("host_bound") for f in run.result.flags)


def test_a_disturbed_profile_refuses_nothing():
    """Profiler kernel time far above the event time is escaped work, unless other work was on
    the GPU while the trace ran: then it proves nothing and nothing is refused."""
    prof = {"aten_ops": [], "kernels": _kernels((0.0, 5000.0)), "reference_kernels": []}
    run = _run()
    _provenance(run, prof, _timing(1.0, 1.0, 1.0), compare_times=True)
    assert [r.split(":")[0] for r in run.rejections] == ["escaped_work"]
    run = _run()
    _provenance(run, prof, _timing(1.0, 1.0, 1.0), compare_times=False)
    assert run.rejections == []


def test_a_profiled_call_is_set_against_its_own_events():
    """CUDA-L1's L3_17 (torch.compile, cuDNN benchmark) showed 1.03 ms of kernels in its
    profiled call against 0.588 ms of events in its timed calls. Kernels inside the profiled
    call's own events are not an escape: that call was slower, and its time is kept. Kernels
    that outlast the call's own events are, whatever the timed calls took."""
    kernels = _kernels((0.0, 300.0), (310.0, 400.0), (720.0, 310.0))  # 1.01 ms busy
    run = _run()
    timing = _timing(0.9, 0.9, 0.588)
    _provenance(
        run,
        {"aten_ops": [], "kernels": kernels, "call_ms": 1.05, "reference_kernels": []},
        timing,
        compare_times=True,
    )
    assert run.rejections == [] and run.result.flags == [] and timing.profiled_call_ms == 1.05
    # the same kernels, but the call's events ended after 0.6 ms: work escaped them
    run = _run()
    _provenance(
        run,
        {"aten_ops": [], "kernels": kernels, "call_ms": 0.6, "reference_kernels": []},
        _timing(0.9, 0.9, 0.588),
        compare_times=True,
    )
    assert [r.split(":")[0] for r in run.rejections] == ["escaped_work"]
    # an answer without the call's events is held to the timed calls' events, as before
    run = _run()
    _provenance(
        run,
        {"aten_ops": [], "kernels": kernels, "reference_kernels": []},
        _timing(0.9, 0.9, 0.588),
        compare_times=True,
    )
    assert [r.split(":")[0] for r in run.rejections] == ["escaped_work"]
