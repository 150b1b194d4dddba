"""Ops trnc decomposes in its graph IR (passes/decompose.c; the decomp column
of ir/ops.def), compiled against eager PyTorch through their public entry
points: F.scaled_dot_product_attention trained (forward and backward) at
sequence lengths around one 128-row partition tile, cumsum's limit, a
GroupNorm block and torch.linalg.vector_norm trained."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def _attention_grads(fn, q, k, v, g):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = fn(q, k, v)
    out.backward(g)
    return out.detach(), q.grad, k.grad, v.grad


# (seq, causal, mask, gqa): mask None or an additive [B,1,L,L] padding mask
@pytest.mark.parametrize("seq,causal,mask,gqa", [
    (127, True, False, False), (128, False, True, True), (129, True, True, False),
    (13, False, True, True)])
def test_sdpa_training_matches_eager(seq, causal, mask, gqa):
    torch.manual_seed(seq)
    B, H, E = 2, 4, 16
    Hk = 2 if gqa else H
    q = torch.randn(B, seq, H, E).transpose(1, 2)      # the layout HF models pass
    k, v = torch.randn(B, Hk, seq, E), torch.randn(B, Hk, seq, E)
    m = None
    if mask:
        m = torch.zeros(B, 1, seq, seq)
        m[1, :, :, :5] = float("-inf")

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                              enable_gqa=gqa)

    g = torch.randn(B, H, seq, E)
    want = _attention_grads(fn, q, k, v, g)
    got = _attention_grads(_compiled(fn), q, k, v, g)
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item(),
                                   msg=lambda m_, n=name: f"{n}: {m_}")


def test_flash_attention_dropout_is_refused():
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    q = torch.randn(1, 2, 5, 8)
    with pytest.raises(Exception, match=r"dropout_p > 0 in the fused CPU flash-attention op"):
        _compiled(lambda q: op(q, q, q, 0.1)[0])(q)


def test_cumsum_position_ids():
    # RoBERTa's position ids: a cumsum of the padding mask
    ids = torch.tensor([[1, 1, 5, 7, 9], [4, 4, 4, 1, 1]])

    def pos(ids):
        mask = ids.ne(1).int()
        return (torch.cumsum(mask, dim=1).type_as(mask)) * mask + 1

    torch.testing.assert_close(_compiled(pos)(ids), pos(ids), rtol=0, atol=0)
    assert trnc.stats()["inference"] == 1


@pytest.mark.parametrize("shape,dim", [((2, 4097), 1), ((16385,), 0), ((3, 5000, 2), 1)],
                         ids=["4097", "16385", "dim1-of-3"])
def test_cumsum_past_one_ones_matrix_is_blocked(shape, dim):
    # past 4096 elements the scan runs in blocks of 1024 plus a scan of the
    # block totals (passes/decomp_ops.c); a block boundary is where an
    # off-by-one would show
    x = torch.randn(shape, generator=torch.Generator().manual_seed(shape[0]))
    got = _compiled(lambda x: torch.cumsum(x, dim))(x)
    assert trnc.stats()["inference"] == 1
    want = torch.cumsum(x.double(), dim).float()
    torch.testing.assert_close(got, want, rtol=0, atol=2e-3 * (shape[dim] ** 0.5) / 10)


def test_cumsum_two_levels_of_blocks_exact_on_integers():
    # 4,200,000 elements: 4102 block totals, themselves past one ones matrix;
    # a 0/1 mask's prefix sums stay below 2^24, exact in float32
    m = torch.rand(4_200_000, generator=torch.Generator().manual_seed(3)) < 0.5
    f = lambda m: torch.cumsum(m.int(), 0)  # noqa: E731
    torch.testing.assert_close(_compiled(f)(m), f(m), rtol=0, atol=0)


def test_cumsum_blocked_gradient():
    x = torch.randn(2, 4500, requires_grad=True)
    w = torch.randn(2, 4500)
    (torch.cumsum(x, 1) * w).sum().backward()
    want, x.grad = x.grad, None
    _compiled(lambda x: (torch.cumsum(x, 1) * w).sum())(x).backward()
    assert trnc.stats()["backward"] == 1
    torch.testing.assert_close(x.grad, want, rtol=1e-4, atol=1e-2)


def test_group_norm_block_trains():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(2, 8),
                                torch.nn.SiLU(), torch.nn.Conv2d(8, 4, 1))
    ref = copy.deepcopy(model)
    x = torch.randn(2, 3, 10, 10)
    ref(x).square().mean().backward()
    _compiled(model)(x).square().mean().backward()
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5 * q.grad.abs().max().item(),
                                   msg=lambda m_, n=name: f"{n}: {m_}")


@pytest.mark.parametrize("ord_", [2, 1, float("inf"), 3])
def test_vector_norm_trains(ord_):
    x = torch.randn(4, 129)

    def fn(x):
        return torch.linalg.vector_norm(x, ord_, dim=-1).sum()

    want_x, got_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = fn(want_x)
    want.backward()
    got = _compiled(fn)(got_x)
    got.backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    torch.testing.assert_close(got_x.grad, want_x.grad, rtol=1e-5, atol=1e-6)


def test_logcumsumexp_values_and_infinities():
    # a Hillis-Steele scan of max + log1p(exp(min - max)): wide ranges stay
    # exact (-1000 next to 0), infinities and NaN as eager's special cases
    x = torch.randn(3, 300, generator=torch.Generator().manual_seed(4)) * 30
    f = lambda x: torch.logcumsumexp(x, 1)  # noqa: E731
    torch.testing.assert_close(_compiled(f)(x), f(x), rtol=1e-5, atol=1e-5)
    special = torch.tensor([[-1000.0, 0.0, float("-inf"), float("inf"), 3.0, float("-inf")],
                            [float("-inf")] * 6,
                            [1.0, float("nan"), 2.0, 0.0, 0.0, 0.0],
                            [float("inf"), float("inf"), 1.0, float("-inf"), 0.0, 0.0]])
    torch.testing.assert_close(_compiled(f)(special), f(special), equal_nan=True)


def test_logcumsumexp_gradient():
    x = torch.randn(4, 37, requires_grad=True)
    w = torch.randn(4, 37)
    f = lambda x: (torch.logcumsumexp(x, 0) * w).sum()  # noqa: E731
    f(x).backward()
    want, x.grad = x.grad, None
    _compiled(f)(x).backward()
    assert trnc.stats()["backward"] == 1
    torch.testing.assert_close(x.grad, want, rtol=1e-4, atol=1e-4)
