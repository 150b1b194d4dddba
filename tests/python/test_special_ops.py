"""Ops added for the OpInfo rates (issue 12), compiled with trnc against eager
PyTorch: lgamma, digamma, polygamma, erfc, special.erfcx, erfinv, the
modified Bessel functions i0, i1, i0e, i1e, k0, k1 (and scaled k), the
Bessel functions j0, j1, y0, y1, spherical_bessel_j0 and airy_ai
(codegen/kir/special.c) over their poles, infinities and NaN, frexp bit for bit
(passes/decomp_math.c), and integer
remainder/fmod computed exactly in int32 on GpSimd (codegen/kir/rules.c, int_exact) at edge shapes 0, 127, 128,
129 and at values far beyond fp32's exact integers. Each test also checks
that trnc compiled the graph (trnc.stats())."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")


_run = run_counted


def _refusal(fn, *args):
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)(*args)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    return str(err)


# Points that exercise every branch: the reflection below 0.5, the shifted
# series below 8, poles at 0 (both signs) and the negative integers, large
# magnitudes, infinities and NaN.
SPECIAL = [0.0, -0.0, -1.0, -2.0, -3.5, -100.25, -0.3, 1e-6, -1e-6, 0.4999, 0.5, 1.0, 2.0, 3.0,
           7.99, 8.0, 12.5, 1e6, 1e30, INF, -INF, NAN]


def _points():
    return torch.cat([torch.linspace(-20, 30, 1001), torch.tensor(SPECIAL)])


def _check(got, want, want64):
    """Non-finite results as eager's; finite ones within 1e-4 relative to
    eager's float32 or to float64 (eager's float32 kernel is the inexact one
    near lgamma's zeros and at large negative arguments)."""
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    inf = torch.isinf(want)
    assert torch.equal(got[inf], want[inf])
    fin = torch.isfinite(want)
    g, w, r = got[fin].double(), want[fin].double(), want64[fin]
    tol = 1e-4 * (1 + w.abs())
    assert (((g - w).abs() <= tol) | ((g - r).abs() <= 1e-4 * (1 + r.abs()))).all()


def test_lgamma_values():
    x = _points()
    _check(_run(torch.lgamma, x), torch.lgamma(x), torch.lgamma(x.double()))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 8])
def test_polygamma_values(n):
    x = _points()
    _check(_run(lambda t: torch.polygamma(n, t), x), torch.polygamma(n, x),
           torch.polygamma(n, x.double()))


def test_digamma_values_and_signed_zero():
    x = _points()
    got = _run(torch.digamma, x)
    _check(got, torch.digamma(x), torch.digamma(x.double()))
    assert got[-len(SPECIAL)].item() == -INF and got[-len(SPECIAL) + 1].item() == INF


@pytest.mark.parametrize("shape", [(0,), (127,), (128,), (129,), (3, 129)])
def test_lgamma_digamma_gradients(shape):
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(shape, generator=g) * 10 - 3).requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    f = lambda t: torch.lgamma(t) * 2 + torch.digamma(t)  # noqa: E731
    out = _run(f, x)
    out.sum().backward()
    f(x2).sum().backward()
    torch.testing.assert_close(out, f(x2), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-4, atol=1e-3)


def test_polygamma_order_limit_refused():
    msg = _refusal(lambda t: torch.polygamma(9, t), torch.rand(5) + 1)
    assert "orders n <= 8" in msg


@pytest.mark.parametrize("op", [torch.remainder, torch.fmod])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("n", [0, 127, 128, 129])
def test_integer_remainder_fmod_exact(op, dtype, n):
    g = torch.Generator().manual_seed(n)
    a = torch.randint(-2**30, 2**30, (n,), generator=g).to(dtype)
    b = torch.randint(1, 2**20, (n,), generator=g).to(dtype)
    b = torch.where(torch.arange(n) % 2 == 0, b, -b).to(dtype)
    assert torch.equal(_run(op, a, b), op(a, b))
    assert torch.equal(_run(lambda x: op(x, -7), a), op(a, -7))


