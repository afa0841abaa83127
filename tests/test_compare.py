import torch

from cudal1.evaluate.compare import calibrate, compare, flatten_outputs
from cudal1.evaluate.timing import bucket_speedups, median_interval, spread


def _gemm_outputs(seed=0, n=192):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    return a, b, [a @ b], [a.double() @ b.double()]


def test_reordered_fp32_sum_passes_calibrated():
    a, b, y32, y64 = _gemm_outputs()
    tol = calibrate(y32, y64)
    # Same math, different blocking: sum over two halves of K.
    h = a.shape[1] // 2
    other = [a[:, :h] @ b[:h] + a[:, h:] @ b[h:]]
    c = compare(other, y32, y64, tol)
    assert c.ok, c.reason
    assert 0 < c.tolerance_ratio <= 1


def test_bf16_and_tf32_like_errors_fail_calibrated_but_pass_kernelbench():
    a, b, y32, y64 = _gemm_outputs()
    low = [(a.bfloat16() @ b.bfloat16()).float()]
    assert not compare(low, y32, y64, calibrate(y32, y64)).ok

    # TF32 keeps 10 mantissa bits: emulate by rounding the inputs.
    def tf32(x):
        return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)

    assert not compare([tf32(a) @ tf32(b)], y32, y64, calibrate(y32, y64)).ok
    kb = calibrate(y32, y64, "kernelbench")
    assert compare([y32[0] * (1 + 1e-3)], y32, y64, kb).ok


def test_structure_dtype_shape_nan():
    _, _, y32, y64 = _gemm_outputs()
    tol = calibrate(y32, y64)
    assert "dtype" in compare([y32[0].double()], y32, y64, tol).reason
    assert "shape" in compare([y32[0][:-1]], y32, y64, tol).reason
    assert "returned 2 tensors" in compare(y32 * 2, y32, y64, tol).reason
    bad = y32[0].clone()
    bad[3, 4] = float("nan")
    assert "NaN/Inf" in compare([bad], y32, y64, tol).reason


def test_nan_positions_must_match_exactly():
    y32 = [torch.tensor([1.0, float("nan"), float("inf"), -2.0])]
    y64 = [y32[0].double()]
    tol = calibrate(y32, y64)
    assert compare([y32[0].clone()], y32, y64, tol).ok
    swapped = torch.tensor([1.0, float("inf"), float("nan"), -2.0])
    assert not compare([swapped], y32, y64, tol).ok
    assert not compare([torch.tensor([1.0, float("nan"), -float("inf"), -2.0])], y32, y64, tol).ok


def test_integer_outputs_exact():
    y = [torch.tensor([3, 1, 2])]
    tol = calibrate(y, y)
    assert compare([torch.tensor([3, 1, 2])], y, y, tol).ok
    assert not compare([torch.tensor([3, 1, 0])], y, y, tol).ok


def test_exact_reference_gets_a_floor_not_zero_tolerance():
    y32 = [torch.tensor([0.0, 1.0, 2.0, 4.0])]
    tol = calibrate(y32, [y32[0].double()])
    assert tol[0].atol > 0
    assert compare([y32[0] + 1e-9], y32, [y32[0].double()], tol).ok
    assert not compare([y32[0] + 1e-3], y32, [y32[0].double()], tol).ok


def test_flatten_nested_outputs():
    t = torch.zeros(2)
    tensors, structure = flatten_outputs((t, [t, t]))
    assert len(tensors) == 3 and structure == "(T,(T,T))"


def test_bucket_rule_and_intervals():
    ref = [2.0] * 70
    cand = [1.0] * 35 + [0.5] * 35
    buckets = bucket_speedups(ref, cand, 7)
    assert len(buckets) == 7 and buckets[0] == 2.0 and buckets[-1] == 4.0
    # one hiccup of 50x in a bucket of ten 4 us calls leaves that bucket's speedup alone
    cand = [0.004] * 70
    cand[3] = 0.2
    assert bucket_speedups([0.008] * 70, cand, 7) == [2.0] * 7
    assert spread([1.0, 1.0, 1.1]) == (1.1 - 1.0) / 1.0
    med, lo, hi = median_interval(list(range(101)))
    assert med == 50 and lo < 50 < hi
