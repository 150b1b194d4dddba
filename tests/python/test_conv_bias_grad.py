"""convolution_backward asking for the bias gradient: split by
passes/decomp_conv.c into its dx and dw nodes (TensorE, codegen/kir/conv.c)
and a kernel-IR column sum of grad_output, at real sizes — 127/128/129
output channels, more than 512 output positions, stride, dilation, padding,
groups, 1-D and 2-D, bf16 — against eager (and the dx/dw results of the
split nodes with it)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _grads(fn, args, tol):
    torch._dynamo.reset()
    trnc.reset()
    a = [t.clone().requires_grad_() for t in args]
    b = [t.clone().requires_grad_() for t in args]
    want = fn(*a)
    got = torch.compile(fn, backend="neuron", dynamic=False)(*b)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(5)).to(want.dtype)
    want.backward(g)
    got.backward(g)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1 and s["errors"] == 0, s
    for x, y in zip(b, a):
        scale = max(1.0, y.grad.abs().max().item())
        torch.testing.assert_close(x.grad, y.grad, rtol=tol, atol=tol * scale)


CASES = [  # (cin, cout, hw, kernel, stride, padding, dilation, groups)
    (8, 127, 26, 3, 1, 1, 1, 1),    # 676 output positions
    (16, 128, 33, 3, 2, 2, 2, 2),
    (6, 129, 24, 2, 1, 0, 1, 3),
]


@pytest.mark.parametrize("case", CASES)
def test_conv2d_bias_grad(case):
    cin, cout, hw, k, s, p, d, g = case
    gen = torch.Generator().manual_seed(cout)
    x = torch.randn(2, cin, hw, hw + 1, generator=gen)
    w = torch.randn(cout, cin // g, k, k, generator=gen) * 0.2
    bias = torch.randn(cout, generator=gen)
    _grads(lambda x, w, b: F.conv2d(x, w, b, s, p, d, g), (x, w, bias), 2e-4)


def test_conv1d_bias_grad():
    gen = torch.Generator().manual_seed(1)
    x, w, bias = torch.randn(3, 12, 600, generator=gen), torch.randn(129, 12, 5, generator=gen) * 0.2, torch.randn(129, generator=gen)
    _grads(lambda x, w, b: F.conv1d(x, w, b, 1, 2), (x, w, bias), 2e-4)


def test_conv2d_bias_grad_bf16():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 16, 24, 24, generator=gen).bfloat16()
    w = (torch.randn(128, 16, 3, 3, generator=gen) * 0.2).bfloat16()
    bias = torch.randn(128, generator=gen).bfloat16()
    _grads(lambda x, w, b: F.conv2d(x, w, b, 1, 1), (x, w, bias), 5e-2)