def test_integer_remainder_signs_and_narrow_dtypes():
    a = torch.tensor([7, -7, 7, -7, 0, 6, -6], dtype=torch.int64)
    b = torch.tensor([3, 3, -3, -3, 5, 3, -3], dtype=torch.int64)
    assert _run(torch.remainder, a, b).tolist() == [1, 2, -2, -1, 0, 0, 0]
    assert _run(torch.fmod, a, b).tolist() == [1, -1, 1, -1, 0, 0, 0]
    u = torch.tensor([200, 13, 255, 0], dtype=torch.uint8)
    assert torch.equal(_run(lambda x: torch.remainder(x, 7), u), torch.remainder(u, 7))
    i8 = torch.tensor([-128, 127, -5, 5], dtype=torch.int8)
    assert torch.equal(_run(lambda x: torch.fmod(x, 3), i8), torch.fmod(i8, 3))


def test_cross_with_negative_dim():
    """linalg.cross normalizes its index with an int64 remainder (OpInfo)."""
    a, b = torch.randn(4, 3, 5), torch.randn(4, 3, 5)
    torch.testing.assert_close(_run(lambda x, y: torch.linalg.cross(x, y, dim=-2), a, b),
                               torch.linalg.cross(a, b, dim=-2))


@pytest.mark.parametrize("n", [1, 2, 16, 17, 127, 128, 129])
def test_cumprod_scan(n):
    """Scans of at most 16 run in eager's order, longer ones as a Hillis-Steele scan."""
    g = torch.Generator().manual_seed(n)
    x = torch.rand(3, n, generator=g) + 0.5
    if n > 5:
        x[0, 3], x[1, 2], x[2, 4] = NAN, INF, 0.0
    for d in (1, 0):
        want = torch.cumprod(x, d)
        torch.testing.assert_close(_run(lambda t: torch.cumprod(t, d), x), want, rtol=1e-5, atol=1e-6,
                                   equal_nan=True)
    assert _run(lambda t: torch.cumprod(t, 0), torch.tensor(3.0)).item() == 3.0


def test_cumprod_gradient_with_zeros():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, generator=g)
    x[1, 2] = x[2, 1] = x[2, 4] = 0.0
    cot = torch.randn(4, 6, generator=g)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    (got,) = torch.autograd.grad(_run(lambda t: torch.cumprod(t, 1), xa), xa, cot)
    (want,) = torch.autograd.grad(torch.cumprod(xb, 1), xb, cot)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
@pytest.mark.parametrize("n", [1, 7, 128, 129])
def test_cummax_cummin_last_index_and_nan(op, n):
    g = torch.Generator().manual_seed(n)
    x = torch.randint(-3, 3, (3, n), generator=g).float()  # ties: eager keeps the last index
    if n > 5:
        x[0, 3], x[0, 5], x[1, 2], x[2, 4] = NAN, NAN, INF, -INF
    xi = torch.randint(-3, 3, (3, n), generator=g)
    for t in (x, xi):
        for d in (1, 0):
            gv, gi = _run(lambda v: op(v, d), t)
            wv, wi = op(t, d)
            assert torch.equal(gv.nan_to_num(), wv.nan_to_num()) and torch.equal(gi, wi)


def test_max_min_dim_of_bool():
    g = torch.Generator().manual_seed(0)
    b = torch.rand(3, 129, generator=g) > 0.6
    for op in (torch.max, torch.min):
        gv, gi = _run(lambda t: op(t, 1), b)
        wv, wi = op(b, 1)
        assert torch.equal(gv, wv) and torch.equal(gi, wi)


