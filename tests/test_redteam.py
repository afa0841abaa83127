"""Every adversarial candidate is refused (or, for precision changes under policy `any`, flagged
and failed by the calibrated tolerance when its error exceeds it)."""

import os
import sysconfig
import tempfile
from pathlib import Path

import pytest
import torch

from cudal1.evaluate.config import default_build_root

from .corpus import explain, load_cases, run_case

CPU = load_cases("redteam", "cpu")
CUDA = load_cases("redteam", "cuda")


def _check(case):
    result = run_case(case)
    assert result.status in case.status, explain(result)
    assert case.flag_found(result.flags), explain(result)
    stable = not any(f.startswith("unstable_timing") for f in result.flags)
    if case.max_speedup is not None and result.speedup is not None and stable:
        assert result.speedup <= case.max_speedup, explain(result)
    return result


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", CUDA, ids=[c.id for c in CUDA])
def test_redteam_cuda(case):
    _check(case)


def test_corpus_covers_every_hack_class():
    """One adversarial candidate per DESIGN.md hack class at least (HACKS.md numbering 1-38)."""
    covered = {c.hack for c in CPU + CUDA}
    required = set(range(1, 36)) - {
        9
    }  # 9 (aggregate statistics) is the benchmark's, not one eval's
    assert required <= covered, sorted(required - covered)
    assert len(CPU + CUDA) >= 40


WRITERS = [c for c in CPU if c.writes]


def _target(case) -> Path:
    places = {
        "purelib": sysconfig.get_paths()["purelib"],
        "torch": os.path.dirname(torch.__file__),
        "build_root": str(default_build_root()),
        "tmp": tempfile.gettempdir(),
    }
    return Path(case.writes.format(**places))


@pytest.mark.slow
@pytest.mark.parametrize("case", CPU, ids=[c.id for c in CPU])
def test_redteam_cpu(case):
    """Refused as the case says. A writer (numpy, torch.save, pathlib, os.open, C++ fopen,
    plain open) aims at a path outside the candidate's work and build directories: the
    sandbox's read-only file system leaves nothing there, whatever the verdict."""
    target = _target(case) if case.writes else None
    assert target is None or not target.exists(), f"{target} exists before the run: remove it"
    try:
        result = _check(case)
        assert target is None or not target.exists(), f"{target} was written\n{explain(result)}"
    finally:
        if target is not None and target.exists():
            target.unlink()


def test_writer_cases_cover_every_writer():
    assert len(WRITERS) >= 6
