"""Kernel-IR span loads: a load stepping by 2..4 elements along its innermost
axis is one contiguous HBM span per partition read on chip through a strided
SBUF view, and loads of one buffer with equal strides (the taps of a window)
share one span (codegen/kir/emit.c). Values against eager at partition and
tile boundaries, fp32 and bf16, views that fit and that do not fit a span."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _run(fn, x):
    torch._dynamo.reset()
    trnc.reset()
    got = torch.compile(fn, backend="neuron", dynamic=False)(x)
    s = trnc.stats()
    assert s["errors"] == 0 and s["inference"] >= 1, s
    return got


def _taps2(t):  # two taps of a stride-2 window along W (an odd W drops its last column)
    w = t.shape[-1] // 2 * 2
    return t[..., 0:w:2] * 2 + t[..., 1:w:2]


def _taps4(t):  # four taps of a 2x2/2 window
    h, w = t.shape[-2] // 2 * 2, t.shape[-1] // 2 * 2
    a, b = t[..., 0:h:2, :], t[..., 1:h:2, :]
    return (a[..., 0:w:2] - b[..., 1:w:2]) * b[..., 0:w:2] + a[..., 1:w:2]


def _stride3(t):  # one strided view, stored as is, and an odd offset
    w3, w4 = (t.shape[-1] - 2) // 3 * 3, t.shape[-1] // 4 * 4
    return t[..., 1::3].contiguous(), t[..., 2:2 + w3:3] + 1, t[..., 0:w4:4] - t[..., 3:w4:4]


@pytest.mark.parametrize("shape", [(3, 127, 10), (128, 34), (129, 7, 9), (2, 64, 56, 56), (16385 * 2,)])
@pytest.mark.parametrize("fn", [_taps2, _taps4, _stride3])
def test_span_values(shape, fn):
    if fn is _taps4 and len(shape) < 2:
        pytest.skip("needs two dims")
    x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape)))
    want, got = fn(x), _run(fn, x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [_taps2, _taps4])
def test_span_bf16(fn):
    x = torch.randn(3, 129, 30, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    torch.testing.assert_close(_run(fn, x), fn(x), rtol=1e-2, atol=1e-2)


def test_span_faster_than_strided_dma():
    # [8, 64, 56, 56] stride-2 taps: est. 0.31 ms as DMAs of one element per
    # descriptor (their sum alone), 0.05 ms through one shared span
    x = torch.randn(8, 64, 56, 56)
    torch._dynamo.reset()
    trnc.reset()
    torch.compile(_taps2, backend="neuron", dynamic=False, options={"compile_only": True})(x)
    r = trnc.last_report()
    assert r["est_time_s"] < 0.2e-3 and r["compile_s"] < 1.0, r
