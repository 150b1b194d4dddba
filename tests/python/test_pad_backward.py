"""replication_pad{1,2,3}d_backward (passes/decomp_ops.c, decomp_pad_bw)
compiled with trnc against eager PyTorch: the input gradient of replicate
padding (border sums, the inner slice and zeros for cropped positions) over
positive and negative pads, crops that keep no inner position, size-1 dims
and the partition boundaries 127/128/129; and _efficientzerotensor (sgn's gradient) as zeros."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _grad(fn, x, w):
    x = x.clone().requires_grad_(True)
    (fn(x) * w).sum().backward()
    return x.grad


def _compiled_grad(fn, x, w):
    torch._dynamo.reset()
    before = trnc.stats()
    g = _grad(torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True), x, w)
    after = trnc.stats()
    assert after["backward"] > before["backward"]
    return g


CASES = [
    ((2, 5), (1, 2)),
    ((2, 1), (3, 2)),
    ((3, 4), (-1, 2)),
    ((3, 4), (-4, 5)),       # every output reads the last position
    ((3, 4), (2, -4)),       # every output reads the first position
    ((3, 6), (-2, -3)),      # a crop only
    ((2, 2), (3, 0)),
    ((1, 129), (1, 1)),
    ((2, 3, 4, 4), (5, -4, -4, 3)),
    ((2, 3, 127, 3), (0, 0, 1, 2)),
    ((1, 128, 5), (128, 1)),
    ((2, 2, 3, 4, 5), (1, 2, 0, 1, 2, 0)),
    ((1, 2, 3, 1, 2), (-1, 1, 2, 2, 1, -1)),
]


@pytest.mark.parametrize("shape,pad", CASES)
def test_replication_pad_backward(shape, pad):
    g = torch.Generator().manual_seed(len(shape) * 31 + sum(pad))
    x = torch.randn(shape, generator=g)
    fn = lambda t: F.pad(t, pad, mode="replicate")  # noqa: E731
    w = torch.randn(fn(x).shape, generator=g)
    want = _grad(fn, x, w)
    got = _compiled_grad(fn, x, w)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_efficientzerotensor_sgn_grad():
    x = torch.tensor([[-2.0, 0.0, 3.0], [1.5, -0.5, 0.0]])
    w = torch.randn(2, 3)
    want = _grad(torch.sgn, x, w)
    got = _compiled_grad(torch.sgn, x, w)
    assert torch.equal(got, want)
