"""Matmul kernels as kernel IR (codegen/kir/matmul.c): operands through
access maps, the epilogue as kir ops, and fp32 operands that are the
transpose of contiguous rows flipped on TensorE (NKI's DMA transpose moves
2-byte dtypes only). Values against float64 at the tile boundaries."""

from __future__ import annotations

import glob
import os

import pytest
import torch
import torch.nn.functional as F

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _check(got, want64, dtype, k):
    assert got.dtype == dtype
    if dtype in (torch.bfloat16, torch.float16):
        tol = 8e-3 if dtype == torch.bfloat16 else 2e-3
        torch.testing.assert_close(got.double(), want64, rtol=tol, atol=2e-3 * k ** 0.5)
    else:
        torch.testing.assert_close(got.double(), want64, rtol=1e-5, atol=1e-5 * k ** 0.5)


def _program(tmp_path, monkeypatch, fn, *args):
    monkeypatch.setenv("TRNC_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TRNC_CACHE", "0")
    got, rep = compile_run(fn, *args)
    text = "".join(open(p).read() for p in glob.glob(os.path.join(tmp_path, "*program.s")))
    assert text, "no program dumped"
    return got, rep, text


def _fp32_dma_transposes(text):
    return [ln for ln in text.splitlines() if "mode=transpose" in ln and ":f32[" in ln]


@pytest.mark.parametrize("m, k, n", [(1, 96, 288), (74, 384, 96), (129, 513, 127), (127, 129, 511)])
def test_fp32_linear_transposes_on_tensore(tmp_path, monkeypatch, m, k, n):
    torch.manual_seed(0)
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    got, _, text = _program(tmp_path, monkeypatch, lambda x, w, b: F.gelu(F.linear(x, w, b)), x, w, b)
    _check(got, F.gelu(x.double() @ w.double().t() + b.double()), torch.float32, k)
    assert not _fp32_dma_transposes(text)
    assert "transpose" in text  # the TensorE transposes


def test_fp32_attention_scores_transposes_on_tensore(tmp_path, monkeypatch):
    # q @ k^T over [B, H, T, D] head views: 4-D batch strides as access maps
    torch.manual_seed(1)
    q, kk = torch.randn(2, 4, 37, 24), torch.randn(2, 4, 37, 24)
    got, _, text = _program(tmp_path, monkeypatch, lambda q, k: q @ k.transpose(-1, -2) * 0.2, q, kk)
    _check(got, q.double() @ kk.double().transpose(-1, -2) * 0.2, torch.float32, 24)
    assert not _fp32_dma_transposes(text)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_linear_keeps_dma_transposes(tmp_path, monkeypatch, dtype):
    torch.manual_seed(2)
    x, w, b = torch.randn(129, 130, dtype=dtype), torch.randn(513, 130, dtype=dtype), torch.randn(513, dtype=dtype)
    got, _, text = _program(tmp_path, monkeypatch, lambda x, w, b: F.linear(x, w, b), x, w, b)
    _check(got, x.double() @ w.double().t() + b.double(), dtype, 130)
    assert "mode=transpose" in text


def test_addmm_beta_zero_ignores_nan_bias():
    # eager: with beta = 0 the bias is ignored, NaN and inf in it too
    torch.manual_seed(3)
    c = torch.full((129, 65), float("nan"))
    a, b = torch.randn(129, 40), torch.randn(40, 65)
    got, _ = compile_run(lambda c, a, b: torch.addmm(c, a, b, beta=0.0, alpha=1.5), c, a, b)
    _check(got, 1.5 * (a.double() @ b.double()), torch.float32, 40)


@pytest.mark.parametrize("bias_shape", [(3, 1, 65), (1, 129, 65), (65,)])
def test_baddbmm_broadcast_bias(bias_shape):
    torch.manual_seed(4)
    c, a, b = torch.randn(*bias_shape), torch.randn(3, 129, 40), torch.randn(3, 40, 65)
    f = lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)
    got, _ = compile_run(f, c, a, b)
    _check(got, f(c.double(), a.double(), b.double()), torch.float32, 40)


