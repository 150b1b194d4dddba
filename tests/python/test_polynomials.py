"""The orthogonal polynomials of torch.special (issue 12) compiled with trnc
against eager PyTorch (codegen/kir/polynomial.c): Chebyshev T, U, V, W and
their shifted forms at every degree n (a tensor or a Python number) through
eager's branches (n < 0, |y| == 1, the trigonometric forms beyond eager's
threshold, the recurrence below it, the closed form in acosh|y| beyond 1,
NaN where eager's recurrence overflows), Hermite H/He, Laguerre L and
Legendre P at a Python-number n (the recurrence unrolled n steps) and the
refusals with their bounds. Each compile is checked to be trnc's
(trnc.stats())."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")

CHEBYSHEV = [torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
             torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
             torch.special.shifted_chebyshev_polynomial_t, torch.special.shifted_chebyshev_polynomial_u,
             torch.special.shifted_chebyshev_polynomial_v, torch.special.shifted_chebyshev_polynomial_w]
RECURRENCE = [torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
              torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p]

# x: inside (-1, 1), the endpoints (shifted: 0 and 1), just beyond 1, far
# beyond, +-inf, NaN, a tiny x (shifted: y rounds to -1)
XS = [0.3, -0.7, 0.999, -0.9999, 0.0, 0.5, 1.0, -1.0, 1.0000001, 1.5, -1.5, -8.47, 3.0, -3.0,
      NAN, INF, -INF, 1e-9, 0.75, 0.25]
# n: below 0 (and in (-1, 0), which truncates to 0), every step of the
# unrolled recurrence, both sides of eager's thresholds (4, 6, 8), large
# degrees (overflow beyond 1: NaN after two steps), NaN, inf, beyond 2^63
NS = [-1.77, -0.5, 0.0, 1.0, 2.0, 3.0, 4.0, 4.5, 5.0, 6.0, 7.0, 7.9, 8.0, 9.0, 10.0, 13.0, 20.0,
      50.0, 81.0, 82.0, 83.0, 100.0, 300.0, NAN, INF, -INF, 1e19]


def _grid():
    x = torch.tensor(XS)[:, None].expand(len(XS), len(NS)).contiguous()
    n = torch.tensor(NS)[None, :].expand(len(XS), len(NS)).contiguous()
    return x, n


def _check(got, want, want64, rtol=1e-4, scale=None):
    """NaN and inf where eager has them; finite values within rtol (1 + |v|)
    of eager's float32 or of float64 (inside (-1, 1) the polynomials
    oscillate on a scale of 1, and acos's rounding moves the phase n th by
    about n ulp, in eager as here)."""
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got[torch.isnan(got) != torch.isnan(want)])
    inf = torch.isinf(want)
    assert torch.equal(got[inf], want[inf])
    fin = torch.isfinite(want)
    g, w, r = got[fin].double(), want[fin].double(), want64[fin]
    s = 1 if scale is None else scale
    ok = ((g - w).abs() <= rtol * (s + w.abs())) | ((g - r).abs() <= rtol * (s + r.abs()))
    assert ok.all(), (g[~ok][:8], w[~ok][:8], r[~ok][:8])


@pytest.mark.parametrize("fn", CHEBYSHEV, ids=lambda f: f.__name__)
def test_chebyshev_every_branch(fn):
    x, n = _grid()
    _check(run_counted(fn, x, n), fn(x, n), fn(x.double(), n.double()))


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
@pytest.mark.parametrize("fn", CHEBYSHEV, ids=lambda f: f.__name__)
def test_chebyshev_sizes(fn, shape):
    """x over [-2.5, 2.5], n over 0..39 and an int64 n broadcast from a row;
    at 127x129 also transposed (non-contiguous) operands."""
    numel = 1
    for d in shape:
        numel *= d
    x = torch.linspace(-2.5, 2.5, numel).reshape(shape)
    n = (torch.arange(numel) % 40).to(torch.float32).reshape(shape)
    _check(run_counted(fn, x, n), fn(x, n), fn(x.double(), n.double()))
    if len(shape) == 2:
        xt, nt = x.t(), n.t()
        _check(run_counted(fn, xt, nt), fn(xt, nt), fn(xt.double(), nt.double()))
        ni = torch.arange(shape[1]) % 12
        _check(run_counted(fn, x, ni), fn(x, ni), fn(x.double(), ni))


@pytest.mark.parametrize("n", [0, 3, 7, 9, 25, 1000])
@pytest.mark.parametrize("fn", CHEBYSHEV, ids=lambda f: f.__name__)
def test_chebyshev_python_n(fn, n):
    """n a Python number (the n_scalar overload)."""
    x = torch.linspace(-1.2, 1.2, 1001)
    g = run_counted(lambda a: fn(a, n), x)
    # large n inside (-1, 1): acos's few ulp times n against eager's
    _check(g, fn(x, n), fn(x.double(), n), rtol=1e-4 if n < 100 else 1e-2)


def test_chebyshev_in_a_chain():
    """The polynomial (161 kernel values at most) fused with its neighbours."""
    x = torch.linspace(-1.5, 1.5, 4097)
    n = torch.arange(4097.0) % 17
    f = lambda x, n: torch.special.chebyshev_polynomial_w(x * 0.5 + 0.25, n + 1) * 2 + torch.sin(x)  # noqa: E731
    _check(run_counted(f, x, n), f(x, n), f(x.double(), n.double()))


@pytest.mark.parametrize("n", [-3, 0, 1, 2, 5, 11, 24])
@pytest.mark.parametrize("fn", RECURRENCE, ids=lambda f: f.__name__)
def test_recurrence_python_n(fn, n):
    """Python-number n: the recurrence unrolled exactly n steps; x over
    [-3, 3] with 0, +-1, +-inf and NaN (Laguerre's x == 0, Legendre's |x| == 1).
    Near the zeros the terms cancel: the tolerance is relative to the
    polynomial's largest value on [-3, 3] (eager's CPU build contracts the
    recurrence into FMAs, so its roundings are not these). Laguerre and
    Legendre of NaN beyond n = 1 return eager's uninitialized result (its
    loop stops before the first step): NaN here, not compared."""
    x = torch.cat([torch.linspace(-3, 3, 16385), torch.tensor([0.0, -0.0, 1.0, -1.0, INF, -INF])])
    if fn in RECURRENCE[:2] or n < 2:
        x = torch.cat([x, torch.tensor([NAN])])
    got, want, want64 = run_counted(lambda a: fn(a, n), x), fn(x, n), fn(x.double(), n)
    _check(got, want, want64, rtol=1e-4, scale=1e-2 * want64[want64.isfinite()].abs().max().item())
    if fn not in RECURRENCE[:2] and n >= 2:
        assert torch.isnan(run_counted(lambda a: fn(a, n), torch.tensor([NAN]))).all()


def test_hermite_python_n_beyond_its_limit_is_nan():
    x = torch.linspace(-1, 1, 129)
    for fn in RECURRENCE[:2]:
        got = run_counted(lambda a: fn(a, 129), x)
        assert torch.equal(torch.isnan(got), torch.isnan(fn(x, 129))) and torch.isnan(got).all()


HERMITE_NS = [-1.77, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0, 20.0, 50.0, 100.0, 127.0, 128.0, 128.5,
              129.0, 1e10, NAN, INF, -INF, 1e19]


@pytest.mark.parametrize("fn", RECURRENCE[:2], ids=lambda f: f.__name__)
def test_hermite_tensor_n(fn):
    """A tensor n: all 127 steps of eager's float32 recurrence, each where
    trunc(n) exceeds it; 1 at n = 0, NaN beyond 128, 0 below 0 and at NaN,
    inf and beyond 2^63 (eager's int64 cast). x keeps away from the
    overflow boundary, where eager's FMA-contracted step stays finite one
    step longer."""
    xs = [0.3, -0.7, 0.0, 1.0, -1.0, 2.0, -3.0, 8.0, NAN, INF, -INF]
    x = torch.tensor(xs)[:, None].expand(len(xs), len(HERMITE_NS)).contiguous()
    n = torch.tensor(HERMITE_NS)[None, :].expand(len(xs), len(HERMITE_NS)).contiguous()
    _check(run_counted(fn, x, n), fn(x, n), fn(x.double(), n.double()))


@pytest.mark.parametrize("shape", [(127, 129), (16385,)])
def test_hermite_tensor_n_sizes(shape):
    """x over [-2, 2], n over 0..50 (int64, and float transposed): finite
    (He_n reaches float32's overflow near n = 55, where eager's FMA-contracted
    step can give +-inf one step later than the separate multiply and
    subtraction, which give NaN there)."""
    fn = torch.special.hermite_polynomial_he
    numel = 1
    for d in shape:
        numel *= d
    x = torch.linspace(-2, 2, numel).reshape(shape)
    n = (torch.arange(numel) % 51).reshape(shape)
    w64 = fn(x.double(), n.double())
    scale = 1e-2 * w64[w64.isfinite()].abs().max().item()
    _check(run_counted(fn, x, n), fn(x, n), w64, scale=scale)
    if len(shape) == 2:
        xt, nt = x.t(), n.t().float()
        _check(run_counted(fn, xt, nt), fn(xt, nt), fn(xt.double(), nt.double()), scale=scale)


def _refusal(fn, *args):
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)(*args)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    return str(err)


@pytest.mark.parametrize("fn", RECURRENCE[2:], ids=lambda f: f.__name__)
def test_recurrence_refusals_name_the_bound(fn):
    x = torch.linspace(-1, 1, 129)
    assert "at most 24" in _refusal(lambda a: fn(a, 25), x)
    assert "Python number" in _refusal(lambda a, n: fn(a, n), x, torch.full((129,), 3.0))
