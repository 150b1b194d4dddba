"""Integer semantics (docs/dtypes.md): int64 tensors run as int32; integer
add/sub/mul/neg/abs/min/max/clamp/where, bitwise ops, comparisons and casts
run on GpSimd in native int32 arithmetic (nki.isa.tensor_tensor), exact for
every 32-bit value (floor/trunc division too: an fp32 estimate corrected in
int32); int8/int16/uint8/int32 results wrap exactly as eager's
do; int64 results are proven to stay in int32 by the legality scan, which
records the largest input range it proved them for, and the runtime checks
int32/int64 inputs against it. Reductions and scans still go through fp32
(exact within +-2^24). Every test compares with eager exactly
and checks that trnc compiled a graph."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import trnc


def _compiled(f):
    return torch.compile(f, backend="neuron", dynamic=False)


def _exact(f, *args):
    """f compiled by trnc equals f in eager exactly (values and dtypes)."""
    torch._dynamo.reset()
    before = trnc.stats()["graphs"]
    got = _compiled(f)(*args)
    assert trnc.stats()["graphs"] > before, "trnc compiled no graph"
    want = f(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_token_ids_times_two_plus_t(n):
    g = torch.Generator().manual_seed(n)
    ids = torch.randint(0, 50257, (2, n), generator=g)
    ids[0, 0] = (1 << 28) + 3  # far past 2^24, where fp32 would round
    t = torch.randint(-1000, 1000, (2, n), generator=g)
    _exact(lambda ids, t: ids * 2 + t, ids, t)


def test_int64_input_of_2_pow_30():
    x = torch.tensor([1 << 30, -(1 << 30), (1 << 30) - 1, 7])
    _exact(lambda x: x + 1, x)
    _exact(lambda x: torch.where(x > 0, x - 3, -x), x)


def test_int64_input_beyond_the_proven_range_is_an_error():
    fn = _compiled(lambda x: x + 1)
    x = torch.tensor([1 << 30, 0])
    torch.testing.assert_close(fn(x), x + 1, rtol=0, atol=0)
    with pytest.raises(trnc.ExecutionError, match=r"1073741825.*compiled for"):
        fn(torch.tensor([(1 << 30) + 1, 0]))
    with pytest.raises(trnc.ExecutionError, match="int32 range"):
        _compiled(lambda x: x.clone())(torch.tensor([1 << 31]))


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_uint8_a_plus_a_wraps(n):
    a = torch.arange(n, dtype=torch.int64).mul(37).remainder(256).to(torch.uint8)
    _exact(lambda a: a + a, a)


@pytest.mark.parametrize("dtype,f", [
    (torch.uint8, lambda a, b: a + b),      # 200 + 100 wraps to 44 in eager
    (torch.uint8, lambda a, b: a - b),      # 1 - 2 wraps to 255
    (torch.int8, lambda a, b: a * b),       # 100 * 3 wraps to 44
    (torch.int16, lambda a, b: a * b),      # 300 * 300 wraps
    (torch.int8, lambda a, b: -a + b * 2),
    (torch.int32, lambda a, b: a * b + 7),  # int32 wraps modulo 2^32 as eager's
])
def test_narrow_int_arithmetic_wraps_as_eager(dtype, f):
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(info.min, info.max, (3, 129), generator=g, dtype=torch.int64).to(dtype)
    b = torch.randint(info.min, info.max, (3, 129), generator=g, dtype=torch.int64).to(dtype)
    a[0, :3] = torch.tensor([100, 1, info.max], dtype=dtype)
    b[0, :3] = torch.tensor([3, 2, 1], dtype=dtype)
    _exact(f, a, b)


def test_int64_to_narrow_cast_wraps():
    x = torch.tensor([300, -129, 65536 + 5, -1, 255])
    _exact(lambda x: (x.to(torch.uint8), x.to(torch.int8), x.to(torch.int16)), x)


def test_bitwise_ops_and_comparisons_on_int64():
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-(1 << 30), 1 << 30, (128,), generator=g)
    b = torch.randint(-(1 << 30), 1 << 30, (128,), generator=g)
    b[:4] = a[:4] + 1  # neighbours that fp32 cannot tell apart
    _exact(lambda a, b: (a & b, a | b, a ^ b, ~a, a < b, a == b, torch.maximum(a, b),
                         torch.minimum(a, b), a.clamp(-5, 1 << 29), a.abs()), a, b)


def _t5_buckets(q, k, bidirectional, num_buckets=32, max_distance=128):
    from transformers.models.t5.modeling_t5 import T5Attention

    ctx = torch.arange(q, dtype=torch.long)[:, None]
    mem = torch.arange(k, dtype=torch.long)[None, :]
    return T5Attention._relative_position_bucket(mem - ctx, bidirectional=bidirectional,
                                                 num_buckets=num_buckets,
                                                 max_distance=max_distance)


@pytest.mark.parametrize("n", [127, 128, 129])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_relative_position_buckets(n, bidirectional):
    """transformers' T5Attention._relative_position_bucket: the log-spaced
    buckets cast log(0) = -inf to int64 on the positions the where discards;
    the legality scan proves the kept ones exact."""
    _exact(lambda: _t5_buckets(n, n + 3, bidirectional))


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_large_int_constants_and_aranges_are_exact(n):
    """full/arange values beyond 2^24 are i32 iotas, not fp32 tiles (which
    rounded 2^30 + 1 to 2^30)."""
    x = torch.zeros(n, dtype=torch.long)
    _exact(lambda x: (torch.arange(2**30, 2**30 + n) + x, torch.full((n,), 2**30 + 1) + x,
                      torch.arange(-(2**30), 2**30, 2**31 // n)[:n] - x), x)


def test_product_of_two_int64_inputs_is_refused():
    with pytest.raises(BackendCompilerFailed) as ei:
        _compiled(lambda a, b: a * b)(torch.tensor([1, 2]), torch.tensor([3, 4]))
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.UnsupportedOperatorError)
    assert "outside int32" in str(inner)


@pytest.mark.parametrize("n", [127, 129])
def test_floor_and_trunc_division_are_exact(n):
    """Integer floor/trunc division: an fp32 estimate corrected in int32,
    exact far beyond 2^24 (the proven input range is +-2^30: |a // b| <= |a|)."""
    g = torch.Generator().manual_seed(n)
    a = torch.randint(-(1 << 30), 1 << 30, (3, n), generator=g)
    b = torch.randint(-(1 << 30), 1 << 30, (3, n), generator=g)
    b[1] = torch.randint(-70000, 70000, (n,), generator=g)
    b[2, :8] = torch.tensor([1, -1, 2, -2, 3, -7, 1 << 30, -(1 << 30)])
    a[2, :8] = torch.tensor([(1 << 30) - 1, -(1 << 30), -(1 << 30) + 1, 1 << 30, -5, 7, -1, 1])
    b[b == 0] = 1
    _exact(lambda a, b: (a // b, torch.div(a, b, rounding_mode="trunc"), a // 7, a // -3), a, b)
    s = a[0].to(torch.int32)
    _exact(lambda s: (s // 13, torch.div(s, -9, rounding_mode="trunc")), s)


def test_fp32_path_ops_keep_the_2_pow_24_bound():
    """An int64 sum goes through fp32: compiled for inputs within 2^23."""
    fn = _compiled(lambda x: x.sum())
    x = torch.tensor([(1 << 23), (1 << 23) - 1])
    torch.testing.assert_close(fn(x), x.sum(), rtol=0, atol=0)
    with pytest.raises(trnc.ExecutionError, match="8388609.*compiled for"):
        fn(torch.tensor([(1 << 23) + 1, 0]))


def test_small_int_ops_that_cannot_wrap_run_exactly():
    a = torch.tensor([200, 3, 0, 255], dtype=torch.uint8)
    b = torch.tensor([1, 2, 0, 0], dtype=torch.bool)

    def f(a, b):
        return torch.where(b, a, 7), (a > 100), a.to(torch.int32) * 3 - 1

    _exact(f, a, b)


def test_int32_input_anywhere_in_int32_runs():
    fn = _compiled(lambda a: a + 1)
    ok = torch.tensor([0, -(1 << 31), (1 << 31) - 1], dtype=torch.int32)
    torch.testing.assert_close(fn(ok), ok + 1, rtol=0, atol=0)  # wraps as eager


def test_int64_sign_is_bounded():
    x = torch.tensor([-5, 0, 7])
    _exact(lambda x: torch.sign(x) * 2, x)


def test_mixed_bool_arithmetic_backward_of_amax():
    x = torch.randn(4, 6, requires_grad=True)
    xe = x.detach().clone().requires_grad_(True)
    _compiled(lambda x: x.amax(dim=1).sum())(x).backward()
    xe.amax(dim=1).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad, rtol=1e-6, atol=1e-6)


def test_float_to_int64_of_an_unbounded_float_is_refused():
    # the engines' float -> int conversion saturates at int32's limits, where
    # eager keeps 3e9 exactly: a float input is not bounded, so x.long()
    # reaching an output (directly or through arithmetic) is refused
    x = torch.tensor([3e9, -3e9, 1.5, -2.7])
    for f in (lambda x: x.long(), lambda x: x.long() + 1, lambda x: (x.long() + 1).clamp(0, 9)):
        torch._dynamo.reset()
        with pytest.raises(BackendCompilerFailed, match="i64 result cannot be proven to stay within int32"):
            _compiled(f)(x)


def test_float_to_int64_of_a_bounded_float_runs():
    x = torch.tensor([3e9, -3e9, 1.5, -2.7, 0.0, 9.99])
    w = torch.randn(10)
    _exact(lambda x: x.clamp(-100, 100).long() * 3, x)       # the float's interval is known
    _exact(lambda x: (x.sigmoid() * 9).long(), x)              # sigmoid lies in [0, 1]
    _exact(lambda x: (torch.tanh(x) * 4).long() - 1, x)
    _exact(lambda x: w[x.long().clamp(0, 9)], x)               # saturation is monotone: the clamp agrees
    _exact(lambda x: x.long().clamp(-5, 5) + 1, x)


# values where eager's float -> integer conversion (x86-64 cvttss2si) is not
# a saturating one: NaN, +-inf and anything outside int32 give -2^31 (whose
# low 8 and 16 bits are 0 for int8/int16/uint8), in-range values truncate and
# int8/int16/uint8 wrap
_CONVERT = [-1.5, 300.7, -200.2, 1e10, -1e10, float("nan"), 255.9, 127.5, -128.9, 40000.0, -3e9,
            2.2e9, 3e9 + 768, float("inf"), -float("inf"), -2147483648.0, 2147483520.0, -0.7]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_float_to_int_converts_as_eager(dtype, n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g) * torch.tensor([1e2, 1e5, 1e10]).repeat(n // 3 + 1)[:n]
    x[: len(_CONVERT)] = torch.tensor(_CONVERT)
    _exact(lambda x: x.to(dtype), x)
    _exact(lambda x: x.bfloat16().to(dtype), x)
    _exact(lambda x: (x * 3).to(dtype) + 1, x)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_float_copied_into_an_int_tensor_converts_as_eager(dtype):
    # copy_ of a float src into an integer self used to saturate (int32) or be
    # refused (the narrow dtypes)
    x = torch.tensor(_CONVERT).repeat(20).reshape(20, -1).t().contiguous().t()  # non-contiguous
    _exact(lambda x: torch.zeros(x.shape, dtype=dtype).copy_(x), x)
    _exact(lambda x: torch.zeros(x.shape, dtype=dtype).copy_(x[:1]), x)  # broadcast src


def test_float_to_int64_of_inf_and_nan_then_clamped():
    # eager gives INT64_MIN for NaN and +-inf; after a clamp into int32 the
    # lowest bound is what trnc's conversion gives as well
    x = torch.tensor([3e9, -3e9, 1.5, -2.7, float("nan"), float("inf"), -float("inf"), 1e30])
    _exact(lambda x: x.long().clamp(-5, 5) + 1, x)
    _exact(lambda x: x.long().clamp(0, 9), x)
