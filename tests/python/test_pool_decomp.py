"""max_pool3d, adaptive_max_pool1d/2d/3d with indices, avg_pool3d and
adaptive_avg_pool3d (passes/decomp_pool.c)
compiled with trnc against eager PyTorch: values and indices exactly
(eager's order and NaN rule: ties keep the first tap, the last NaN of a
window wins), padding, dilation and ceil_mode, uneven adaptive windows, the
input gradients through the saved indices (overlapping windows add up),
the average poolings' divisors (count_include_pad, ceil_mode,
divisor_override, uneven adaptive windows) and their gradients, and the
window-size limit, refused as an UnsupportedOperatorError."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN = float("nan")


def _ties(shape, seed=0, nan=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-2, 3, shape, generator=g).float()
    if nan:
        x.view(-1)[::7] = NAN
        x.view(-1)[3::11] = float("-inf")
    return x


def _fresh():
    torch._dynamo.reset()
    trnc.reset()


def _forward(fn, x):
    _fresh()
    got = torch.compile(fn, backend="neuron", dynamic=False)(x)
    want = fn(x)
    assert trnc.stats()["inference"] + trnc.stats()["forward"] >= 1
    torch.testing.assert_close(got[0], want[0], equal_nan=True, rtol=0, atol=0)
    assert torch.equal(got[1], want[1])


def _train(fn, x, tol=1e-6, value=lambda r: r):
    """fn's result (value picks the tensor) and the input gradient under a random
    cotangent, compiled against eager; trnc compiles a forward and a backward."""
    _fresh()
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    want, got = value(fn(a)), value(torch.compile(fn, backend="neuron", dynamic=False)(b))
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    g = torch.randn_like(want)
    want.backward(g)
    got.backward(g)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    torch.testing.assert_close(b.grad, a.grad, rtol=tol, atol=tol)


def _grad(fn, x):
    _train(fn, x, value=lambda r: r[0])


MP3 = [dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2),
       dict(kernel_size=(3, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 2, 2)),
       dict(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)]


@pytest.mark.parametrize("kw", MP3)
@pytest.mark.parametrize("nan", [False, True])
def test_max_pool3d(kw, nan):
    x = _ties((2, 3, 5, 7, 6), nan=nan)
    _forward(lambda x: F.max_pool3d(x, return_indices=True, **kw), x)
    _forward(lambda x: F.max_pool3d(x[0], return_indices=True, **kw), x)  # unbatched C, D, H, W
    if not nan:
        _grad(lambda x: F.max_pool3d(x, return_indices=True, **kw), torch.randn(2, 3, 5, 7, 6))


@pytest.mark.parametrize("out", [(2, 3), (1, 1), (3, 5), (7, 6), (4, 1)])
@pytest.mark.parametrize("nan", [False, True])
def test_adaptive_max_pool2d(out, nan):
    x = _ties((2, 3, 7, 6), nan=nan)
    _forward(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), x)
    if not nan:
        _grad(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), torch.randn(2, 3, 7, 6))


def test_adaptive_max_pool1d_and_3d():
    x = _ties((3, 4, 9), nan=True)
    _forward(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), x)
    y = _ties((1, 2, 5, 4, 7), nan=True)
    _forward(lambda x: F.adaptive_max_pool3d(x, (2, 3, 3), return_indices=True), y)
    _grad(lambda x: F.adaptive_max_pool3d(x, (2, 3, 3), return_indices=True), torch.randn(1, 2, 5, 4, 7))
    _grad(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), torch.randn(3, 4, 9))


def test_modules_without_indices():
    m = torch.nn.Sequential(torch.nn.MaxPool3d(2), torch.nn.Flatten(0, 1), torch.nn.AdaptiveMaxPool2d(3))
    x = torch.randn(2, 3, 6, 8, 8)
    torch.testing.assert_close(torch.compile(m, backend="neuron", dynamic=False)(x), m(x))


def test_too_wide_windows_are_refused():
    x = torch.randn(1, 2, 40, 40)
    with pytest.raises(Exception) as info:
        torch.compile(lambda x: F.adaptive_max_pool2d(x, 1), backend="neuron", dynamic=False)(x)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "windows of more than 256 elements" in str(err)


def _close(fn, x):
    _train(fn, x, tol=1e-5)


AP3 = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
       dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
       dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0), ceil_mode=True),
       dict(kernel_size=3, stride=2, padding=1, divisor_override=5)]


@pytest.mark.parametrize("kw", AP3)
def test_avg_pool3d(kw):
    torch.manual_seed(5)
    x = torch.randn(2, 3, 5, 7, 6)
    _close(lambda x: F.avg_pool3d(x, **kw), x)
    _close(lambda x: F.avg_pool3d(x, **kw), x[0])  # unbatched


@pytest.mark.parametrize("out", [(2, 3, 2), (1, 1, 1), (5, 7, 6), (3, 4, 4)])
def test_adaptive_avg_pool3d(out):
    torch.manual_seed(6)
    _close(lambda x: F.adaptive_avg_pool3d(x, out), torch.randn(2, 3, 5, 7, 6))


def test_avg_pool3d_empty_batch():
    x = torch.randn(0, 2, 4, 4, 4)
    got = torch.compile(lambda x: F.adaptive_avg_pool3d(x, (2, 2, 2)) + 1, backend="neuron",
                        dynamic=False)(x)
    assert got.shape == (0, 2, 2, 2, 2)


def test_avg_pool3d_backward_beyond_the_scatter_add_limit_is_refused_clearly():
    # the backward's decomposition needs a scatter_add over more TensorE
    # accumulation blocks than trnc lowers: an UnsupportedOperatorError that
    # names the op and the limit (it was an internal GraphImportError)
    x = torch.randn(2, 16, 8, 20, 20, requires_grad=True)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(lambda x: F.avg_pool3d(x, 3, 1, 1), backend="neuron", dynamic=False)(x).sum().backward()
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "avg_pool3d_backward" in str(err) and "accumulation blocks" in str(err)
