"""native_layer_norm_backward as one kernel-IR row kernel (codegen/kir/rules.c):
dx with dW and dB as column sums on TensorE (codegen/kir/emit.c, the colsum
op), for every output mask, with and without weight and bias, fp32 and bf16
inputs, against float64 eager on the same inputs. Rows of one element (and
longer than TRNC_LAYER_NORM_BW_MAX_ROW) decompose into a dx kernel and column
sums; everything else is one kernel.

Sizes: 1 x 1, 127/128/129 rows (partition blocks), 16385 rows (129 blocks:
several PSUM groups of the column sums), rows of 1, 2048 (one chunk with
lean buffers), 4096 and 4097 elements
(4097: a row in several chunks and a partial last PSUM column).
"""

from __future__ import annotations

import copy

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

LNB = torch.ops.aten.native_layer_norm_backward.default
MASKS = [(True, True, True), (True, False, False), (False, True, True), (True, False, True), (False, False, True)]

# (rows, cols, dtype, affine, mask)
CASES = [
    (1, 1, torch.float32, True, MASKS[0]),
    (127, 96, torch.float32, True, MASKS[0]),
    (128, 33, torch.bfloat16, True, MASKS[0]),
    (129, 4096, torch.float32, True, MASKS[0]),
    (130, 2048, torch.bfloat16, True, MASKS[0]),
    (3, 4097, torch.bfloat16, True, MASKS[0]),
    (16385, 8, torch.float32, True, MASKS[0]),
    (5, 1, torch.float32, True, MASKS[0]),
    (129, 40, torch.float32, False, MASKS[1]),
    (129, 4097, torch.bfloat16, False, MASKS[1]),
    (129, 40, torch.float32, True, MASKS[2]),
    (129, 40, torch.bfloat16, True, MASKS[3]),
    (129, 40, torch.float32, True, MASKS[4]),
    (129, 40, torch.float32, True, MASKS[1]),
]


def _inputs(rows, cols, dtype, affine):
    gen = torch.Generator().manual_seed(rows * 7 + cols)
    x = (torch.randn(rows, cols, generator=gen) * 2 + 3).to(dtype)
    g = torch.randn(rows, cols, generator=gen).to(dtype)
    w = (torch.rand(cols, generator=gen) + 0.5).to(dtype) if affine else None
    b = torch.randn(cols, generator=gen).to(dtype) if affine else None
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
    return g, x, mean, rstd, w, b


@pytest.mark.parametrize("rows,cols,dtype,affine,mask", CASES,
                         ids=[f"{r}x{c}-{str(d)[6:]}-{'w' if a else 'nw'}-{''.join('1' if m else '0' for m in k)}"
                              for r, c, d, a, k in CASES])
def test_layer_norm_backward_one_kernel(rows, cols, dtype, affine, mask):
    g, x, mean, rstd, w, b = _inputs(rows, cols, dtype, affine)
    m = list(mask)

    def f(g, x, mean, rstd, w, b):
        return LNB(g, x, [cols], mean, rstd, w, b, m)

    d = lambda t: None if t is None else t.double()  # noqa: E731
    want = LNB(d(g), d(x), [cols], d(mean), d(rstd), d(w), d(b), m)
    torch._dynamo.reset()
    got = torch.compile(f, backend="neuron", dynamic=False)(g, x, mean, rstd, w, b)
    rep = trnc.last_graphs()[-1].report
    if cols >= 2 or mask == (True, False, False):
        assert rep["kernels"] == 1, rep["kernels"]
    rt = 2e-2 if dtype == torch.bfloat16 else 2e-4
    for gg, ww in zip(got, want):
        assert (gg is None) == (ww is None)
        if gg is None:
            continue
        assert gg.dtype == dtype and gg.shape == ww.shape
        scale = max(ww.abs().max().item(), 1e-6)
        torch.testing.assert_close(gg.double(), ww, rtol=rt, atol=rt * scale)


@pytest.mark.parametrize("twice", ["chained", "product"])
def test_shared_layer_norm_weight_gradients(twice):
    # one LayerNorm applied twice (ALBERT shares it across layers): the two
    # layer_norm_backward nodes fuse into one kernel, and their weight and
    # bias gradients, summed by a later add, need HBM (they were left
    # without a buffer: a CompilerError)
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(64)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5), ln.bias.uniform_(-0.5, 0.5)
    ref = copy.deepcopy(ln)
    x, y = torch.randn(2, 13, 64), torch.randn(2, 13, 64)
    f = (lambda m, x, y: m(m(x)).sum() + (m(m(x)) * y).sum()) if twice == "chained" else \
        (lambda m, x, y: (m(x) * m(y)).sum())
    torch._dynamo.reset()
    before = trnc.stats()["backward"]
    torch.compile(lambda x, y: f(ln, x, y), backend="neuron", dynamic=False)(x, y).backward()
    assert trnc.stats()["backward"] > before
    f(ref, x, y).backward()
    for p, q in ((ln.weight, ref.weight), (ln.bias, ref.bias)):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5 * q.grad.abs().max().item())