@pytest.mark.parametrize("op", [torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor])
def test_bitwise_scalar(op):
    a = torch.tensor([-2**31, -5, 0, 7, 2**31 - 1], dtype=torch.int32)
    assert torch.equal(_run(lambda t: op(t, 6), a), op(a, 6))
    u = torch.tensor([0, 13, 255], dtype=torch.uint8)
    assert torch.equal(_run(lambda t: op(t, 0x5A), u), op(u, 0x5A))
    b = torch.tensor([True, False, True])
    assert torch.equal(_run(lambda t: op(t, True), b), op(b, True))


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, INF])
@pytest.mark.parametrize("shapes", [((5, 4), (7, 4)), ((2, 5, 3), (2, 20, 3)), ((2, 0, 3), (2, 4, 3))])
def test_cdist_forward_backward(p, shapes):
    """_cdist_forward and _cdist_backward (passes/decomp_norm.c) against float64,
    with a zero distance (x2's first row is x1's) where the derivative is 0."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(shapes[0], generator=g), torch.randn(shapes[1], generator=g)
    if a.shape[-2]:
        b[..., 0, :] = a[..., 0, :]
    f = lambda x, y: torch.cdist(x, y, p=p)  # noqa: E731
    aa, bb = a.clone().requires_grad_(), b.clone().requires_grad_()
    out = _run(f, aa, bb)
    cot = torch.randn(out.shape, generator=g)
    got = torch.autograd.grad(out, [aa, bb], cot)
    a2, b2 = a.double().requires_grad_(), b.double().requires_grad_()
    want = f(a2, b2)
    wg = torch.autograd.grad(want, [a2, b2], cot.double())
    torch.testing.assert_close(out.double(), want, rtol=1e-4, atol=1e-5)
    for x, y in zip(got, wg):
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, INF])
@pytest.mark.parametrize("rows", [1, 2, 5, 129])
def test_pdist_forward_backward(p, rows):
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 3, generator=g)
    if rows > 2:
        x[2] = x[0]  # a zero distance
    xa = x.clone().requires_grad_()
    out = _run(lambda t: torch.nn.functional.pdist(t, p=p), xa)
    x2 = x.double().requires_grad_()
    want = torch.nn.functional.pdist(x2, p=p)
    torch.testing.assert_close(out.double(), want, rtol=1e-4, atol=1e-5)
    if rows > 1:
        cot = torch.randn(out.shape, generator=g)
        (got,) = torch.autograd.grad(out, xa, cot)
        (wg,) = torch.autograd.grad(want, x2, cot.double())
        torch.testing.assert_close(got.double(), wg, rtol=1e-4, atol=1e-4)


# ---- erfc, special.erfcx, erfinv (codegen/kir/special.c) ------------------------ #

def _close_to_float64(got, want, want64, rtol):
    """NaN and infinities where eager has them; finite values within rtol of
    float64 (or equal to eager's float32) above 1e-37, within 1e-37 below
    (subnormal results: one ulp of eager's is 1.4e-45)."""
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(got[torch.isinf(want)], want[torch.isinf(want)])
    fin = torch.isfinite(want)
    g, r = got[fin].double(), want64[fin]
    assert ((g - r).abs() <= rtol * r.abs() + 1e-37).all(), ((g - r).abs() / r.abs()).max()


@pytest.mark.parametrize("n", [127, 128, 129, 16385, 65537])
def test_erfc_erfcx_at_tile_boundaries(n):
    x = torch.linspace(-9.5, 27, n)
    x[:8] = torch.tensor([0.0, -0.0, INF, -INF, NAN, 10.0, 1e30, -1e30])
    xd = x.double()
    e64 = torch.erfc(xd)
    _close_to_float64(_run(torch.erfc, x), torch.erfc(x), e64, 1e-6)
    fin = xd.abs() < 26                  # erfc underflows float64 beyond
    x64 = torch.where(fin, torch.exp(xd * xd) * e64, torch.special.erfcx(xd))
    _close_to_float64(_run(torch.special.erfcx, x), torch.special.erfcx(x), x64, 1e-6)


@pytest.mark.parametrize("n", [129, 16385])
def test_erfinv_values_and_edges(n):
    x = torch.linspace(-1, 1, n)
    x[1:9] = torch.tensor([1 - 2**-24, -1 + 2**-24, 1e-30, 1.5, -2.0, NAN, INF, -0.0])
    _close_to_float64(_run(torch.erfinv, x), torch.erfinv(x), torch.erfinv(x.double()), 1e-6)


def test_erfc_erfinv_gradients_and_log_ndtr():
    torch.manual_seed(0)
    x0 = torch.randn(3, 129) * 2
    u0 = torch.rand(3, 129) * 1.8 - 0.9
    f = lambda x, u: (torch.erfc(x) + torch.special.erfcx(x.abs()) + torch.erfinv(u)  # noqa: E731
                      + torch.special.log_ndtr(x)).sum()
    grads = []
    for fn in (f, torch.compile(f, backend="neuron", dynamic=False)):
        x, u = x0.clone().requires_grad_(), u0.clone().requires_grad_()
        fn(x, u).backward()
        grads.append((x.grad, u.grad))
    assert trnc.stats()["backward"] >= 1
    for g, w in zip(*grads):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


# ---- i0, i1, i0e, i1e (codegen/kir/special.c, kir_bessel_i) -------------------- #

BESSEL = [torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e,
          torch.special.modified_bessel_i0, torch.special.modified_bessel_i1]


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
@pytest.mark.parametrize("fn", BESSEL, ids=lambda f: f.__name__)
def test_bessel_i_values_and_edges(fn, n):
    """Both polynomial ranges (|x| below and above 3.75, the switch itself),
    exp's overflow near 88.7 (inf as eager), +-inf (NaN, or 0 and -0 scaled)
    and NaN, within 1e-6 of float64."""
    x = torch.linspace(-95, 95, n)
    x[:12] = torch.tensor([0.0, -0.0, 1e-30, 3.75, 3.7499998, -3.75, 88.0, 89.0, -90.0, INF, -INF, NAN])
    got, want = _run(fn, x), fn(x)
    _close_to_float64(got, want, fn(x.double()), 1e-6)
    zero = want == 0  # the scaled ones at +-inf: 0 and -0 as eager
    assert torch.equal(torch.signbit(got[zero]), torch.signbit(want[zero]))


def test_bessel_i_gradients():
    """Against float64: i0e's gradient i1e - sgn(x) i0e cancels to about
    i0e / 2|x|, which magnifies every float32 kernel's relative error (eager's
    too) by 2|x|."""
    torch.manual_seed(0)
    x0 = torch.randn(3, 129) * 6
    f = lambda x: (torch.i0(x) + torch.special.i0e(x) + torch.special.i1(x)  # noqa: E731
                   + torch.special.i1e(x)).sum()
    grads = []
    for fn, dt in ((f, torch.float64), (torch.compile(f, backend="neuron", dynamic=False), torch.float32)):
        x = x0.to(dt).requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(grads[1].double(), grads[0], rtol=2e-5, atol=1e-6)


# ---- j0, j1, y0, y1, k0, k1 and scaled k (codegen/kir/special.c, Cephes) ------- #

JYK = [torch.special.bessel_j0, torch.special.bessel_j1, torch.special.bessel_y0,
       torch.special.bessel_y1, torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
       torch.special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k1,
       torch.special.spherical_bessel_j0, torch.special.airy_ai]
JYK_EDGES = [0.0, -0.0, -1.0, -5.0, 5.0, 4.9999995, 5.0000005, 2.0, 1.9999999, 2.0000002,
             0.5, 0.49999997, -0.5, -0.49999997, 2.09, 2.0899999, -2.09, -2.0900002, 8.3203353,
             103.892, 103.9, -1e30,
             1e-5, 9.9e-6, 1e-6, 1e-30, 1e-38, -1e-30, 88.0, 104.0, 1e30, INF, -INF, NAN]


def _as_accurate_as_eager(got, want, want64, atol=1e-7):
    """NaN and infinities where eager has them (and signed zeros as eager's);
    elsewhere within twice eager's own error against float64 plus 1e-6
    relative and atol absolute (a rounding or two of the fp32 formulas)."""
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(got[torch.isinf(want)], want[torch.isinf(want)])
    zero = want == 0
    assert torch.equal(torch.signbit(got[zero]), torch.signbit(want[zero]))
    fin = torch.isfinite(want)
    g, w, r = got[fin].double(), want[fin].double(), want64[fin]
    bad = (g - r).abs() > 2 * (w - r).abs() + 1e-6 * r.abs() + atol
    assert not bad.any(), (got[fin][bad][:8], want[fin][bad][:8])


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
@pytest.mark.parametrize("fn", JYK, ids=lambda f: f.__name__)
def test_bessel_jyk_values_and_edges(fn, shape):
    """Both sides of each approximation's switch (5 for j and y, 2 for k),
    eager's 1 - x^2/4 below 1e-5 for j0, the poles at 0 (y: -inf, k: +inf),
    NaN below 0 (y, k), exp's underflow (k beyond 88), spherical_bessel_j0's
    series below |x| = 0.5, airy_ai's three ranges (-2.09, 2.09) and its 0
    above 103.892, +-inf and NaN; also
    a transposed (non-contiguous) input. y0 below 5 within 3e-7: Cephes' YP
    (alternating coefficients up to 9e16) evaluated in fp32 with a rounding
    per multiply and add loses 4e-7 of y0's rational part next to its zeros
    (near 3.92; eager's CPU kernel loses 3e-8 there)."""
    atol = 3e-7 if fn is torch.special.bessel_y0 else 1e-7
    n = 1
    for d in shape:
        n *= d
    x = torch.linspace(-30, 120, n)
    x[:len(JYK_EDGES)] = torch.tensor(JYK_EDGES)
    x[len(JYK_EDGES):len(JYK_EDGES) + 400] = torch.linspace(0, 6, 400)
    x = x.reshape(shape)
    _as_accurate_as_eager(_run(fn, x), fn(x), fn(x.double()), atol)
    if len(shape) == 2:
        xt = x.t()
        _as_accurate_as_eager(_run(fn, xt), fn(xt), fn(xt.double()), atol)


def test_airy_ai_in_a_chain():
    """airy_ai fills a kernel by itself (189 kernel values): fused with the
    ops around it, it overflowed the kernel (a CompilerError)."""
    x = torch.linspace(-60, 110, 1000)
    f = lambda x: torch.special.airy_ai(x * 2 + 1) * 2 + torch.sin(x)  # noqa: E731
    torch.testing.assert_close(_run(f, x), f(x), rtol=1e-5, atol=1e-6)


# ---- frexp (passes/decomp_math.c) ------------------------------------------------ #

@pytest.mark.parametrize("n", [19, 128, 129, 16385])
def test_frexp_bit_exact(n):
    """Mantissa and exponent bit for bit as eager over 2^-149 .. 2^128:
    subnormals, the powers of two on either side of each scaling step, the
    largest float, signed zeros, infinities and NaN."""
    torch.manual_seed(n)
    x = torch.randn(n) * torch.exp(torch.randn(n) * 30)
    sp = torch.tensor([0.0, -0.0, 1.0, 0.5, -3.0, 1e-40, -1e-45, 3e38, -3.4028235e38, 1.1754944e-38,
                       1.1754942e-38, 2.0**-127, INF, -INF, NAN, 2.0, 0.25, -1.0, 7.99999])
    x[:min(n, len(sp))] = sp[:n]
    m, e = _run(torch.frexp, x)
    wm, we = torch.frexp(x)
    assert e.dtype == torch.int32 and torch.equal(e, we)
    assert torch.equal(m.isnan(), wm.isnan())
    ok = ~wm.isnan()
    assert torch.equal(m[ok], wm[ok]) and torch.equal(m[ok].signbit(), wm[ok].signbit())


def test_frexp_gradient():
    x0 = torch.randn(3, 129)
    f = lambda x: (torch.frexp(x * 3)[0] * x).sum()  # noqa: E731  (d mantissa = grad / 2^exponent)
    grads = []
    for fn in (f, torch.compile(f, backend="neuron", dynamic=False)):
        x = x0.clone().requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_sgn_gradient_is_autograds_zero_tensor():
    """sgn's gradient of a real tensor is aten._efficientzerotensor (zeros)."""
    x0 = torch.randn(129)
    x = x0.clone().requires_grad_()
    (torch.compile(lambda x: (torch.sgn(x) * x).sum(), backend="neuron", dynamic=False)(x)).backward()
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(x.grad, torch.sgn(x0))


def _copysign_cases():
    neg_nan = -torch.tensor(NAN)  # the sign bit set (x86's 0/0 NaN has it too)
    other = torch.tensor([neg_nan, NAN, -0.0, 0.0, -2.0, 3.0, -INF, neg_nan, INF, -1e-40])
    x = torch.tensor([1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0, -9.0, 10.0])
    return x, other


@pytest.mark.parametrize("form", ["inputs", "computed-magnitude", "computed-sign", "broadcast", "scalar"])
def test_copysign_reads_the_sign_bit_of_nan(form):
    # the sign comes from other's bits: a negative NaN, -0.0 and denormals
    # give their sign (a comparison such as 1/other < 0 reads every NaN as
    # positive: copysign(1, -nan) was +1)
    x, o = _copysign_cases()
    f = {"inputs": lambda x, o: torch.copysign(x, o),
         "computed-magnitude": lambda x, o: torch.copysign(x * 2 + 1, o),
         "computed-sign": lambda x, o: torch.copysign(x, o * -1.0),   # o's producer: a kernel of its own
         "broadcast": lambda x, o: torch.copysign(x, o[0]),
         "scalar": lambda x, o: torch.copysign(x, -NAN) + o[:1] * 0}[form]
    torch.testing.assert_close(_run(f, x, o), f(x, o), rtol=0, atol=0, equal_nan=True)
    if form != "computed-sign":  # (a NaN's sign after bf16 arithmetic is the engines', not x86's)
        xb, ob = x.bfloat16(), o.bfloat16()  # a bf16 sign: its 16 bits
        torch.testing.assert_close(_run(f, xb, ob), f(xb, ob), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_signbit(dtype):
    # -0.0 and negative NaNs have the sign bit; it is read from the bits
    x = torch.tensor([-NAN, NAN, -0.0, 0.0, -2.0, 3.0, -INF, INF, -1e-40, 1e-40])
    x = x.to(dtype) if dtype.is_floating_point else torch.tensor([-3, 0, 5, -(2 ** 31), 2 ** 31 - 1],
                                                                     dtype=dtype)
    f = lambda x: torch.signbit(x)  # noqa: E731
    assert torch.equal(_run(f, x), f(x))
    g = lambda x: torch.signbit(x * 2) if dtype.is_floating_point else torch.signbit(x - 1)  # noqa: E731
    assert torch.equal(_run(g, x[2:]), g(x[2:]))  # a computed operand: in HBM first


@pytest.mark.parametrize("shape", [(127, 129), (128, 128), (16385,), (2, 65537)])
def test_copysign_and_signbit_at_tile_boundaries(shape):
    # partition and free-size boundaries, other transposed (non-contiguous)
    # where 2-D: the bit reload follows other's access map
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=g)
    o = torch.randn(tuple(reversed(shape)), generator=g)
    o.view(-1)[::7] = -torch.tensor(NAN)
    o.view(-1)[3::11] = -0.0
    o = o.t() if o.dim() == 2 else o
    f = lambda x, o: torch.copysign(x, o) + torch.signbit(o).float()  # noqa: E731
    torch.testing.assert_close(_run(f, x, o), f(x, o), rtol=0, atol=0, equal_nan=True)


# ---- ndtri (codegen/kir/special_fn.c, Cephes ndtri.c) -------------------------- #

NDTRI_EDGES = [0.0, -0.0, 1.0, -1e-30, 1.0000001, -5.0, 2.0, 0.5, 0.13533528, 0.13533527,
               0.13533530, 0.8646647, 0.86466473, 0.86466477, 1 - 2**-24, 1 - 2**-23, 1e-45, 1e-38,
               1e-30, 1.2664165549e-14, 1.26e-14, 1.27e-14, 0.99999, INF, -INF, NAN]


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
def test_ndtri_values_and_edges(shape):
    """Both tails' switch at sqrt(-2 log y) = 8 (y = 1.2664e-14), the middle
    range's ends exp(-2) and 1 - exp(-2), subnormal y, -inf at 0, +inf at 1,
    NaN outside [0, 1] and at NaN, the range spanned on a log scale; also a
    transposed input."""
    n = 1
    for d in shape:
        n *= d
    x = torch.linspace(0, 1, n)
    x[:len(NDTRI_EDGES)] = torch.tensor(NDTRI_EDGES)
    x[100:400] = torch.logspace(-44, -1e-3, 300)
    x = x.reshape(shape)
    fn = torch.special.ndtri
    _as_accurate_as_eager(_run(fn, x), fn(x), fn(x.double()))
    if len(shape) == 2:
        xt = x.t()
        _as_accurate_as_eager(_run(fn, xt), fn(xt), fn(xt.double()))


def test_ndtri_gradient():
    """The backward graph is eager's sqrt(2 pi) exp(ndtri(x)^2 / 2) times the
    incoming gradient (pow, exp, mul: ops trnc lowers already)."""
    torch.manual_seed(0)
    x0 = torch.rand(3, 129) * 0.998 + 0.001
    f = lambda x: (torch.special.ndtri(x) * torch.linspace(-1, 1, 129)).sum()  # noqa: E731
    grads = []
    for fn, dt in ((f, torch.float64), (torch.compile(f, backend="neuron", dynamic=False), torch.float32)):
        x = x0.to(dt).requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(grads[1].double(), grads[0], rtol=2e-5, atol=1e-6)


# ---- nextafter (codegen/kir/special_fn.c) --------------------------------------- #

def _nextafter_cases(dt, n):
    """x over many binades (subnormals, zeros, powers of two both ways, the
    largest finite value, +-inf, NaN) against y = +-inf, +-0, x itself and
    random values."""
    fi = torch.finfo(dt)
    torch.manual_seed(0)
    x = (torch.randn(n) * torch.exp(torch.randn(n) * 20)).to(dt)
    y = (torch.randn(n) * 1e3).to(dt)
    sp = torch.tensor([0.0, -0.0, fi.tiny, -fi.tiny, 2 * fi.tiny, fi.smallest_normal, -fi.smallest_normal,
                       fi.smallest_normal / 2, 2 * fi.smallest_normal, fi.max, -fi.max, INF, -INF, NAN,
                       1.0, -1.0, 0.5, 2.0, 2.0**-60, 2.0**-61, -2.0**-60, 2.0**-100, 1e-45]).to(dt)
    pw = torch.tensor([2.0**e for e in range(-149, 128)]).to(dt)
    pw = torch.cat([pw, -pw])
    k, m = len(sp), len(pw)
    for i, other in enumerate([INF, -INF, 0.0, -0.0]):
        x[i * k:(i + 1) * k], y[i * k:(i + 1) * k] = sp, other
    x[4 * k:5 * k], y[4 * k:5 * k] = sp, sp
    x[5 * k:6 * k], y[5 * k:6 * k] = 0.0, sp
    x[6 * k:6 * k + m], y[6 * k:6 * k + m] = pw, 0.0
    x[6 * k + m:6 * k + 2 * m], y[6 * k + m:6 * k + 2 * m] = pw, INF
    return x, y


def _bits_equal(got, want):
    ib = torch.int32 if want.dtype == torch.float32 else torch.int16
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    bad = (got.view(ib) != want.view(ib)) & ~nan
    assert not bad.any(), (got[bad][:8], want[bad][:8])


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16])
def test_nextafter_bit_exact(dt, shape):
    """Every result bit for bit as eager's (signed zeros included): subnormal
    steps, the step below a power of two (half an ulp), 0 -> +-smallest
    subnormal, -smallest subnormal -> -0, max -> inf, inf -> max, x == y -> y,
    NaN; also transposed inputs."""
    n = shape[0] * (shape[1] if len(shape) > 1 else 1)
    x, y = _nextafter_cases(dt, n)
    x, y = x.reshape(shape), y.reshape(shape)
    _bits_equal(_run(torch.nextafter, x, y), torch.nextafter(x, y))
    if len(shape) == 2:
        _bits_equal(_run(torch.nextafter, x.t(), y.t()), torch.nextafter(x.t(), y.t()))


