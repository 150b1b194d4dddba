"""Advanced indexing with more than two index tensors (passes/decomp_ops.c:
one linear index over the indexed dims merged) compiled with trnc against
eager: adjacent and separated index tensors (torch then puts the broadcast
dims first), broadcasting, negative indices, index_put with and without
accumulate (repeated positions add up), and the gradient of such an index
(index_put with accumulate in the backward graph)."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

I0 = torch.tensor([[1, 0], [1, 1]])
I1 = torch.tensor([2, -1])
I2 = torch.tensor([[3], [0]])
I3 = torch.tensor([4, -5])


def _same(fn, *args, exact=True):
    torch._dynamo.reset()
    trnc.reset()
    got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    assert trnc.stats()["inference"] == 1
    if exact:
        assert torch.equal(got, fn(*args))
    else:  # duplicate indices accumulate in another order than eager's: rounding
        torch.testing.assert_close(got, fn(*args), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("key", ["i0,i1,i2", ":,i1,i2,i3", "i0,:,i2,i3", "i0,i1,i2,i3", "i0,i1,:,i3"])
def test_index(key):
    ix = {"i0": I0, "i1": I1, "i2": I2, "i3": I3, ":": slice(None)}
    idx = tuple(ix[k] for k in key.split(","))
    _same(lambda x: x[idx], torch.randn(2, 3, 4, 5))


def test_index_put():
    x = torch.randn(2, 3, 4, 5)
    _same(lambda x: torch.index_put(x, (I0, I1, I2), torch.ones(2, 2, 5), accumulate=True), x, exact=False)
    _same(lambda x: torch.index_put(x, (I0, I1, I2, I3), torch.tensor(1.5)), x)
    _same(lambda x: torch.ops.aten.index_put(x, [I0, None, I2, I3], torch.ones(2, 2, 3), True), x, exact=False)


def test_index_gradient_accumulates():
    x = torch.randn(2, 3, 4, 5)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    f = lambda t: (t[I0, I1, I2] * torch.arange(10.0).view(2, 5)[None]).sum()  # noqa: E731
    f(a).backward()
    torch._dynamo.reset()
    trnc.reset()
    torch.compile(f, backend="neuron", dynamic=False)(b).backward()
    assert trnc.stats()["backward"] == 1
    torch.testing.assert_close(b.grad, a.grad)
