"""hypot, addbmm, and addmm/baddbmm with beta = 0 (passes/decomp_math.c)
compiled with trnc against eager PyTorch: infinities against NaN, squares
that would overflow or underflow float32, subnormals, broadcasting at
127/128/129 and 16385; addbmm's one contraction over batch x inner dim at
tile sizes, and beta = 0, where eager never reads self (a NaN in self, which
trnc's fused bias used to multiply by 0 into the result, stays out)."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")


def test_hypot_special_values():
    x = torch.tensor([INF, NAN, -INF, 0.0, -0.0, 3e38, 1e-40, NAN, 3.0, -4.0, 1e20, 1e-20, 2e19])
    y = torch.tensor([NAN, INF, NAN, 0.0, -0.0, 3e38, 1e-40, NAN, -4.0, 3.0, 1e20, -1e-20, 0.0])
    got, want = run_counted(torch.hypot, x, y), torch.hypot(x, y)
    torch.testing.assert_close(got, want, rtol=2e-7, atol=0, equal_nan=True)


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_hypot_broadcast_at_tile_boundaries(n):
    torch.manual_seed(n)
    a, b = torch.randn(n, 1) * 1e3, torch.randn(1, 7)
    torch.testing.assert_close(run_counted(torch.hypot, a, b), torch.hypot(a, b), rtol=3e-7, atol=0)


def test_hypot_gradient():
    torch.manual_seed(0)
    a0, b0 = torch.randn(4, 129), torch.randn(4, 129)
    grads = []
    for fn in (torch.hypot, torch.compile(torch.hypot, backend="neuron", dynamic=False)):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        fn(a, b).sum().backward()
        grads.append((a.grad, b.grad))
    assert trnc.stats()["backward"] >= 1
    for g, w in zip(*grads):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("B,N,M,P", [(1, 1, 1, 1), (3, 5, 7, 4), (4, 129, 33, 130),
                                     (2, 128, 256, 127), (0, 3, 2, 4)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
def test_addbmm_equals_eager(B, N, M, P, beta, alpha):
    torch.manual_seed(N + M)
    s, b1, b2 = torch.randn(N, P), torch.randn(B, N, M), torch.randn(B, M, P)
    s[0, 0] = NAN                          # read only when beta != 0
    f = lambda s, b1, b2: torch.addbmm(s, b1, b2, beta=beta, alpha=alpha)  # noqa: E731
    torch.testing.assert_close(run_counted(f, s, b1, b2), f(s, b1, b2), rtol=1e-5, atol=1e-4,
                               equal_nan=True)


def test_addmm_and_baddbmm_with_beta_zero_do_not_read_self():
    torch.manual_seed(1)
    s = torch.randn(2, 129, 4)
    s[0, 0, 0], s[1, 5, 2] = NAN, INF
    a, b = torch.randn(2, 129, 5), torch.randn(2, 5, 4)
    f = lambda s, a, b: torch.baddbmm(s, a, b, beta=0, alpha=2)  # noqa: E731
    got = run_counted(f, s, a, b)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, f(s, a, b), rtol=1e-5, atol=1e-5)
    g = lambda s, a, b: torch.addmm(s, a, b, beta=0)  # noqa: E731
    got = run_counted(g, s[0], a[0], b[0])
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, g(s[0], a[0], b[0]), rtol=1e-5, atol=1e-5)