def test_nextafter_computed_and_broadcast_operands():
    """x computed in the kernel (no HBM copy: the step is arithmetic, not a
    bit reload), y a broadcast row, and the result feeding further ops."""
    x, _ = _nextafter_cases(torch.float32, 129 * 65)
    x = x.reshape(65, 129)
    y = torch.linspace(-3, 3, 129)
    f = lambda x, y: torch.nextafter(x * 0.5, y)  # noqa: E731
    _bits_equal(_run(f, x, y), f(x, y))
    g = lambda x, y: (torch.nextafter(x, y) - x) * 2**20  # noqa: E731
    _bits_equal(_run(g, x, y), g(x, y))


# ---- special.zeta (codegen/kir/special_fn.c, Cephes zeta.c) ---------------------- #

ZETA_EDGES = [(1.0, 1.0), (0.5, 1.0), (-INF, 2.0), (0.9999999, 3.0), (1.0000001, 1.0), (1.001, 0.25),
              (2.0, INF), (INF, 0.5), (INF, 1.0), (INF, 2.0), (NAN, 1.0), (2.0, NAN),
              (3.0, -1.5), (2.5, -1.5), (2.0, -INF), (2.0, 0.0), (2.0, -0.0), (2.0, -3.0), (4.0, -15.5),
              (3.0, -15.9), (200.0, 0.5), (50.0, 1.0), (100.0, 1e-3), (2.0, 1e30), (1e30, 2.0),
              (1e30, 1.0), (1e30, 0.5), (3e13, 2.0), (2e13, 2.0), (7.0, 1e-30), (30.0, 0.9)]


