"""argmax / argmin / max.dim / min.dim and nll_loss at real sizes, through
torch.compile(backend="neuron", dynamic=False) on the simulator, against
eager (passes/decomp_argmax.c: amax/amin, then amin of an iota where x is the
extremum or NaN; nll_loss as a gather of the targets and an iota one-hot).

Partition-tile boundaries (127/128/129 rows), row lengths across SBUF chunks
(16384/16385) and 65536+, bf16, NaN inputs (the first NaN wins), ties (the
first index wins). Indices and values exact (atol 0).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

nan = float("nan")


def _run(fn, *args):
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    rep = trnc.last_report()
    assert rep is not None and rep["kernels"] >= 1, "the graph must run on the NeuronCore simulator"
    return got


def _ties(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-50, 51, shape, generator=g).float() * 0.25).to(dtype)


ROWS = [(127, 300), (128, 300), (129, 300), (3, 16384), (2, 16385), (1, 65539)]


def _extrema_cases():
    # make test: every shape with NaNs in fp32, and bf16 / no-NaN at one
    # partition boundary and one chunk boundary; the rest with make test-long
    for dtype in (torch.float32, torch.bfloat16):
        for nans in (False, True):
            for shape in ROWS:
                short = (dtype == torch.float32 and nans) or shape in ((129, 300), (2, 16385))
                yield pytest.param(shape, nans, dtype, marks=() if short else pytest.mark.long,
                                   id=f"{shape[0]}x{shape[1]}-{nans}-{str(dtype)[6:]}")


@pytest.mark.parametrize("shape,nans,dtype", _extrema_cases())
def test_arg_and_dim_extrema(shape, nans, dtype):
    x = _ties(shape, dtype, shape[0] + shape[1])
    if nans:
        r, c = shape
        for i in range(0, r, 5):
            x[i, (i * 7919) % c] = nan
            x[i, c - 1] = nan          # a later NaN: the first one wins
    fn = lambda x: (x.argmax(-1), x.argmin(1), *torch.max(x, -1), *torch.min(x, 1))  # noqa: E731
    got, want = _run(fn, x), fn(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("shape,dim", [((129, 130), 0), ((4, 129, 3), 1), ((16385,), 0)])
def test_strided_dim_and_whole(shape, dim):
    x = _ties(shape, torch.float32, 7)
    x.view(-1)[x.numel() // 3] = nan
    fn = lambda x: (x.argmax(dim, keepdim=True), torch.min(x, dim), x.argmax(), x.argmin())  # noqa: E731
    got, want = _run(fn, x), fn(x)
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=0)
    torch.testing.assert_close(tuple(got[1]), tuple(want[1]), rtol=0, atol=0, equal_nan=True)
    assert got[2].item() == want[2].item() and got[3].item() == want[3].item()


def test_bool_and_int8_max_dim():
    g = torch.Generator().manual_seed(3)
    b = torch.rand(129, 513, generator=g) > 0.9
    i8 = torch.randint(-128, 128, (129, 513), generator=g, dtype=torch.int8)
    fn = lambda b, i: (*torch.max(b, 1), *torch.min(i, 1), i.argmax(0))  # noqa: E731
    for gg, w in zip(_run(fn, b, i8), fn(b, i8)):
        torch.testing.assert_close(gg, w, rtol=0, atol=0)


def _nll_cases():
    # make test: every size in fp32 weighted with mean (the divisor is the
    # weight sum) and unweighted without reduction, every reduction at 129
    # rows, bf16 once; the rest with make test-long
    for n, c in ((129, 1000), (128, 16385), (3, 65537)):
        for dtype in (torch.float32, torch.bfloat16):
            for weighted in (False, True):
                for reduction in ("none", "sum", "mean"):
                    fp32 = dtype == torch.float32
                    short = (fp32 and (weighted, reduction) in ((True, "mean"), (False, "none"))) or (
                        fp32 and n == 129) or (not fp32 and n == 129 and weighted and reduction == "sum")
                    yield pytest.param(n, c, dtype, weighted, reduction, marks=() if short else pytest.mark.long,
                                       id=f"{n}x{c}-{str(dtype)[6:]}-{weighted}-{reduction}")


@pytest.mark.parametrize("n,c,dtype,weighted,reduction", _nll_cases())
def test_nll_loss_forward_backward(n, c, dtype, weighted, reduction):
    g = torch.Generator().manual_seed(n + c)
    x = torch.randn(n, c, generator=g).log_softmax(-1).to(dtype).requires_grad_()
    t = torch.randint(0, c, (n,), generator=g)
    t[::4] = -100                                  # ignored rows
    w = (torch.rand(c, generator=g) + 0.5).to(dtype) if weighted else None

    def f(x, t):
        return F.nll_loss(x, t, weight=w, reduction=reduction)

    want = f(x, t)
    gw = torch.randn(want.shape, generator=g).to(dtype)
    (want_dx,) = torch.autograd.grad(want, x, gw)
    torch._dynamo.reset()
    fc = torch.compile(f, backend="neuron", dynamic=False)
    got = fc(x, t)
    (got_dx,) = torch.autograd.grad(got, x, gw)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, want, **tol)
    torch.testing.assert_close(got_dx, want_dx, **tol)
    assert any(r.kind == "backward" for r in trnc.last_graphs())


def test_nll_loss_all_ignored_mean_is_nan():
    x = torch.randn(5, 7).log_softmax(-1)
    t = torch.full((5,), -100)
    fn = lambda x, t: F.nll_loss(x, t)  # noqa: E731
    got, want = _run(fn, x, t), fn(x, t)
    assert torch.isnan(want) and torch.isnan(got)
