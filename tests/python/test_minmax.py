"""max.dim / min.dim / argmin / any.dim / all.dim through
torch.compile(backend="neuron", dynamic=False) on the simulator, against eager
(passes/decomp_argmax.c: amax/amin, then amin of an iota where x is the extremum):

* max/min over a dim return (values, indices): the first index of the extremum
  on ties; a NaN is the extremum (its index and NaN value are reported).
* argmin mirrors argmax.
* any/all over a dim on bool and float inputs: nonzero is true, NaN is true,
  -0.0 is false.

Odd sizes: rows > 128 (several partition tiles), a strided (non-last) dim,
rows longer than one SBUF chunk; keepdim both ways. Exact match (atol 0).
"""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

nan = float("nan")


def _check(fn, *args):
    want = fn(*args)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    rep = trnc.last_report()
    assert rep is not None and rep["kernels"] >= 1, "the graph must run on the NeuronCore simulator"
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    return rep


def _data(shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-6, 7, shape, generator=g).float() * 0.5   # many ties
    return x


def _with_nans(x, dim):
    """x with NaNs along dim: one in every 7th row, two in row 3 (the first wins)."""
    x = x.clone()
    xv = x.movedim(dim, -1)                       # a view: writes reach x
    if xv.dim() == 1:
        xv = xv.unsqueeze(0)
    xv = xv.reshape(-1, xv.shape[-1]) if xv.dim() == 2 else xv.flatten(0, -2) if xv.is_contiguous() else xv
    n = xv.shape[-1]
    if xv.dim() == 2:
        for r in range(0, xv.shape[0], 7):
            xv[r, (r * 5) % n] = nan
        if xv.shape[0] > 3:
            xv[3, 1] = nan
            xv[3, n - 1] = nan
    else:                                         # rank 3, non-contiguous after movedim
        for r in range(0, xv.shape[1], 7):
            xv[0, r, (r * 5) % n] = nan
        xv[1, 3, 1] = nan
        xv[1, 3, n - 1] = nan
    return x


SHAPES = [((200, 37), 1), ((200, 37), 0), ((131, 9), -1), ((3, 140, 5), 1), ((6, 5000), 1)]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("nans", [False, True])
@pytest.mark.parametrize("shape,dim", SHAPES, ids=[f"{s}-d{d}" for s, d in SHAPES])
def test_max_min_dim(op, keepdim, nans, shape, dim):
    x = _data(shape, 1)
    if nans:
        x = _with_nans(x, dim)

    def f(x):
        v, i = getattr(torch, op)(x, dim, keepdim=keepdim)
        return v, i

    _check(f, x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16, torch.uint8])
def test_max_min_dim_dtypes(dtype):
    x = _data((150, 21), 2)
    if dtype == torch.uint8:
        x = x.abs()
    x = x.to(dtype)
    _check(lambda x: (torch.max(x, 1), torch.min(x, 0)), x)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("nans", [False, True])
@pytest.mark.parametrize("shape,dim", SHAPES + [((33, 17), None)],
                         ids=[f"{s}-d{d}" for s, d in SHAPES + [((33, 17), None)]])
def test_argmin(keepdim, nans, shape, dim):
    x = _data(shape, 3)
    if nans:
        x = _with_nans(x, -1 if dim is None else dim)
    _check(lambda x: torch.argmin(x, dim=dim, keepdim=keepdim), x)


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float", "int"])
@pytest.mark.parametrize("shape,dim", SHAPES, ids=[f"{s}-d{d}" for s, d in SHAPES])
def test_any_all_dim(op, keepdim, kind, shape, dim):
    g = torch.Generator().manual_seed(4)
    # sparse nonzeros (any: some rows all false) and sparse zeros (all: some rows all true)
    p = torch.rand(shape, generator=g)
    if op == "any":
        x = torch.where(p < 0.01, torch.randn(shape, generator=g), torch.zeros(shape))
    else:
        x = torch.where(p < 0.01, torch.zeros(shape), torch.randn(shape, generator=g))
    if kind == "float":
        x = x.clone()
        x.view(-1)[::97] = nan                     # NaN is true
        x.view(-1)[5::89] = -0.0                   # -0.0 is false
    elif kind == "bool":
        x = x != 0
    else:
        x = (x * 10).to(torch.int32)
    _check(lambda x: getattr(torch, op)(x, dim, keepdim=keepdim), x)


def test_in_a_model():
    """Classifier-style post-processing of a linear layer's logits: top class and
    its score, worst class, any/all masks (checked exactly against eager applied
    to the compiled logits; the matmul itself may round differently)."""
    torch.manual_seed(5)
    lin = torch.nn.Linear(24, 10)

    def f(x):
        logits = lin(x)
        conf, cls = logits.max(-1)
        return logits, conf, cls, logits.argmin(-1), (logits > 0.5).any(-1), (logits > -1).all(-1)

    x = torch.randn(300, 24)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(f, backend="neuron", dynamic=False)(x)
        want = f(x)
    assert trnc.last_report()["kernels"] >= 1
    logits = got[0]
    torch.testing.assert_close(logits, want[0], rtol=1e-5, atol=1e-5)
    conf, cls = logits.max(-1)
    ref = (conf, cls, logits.argmin(-1), (logits > 0.5).any(-1), (logits > -1).all(-1))
    for g, w in zip(got[1:], ref):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
