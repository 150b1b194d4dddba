"""Reductions at tile and partition boundaries, against eager.

A full reduction lays its input out as [rows <= 128 partitions, columns] and
folds the per-partition partials across partitions; once there were more
than 128 rows (more than 16,384 elements) the running total shared a tile
pool that rotated under it and the result was silently wrong
(``torch.ones(65536).sum()`` gave 16512). Every expression of that report is
here, plus each reduction at every boundary size: 1, 127/128/129 (one
partition tile), 16383/16384/16385 and 16512 (128 rows of 128), 65536 and
131072 (several row blocks), full and along a dim, forward and backward.

Tolerances: sums are compared relative to sum(|x|) (fp32 accumulation in a
different order than eager's), extrema exactly, statistics at rtol 1e-5,
softmax rows at a tolerance that grows with the row length (see there).
"""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

SIZES = [1, 127, 128, 129, 16383, 16384, 16385, 16512, 65536, 131072]


def _compiled(fn, *args):
    torch._dynamo.reset()
    before = trnc.stats()["compiles"] + trnc.stats()["hits"]
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    after = trnc.stats()["compiles"] + trnc.stats()["hits"]
    assert after > before, "trnc must have compiled the graph"
    return got


def _close_sum(got, want, x):
    """|got - want| within 1e-6 of the sum of magnitudes (fp32 rounding)."""
    scale = x.abs().float().sum().item() + 1.0
    assert got.shape == want.shape and got.dtype == want.dtype
    err = (got.float() - want.float()).abs().max().item()
    assert err <= 2e-6 * scale, f"error {err} vs scale {scale}"


@pytest.mark.parametrize(
    "expr, make, want",
    [
        ("torch.ones(16384).sum()", lambda: torch.ones(16384), 16384.0),
        ("torch.ones(16512).sum()", lambda: torch.ones(16512), 16512.0),
        ("torch.ones(65536).sum()", lambda: torch.ones(65536), 65536.0),
        ("torch.ones(2**20).sum()", lambda: torch.ones(2**20), 1048576.0),
        ("torch.ones(1, 8).expand(4096, 8).sum()", lambda: torch.ones(1, 8).expand(4096, 8), 32768.0),
    ],
)
def test_reported_sums_exact(expr, make, want):
    got = _compiled(lambda x: x.sum(), make())
    assert got.item() == want, expr


def test_reported_means():
    assert _compiled(lambda x: x.mean(), torch.ones(65536)).item() == 1.0
    x = torch.randn(512, 256, generator=torch.Generator().manual_seed(0))
    got = _compiled(lambda x: x.mean(), x)
    torch.testing.assert_close(got, x.double().mean().float(), rtol=0, atol=1e-7)


@pytest.mark.parametrize("n", SIZES)
def test_full_sum_mean_at_boundaries(n):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    _close_sum(_compiled(lambda x: x.sum(), x), x.sum(), x)
    _close_sum(_compiled(lambda x: x.mean() * x.numel(), x), x.mean() * n, x)
    # the expression of the report, on ones: every element counted exactly once
    assert _compiled(lambda x: x.sum(), torch.ones(n)).item() == float(n)


@pytest.mark.parametrize("n", SIZES)
def test_full_extrema_at_boundaries(n):
    g = torch.Generator().manual_seed(n + 1)
    x = torch.randn(n, generator=g)
    x[(n * 7) // 11] = 9.0      # one clear maximum away from the first tile
    x[(n * 3) // 5] = -9.0 if n > 1 else x[0]
    got = _compiled(lambda x: (x.amax(), x.amin(), x.argmax(), x.argmin()), x)
    want = (x.amax(), x.amin(), x.argmax(), x.argmin())
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("n", [129, 16385, 65536, 131072])
def test_full_statistics_at_boundaries(n):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n + 2)) + 3.0
    got = _compiled(lambda x: (x.var(), x.std(), torch.logsumexp(x, 0)), x)
    want = (x.double().var().float(), x.double().std().float(), torch.logsumexp(x.double(), 0).float())
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(129, 16385), (16385, 129), (3, 65536), (65536, 3), (2, 131072)])
@pytest.mark.parametrize("dim", [0, 1])
def test_dim_reductions(shape, dim):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape) + dim))
    s, m, mx = _compiled(lambda x: (x.sum(dim), x.mean(dim, keepdim=True), x.amax(dim)), x)
    _close_sum(s, x.sum(dim), x)
    _close_sum(m * shape[dim], x.mean(dim, keepdim=True) * shape[dim], x)
    torch.testing.assert_close(mx, x.amax(dim), rtol=0, atol=0)
    # transposed input: the reduced dim is strided
    xt = x.t()
    _close_sum(_compiled(lambda x: x.sum(1 - dim), xt), xt.sum(1 - dim), xt)


@pytest.mark.parametrize("n", [129, 16385, 65536])
def test_softmax_layer_norm_long_rows(n):
    x = torch.randn(2, n, generator=torch.Generator().manual_seed(n + 3)) * 4
    sm, lsm, ln = _compiled(
        lambda x: (torch.softmax(x, -1), torch.log_softmax(x, -1),
                   torch.nn.functional.layer_norm(x, (n,))), x)
    # a row's sum accumulates sequentially in fp32 on VectorE/ScalarE: its
    # rounding error grows with the row length (eager sums pairwise)
    torch.testing.assert_close(sm, torch.softmax(x, -1), rtol=n * 2e-9 + 1e-6, atol=1e-9)
    torch.testing.assert_close(lsm, torch.log_softmax(x, -1), rtol=1e-5, atol=n * 2e-9 + 1e-6)
    torch.testing.assert_close(ln, torch.nn.functional.layer_norm(x, (n,)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [16385, 65536])
def test_backward_reductions(n):
    """A mean loss over many elements and a bias gradient summed over a long batch."""
    torch.manual_seed(n)
    lin = torch.nn.Linear(4, 3)
    ref = torch.nn.Linear(4, 3)
    ref.load_state_dict(lin.state_dict())
    x = torch.randn(n, 4)

    def loss(m, x):
        return (m(x) ** 2).mean()

    torch._dynamo.reset()
    before = trnc.stats()["compiles"] + trnc.stats()["hits"]
    torch.compile(loss, backend="neuron", dynamic=False)(lin, x).backward()
    assert trnc.stats()["compiles"] + trnc.stats()["hits"] >= before + 2  # forward and backward
    loss(ref, x).backward()
    for (name, p), q in zip(lin.named_parameters(), ref.parameters()):
        denom = max(q.grad.abs().max().item(), 1e-3)
        err = (p.grad - q.grad).abs().max().item() / denom
        assert err < 1e-4, f"{name}: relative gradient error {err}"
