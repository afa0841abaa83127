"""Honest candidates come back `ok` with no rejecting flag: the false-rejection rate must be 0."""

import pytest
import torch

from .corpus import explain, load_cases, run_case, unmeasured

CPU = load_cases("honest", "cpu")
CUDA = load_cases("honest", "cuda")


def _check(case):
    result = run_case(case)
    assert result.status == "ok", explain(result)
    assert case.flag_found(result.flags), explain(result)  # the evidence is still recorded
    if result.speedup is None:  # a busy machine: correct but not measured, never refused
        assert unmeasured(result), explain(result)
    else:
        assert result.speedup > 0


@pytest.mark.slow
@pytest.mark.parametrize("case", CPU, ids=[c.id for c in CPU])
def test_honest_cpu(case):
    _check(case)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", CUDA, ids=[c.id for c in CUDA])
def test_honest_cuda(case):
    _check(case)


def test_corpus_size():
    assert len(CPU + CUDA) >= 30
