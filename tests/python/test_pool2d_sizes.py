"""2-D max/avg/adaptive-avg pooling and their gradients at real sizes, through
both lowerings: max pooling, stride-1 average pooling, adaptive windows tiling
the input (and the global pool's backward) decomposed for the kernel IR
(passes/decomp_pool2d.c), the rest on codegen/emit_conv.c's VectorE kernel: 127/128/129 channel planes, outputs of more than 512 positions,
stride, dilation, padding, ceil_mode, count_include_pad, divisor_override,
NaN/-inf and ties (values and indices exactly), channels-last inputs, bf16."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from test_pool_decomp import _forward

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _fresh():
    torch._dynamo.reset()
    trnc.reset()


def _ties(shape, seed=0, nan=False, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).float()
    if nan:
        x.view(-1)[::13] = float("nan")
        x.view(-1)[5::17] = float("-inf")
    return x.to(dtype)


def _check_train(fn, x, tol):
    """fn(x) and its input gradient under a random cotangent, compiled vs eager."""
    _fresh()
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    want, got = fn(a), torch.compile(fn, backend="neuron", dynamic=False)(b)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(1)).to(want.dtype)
    want.backward(g)
    got.backward(g)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1 and s["errors"] == 0, s
    torch.testing.assert_close(b.grad, a.grad, rtol=tol, atol=tol)


MAX = [dict(kernel_size=3, stride=1, padding=1),                    # 33x33 = 1089 outputs
       dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
       dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), dilation=(2, 3)),
       dict(kernel_size=2)]


@pytest.mark.parametrize("c", [127, 128, 129])
@pytest.mark.parametrize("kw", MAX)
def test_max_pool2d_indices_exact(c, kw):
    x = _ties((2, c, 33, 33) if c != 128 else (c, 33, 33), seed=c, nan=True)
    _forward(lambda t: F.max_pool2d(t, return_indices=True, **kw), x)


@pytest.mark.parametrize("kw", MAX)
def test_max_pool2d_grad_ties(kw):
    # ties: one input position is the maximum of several windows (gradients add)
    x = _ties((2, 129, 24, 25), seed=3)
    _check_train(lambda t: F.max_pool2d(t, **kw), x, 1e-5)


AVG = [dict(kernel_size=3, stride=1, padding=1),
       dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
       dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
       dict(kernel_size=4, stride=3, padding=2, divisor_override=5),
       dict(kernel_size=2)]


@pytest.mark.parametrize("kw", AVG)
@pytest.mark.parametrize("c", [127, 129])
def test_avg_pool2d_and_grad(kw, c):
    x = torch.randn(2, c, 30, 31, generator=torch.Generator().manual_seed(c))
    _check_train(lambda t: F.avg_pool2d(t, **kw), x, 1e-5)


@pytest.mark.parametrize("out", [(1, 1), (5, 7), (8, 4), (11, 13), (40, 3)])
def test_adaptive_avg_pool2d_and_grad(out):
    x = torch.randn(2, 128, 24, 20, generator=torch.Generator().manual_seed(7))
    _check_train(lambda t: F.adaptive_avg_pool2d(t, out), x, 1e-5)


def test_channels_last_max_and_avg():
    x = torch.randn(2, 129, 20, 22).to(memory_format=torch.channels_last)
    _check_train(lambda t: F.max_pool2d(t, 3, 2, 1) + F.avg_pool2d(t, 3, 2, 1), x, 1e-5)


@pytest.mark.parametrize("op", ["max", "avg", "adaptive"])
def test_bf16(op):
    x = torch.randn(2, 128, 26, 26, generator=torch.Generator().manual_seed(2)).bfloat16()
    fn = {"max": lambda t: F.max_pool2d(t, 3, 2, 1),
          "avg": lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False),
          "adaptive": lambda t: F.adaptive_avg_pool2d(t, (5, 6))}[op]
    _check_train(fn, x, 2e-2)


def test_max_pool2d_nan_window_and_all_padding_taps():
    # a window of -inf and padding keeps the first valid tap's index; NaN wins
    x = torch.full((1, 3, 5, 5), float("-inf"))
    x[0, 1, 2, 2] = float("nan")
    x[0, 2] = torch.arange(25.0).view(5, 5)
    _forward(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=5, stride=1, padding=2),           # 25 taps: several kernels
                                dict(kernel_size=4, stride=3, padding=2, dilation=2, ceil_mode=True),
                                dict(kernel_size=6, stride=2, padding=3)])           # 36 taps: rows, then columns
def test_max_pool2d_long_windows_indices_exact(kw):
    x = _ties((1, 129, 23, 21), seed=5, nan=True)
    _forward(lambda t: F.max_pool2d(t, return_indices=True, **kw), x)


# windows of more than 4 taps: a running maximum along each window row, then
# over the window's rows (passes/decomp_pool2d.c max_separable)
SEP = [dict(kernel_size=7, stride=1, padding=3),
       dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(3, 2), ceil_mode=True),
       dict(kernel_size=(1, 30), stride=(1, 3), padding=(0, 15)),
       dict(kernel_size=(30, 1), stride=(4, 1), ceil_mode=True),
       dict(kernel_size=16, stride=5, padding=8, dilation=2, ceil_mode=True)]


@pytest.mark.parametrize("c", [127, 128, 129])
@pytest.mark.parametrize("kw", SEP)
def test_max_pool2d_separable_indices_exact(c, kw):
    x = _ties((2, c, 33, 35) if c != 128 else (c, 33, 35), seed=c + 1, nan=True)
    _forward(lambda t: F.max_pool2d(t, return_indices=True, **kw), x)


def test_max_pool2d_separable_nan_rows_and_padding():
    # several NaNs per window (the last in (kh, kw) order wins, also across
    # window rows), windows of -inf and padding only (the first valid tap's index)
    x = torch.full((1, 4, 12, 12), float("-inf"))
    x[0, 1, 3, 4] = x[0, 1, 3, 2] = x[0, 1, 5, 0] = x[0, 1, 4, 6] = float("nan")
    x[0, 2] = torch.arange(144.0).view(12, 12).flip(0)
    x[0, 3] = 1.0
    x[0, 3, ::3, 1::4] = float("nan")
    _forward(lambda t: F.max_pool2d(t, 5, 2, 2, return_indices=True), x)
    _forward(lambda t: F.max_pool2d(t, (3, 4), 3, (1, 2), dilation=(2, 1), ceil_mode=True, return_indices=True), x)


def test_max_pool2d_separable_grad_and_bf16():
    x = _ties((2, 129, 24, 25), seed=4)
    _check_train(lambda t: F.max_pool2d(t, 5, 1, 2), x, 1e-5)
    xb = _ties((2, 127, 17, 19), seed=8, nan=True, dtype=torch.bfloat16)
    _forward(lambda t: F.max_pool2d(t, (3, 5), 2, (1, 2), return_indices=True), xb)


def test_max_pool2d_bf16_indices_exact():
    x = _ties((2, 127, 17, 19), seed=9, nan=True, dtype=torch.bfloat16)
    _forward(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True, return_indices=True), x)


AVG1 = [dict(kernel_size=5, stride=1, padding=2, count_include_pad=False),   # 25 taps
        dict(kernel_size=3, stride=1, padding=1, divisor_override=7),
        dict(kernel_size=(2, 4), stride=1, padding=(1, 2), ceil_mode=True),
        dict(kernel_size=(1, 3), stride=1)]


@pytest.mark.parametrize("kw", AVG1)
@pytest.mark.parametrize("c", [127, 128, 129])
def test_avg_pool2d_stride1(kw, c):
    x = torch.randn(1, c, 19, 23, generator=torch.Generator().manual_seed(c))
    _check_train(lambda t: F.avg_pool2d(t, **kw), x, 1e-5)


def test_avg_pool2d_stride1_bf16():
    x = torch.randn(2, 129, 17, 18, generator=torch.Generator().manual_seed(4)).bfloat16()
    _check_train(lambda t: F.avg_pool2d(t, 3, 1, 1, count_include_pad=False), x, 2e-2)


def test_max_pool2d_integer_input_refused():
    # the taps' -inf padding is a float: an integer input is refused, not padded with garbage
    x = torch.randint(-5, 5, (1, 3, 8, 8))
    _fresh()
    with pytest.raises(Exception) as info:
        torch.compile(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), backend="neuron", dynamic=False)(x)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