def test_long_contraction_16385():
    torch.manual_seed(5)
    a, b = torch.randn(3, 16385), torch.randn(16385, 129)
    got, _ = compile_run(lambda x, y: x @ y, a, b)
    _check(got, a.double() @ b.double(), torch.float32, 16385)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_empty_contraction_bias_and_activation(dtype):
    # K = 0: a map kernel, act(beta * bias); sigmoid(0) = 0.5 without a bias
    c, a, b = torch.randn(5, 7, dtype=dtype), torch.randn(5, 0, dtype=dtype), torch.randn(0, 7, dtype=dtype)
    got, _ = compile_run(lambda c, a, b: torch.sigmoid(torch.addmm(c, a, b, beta=2.0)), c, a, b)
    _check(got, torch.sigmoid(2.0 * c.double()), dtype, 1)
    got, _ = compile_run(lambda a, b: torch.sigmoid(a @ b), a, b)
    _check(got, torch.full((5, 7), 0.5, dtype=torch.float64), dtype, 1)


def test_transposed_both_operands_fp32():
    # A^T @ B^T: both operands strided, both flipped on TensorE
    torch.manual_seed(6)
    a, b = torch.randn(130, 257), torch.randn(129, 130)
    got, _ = compile_run(lambda a, b: a.t() @ b.t(), a, b)
    _check(got, a.double().t() @ b.double().t(), torch.float32, 130)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("d, n", [(513, 257), (768, 1536), (1024, 129)])
def test_layer_norm_then_linear_long_rows(tmp_path, monkeypatch, dtype, d, n):
    # layer norm -> projection in one kernel for rows longer than 512: W's
    # K blocks stream when they do not fit resident (768 x 1536), fp32 W^T
    # is flipped on TensorE
    torch.manual_seed(7)
    x = torch.randn(130, d, dtype=dtype)
    ln = torch.nn.LayerNorm(d).to(dtype)
    lin = torch.nn.Linear(d, n).to(dtype)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
    f = lambda x: lin(ln(x))
    got, rep, text = _program(tmp_path, monkeypatch, f, x)
    with torch.no_grad():
        h = F.layer_norm(x.double(), (d,), ln.weight.double(), ln.bias.double())
        if dtype == torch.bfloat16:
            h = h.to(dtype).double()
        want = h @ lin.weight.double().t() + lin.bias.double()
    assert rep["kernels"] == 1, rep
    assert not _fp32_dma_transposes(text)
    if dtype == torch.float32:
        torch.testing.assert_close(got.double(), want, rtol=2e-5, atol=2e-5 * d ** 0.5)
    else:
        torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2)


