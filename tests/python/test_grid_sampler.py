"""grid_sampler_2d and its backward (passes/decomp_grid.c) compiled with
trnc against eager PyTorch, values and the input and grid gradients: bilinear and nearest, padding zeros, border and reflection, with and
without align_corners, grids reaching outside the image, a 1 x 1 image and a
129-wide one; bicubic is refused."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


@pytest.mark.parametrize("mode,pad,align", list(itertools.product(
    ["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True])))
@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 4, 6), (1, 1, 1, 1, 2, 3), (1, 2, 3, 129, 2, 5)])
def test_grid_sample(mode, pad, align, shape):
    n, c, h, w, ho, wo = shape
    g = torch.Generator().manual_seed(h * 1000 + w)
    x = torch.randn(n, c, h, w, generator=g)
    grid = torch.rand(n, ho, wo, 2, generator=g) * 3 - 1.5
    fn = lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=align)  # noqa: E731
    torch.testing.assert_close(run_counted(fn, x, grid), fn(x, grid), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,pad,align", list(itertools.product(
    ["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True])))
@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 4, 6), (1, 1, 1, 1, 2, 3), (1, 2, 3, 129, 2, 5)])
def test_grid_sample_grads(mode, pad, align, shape):
    n, c, h, w, ho, wo = shape
    g = torch.Generator().manual_seed(h * 1000 + w + 1)
    x = torch.randn(n, c, h, w, generator=g)
    grid = torch.rand(n, ho, wo, 2, generator=g) * 3 - 1.5
    gw = torch.randn(n, c, ho, wo, generator=g)
    fn = lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=align)  # noqa: E731

    def grads(f):
        a, b = x.clone().requires_grad_(True), grid.clone().requires_grad_(True)
        (f(a, b) * gw).sum().backward()
        return a.grad, b.grad

    torch._dynamo.reset()
    before = trnc.stats()
    got = grads(torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True))
    assert trnc.stats()["backward"] > before["backward"]
    for u, v in zip(got, grads(fn)):
        torch.testing.assert_close(u, v, rtol=1e-4, atol=1e-4)


def test_bicubic_is_refused():
    x, grid = torch.randn(1, 1, 4, 4), torch.rand(1, 2, 2, 2) * 2 - 1
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(lambda a, b: F.grid_sample(a, b, mode="bicubic", align_corners=False),
                      backend="neuron", dynamic=False, fullgraph=True)(x, grid)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "only bilinear and nearest interpolation" in str(err)
