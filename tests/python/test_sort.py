"""sort, argsort, topk, median, nanmedian, kthvalue, mode, histc and transformers' grouped expert matmul
(passes/decomp_sort.c, passes/decomp_moe.c) compiled with trnc against
eager PyTorch: rows of 1, odd lengths and 127/128/129, ties, NaN and
infinities, the backward of topk and of the grouped matmul, and the
limits, each refused as an UnsupportedOperatorError that says why.

Where eager defines the order of equal values (sort with stable=True, and
its insertion sort on rows of at most 16) trnc's indices equal eager's;
elsewhere (topk, unstable sort of longer rows) eager leaves it unspecified
and trnc puts equal values lowest index first: the tests check the values
exactly and that the indices select them."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")


def _compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def _refusal(fn, *args):
    with pytest.raises(Exception) as info:
        _compiled(fn)(*args)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    return str(err)


def _ties(shape, dtype=torch.float32, seed=0, nan=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan:
        x.view(-1)[::5] = NAN
        x.view(-1)[1::11] = INF
        x.view(-1)[2::13] = -INF
    return x


# 4097: past one chunk of comparisons, values and indices scattered to their ranks
@pytest.mark.parametrize("n", [1, 7, 127, 128, 129, 4097])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_equals_eager_with_ties_and_nan(n, descending):
    x = _ties((3, n), nan=True)

    def f(x):
        return torch.sort(x, dim=-1, descending=descending, stable=True)

    got, want = _compiled(f)(x), f(x)
    assert trnc.stats()["inference"] == 1
    torch.testing.assert_close(got.values, want.values, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got.indices, want.indices)


@pytest.mark.parametrize("n", [1, 9, 129])
def test_sort_int64_along_the_first_dim_and_argsort(n):
    x = _ties((n, 4), torch.int64, seed=n)

    def f(x):
        s = torch.sort(x, dim=0, stable=True)
        return s.values, s.indices, torch.argsort(x, dim=0, descending=True, stable=True)

    for g, w in zip(_compiled(f)(x), f(x)):
        assert g.dtype == w.dtype and torch.equal(g, w)


def test_sort_of_distinct_values_equals_eager_unstable_sort():
    x = torch.randperm(129).float().reshape(1, 129).repeat(2, 1)
    x[1] = -x[1]
    got, want = _compiled(torch.sort)(x.t().contiguous().t()), torch.sort(x)
    assert torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices)


def test_sort_zero_dim_and_negative_zero():
    x = torch.tensor(2.5)
    got = _compiled(torch.sort)(x)
    assert got.values.item() == 2.5 and got.indices.item() == 0
    z = torch.tensor([0.0, -0.0, -1.0, 0.0])
    got, want = _compiled(lambda z: torch.sort(z, stable=True))(z), torch.sort(z, stable=True)
    assert torch.equal(got.indices, want.indices) and torch.equal(got.values, want.values)


@pytest.mark.parametrize("n,k", [(1, 1), (4, 2), (7, 7), (127, 3), (128, 128), (129, 5)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_equals_eager_on_distinct_values(n, k, largest):
    g = torch.Generator().manual_seed(n)
    x = torch.stack([torch.randperm(n, generator=g) for _ in range(3)]).float() / 7

    def f(x):
        return torch.topk(x, k, dim=-1, largest=largest)

    got, want = _compiled(f)(x), f(x)
    assert torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices)


def test_topk_ties_lowest_index_first_and_nan_largest():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, NAN, 1.0],
                      [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]])
    got = _compiled(lambda x: torch.topk(x, 4))(x)
    want = torch.topk(x, 4)
    torch.testing.assert_close(got.values, want.values, rtol=0, atol=0, equal_nan=True)
    # hand-computed: NaN is the largest, then the 3s and the 2 by index
    assert got.indices.tolist() == [[5, 1, 2, 4], [0, 1, 2, 3]]
    low = _compiled(lambda x: torch.topk(x, 3, largest=False))(x)
    assert low.indices.tolist() == [[0, 6, 3], [0, 1, 2]]


def test_topk_unsorted_selects_the_same_elements():
    x = torch.randn(5, 33)
    got, want = _compiled(lambda x: torch.topk(x, 6, sorted=False))(x), torch.topk(x, 6,
                                                                                   sorted=False)
    assert torch.equal(got.values.sort(-1).values, want.values.sort(-1).values)
    assert torch.equal(torch.gather(x, 1, got.indices), got.values)


def test_topk_trains_like_moe_routing():
    # Mixtral's router: softmax, top-2, renormalized; the loss weights each
    # selected probability so the gradient reaches the router logits
    torch.manual_seed(0)
    logits = torch.randn(26, 4)
    w = torch.randn(26, 2)

    def route(z):
        p = torch.softmax(z, dim=-1)
        v, i = torch.topk(p, 2, dim=-1)
        v = v / v.sum(dim=-1, keepdim=True)
        return (v * w).sum() + i.float().mean()

    a = logits.clone().requires_grad_()
    b = logits.clone().requires_grad_()
    route(a).backward()
    _compiled(route)(b).backward()
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,bins,lo,hi", [
    ((1000,), 7, -1.3, 2.1), ((3, 129), 128, -2.0, 2.0), ((1,), 1, -1.0, 1.0), ((127,), 3, 0, 1)])
def test_histc_equals_eager(shape, bins, lo, hi):
    x = torch.randn(shape)
    x.view(-1)[:5] = torch.tensor([lo, hi, NAN, INF, -INF])[: x.numel()]
    got, want = _compiled(lambda x: torch.histc(x, bins, lo, hi))(x), torch.histc(x, bins, lo, hi)
    assert torch.equal(got, want)


def test_histc_on_bin_edges_and_moe_expert_ids():
    edges = torch.linspace(-2.0, 3.0, 11).repeat(3)
    f = lambda x: torch.histc(x, bins=10, min=-2.0, max=3.0)  # noqa: E731
    assert torch.equal(_compiled(f)(edges), f(edges))
    ids = torch.randint(0, 4, (52,)).float()
    counts = _compiled(lambda i: torch.histc(i, bins=4, min=0, max=3))(ids)
    assert counts.tolist() == torch.bincount(ids.long(), minlength=4).float().tolist()


def test_limits_are_refused_with_their_reason():
    assert "sort/topk along a dim of more than 4096 elements" in _refusal(lambda x: torch.topk(x, 3),
                                                                         torch.randn(2, 4097))
    assert "sort along a dim of more than 16384 elements" in _refusal(torch.sort, torch.randn(16385))
    assert "more than 2^28 comparisons" in _refusal(torch.sort, torch.randn(5, 8000))
    assert "more than 2^24 comparisons" in _refusal(torch.sort, torch.randn(2, 3000))
    assert "topk with k = 0" in _refusal(lambda x: torch.topk(x, 0), torch.randn(3, 4))
    assert "histc with min >= max" in _refusal(lambda x: torch.histc(x, 4), torch.randn(9))
    assert "histc with min >= max" in _refusal(lambda x: torch.histc(x, 4, 1, 1), torch.randn(9))
    # integers are compared through fp32: exact within +-2^24 only
    big = _refusal(lambda x: torch.sort(torch.tensor([2**30, 1, 5]))[0].float() + x, torch.ones(3))
    assert "aten.sort.default" in big and "outside +-2^24" in big


# ---- median, nanmedian, kthvalue, mode --------------------------------------- #

def _distinct(rows, n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(n, generator=g) for _ in range(rows)]).float() / 3 - n / 6


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 4096])
def test_median_and_kthvalue_equal_eager_at_tile_boundaries(n):
    x = _distinct(1 if n == 4096 else 2, n, n)   # 2^24 comparisons at most

    def f(x):
        m, k = torch.median(x, -1), torch.kthvalue(x, (n + 2) // 3, -1, True)
        return torch.median(x[0]), m.values, m.indices, k.values, k.indices

    got, want = _compiled(f)(x), f(x)
    assert trnc.stats()["inference"] == 1
    for g, w in zip(got, want):
        assert g.shape == w.shape and torch.equal(g, w)


def test_median_nanmedian_kthvalue_with_nan_and_infinities():
    x = _distinct(5, 9, 3)
    x[0, 4] = NAN                      # median: the row's first NaN
    x[1, 2] = x[1, 6] = NAN
    x[2, 0], x[2, 8] = INF, -INF
    x[3, :] = NAN                      # all NaN: nanmedian is NaN too
    x[4, 1:8] = NAN                    # nanmedian of the two numbers left: the lower

    def f(x):
        return torch.median(x, 1), torch.nanmedian(x, 1), torch.kthvalue(x, 8, 1)

    got = _compiled(f)(x)
    for g, w in zip(got, f(x)):
        torch.testing.assert_close(g.values, w.values, rtol=0, atol=0, equal_nan=True)
    # the indices are eager's where it defines them (median's first NaN, the
    # lower of two numbers) and select the values everywhere
    assert got[0].indices.tolist()[:2] == [4, 2]
    assert got[1].indices[4].item() == (0 if x[4, 0] < x[4, 8] else 8)
    for r in got:
        v = torch.gather(x, 1, r.indices[:, None])[:, 0]
        assert torch.equal(v.isnan(), r.values.isnan())
        assert torch.equal(v[~v.isnan()], r.values[~r.values.isnan()])
    whole = torch.tensor([3.0, NAN, 1.0, 2.0])
    assert torch.isnan(_compiled(torch.median)(whole))
    assert _compiled(torch.nanmedian)(whole).item() == 2.0


def test_mode_equals_eager_on_short_rows_with_ties():
    # rows of at most 16: eager's sort is an insertion sort, the mode's index
    # is the last of its equal elements; frequency ties take the smallest value
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-2, 3, (64, 16), generator=g).float()
    got, want = _compiled(lambda x: torch.mode(x, 1))(x), torch.mode(x, 1)
    assert torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices)
    xi = torch.randint(0, 5, (3, 129), generator=g)
    got, want = _compiled(lambda x: torch.mode(x, -1, True))(xi), torch.mode(xi, -1, True)
    assert torch.equal(got.values, want.values)
    assert torch.equal(torch.gather(xi, -1, got.indices), got.values)


def test_median_gradient_reaches_the_selected_element():
    x0 = torch.randn(3, 129)                     # distinct: eager's index among ties is its own
    res = []
    f = lambda x: torch.median(x, 1).values.sum() + torch.kthvalue(x, 2, 0).values.sum()  # noqa: E731
    for fn in (f, _compiled(f)):
        x = x0.clone().requires_grad_()
        fn(x).backward()
        res.append(x.grad)
    assert trnc.stats()["backward"] == 1
    assert torch.equal(res[0], res[1])


def test_median_limits_are_refused_with_their_reason():
    assert "more than 4096 elements" in _refusal(torch.median, torch.randn(16385))
    assert "more than 4096 elements" in _refusal(lambda x: torch.mode(x, 0), torch.randn(4097, 2))
    assert "more than 2^24 comparisons" in _refusal(lambda x: torch.median(x, 1),
                                                    torch.randn(3, 3000))


# ---- transformers::grouped_mm_fallback ------------------------------------- #

def _grouped_ops():
    pytest.importorskip("transformers")
    import transformers.integrations.moe  # noqa: F401  (registers the custom op)
    return torch.ops.transformers.grouped_mm_fallback


@pytest.mark.parametrize("counts", [(3, 0, 6, 4), (2, 5, 0, 3), (13,), (40, 44, 0, 45)])
def test_grouped_mm_forward_and_backward_equal_eager(counts):
    op = _grouped_ops()
    torch.manual_seed(len(counts))
    S, K, N, E = 13 if sum(counts) <= 13 else 129, 6, 5, len(counts)
    offs = torch.tensor(counts).cumsum(0).to(torch.int32)        # rows past offs[-1]: no expert
    x0 = torch.randn(S, K)
    w0 = torch.randn(E, N, K)                                     # Mixtral's layout, transposed
    g = torch.randn(S, N)

    def f(x, w):
        return op(x, w.transpose(-2, -1), offs)

    res = []
    for fn in (f, _compiled(f)):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = fn(x, w)
        y.backward(g)
        res.append((y.detach(), x.grad, w.grad))
    s = trnc.stats()
    assert s["forward"] == 1 and s["backward"] == 1, s
    for name, got, want in zip(("out", "grad input", "grad weight"), res[1], res[0]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5 * want.abs().max().item(),
                                   msg=lambda m, n=name: f"{n}: {m}")
    # rows past the last group and an empty group's weight get exactly 0
    assert torch.all(res[1][0][sum(counts):] == 0)
    for e, c in enumerate(counts):
        if c == 0:
            assert torch.all(res[1][2][e] == 0)


def test_grouped_mm_keeps_other_experts_infinities_out():
    op = _grouped_ops()
    x = torch.ones(4, 3)
    w = torch.ones(2, 3, 2)
    w[1] = INF                                        # expert 1 owns no rows
    offs = torch.tensor([4, 4], dtype=torch.int32)
    got = _compiled(lambda x, w: op(x, w, offs))(x, w)
    assert torch.equal(got, op(x, w, offs))
