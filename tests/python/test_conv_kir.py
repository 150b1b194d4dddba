"""Convolution kernels of the kernel IR (codegen/kir/conv.c) against eager
PyTorch, forward and the gradients of input and weight (and bias, a
decomposition): the partition boundaries (127/128/129 input and output
channels, contraction and output-channel tiles), more than 512 output
positions (several PSUM banks, and output tiles split inside a row),
stride 2 with dilation 2 and padding, groups, conv1d, channels-last views,
bf16, and a refused form (more input channels per group than the limit),
an UnsupportedOperatorError."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from test_conv_decomp import _check

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


@pytest.mark.parametrize("cin,cout", [(127, 129), (128, 128), (129, 127)])
def test_conv2d_channel_tiles(cin, cout):
    torch.manual_seed(0)
    x, w, b = torch.randn(1, cin, 5, 6), torch.randn(cout, cin, 3, 3) / 30, torch.randn(cout)
    _check(lambda x, w, b: F.conv2d(x, w, b, padding=1), x, w, b, atol=2e-4)


def test_conv2d_positions_over_512():
    torch.manual_seed(1)
    x, w = torch.randn(2, 8, 24, 25), torch.randn(16, 8, 3, 3)
    _check(lambda x, w: F.conv2d(x, w, padding=1), x, w, atol=3e-4)


def test_conv1d_long_row():
    torch.manual_seed(2)
    x, w, b = torch.randn(1, 3, 1030), torch.randn(5, 3, 4), torch.randn(5)
    _check(lambda x, w, b: F.conv1d(x, w, b, stride=1, padding=2), x, w, b)


def test_conv2d_stride2_dilation2_padding():
    torch.manual_seed(3)
    x, w, b = torch.randn(2, 5, 11, 12), torch.randn(7, 5, 3, 2), torch.randn(7)
    _check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=(2, 1), dilation=2), x, w, b)


def test_conv2d_groups():
    torch.manual_seed(4)
    x, w, b = torch.randn(2, 6, 7, 7), torch.randn(9, 2, 3, 3), torch.randn(9)
    _check(lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=3), x, w, b)


def test_conv2d_depthwise_stride2():
    torch.manual_seed(5)
    x, w = torch.randn(1, 4, 9, 9), torch.randn(4, 1, 3, 3)
    _check(lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=4), x, w)


def test_conv1d_stride_dilation():
    torch.manual_seed(6)
    x, w, b = torch.randn(3, 4, 19), torch.randn(6, 4, 3), torch.randn(6)
    _check(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=3), x, w, b)


def test_conv2d_channels_last_input():
    torch.manual_seed(7)
    x = torch.randn(2, 6, 8, 8).to(memory_format=torch.channels_last)
    w = torch.randn(4, 6, 3, 3)
    _check(lambda x, w: F.conv2d(x, w, padding=1), x, w, grad=False)


def test_conv2d_bf16():
    torch.manual_seed(8)
    x = torch.randn(2, 16, 10, 10, dtype=torch.bfloat16)
    w = (torch.randn(24, 16, 3, 3) / 12).to(torch.bfloat16)
    b = torch.randn(24, dtype=torch.bfloat16)
    # one rounding of an fp32 sum each (trnc and eager): results differ by
    # at most a couple of bf16 ulps
    _check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), x, w, b, rtol=1.6e-2, atol=3e-2)


@pytest.mark.parametrize("shapes,kw,why", [
    (((1, 4097, 1, 1), (2, 4097, 1, 1)), {}, "more than 4096 channels per group"),
    (((1, 384, 7, 7), (128, 384, 7, 7)), {"padding": 3}, "one 128-channel tile exceed 65536 bytes"),
    (((1, 1, 1, 12500), (1, 1, 1, 3)), {"dilation": 6200}, "spans more than 12288 input elements"),
])
def test_conv2d_limits_refused(shapes, kw, why):
    """Forms outside the conv kernels' tiles fail with the limit they pass
    (the op table's check), before any code is generated."""
    torch._dynamo.reset()
    x, w = (torch.randn(*s) for s in shapes)
    with pytest.raises(Exception) as info:
        torch.compile(lambda x, w: F.conv2d(x, w, **kw), backend="neuron", dynamic=False)(x, w)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert why in str(err)
