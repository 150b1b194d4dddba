"""Indexed reductions, flat writes and sorted searches (passes/decomp_index.c)
compiled with trnc against eager PyTorch: scatter_reduce with prod/amax/amin
(an index covering only part of self, include_self both ways, NaN and
infinities), index_reduce with every reduce, put with negative indices and
accumulate, bucketize and searchsorted (right, side, sorter, batched
sequences, NaN), at 0-d, empty and 127/128/129 sizes; the size limits are
refused as UnsupportedOperatorError. Each run also checks that trnc compiled
the graph (trnc.stats())."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")


_run = run_counted


def _same(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "mean", "sum"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_partial_index(reduce, include_self):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(10, 6, generator=g)
    src = torch.randn(7, 6, generator=g)
    if reduce in ("prod", "amax", "amin"):  # sum/mean run scatter_add's one-hot matmul
        src[0, 0], src[1, 1], src[2, 2] = NAN, INF, -INF
    idx = torch.randint(0, 10, (5, 4), generator=g)
    f = lambda a, i, s: a.scatter_reduce(0, i, s, reduce, include_self=include_self)  # noqa: E731
    _same(_run(f, x, idx, src), f(x, idx, src))
    f1 = lambda a, i, s: a.scatter_reduce(1, i, s, reduce, include_self=include_self)  # noqa: E731
    idx1 = torch.randint(0, 6, (3, 9), generator=g)
    src1 = torch.randn(4, 9, generator=g)
    _same(_run(f1, x, idx1, src1), f1(x, idx1, src1))


@pytest.mark.parametrize("n", [127, 128, 129])
def test_scatter_reduce_amax_rows(n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g)
    idx = torch.randint(0, n, (3, n), generator=g)
    src = torch.randn(3, n, generator=g)
    f = lambda a, i, s: a.scatter_reduce(1, i, s, "amax")  # noqa: E731
    _same(_run(f, x, idx, src), f(x, idx, src))


def test_scatter_reduce_prod_gradient():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 3, generator=g).requires_grad_()
    src = torch.randn(4, 3, generator=g).requires_grad_()
    idx = torch.tensor([[0, 1, 2], [0, 1, 2], [5, 4, 3], [1, 1, 1]])
    f = lambda a, s: a.scatter_reduce(0, idx, s, "prod").sum()  # noqa: E731
    out = _run(f, x, src)
    gx, gs = torch.autograd.grad(out, [x, src])
    x2, s2 = x.detach().clone().requires_grad_(), src.detach().clone().requires_grad_()
    wx, ws = torch.autograd.grad(f(x2, s2), [x2, s2])
    _same(gx, wx)
    _same(gs, ws)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 9, generator=g)
    src = torch.randn(4, 5, generator=g)
    idx = torch.tensor([0, 8, 0, 3, 8])
    f = lambda a, s: a.index_reduce(1, idx, s, reduce, include_self=include_self)  # noqa: E731
    _same(_run(f, x, src), f(x, src))
    s0, x0 = torch.tensor(2.5), torch.tensor(-1.5)  # 0-d, as OpInfo's first sample
    f0 = lambda a, s: a.index_reduce(0, torch.tensor([0]), s, reduce, include_self=include_self)  # noqa: E731
    _same(_run(f0, x0, s0), f0(x0, s0))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_negative_indices(accumulate):
    x = torch.arange(12.).view(3, 4)
    idx = torch.tensor([[0, -1], [5, -12]])
    src = torch.tensor([[10., 20.], [30., 40.]])
    f = lambda a, s: a.put(idx, s, accumulate=accumulate)  # noqa: E731
    _same(_run(f, x, src), f(x, src))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("n", [0, 127, 128, 129])
def test_bucketize(right, n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g)
    if n:
        x[0], x[-1] = NAN, INF
    bounds = torch.tensor([-1.0, -0.5, 0.0, 0.0, 0.5, 2.0])
    for out_int32 in (False, True):
        f = lambda t: torch.bucketize(t, bounds, out_int32=out_int32, right=right)  # noqa: E731
        assert torch.equal(_run(f, x), f(x))
    xi = torch.randint(-5, 5, (n,), generator=g)
    bi = torch.tensor([-3, 0, 0, 2])
    assert torch.equal(_run(lambda t: torch.bucketize(t, bi, right=right), xi),
                       torch.bucketize(xi, bi, right=right))


def test_searchsorted_batched_side_sorter():
    g = torch.Generator().manual_seed(4)
    seq = torch.sort(torch.randn(3, 8, generator=g), dim=-1).values
    vals = torch.randn(3, 5, generator=g)
    for side in ("left", "right"):
        f = lambda s, v: torch.searchsorted(s, v, side=side)  # noqa: E731
        assert torch.equal(_run(f, seq, vals), f(seq, vals))
    perm = torch.stack([torch.randperm(8, generator=g) for _ in range(3)])
    shuffled = seq.gather(-1, perm)
    sorter = torch.argsort(shuffled, dim=-1)
    f = lambda s, v, o: torch.searchsorted(s, v, sorter=o, right=True)  # noqa: E731
    assert torch.equal(_run(f, shuffled, vals, sorter), f(shuffled, vals, sorter))


def test_onehot_limit_refused():
    x = torch.zeros(8192)
    idx = torch.zeros(4096, dtype=torch.int64)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(lambda a, s: a.scatter_reduce(0, idx, s, "amax"), backend="neuron",
                      dynamic=False, fullgraph=True)(x, torch.ones(4096))
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "2^24" in str(err)


@pytest.mark.parametrize("n", [1, 127, 128, 129, 2100])  # 2100: 6300 elements, a blocked prefix sum
def test_masked_scatter_forward_backward(n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g)
    mask = torch.rand(n, generator=g) > 0.5  # broadcast over x's rows
    src = torch.randn(4, n, generator=g)
    f = lambda a, s: a.masked_scatter(mask, s)  # noqa: E731
    _same(_run(f, x, src), f(x, src))
    xa, sa = x.clone().requires_grad_(), src.clone().requires_grad_()
    out = _run(f, xa, sa)
    cot = torch.randn(out.shape, generator=g)
    got = torch.autograd.grad(out, [xa, sa], cot)
    xb, sb = x.clone().requires_grad_(), src.clone().requires_grad_()
    want = torch.autograd.grad(f(xb, sb), [xb, sb], cot)
    for a, b in zip(got, want):
        _same(a, b)


@pytest.mark.parametrize("op", ["scatter_add", "index_put", "embedding_backward"])
def test_accumulating_non_finite_sources_reach_only_their_rows(op):
    # the one-hot matmul of accumulating scatters multiplied every source by
    # 0 for the rows it does not hit: one NaN or inf made its whole block NaN
    torch.manual_seed(0)
    if op == "scatter_add":
        idx, src = torch.randint(0, 10, (40, 5)), torch.randn(40, 5)
        src[0, 0], src[1, 1], src[2, 2] = float("nan"), float("inf"), -float("inf")
        src[3, 3], src[4, 3] = float("inf"), -float("inf")    # both signs: NaN if they meet
        f, args = (lambda x, i, s: x.scatter_add(0, i, s)), (torch.zeros(10, 5), idx, src)
    elif op == "index_put":
        v = torch.randn(4, 5)
        v[1, 0], v[2, 4] = float("nan"), -float("inf")
        f = lambda x, v: x.index_put((torch.tensor([1, 3, 1, 7]),), v, accumulate=True)  # noqa: E731
        args = (torch.randn(10, 5), v)
    else:
        g = torch.randn(30, 8)
        g[5, 2], g[6, 3] = float("nan"), float("inf")
        f = lambda g, ids: torch.ops.aten.embedding_dense_backward(g, ids, 20, -1, False)  # noqa: E731
        args = (g, torch.randint(0, 20, (30,)))
    torch._dynamo.reset()
    got = torch.compile(f, backend="neuron", dynamic=False)(*args)
    assert trnc.stats()["inference"] >= 1
    torch.testing.assert_close(got, f(*args), equal_nan=True)


@pytest.mark.parametrize("case", ["past", "before", "zero-rows", "batched", "alias"])
def test_empty_diagonal(case):
    # an offset past the matrix, or a dim of size 0, gives an empty diagonal
    # (a view with no elements, its offset possibly past the buffer as eager
    # puts it): nothing to read, and its consumers see zero elements
    x = torch.randn(4, 2, 2) if case == "batched" else torch.randn(0, 3) if case == "zero-rows" else torch.randn(3, 3)
    f = {"past": lambda x: x.diagonal(offset=5) * 2,
         "before": lambda x: x.diagonal(offset=-4).sum() + x.sum(),
         "zero-rows": lambda x: x.diagonal().sum() + 1,
         "batched": lambda x: x.diagonal(offset=2, dim1=1, dim2=2).exp(),
         "alias": lambda x: x.diagonal(offset=3)}[case]
    _same(_run(f, x), f(x))


def test_empty_diagonal_gradient():
    x = torch.randn(3, 3, requires_grad=True)
    f = lambda x: x.diagonal(offset=5).sum() + (x * x).sum()  # noqa: E731
    torch.compile(f, backend="neuron", dynamic=False)(x).backward()
    assert trnc.stats()["backward"] == 1
    torch.testing.assert_close(x.grad, 2 * x.detach())


@pytest.mark.parametrize("shape,size,fill", [((), 3, -1), ((), 0, -1), ((5,), 7, -1), ((3, 130, 5), 10, -1),
                                             ((3, 130, 5), 2000, 7), ((16385,), 16385, -1),
                                             ((127, 129), 8000, 0)])
def test_nonzero_static(shape, size, fill):
    g = torch.Generator().manual_seed(size)
    x = torch.randn(shape, generator=g)
    x[x > 0.5] = 0
    if x.numel() > 3:
        x.view(-1)[:3] = torch.tensor([NAN, -0.0, INF])  # NaN and inf are nonzero, -0 is zero
    f = lambda x: torch.nonzero_static(x, size=size, fill_value=fill)  # noqa: E731
    got = _run(f, x)
    assert got.dtype == torch.int64 and got.shape == f(x).shape
    assert got.equal(f(x))
    if x.dim() == 3:  # a transposed (non-contiguous) input and an int one
        xt = x.transpose(0, 2)
        assert _run(f, xt).equal(f(xt))
        xi = (x * 3).to(torch.int32)
        assert _run(f, xi).equal(f(xi))