def _zeta_cases(n):
    torch.manual_seed(0)
    x = torch.rand(n) * 30 + 1
    q = torch.rand(n) * 40 - 15
    m = n // 8
    q[:m] = torch.rand(m) * 3                                  # near the pole at q = 0
    x[m:2 * m] = torch.randint(2, 12, (m,)).float()             # q < 0 needs an integer x
    q[2 * m:3 * m] = torch.exp(torch.randn(m) * 5)               # q over many magnitudes
    x[3 * m:4 * m] = 1 + torch.exp(torch.randn(m) * 3 - 6)       # x just above the pole at 1
    e = torch.tensor(ZETA_EDGES)
    x[:len(e)], q[:len(e)] = e[:, 0], e[:, 1]
    return x, q


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
def test_zeta_values_and_edges(shape):
    """The pole at x = 1 (+inf) and x < 1 (NaN), q a non-positive integer
    (+inf), q < 0 with x no integer (NaN) and with x an integer (the direct
    terms cross 0), huge and tiny q, x = inf and eager's NaN beyond
    x = 2.5e13 (its double product x (x+1) ... overflows), against eager
    (which sums in double) within 2e-5 relative; also transposed inputs."""
    n = shape[0] * (shape[1] if len(shape) > 1 else 1)
    x, q = (t.reshape(shape) for t in _zeta_cases(n))
    fn = torch.special.zeta
    for a, b in ((x, q), (x.t(), q.t())) if len(shape) == 2 else ((x, q),):
        got, want = _run(fn, a, b), fn(a, b)
        assert torch.equal(torch.isnan(got), torch.isnan(want))
        assert torch.equal(got[torch.isinf(want)], want[torch.isinf(want)])
        fin = torch.isfinite(want)
        torch.testing.assert_close(got[fin], want[fin], rtol=2e-5, atol=1e-30)


