"""Transposed and 3-D convolutions (passes/decomp_conv.c) compiled with trnc
against eager PyTorch, forward and the gradients of input, weight and bias:
conv_transpose1d/2d/3d with stride, padding, output_padding, dilation and
groups; conv3d with the same; the backward graphs aot_autograd produces
(convolution_backward with transposed=True or rank 5); and the refused
output_padding >= stride case, an UnsupportedOperatorError saying why."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _check(fn, *args, grad=True, rtol=1e-4, atol=1e-4):
    torch._dynamo.reset()
    trnc.reset()
    want_in = [a.detach().clone().requires_grad_(grad) for a in args]
    got_in = [a.detach().clone().requires_grad_(grad) for a in args]
    want = fn(*want_in)
    got = torch.compile(fn, backend="neuron", dynamic=False)(*got_in)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    s = trnc.stats()
    if not grad:
        assert s["inference"] + s["forward"] >= 1, s
        return
    g = torch.randn_like(want)
    want.backward(g)
    got.backward(g)
    assert s["forward"] == 1 and s["backward"] == 1, s
    for a, b in zip(got_in, want_in):
        torch.testing.assert_close(a.grad, b.grad, rtol=rtol, atol=atol)


# (in-channels, out-channels per group x groups, kernel, stride, padding, output_padding,
#  dilation, groups)
T1 = [(3, 4, 3, 1, 0, 0, 1, 1), (4, 6, 3, 2, 1, 1, 1, 2), (2, 3, 4, 3, 2, 2, 2, 1),
      (3, 2, 1, 1, 0, 0, 1, 1), (2, 2, 5, 2, 4, 0, 1, 1)]


@pytest.mark.parametrize("cin,cout,k,s,p,op,d,g", T1)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose1d(cin, cout, k, s, p, op, d, g, bias):
    torch.manual_seed(0)
    x, w = torch.randn(2, cin, 7), torch.randn(cin, cout // g, k)
    args = (x, w, torch.randn(cout)) if bias else (x, w)
    _check(lambda x, w, *b: F.conv_transpose1d(x, w, b[0] if b else None, s, p, op, g, d), *args)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((2, 3), (0, 1), (1, 2), 1, 2), (1, 1, 0, (2, 1), 1)])
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups):
    torch.manual_seed(1)
    x, w, b = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 2), torch.randn(3 * groups)
    _check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups,
                                              dilation), x, w, b)


@pytest.mark.parametrize("stride,padding,dilation,groups,kernel", [
    (1, 0, 1, 1, (3, 3, 3)), (2, 1, 1, 1, (3, 2, 3)), ((1, 2, 1), (2, 0, 1), (2, 1, 1), 2, (2, 3, 3)),
    (1, 0, 1, 1, (1, 1, 1))])
@pytest.mark.parametrize("bias", [True, False])
def test_conv3d(stride, padding, dilation, groups, kernel, bias):
    torch.manual_seed(2)
    x, w = torch.randn(2, 4, 6, 5, 7), torch.randn(6, 4 // groups, *kernel)
    args = (x, w, torch.randn(6)) if bias else (x, w)
    _check(lambda x, w, *b: F.conv3d(x, w, b[0] if b else None, stride, padding, dilation, groups),
           *args)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((1, 2, 2), (0, 1, 0), (0, 1, 1), 1, 2), (1, 1, 0, (2, 1, 1), 1)])
def test_conv_transpose3d(stride, padding, output_padding, dilation, groups):
    torch.manual_seed(3)
    x, w, b = torch.randn(2, 4, 3, 4, 5), torch.randn(4, 2, 2, 3, 2), torch.randn(2 * groups)
    _check(lambda x, w, b: F.conv_transpose3d(x, w, b, stride, padding, output_padding, groups,
                                              dilation), x, w, b)


def test_modules_train_and_infer():
    torch.manual_seed(4)
    up = torch.nn.Sequential(torch.nn.Conv3d(2, 3, 3, padding=1), torch.nn.ReLU(),
                             torch.nn.ConvTranspose3d(3, 2, 2, stride=2))
    x = torch.randn(1, 2, 4, 4, 4)
    want = up(x)
    got = torch.compile(up, backend="neuron", dynamic=False)(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        torch._dynamo.reset()
        trnc.reset()
        got = torch.compile(up, backend="neuron", dynamic=False)(x)
        assert trnc.stats()["inference"] == 1
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_output_padding_at_least_stride_is_refused():
    # eager allows output_padding < max(stride, dilation): 1 >= stride 1 with dilation 2
    x, w = torch.randn(1, 2, 5), torch.randn(2, 3, 3)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(lambda x, w: F.conv_transpose1d(x, w, None, 1, 0, 1, 1, 2), backend="neuron",
                      dynamic=False)(x, w)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "output_padding >= stride" in str(err)
