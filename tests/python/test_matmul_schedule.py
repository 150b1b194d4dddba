"""The blocked matmul schedule (codegen/kir/matmul.c): row blocks of up to
four 128-row tiles with their stationary tiles resident, moving tiles of
several K steps per DMA, grouped stores. Values at the tile boundaries
(127/128/129 rows and K, 511/512/513 columns, partial last row blocks and
K groups) against eager, for plain, batched, transposed-operand and
fused-epilogue matmuls in bf16 and fp32."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _check(got, want64, dtype, k):
    assert got.dtype == dtype
    if dtype == torch.bfloat16:
        # fp32 accumulation in PSUM, one bf16 rounding of the result
        torch.testing.assert_close(got.double(), want64, rtol=8e-3, atol=2e-3 * k ** 0.5)
    else:
        torch.testing.assert_close(got.double(), want64, rtol=1e-5, atol=1e-5 * k ** 0.5)


SHAPES = [  # M, K, N
    (127, 128, 511), (128, 127, 512), (129, 129, 513),
    (641, 640, 513),     # a row block of 4 tiles, then one of 2 (the last has 1 row); K groups 4 + 1
    (256, 1152, 1024),   # K = 9 steps: two moving DMAs of 4 steps, one of 1
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_mm_tile_boundaries(m, k, n, dtype):
    torch.manual_seed(0)
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    got, rep = compile_run(lambda x, y: x @ y, a, b)
    assert rep["kernels"] == 1
    _check(got, a.double() @ b.double(), dtype, k)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_bmm_rows_across_blocks(dtype):
    torch.manual_seed(1)
    a, b = torch.randn(3, 513, 200, dtype=dtype), torch.randn(3, 200, 129, dtype=dtype)
    got, _ = compile_run(torch.bmm, a, b)
    _check(got, a.double() @ b.double(), dtype, 200)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m, k, n", [(129, 130, 513), (600, 256, 200)])
def test_transposed_weight(m, k, n, dtype):
    # x @ w.T: the moving operand is flipped per K step (bf16: a DMA transpose;
    # fp32: rows transposed on TensorE)
    torch.manual_seed(2)
    x, w = torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype)
    got, _ = compile_run(lambda x, w: x @ w.t(), x, w)
    _check(got, x.double() @ w.double().t(), dtype, k)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_linear_bias_along_n_fused(dtype):
    # bias along N: the transposed orientation, bias added during evacuation
    torch.manual_seed(3)
    x, w, bias = (torch.randn(129, 130, dtype=dtype), torch.randn(513, 130, dtype=dtype),
                  torch.randn(513, dtype=dtype))
    got, _ = compile_run(lambda x, w, b: torch.relu(F.linear(x, w, b)), x, w, bias)
    _check(got, torch.relu(x.double() @ w.double().t() + bias.double()), dtype, 130)


def test_addmm_broadcast_bias_and_gelu_epilogue():
    torch.manual_seed(4)
    c, a, b = torch.randn(513, 640), torch.randn(513, 384), torch.randn(384, 640)
    f = lambda c, a, b: F.gelu(torch.addmm(c, a, b, beta=0.5, alpha=2.0))
    got, _ = compile_run(f, c, a, b)
    _check(got, f(c.double(), a.double(), b.double()), torch.float32, 384)


def test_large_bf16_matmul_keeps_tensore_busy():
    # the cost model's estimate of the emitted program (compile only): the
    # moving operand is streamed once per 512-row block over 16 DMA queues
    torch._dynamo.reset()
    a, b = torch.randn(1024, 2048, dtype=torch.bfloat16), torch.randn(2048, 2048, dtype=torch.bfloat16)
    torch.compile(lambda x, y: x @ y, backend="neuron", options={"compile_only": True})(a, b)
    rep = trnc.last_report()
    assert rep["tensor_flop_util"] >= 0.8, rep
    # 2048 matmuls; moving tiles 4 K steps per DMA; one store per block of 4 tiles
    assert rep["instructions"] < 2048 + 800, rep


def _residual(h, a, w):
    return h + F.linear(a, w)  # bf16 projection, fp32 sum


def test_residual_epilogue_keeps_tensore_busy():
    # a bf16 projection + fp32 residual (Llama's attention output under
    # autocast), one kernel: the residual's loads are prefetched over the
    # least busy DMA queues and the fp32 stores get more queues, so TensorE
    # stays busy (estimate: 41 % with the residual and the stores on 4 queues)
    torch._dynamo.reset()
    h = torch.randn(2048, 2048)
    a, w = torch.randn(2048, 2048, dtype=torch.bfloat16), torch.randn(2048, 2048, dtype=torch.bfloat16)
    torch.compile(_residual, backend="neuron", dynamic=False, options={"compile_only": True})(h, a, w)
    rep = trnc.last_report()
    assert rep["kernels"] == 1 and rep["tensor_flop_util"] >= 0.75, rep


@pytest.mark.parametrize("rows", [511, 1025])
def test_residual_epilogue_over_row_and_column_blocks(rows):
    # the prefetched residual tiles over several row blocks (the last one
    # partial), column blocks (600 = 512 + 88) and K steps (300); the
    # projection rounds to bf16, then adds in fp32, as eager
    torch.manual_seed(rows)
    h = torch.randn(rows, 600)
    a, w = torch.randn(rows, 300, dtype=torch.bfloat16), torch.randn(600, 300, dtype=torch.bfloat16)
    got, rep = compile_run(_residual, h, a, w)
    assert rep["kernels"] == 1, rep
    # bit for bit the unfused program's: trnc's projection, then the fp32 add
    proj, _ = compile_run(lambda a, w: F.linear(a, w), a, w)
    torch.testing.assert_close(got, h + proj, rtol=0, atol=0)
    _check(proj, a.double() @ w.double().t(), torch.bfloat16, 300)


def test_long_contraction_streams_stationary_tiles():
    # fp32, K = 40000: the stationary tiles of one row block (313 K steps,
    # 160 KiB per partition) do not fit beside the other pools, so they are
    # loaded per K step from a small pool
    torch.manual_seed(5)
    a, b = torch.randn(2, 40000), torch.randn(40000, 3)
    got, _ = compile_run(lambda x, y: x @ y, a, b)
    _check(got, a.double() @ b.double(), torch.float32, 40000)