def test_zeta_broadcast_and_limit():
    """A broadcast q row; below q = -16 (non-integer q, integer x) the fixed
    26 direct terms leave the tail too close to 0: NaN, the documented limit."""
    x = torch.linspace(1.5, 12, 129 * 3).reshape(3, 129)
    q = torch.linspace(0.1, 50, 129)
    torch.testing.assert_close(_run(torch.special.zeta, x, q), torch.special.zeta(x, q), rtol=2e-5, atol=0)
    got = _run(torch.special.zeta, torch.tensor([2.0, 2.0]), torch.tensor([-15.99, -16.5]))
    torch.testing.assert_close(got[0], torch.special.zeta(torch.tensor(2.0), torch.tensor(-15.99)), rtol=2e-5, atol=0)
    assert torch.isnan(got[1])


@pytest.mark.parametrize("form", ["other_scalar", "self_scalar"])
def test_zeta_scalar_operand(form):
    """special_zeta.other_scalar and .self_scalar (a Python number for q or x)."""
    t = torch.linspace(1.5, 9, 129)
    f = (lambda t: torch.special.zeta(t, 2.5)) if form == "other_scalar" else (lambda t: torch.special.zeta(3.0, t))
    torch.testing.assert_close(_run(f, t), f(t), rtol=2e-5, atol=0)


def test_ndtri_zeta_nextafter_in_chains():
    """The three fused with the ops around them (zeta's 176 kernel values and
    ndtri's 128 bound the fusion so that no kernel overfills)."""
    x = torch.linspace(1.5, 12, 1000)
    q = torch.linspace(0.1, 30, 1000)
    fs = [lambda x, q: torch.special.zeta(x * 2 + 1, q) * 2 + torch.sin(x),
          lambda x, q: (torch.special.ndtri(torch.sigmoid(x)) + torch.special.zeta(x, q.abs() + 1)
                        + torch.nextafter(x, q)),
          lambda x, q: torch.special.ndtri(torch.sigmoid(x)) * torch.special.ndtri(torch.sigmoid(q))]
    for f in fs:
        torch.testing.assert_close(_run(f, x, q), f(x, q), rtol=1e-5, atol=1e-6, equal_nan=True)
