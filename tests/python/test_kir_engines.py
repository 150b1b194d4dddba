"""Map kernels' engines and DMA queues (codegen/kir/emit.c): float
tensor_tensor / tensor_scalar ops are shared between VectorE and GpSimd
(balance_engines), int32 ones keep their engine's arithmetic, and kernels of
many tiles load and store on disjoint DMA queues. Values against eager."""

from __future__ import annotations

import glob
import os

import pytest
import torch

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _program(tmp_path, monkeypatch, fn, *args):
    monkeypatch.setenv("TRNC_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TRNC_CACHE", "0")
    got, rep = compile_run(fn, *args)
    text = "".join(open(p).read() for p in glob.glob(os.path.join(tmp_path, "*program.s")))
    assert text, "no program dumped"
    return got, rep, text


def _engines(text, op):
    return {ln.split()[0] for ln in text.splitlines() if len(ln.split()) > 1 and ln.split()[1] == op}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(127, 129), (128, 4097), (3, 129, 65)])
def test_silu_backward_shares_vector_and_gpsimd(tmp_path, monkeypatch, dtype, shape):
    torch.manual_seed(0)
    g, x = torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype) * 4
    fn = lambda g, x: torch.ops.aten.silu_backward(g, x)  # noqa: E731
    got, rep, text = _program(tmp_path, monkeypatch, fn, g, x)
    assert rep["kernels"] == 1, rep
    assert {"vector", "gpsimd"} <= _engines(text, "tensor_tensor") | _engines(text, "tensor_scalar")
    want = fn(g.double(), x.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 2e-5
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)


def test_int32_chain_stays_exact(tmp_path, monkeypatch):
    # integer ops never move for balance: GpSimd's tt is exact int32
    # arithmetic, VectorE's goes through fp32 (values above 2^24)
    a = torch.randint(-2**30, 2**30, (129, 257), dtype=torch.int32, generator=torch.Generator().manual_seed(1))
    b = torch.randint(1, 2**20, (129, 257), dtype=torch.int32, generator=torch.Generator().manual_seed(2))
    fn = lambda a, b: ((a + b) * 3 - b) // 7 + (a ^ b)  # noqa: E731
    got, _, _ = _program(tmp_path, monkeypatch, fn, a, b)
    assert torch.equal(got, fn(a, b))


def test_float_chain_with_int_operand(tmp_path, monkeypatch):
    # a float chain reading an int32 tensor: the ops over the int values keep
    # VectorE / their own rules, the float ones may move; values as eager
    torch.manual_seed(3)
    x = torch.randn(130, 513)
    i = torch.randint(-5, 5, (130, 513), dtype=torch.int32)
    fn = lambda x, i: torch.exp(x * 0.5) * (i + 1) - x / (i.float() ** 2 + 1)  # noqa: E731
    got, _, _ = _program(tmp_path, monkeypatch, fn, x, i)
    torch.testing.assert_close(got, fn(x, i), rtol=2e-5, atol=2e-5)


def _queues(text, kernel_prefix):
    """(load queues, store queues) of the first kernel whose name starts so."""
    loads, stores = set(), set()
    inside = False
    for ln in text.splitlines():
        if ln.startswith(".kernel"):
            inside = ln.split()[1].split("_", 1)[1].startswith(kernel_prefix)
            continue
        if not inside or " dma_copy " not in f" {ln} ":
            continue
        q = ln.split()[0]
        if " dst=hbm" in ln:
            stores.add(q)
        elif " dst=sbuf" in ln:
            loads.add(q)
    return loads, stores


@pytest.mark.parametrize("shape", [(1025, 1024), (2048, 1031)])
def test_large_cast_loads_and_stores_on_disjoint_queues(tmp_path, monkeypatch, shape):
    # fp32 -> bf16: 4 bytes loaded per 2 stored: about 11 load and 5 store
    # queues, none shared (a load behind a store waits for compute)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(4))
    got, rep, text = _program(tmp_path, monkeypatch, lambda x: x.bfloat16(), x)
    assert torch.equal(got, x.bfloat16())
    loads, stores = _queues(text, "to_copy")
    assert loads and stores and not loads & stores, (loads, stores)
    assert len(loads) > len(stores)


def test_small_cast_uses_every_queue_for_both(tmp_path, monkeypatch):
    # a kernel of one tile keeps all queues for its load's and store's parts
    x = torch.randn(256, 128, generator=torch.Generator().manual_seed(5))
    got, _, text = _program(tmp_path, monkeypatch, lambda x: x.bfloat16(), x)
    assert torch.equal(got, x.bfloat16())
    loads, stores = _queues(text, "to_copy")
    assert loads and stores


@pytest.mark.parametrize("rows, cols", [(1025, 2048), (4096, 512)])
def test_row_broadcast_is_loaded_once(tmp_path, monkeypatch, rows, cols):
    # RMSNorm's weight times rows: tiles of whole rows all read the same
    # weight row, loaded by the first tile only (reuse_load)
    torch.manual_seed(6)
    x, w = torch.randn(rows, cols), torch.randn(cols)
    got, rep, text = _program(tmp_path, monkeypatch, lambda x, w: (x * w).bfloat16(), x, w)
    assert rep["kernels"] == 1, rep
    assert torch.equal(got, (x * w).bfloat16())
    x_loads = [ln for ln in text.splitlines() if " dma_copy dst=sbuf" in ln and "src0=hbm:in0@" in ln]
    w_loads = [ln for ln in text.splitlines() if " dma_copy dst=sbuf" in ln and "src0=hbm:in1@" in ln]
    # once per tile shape (1025 rows: 8 tiles of 128 rows and one of 1), in
    # up to 8 parts each
    assert len(x_loads) > 16 and 1 <= len(w_loads) <= 16, (len(x_loads), len(w_loads))


def test_broadcast_not_reused_when_the_kernel_writes_its_buffer(tmp_path, monkeypatch):
    # the broadcast operand updated in place after its use (reuse_load never
    # keeps a tile of a buffer its kernel stores to): values as eager
    torch.manual_seed(7)
    x, w = torch.randn(1025, 1024), torch.randn(1024)

    def f(x, w):
        y = x * w
        w.add_(1)
        return y

    w2 = w.clone()
    got, _, _ = _program(tmp_path, monkeypatch, f, x, w2)
    torch.testing.assert_close(got, x * w)
    torch.testing.assert_close(w2, w + 1)
