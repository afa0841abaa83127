"""Every adversarial candidate is refused (or, for precision changes under policy `any`, flagged
and failed by the calibrated tolerance when its error exceeds it)."""

import pytest
import torch

from .corpus import explain, load_cases, run_case

CPU = load_cases("redteam", "cpu")
CUDA = load_cases("redteam", "cuda")


def _check(case):
    result = run_case(case)
    assert result.status in case.status, explain(result)
    assert case.flag_found(result.flags), explain(result)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("case", CPU, ids=[c.id for c in CPU])
def test_redteam_cpu(case):
    _check(case)


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
