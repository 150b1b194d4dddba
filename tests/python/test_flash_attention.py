"""Scaled-dot-product attention through trnc's flash-attention kernel
(codegen/kir/attention.c), which passes/decomp_attention.c picks for head
dim <= 128 and no attn_mask: outputs against eager
at and around the 128-row tile (T = 127/128/129/257), several head dims,
causal, grouped-query heads, an explicit scale, float32, bfloat16 and float16; the
kernel's use is asserted through the compile report."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _run(fn, *args):
    torch._dynamo.reset()
    trnc.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    return got, trnc.last_report()


def _flash(report):
    # the flash kernel is the graph's one kernel; the decomposition's batched
    # matmuls and softmax take three or more
    return report["kernels"] == 1


def _sdpa(causal, gqa, scale):
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa, scale=scale)
    return fn


@pytest.mark.parametrize("L,S,E,causal,gqa,scale", [
    (37, 37, 24, False, False, None),      # the demo's heads
    (128, 128, 64, False, False, None),
    (127, 127, 32, True, False, None),
    (129, 129, 16, True, True, None),
    (257, 257, 128, False, True, 0.3),
    (257, 257, 24, True, False, None),
    (200, 1700, 40, False, False, None),   # two key blocks, a partial last one
    (1700, 1700, 64, True, True, 0.05),    # causal across block boundaries
    (300, 130, 8, True, False, None),      # more queries than keys (top-left causal)
])
def test_flash_forward_fp32_matches_eager(L, S, E, causal, gqa, scale):
    torch.manual_seed(L + S + E)
    B, H = 2, 4
    Hk = 2 if gqa else H
    q = torch.randn(B, L, H, E).transpose(1, 2) * 2  # the layout HF models pass
    k, v = torch.randn(B, Hk, S, E) * 2, torch.randn(B, Hk, S, E)
    fn = _sdpa(causal, gqa, scale)
    got, rep = _run(fn, q, k, v)
    assert trnc.stats()["inference"] == 1
    assert _flash(rep), rep
    want = fn(q.double(), k.double(), v.double()).float()
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5 * want.abs().max().item())


# (T, E, causal, gqa, scale) at the 128-row tile and 512-key matmul
# boundaries and past the 1024-key block (T = 1000 is one partial block)
_GRID = [
    (1, 16, False, False, None), (1, 128, True, True, None),
    (127, 16, True, False, None), (127, 64, False, True, 0.2), (127, 128, True, False, None),
    (128, 16, False, True, None), (128, 64, True, False, 0.5), (128, 128, False, False, None),
    (129, 16, True, True, None), (129, 64, False, False, None), (129, 128, True, True, 0.1),
    (513, 16, False, False, None), (513, 64, True, True, None), (513, 128, False, True, 0.3),
    (1000, 16, True, False, None), (1000, 64, False, True, None), (1000, 128, True, False, 0.07),
]


@pytest.mark.parametrize("T,E,causal,gqa,scale", _GRID)
def test_flash_forward_grid_fp32(T, E, causal, gqa, scale):
    torch.manual_seed(T * 131 + E)
    H, Hk = 4, 2 if gqa else 4
    q, k, v = torch.randn(1, H, T, E) * 2, torch.randn(1, Hk, T, E) * 2, torch.randn(1, Hk, T, E)
    fn = _sdpa(causal, gqa, scale)
    got, rep = _run(fn, q, k, v)
    assert _flash(rep), rep
    want = fn(q.double(), k.double(), v.double()).float()
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5 * want.abs().max().item())
    torch.testing.assert_close(got, fn(q, k, v), rtol=1e-4, atol=1e-4 * want.abs().max().item())


@pytest.mark.parametrize("T,E,causal,gqa,scale", [g for g in _GRID if g[0] != 128])
def test_flash_forward_grid_bf16(T, E, causal, gqa, scale):
    # P rounded to bf16 for its matmul (as flash kernels do): within bf16's
    # rounding of the float64 result, as eager's own bf16 kernel is
    torch.manual_seed(T * 7 + E)
    H, Hk = 4, 2 if gqa else 4
    q, k, v = (torch.randn(1, h, T, E).bfloat16() for h in (H, Hk, Hk))
    fn = _sdpa(causal, gqa, scale)
    got, rep = _run(fn, q, k, v)
    assert _flash(rep), rep
    assert got.dtype == torch.bfloat16
    want = fn(q.double(), k.double(), v.double())
    ref = (fn(q, k, v).double() - want).abs().max().item()
    err = (got.double() - want).abs().max().item()
    assert err <= max(2 * ref, 2e-2 * want.abs().max().item()), (err, ref)


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 2e-2), (torch.float16, 4e-3)])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_forward_half_matches_eager(causal, dtype, tol):
    # P^T by DMA transpose (2-byte dtypes); P rounded to the input dtype
    torch.manual_seed(1)
    B, H, L, E = 1, 2, 384, 128
    q, k, v = (torch.randn(B, H, L, E).to(dtype) for _ in range(3))
    fn = _sdpa(causal, False, None)
    got, rep = _run(fn, q, k, v)
    assert _flash(rep), rep
    want = fn(q.double(), k.double(), v.double())
    err = (got.double() - want).abs().max().item()
    assert err <= tol * want.abs().max().item(), err
    assert got.dtype == dtype


@pytest.mark.parametrize("causal", [False, True])
def test_flash_forward_bf16_many_heads(causal):
    # six key/value heads (batch 2, grouped queries): each head's keys and
    # values load over the rounds of the head before, and Q^T loads several
    # tiles ahead across head boundaries; 257 rows: a partial last tile
    torch.manual_seed(7)
    B, Hq, Hk, T, E = 2, 6, 3, 257, 64
    q = torch.randn(B, Hq, T, E).to(torch.bfloat16)
    k, v = (torch.randn(B, Hk, T, E).to(torch.bfloat16) for _ in range(2))
    fn = _sdpa(causal, True, None)
    got, rep = _run(fn, q, k, v)
    assert _flash(rep), rep
    want = fn(q.double(), k.double(), v.double())
    ref = (fn(q, k, v).double() - want).abs().max().item()
    err = (got.double() - want).abs().max().item()
    assert err <= max(2 * ref, 2e-2 * want.abs().max().item()), (err, ref)


# 1100 keys: query tiles of two key blocks (the last block's row max and
# the negation -scale m are one instruction, the logsumexp log l minus
# that); causal, three heads: the first and the last run their tiles
# longest first, the middle one shortest first
@pytest.mark.parametrize("T, H, causal", [(200, 2, True), (1100, 3, False), (1100, 3, True)])
def test_flash_logsumexp_matches_eager(T, H, causal):
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, H, T, 32) for _ in range(3))
    got, rep = _run(lambda q, k, v: op(q, k, v, 0.0, causal), q, k, v)
    assert _flash(rep), rep
    want = op(q, k, v, 0.0, causal)
    torch.testing.assert_close(got[0], want[0], rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(got[1], want[1], rtol=2e-5, atol=2e-5)


def test_masked_attention_keeps_the_decomposition():
    q, k, v = (torch.randn(1, 2, 37, 24) for _ in range(3))
    m = torch.zeros(1, 1, 37, 37)
    m[..., :5] = float("-inf")
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    got, rep = _run(fn, q, k, v)
    assert not _flash(rep), rep
    torch.testing.assert_close(got, fn(q, k, v), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("L,E,causal,gqa", [(200, 32, True, True), (129, 64, False, False), (1, 16, True, False),
                                             (127, 128, True, True), (513, 64, False, True), (1000, 16, True, False)])
def test_flash_forward_trains_with_the_decomposed_backward(L, E, causal, gqa):
    # the backward (decomposed) recomputes the probabilities from the flash
    # kernel's log-sum-exp; gradients per input against float64 eager, each
    # with a denominator floor (a gradient that is ~0 carries rounding only)
    torch.manual_seed(L)
    B, H = 2, 4
    Hk = 2 if gqa else H
    q = torch.randn(B, L, H, E).transpose(1, 2)
    k, v = torch.randn(B, Hk, L, E), torch.randn(B, Hk, L, E)
    g = torch.randn(B, H, L, E)
    fn = _sdpa(causal, gqa, None)

    def grads(f, *xs):
        xs = [x.detach().clone().requires_grad_() for x in xs]
        f(*xs).backward(g.to(xs[0].dtype))
        return [x.grad for x in xs]

    torch._dynamo.reset()
    trnc.reset()
    got = grads(torch.compile(fn, backend="neuron", dynamic=False), q, k, v)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    want = grads(fn, q.double(), k.double(), v.double())
    for name, a, b in zip(("dq", "dk", "dv"), got, want):
        floor = max(b.abs().max().item(), 1e-2)
        torch.testing.assert_close(a.double(), b, rtol=1e-4, atol=1e-5 * floor, msg=lambda m_, n=name: f"{n}: {m_}")


@pytest.mark.parametrize("T,E,causal,gqa,scale", [
    (1, 16, True, False, None), (127, 64, True, True, None), (128, 128, False, False, 0.3),
    (129, 16, True, True, None), (513, 128, False, True, None), (513, 64, True, False, 0.1),
    (1000, 64, True, True, None), (1000, 128, False, False, None),
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_flash_backward_kernel_matches_float64(T, E, causal, gqa, scale, dtype):
    # 2-byte dtypes: the backward is the flash kernel (codegen/kir/attention_bw.c),
    # one kernel reading the forward kernel's logsumexp; each gradient within
    # twice eager's own error against float64 (P and dS are rounded to the
    # input dtype for their matmuls, as eager's kernel rounds its results)
    torch.manual_seed(T + E)
    B, H = 1, 4
    Hk = 2 if gqa else H
    q, k, v = (torch.randn(B, h, T, E).to(dtype) for h in (H, Hk, Hk))
    g = torch.randn(B, H, T, E).to(dtype)
    fn = _sdpa(causal, gqa, scale)

    def grads(f, *xs):
        xs = [x.detach().clone().requires_grad_() for x in xs]
        f(*xs).backward(g.to(xs[0].dtype))
        return [x.grad for x in xs]

    torch._dynamo.reset()
    trnc.reset()
    got = grads(torch.compile(fn, backend="neuron", dynamic=False), q, k, v)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    assert trnc.last_report()["kernels"] == 1  # the backward graph: one flash kernel
    want = grads(fn, q.double(), k.double(), v.double())
    eager = grads(fn, q, k, v)
    for name, a, w, e in zip(("dq", "dk", "dv"), got, want, eager):
        assert a.dtype == dtype
        err = (a.double() - w).abs().max().item()
        ref = (e.double() - w).abs().max().item()
        assert err <= max(2 * ref, 1e-2 * w.abs().max().item(), 1e-3), (name, err, ref)


def test_masked_backward_keeps_the_decomposition():
    # an attn_mask: forward and backward both decomposed (the flash kernels
    # take no mask), gradients still within bf16 rounding of float64
    torch.manual_seed(5)
    q, k, v = (torch.randn(1, 2, 65, 32).bfloat16() for _ in range(3))
    m = torch.zeros(1, 1, 65, 65, dtype=torch.bfloat16)
    m[..., :7] = float("-inf")
    g = torch.randn(1, 2, 65, 32).bfloat16()
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m.to(q.dtype))

    def grads(f, *xs):
        xs = [x.detach().clone().requires_grad_() for x in xs]
        f(*xs).backward(g.to(xs[0].dtype))
        return [x.grad for x in xs]

    torch._dynamo.reset()
    trnc.reset()
    got = grads(torch.compile(fn, backend="neuron", dynamic=False), q, k, v)
    assert trnc.last_report()["kernels"] > 1  # the decomposed backward
    want = grads(fn, q.double(), k.double(), v.double())
    for a, w in zip(got, want):
        assert (a.double() - w).abs().max().item() <= 3e-2 * w.abs().max().item()