def test_autocast_bf16_transposed_fp32_bias():
    # bf16 operands (autocast) with an fp32 bias that is a transpose: the
    # bias tile is flipped on TensorE while the operands take DMA transposes
    torch._dynamo.reset()
    torch.manual_seed(8)
    c, a, b = torch.randn(65, 129), torch.randn(129, 40), torch.randn(65, 40)
    f = lambda c, a, b: torch.addmm(c.t(), a, b.t())
    with torch.no_grad():
        got = torch.compile(f, backend="neuron", dynamic=False, options={"autocast_bf16": True})(c, a, b)
    want = c.double().t() + a.bfloat16().double() @ b.bfloat16().double().t()
    torch.testing.assert_close(got.double(), want, rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("rows, n", [(129, 600)])
def test_fp32_row_bias_added_in_psum_rounds_as_a_vector_add(rows, n):
    # the bias row is accumulated in PSUM by a ones-row matmul: the same fp32
    # addition as adding it to the product afterwards, bit for bit (two row
    # tiles, two column blocks)
    torch.manual_seed(0)
    x, w, b = torch.randn(rows, 96), torch.randn(n, 96), torch.randn(n)
    mm, _ = compile_run(lambda x, w: x @ w.t(), x, w)
    lin, rep = compile_run(lambda x, w, b: F.linear(x, w, b), x, w, b)
    assert rep["kernels"] == 1, rep
    assert torch.equal(lin, mm + b)



def _check_rounded(got, want64, k):
    # an fp32 result of a bf16 value: bf16-representable, within bf16's tolerance
    assert got.dtype == torch.float32
    assert torch.equal(got.bfloat16().float(), got)
    _check(got.bfloat16(), want64, torch.bfloat16, k)


@pytest.mark.parametrize("m, k, n", [(127, 128, 129), (129, 130, 513), (128, 257, 128)])
def test_later_cast_of_result_joins_the_epilogue(m, k, n):
    # A backward's weight gradient: a bf16 mm whose fp32 to_copy comes after
    # the next matmul: the mm's epilogue applies the cast ahead of its turn,
    # rounding to bf16 first as the eager bf16 mm does.
    torch.manual_seed(4)
    a, b = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)
    c, d = torch.randn(n, k, dtype=torch.bfloat16), torch.randn(k, m, dtype=torch.bfloat16)

    def f(a, b, c, d):
        x = a @ b
        y = c @ d
        return x.float(), y.float()

    (gx, gy), rep = compile_run(f, a, b, c, d)
    assert rep["kernels"] == 2, rep  # each mm with its cast
    _check_rounded(gx, a.double() @ b.double(), k)
    _check_rounded(gy, c.double() @ d.double(), k)


def test_later_cast_read_by_the_next_node_stays_with_it():
    # the cast's result feeds the node right after it: the cast stays in that
    # node's kernel (fusing it into the mm would store fp32 and read it back)
    torch.manual_seed(5)
    a, b = torch.randn(129, 64, dtype=torch.bfloat16), torch.randn(64, 130, dtype=torch.bfloat16)
    c, d = torch.randn(129, 64, dtype=torch.bfloat16), torch.randn(64, 130, dtype=torch.bfloat16)
    e = torch.randn(129, 130)

    def f(a, b, c, d, e):
        x = a @ b
        y = c @ d
        return y, torch.exp(x.float() * 0.1) + e

    (gy, gz), rep = compile_run(f, a, b, c, d, e)
    assert rep["kernels"] == 3, rep  # mm, mm, the cast with exp and add
    _check(gy, c.double() @ d.double(), torch.bfloat16, 64)
    x64 = (a.double() @ b.double()).bfloat16().double()
    torch.testing.assert_close(gz.double(), torch.exp(x64 * 0.1) + e.double(), rtol=2e-2, atol=2e-2)


def test_later_cast_of_an_output_result_and_later_clone():
    # a result that is a graph output keeps its own store and cast; a later
    # clone of a result read nowhere else joins its epilogue
    torch.manual_seed(6)
    a, b = torch.randn(64, 129, dtype=torch.bfloat16), torch.randn(129, 127, dtype=torch.bfloat16)
    c = torch.randn(127, 64, dtype=torch.bfloat16)

    def f(a, b, c):
        x = a @ b
        y = x @ c
        z = b.t() @ a.t()
        w = y @ a
        return x, x.float(), z.clone(), w

    (gx, gxf, gz, gw), rep = compile_run(f, a, b, c)
    assert rep["kernels"] == 5, rep  # x, x's cast, y, z with its clone, w
    x64 = a.double() @ b.double()
    _check(gx, x64, torch.bfloat16, 129)
    assert torch.equal(gxf, gx.float())
    _check(gz, x64.t(), torch.bfloat16, 129)
    y64 = gx.double() @ c.double()
    _check(gw, y64.bfloat16().double() @ a.double(), torch.bfloat16, 127 * 64)
