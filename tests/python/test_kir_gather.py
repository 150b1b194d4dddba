"""Embedding and index_select as kir gathers (codegen/kir/gather.c: an
indirect DMA gather load, fused with what reads it) against eager PyTorch at
real sizes: tables of 127/128/129 and more rows, index tensors of more than
128 and 512 entries, rows wider than 512 elements and than one tile
(4096), non-contiguous tables and indices, the token + position embedding +
layer norm of a GPT block (one kernel), and out-of-range indices (a clear
error from the DMA's range check, not a crash). Also the accumulating
scatter's NaN/inf counting with a table of more than 128 rows and a source
of more than 512 columns, the accumulations (embedding backward,
scatter_add, index_put with accumulate) at 127/128/129 table rows and 16385
source rows with duplicates, padding_idx and inf/NaN sources, scatters along a short dim (element addresses:
duplicates, strided operands, 16385 source rows, out-of-range indices named
as written) and scatter_add / scatter_reduce / index_put(accumulate) with an
empty index (a copy of self), and gather/scatter with 0-d operands. Each run checks that trnc compiled the graph."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _same(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def _embedding_cases():
    # make test: each table height with a different index shape and row
    # width (every boundary once); the rest of the cross product with make test-long
    shapes = (((2, 37), 96), ((700,), 513), ((3, 130), 40), ((5,), 4100))
    for i, rows in enumerate((127, 128, 129, 300)):
        for j, (ishape, dim) in enumerate(shapes):
            yield pytest.param(rows, ishape, dim, marks=() if i == j else pytest.mark.long,
                               id=f"{rows}-{'x'.join(map(str, ishape))}-{dim}")


@pytest.mark.parametrize("rows,ishape,dim", _embedding_cases())
def test_embedding_sizes(rows, ishape, dim):
    g = torch.Generator().manual_seed(rows + dim)
    w = torch.randn(rows, dim, generator=g)
    idx = torch.randint(0, rows, ishape, generator=g)
    idx.view(-1)[0], idx.view(-1)[-1] = rows - 1, 0  # both ends of the table
    f = lambda w, i: F.embedding(i, w)  # noqa: E731
    _same(run_counted(f, w, idx), f(w, idx))


def test_embedding_non_contiguous_table_and_index():
    g = torch.Generator().manual_seed(3)
    w = torch.randn(96, 200, generator=g).t()          # [200, 96], row stride 1
    idx = torch.randint(0, 200, (150, 3), generator=g).t()  # [3, 150], strided
    f = lambda w, i: F.embedding(i, w) * 2  # noqa: E731
    _same(run_counted(f, w, idx), f(w, idx))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("n", [129, 600])
def test_index_select_sizes(dim, n):
    g = torch.Generator().manual_seed(n + dim)
    x = torch.randn(129, 7, 130, generator=g)
    idx = torch.randint(0, x.shape[dim], (n,), generator=g)
    f = lambda x, i: torch.index_select(x, dim, i) + 1  # noqa: E731
    _same(run_counted(f, x, idx), f(x, idx))


def test_index_select_transposed_and_scalar_index():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(520, 129, generator=g).t()  # [129, 520]
    f = lambda x, i: torch.index_select(x, 1, i)  # noqa: E731
    i = torch.randint(0, 520, (513,), generator=g)
    _same(run_counted(f, x, i), f(x, i))
    f0 = lambda x: torch.index_select(x, 0, torch.tensor(128))  # noqa: E731
    _same(run_counted(f0, x), f0(x))


class _Embed(torch.nn.Module):
    def __init__(self, vocab, d, max_len):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(max_len, d)
        self.ln = torch.nn.LayerNorm(d)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(self.positions[: idx.shape[1]])
        return self.ln(x), x


@pytest.mark.parametrize("vocab,t,d", [(256, 37, 96), (129, 130, 600)])
def test_token_position_embedding_layer_norm(vocab, t, d):
    torch.manual_seed(0)
    m = _Embed(vocab, d, 200).eval()
    idx = torch.randint(0, vocab, (2, t))
    with torch.no_grad():
        got = run_counted(m, idx)
        want = m(idx)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_embedding_then_softmax_over_the_index_dim():
    # a row op folding the index dim cannot share the gather's kernel
    g = torch.Generator().manual_seed(7)
    w = torch.randn(300, 33, generator=g)
    idx = torch.randint(0, 300, (140,), generator=g)
    f = lambda w, i: torch.softmax(F.embedding(i, w), dim=0)  # noqa: E731
    _same(run_counted(f, w, idx), f(w, idx))
    fs = lambda w, i: F.embedding(i, w).sum(0)  # noqa: E731
    torch.testing.assert_close(run_counted(fs, w, idx), fs(w, idx), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bad", [129, -1, 1000])
def test_out_of_range_index_is_a_clear_error(bad):
    w = torch.randn(129, 600)
    idx = torch.tensor([[0, 5, bad]])
    torch._dynamo.reset()
    f = torch.compile(lambda w, i: F.embedding(i, w) + 1, backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 129 rows"):
        f(w, idx)
    x = torch.randn(3, 129)
    fi = torch.compile(lambda x, i: torch.index_select(x, 1, i), backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 129 rows"):
        fi(x, idx.view(-1))


def test_embedding_of_empty_weight_is_a_clear_error():
    torch._dynamo.reset()
    f = torch.compile(lambda w, i: F.embedding(i, w), backend="neuron", dynamic=False)
    with pytest.raises(Exception, match="empty"):
        f(torch.randn(0, 4), torch.tensor([0]))


def test_scatter_add_non_finite_sources_large_table_wide_source():
    # the one-hot matmul counts +inf, -inf and NaN sources per element: each
    # reaches only its own rows, with a table of > 128 rows (130 x 520
    # elements) and a source of > 512 columns
    torch.manual_seed(1)
    x = torch.randn(130, 520)
    idx = torch.randint(0, 130, (3, 520))
    src = torch.randn(3, 520)
    src[0, 0], src[1, 513], src[2, 100] = float("nan"), float("inf"), -float("inf")
    src[0, 300], src[1, 300] = float("inf"), -float("inf")
    idx[0, 300], idx[1, 300] = 129, 129       # both signs meet: NaN
    f = lambda x, i, s: x.scatter_add(0, i, s)  # noqa: E731
    _same(run_counted(f, x, idx, src), f(x, idx, src))


def test_embedding_backward_non_finite_wide_rows():
    torch.manual_seed(2)
    g = torch.randn(200, 600)
    g[5, 2], g[6, 513], g[7, 599] = float("nan"), float("inf"), -float("inf")
    ids = torch.randint(0, 300, (200,))
    f = lambda g, ids: torch.ops.aten.embedding_dense_backward(g, ids, 300, -1, False)  # noqa: E731
    torch.testing.assert_close(run_counted(f, g, ids), f(g, ids), rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("rows", [127, 128, 129])
def test_accumulation_boundary_tables_duplicates_padding_and_non_finite(rows):
    # one-hot accumulation blocks of 128 table rows and 128 source rows:
    # tables of 127/128/129 rows, every index repeated, padding_idx rows
    # zero, and +inf/-inf/NaN sources reaching only their own rows
    g = torch.Generator().manual_seed(rows)
    ids = torch.randint(0, rows, (rows + 1,), generator=g)
    ids[:8] = rows - 1  # duplicates of the last row
    ids[8:12] = 3       # the padding row
    gr = torch.randn(rows + 1, 40, generator=g)
    gr[0, 0], gr[1, 1], gr[20, 2], gr[21, 2] = float("nan"), float("inf"), float("inf"), -float("inf")
    ids[20] = ids[21] = 5  # +inf and -inf meet in row 5: NaN
    f = lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, rows, 3, False)  # noqa: E731
    torch.testing.assert_close(run_counted(f, gr, ids), f(gr, ids), rtol=1e-5, atol=1e-5, equal_nan=True)
    x = torch.randn(rows, 3, generator=g)
    idx = ids.view(-1, 1).expand(-1, 3).contiguous()
    fa = lambda x, i, s: x.scatter_add(0, i, s)  # noqa: E731
    torch.testing.assert_close(run_counted(fa, x, idx, gr[:, :3]), fa(x, idx, gr[:, :3]), rtol=1e-5, atol=1e-5,
                               equal_nan=True)
    fp = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    neg = ids - rows * (ids % 2)  # negative indices count from the end
    torch.testing.assert_close(run_counted(fp, x, neg, gr[:, :3]), fp(x, neg, gr[:, :3]), rtol=1e-5, atol=1e-5,
                               equal_nan=True)


def test_scatter_add_16385_source_rows():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(129, 2, generator=g)
    idx = torch.randint(0, 129, (16385, 2), generator=g)
    src = torch.randn(16385, 2, generator=g)
    f = lambda x, i, s: x.scatter_add(0, i, s)  # noqa: E731
    torch.testing.assert_close(run_counted(f, x, idx, src), f(x, idx, src), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("where", [0, 1, 2])
@pytest.mark.parametrize("ishape", [(140,), (3, 200), (600,)])
def test_index_tensor_one_index_wraps(where, ishape):
    # x[..., idx, ...] with negative indices counting from the end
    g = torch.Generator().manual_seed(where + len(ishape))
    x = torch.randn(129, 7, 130, generator=g)
    size = x.shape[where]
    idx = torch.randint(-size, size, ishape, generator=g)
    sl = (slice(None),) * where
    f = lambda x, i: x[sl + (i,)] * 2  # noqa: E731
    _same(run_counted(f, x, idx), f(x, idx))


def test_index_tensor_then_layer_norm_and_out_of_range():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(300, 520, generator=g)
    idx = torch.randint(-300, 300, (2, 65), generator=g)
    f = lambda x, i: F.layer_norm(x[i], (520,))  # noqa: E731
    torch.testing.assert_close(run_counted(f, x, idx), f(x, idx), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    fc = torch.compile(lambda x, i: x[i], backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 300 rows"):
        fc(x, torch.tensor([0, 300]))
    torch._dynamo.reset()
    fc = torch.compile(lambda x, i: x[i], backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 300 rows"):
        fc(x, torch.tensor([-301, 1]))


@pytest.mark.parametrize("dim,ishape", [(0, (140, 5, 100)), (2, (129, 7, 600)), (1, (129, 3, 130)),
                                        (-1, (2, 7, 513))])
def test_gather_along_dim(dim, ishape):
    # partitions walk dim `dim` of the index, the other dims are looped (or,
    # for short index dims, single elements at computed addresses)
    g = torch.Generator().manual_seed(len(ishape) + dim)
    x = torch.randn(129, 7, 130, generator=g)
    idx = torch.randint(0, x.shape[dim], ishape, generator=g)
    f = lambda x, i: torch.gather(x, dim, i) * 2  # noqa: E731
    _same(run_counted(f, x, idx), f(x, idx))


def test_gather_strided_and_out_of_range():
    g = torch.Generator().manual_seed(13)
    x = torch.randn(129, 200, generator=g)
    f = lambda x, i: torch.gather(x.t(), 1, i)  # noqa: E731
    i = torch.randint(0, 129, (200, 520), generator=g)
    _same(run_counted(f, x, i), f(x, i))
    torch._dynamo.reset()
    fc = torch.compile(lambda x, i: torch.gather(x, 0, i), backend="neuron", dynamic=False)
    bad = torch.zeros(300, 2, dtype=torch.long)
    bad[200, 1] = 129
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 129 rows"):
        fc(x, bad)


def _perm_rows(n_out, n_idx, other, seed):
    # distinct indices along dim 0 for every other position (eager's result
    # with duplicates is the last write, which the test below checks apart)
    g = torch.Generator().manual_seed(seed)
    cols = [torch.randperm(n_out, generator=g)[:n_idx] for _ in range(other)]
    return torch.stack(cols, 1)


@pytest.mark.parametrize("n_idx", [100, 129])
def test_scatter_src_and_value_rows(n_idx):
    g = torch.Generator().manual_seed(n_idx)
    x = torch.randn(129, 7, 130, generator=g)
    idx = _perm_rows(129, n_idx, 7 * 130, n_idx).view(n_idx, 7, 130)
    src = torch.randn(n_idx + 1, 7, 131, generator=g)  # larger than the index: its leading block
    f = lambda x, i, s: x.scatter(0, i, s)  # noqa: E731
    _same(run_counted(f, x, idx, src), f(x, idx, src))
    fv = lambda x, i: x.scatter(0, i, -2.5)  # noqa: E731
    _same(run_counted(fv, x, idx), fv(x, idx))


def test_scatter_duplicates_last_write_wins():
    x = torch.zeros(3, 300)
    idx = torch.full((3, 200), 7)
    idx[1, 150:] = 299
    src = torch.arange(600.0).view(3, 200)
    f = lambda x, i, s: x.scatter(1, i, s)  # noqa: E731
    _same(run_counted(f, x, idx, src), f(x, idx, src))


@pytest.mark.parametrize("n", [127, 128, 129])
def test_scatter_along_a_short_dim(n):
    # scatter along dim 1 (8 long): element addresses computed from an iota,
    # partitions walk the index's rows; duplicates along the dim are frequent
    # (4 indices into 8) and the last one in index order wins, as eager's loop
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, 8, generator=g)
    idx = torch.randint(0, 8, (n, 4), generator=g)
    src = torch.randn(n, 5, generator=g)  # larger than the index: its leading block
    f = lambda x, i, s: x.scatter(1, i, s)  # noqa: E731
    assert torch.equal(run_counted(f, x, idx, src), f(x, idx, src))
    fv = lambda x, i: x.scatter(-1, i, 2.5)  # noqa: E731
    assert torch.equal(run_counted(fv, x, idx), fv(x, idx))


def test_scatter_along_a_short_dim_strided_and_duplicates():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 4, 5, generator=g)
    idx = torch.randint(0, 6, (5, 3, 4), generator=g).permute(2, 1, 0)[:3]  # [3, 3, 5], non-contiguous
    src = torch.randn(5, 3, 6, generator=g).transpose(0, 2)  # [6, 3, 5], strided
    f = lambda x, i, s: x.scatter(0, i, s)  # noqa: E731
    assert torch.equal(run_counted(f, x, idx, src), f(x, idx, src))
    # every index of a row the same: only the last source element survives
    xs = torch.zeros(300, 3)
    same = torch.full((300, 3), 1)
    ar = torch.arange(900.0).view(300, 3)
    f1 = lambda x, i, s: x.scatter(1, i, s)  # noqa: E731
    assert torch.equal(run_counted(f1, xs, same, ar), f1(xs, same, ar))


def test_scatter_short_dim_16385_source_rows_and_inf_nan():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 16385, generator=g)
    idx = torch.randint(0, 3, (2, 16385), generator=g)
    src = torch.randn(2, 16385, generator=g)
    src[0, 5], src[1, 16384], src[0, 16383] = float("nan"), float("inf"), -float("inf")
    f = lambda x, i, s: x.scatter(0, i, s)  # noqa: E731
    _same(run_counted(f, x, idx, src), f(x, idx, src))


@pytest.mark.parametrize("bad", [8, -1])
def test_scatter_short_dim_out_of_range_names_the_index(bad):
    # the clamped element address stays inside the result; the range check
    # of the index as written reports the user's value and the dim's size
    torch._dynamo.reset()
    f = torch.compile(lambda x, i, s: x.scatter(1, i, s), backend="neuron", dynamic=False)
    idx = torch.zeros(300, 4, dtype=torch.long)
    idx[200, 3] = bad
    with pytest.raises(trnc.errors.ExecutionError, match=f"index {bad} .*outside the 8 rows"):
        f(torch.zeros(300, 8), idx, torch.ones(300, 4))


@pytest.mark.parametrize("ishape", [(0, 4), (5, 0)])
def test_scatter_add_and_reduce_with_an_empty_index_copy_self(ishape):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(5, 4, generator=g)
    idx = torch.zeros(ishape, dtype=torch.long)
    src = torch.randn(ishape, generator=g)
    for f in (lambda x, i, s: x.scatter_add(0, i, s),
              lambda x, i, s: x.scatter_reduce(1, i, s, "sum"),
              lambda x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False)):
        assert torch.equal(run_counted(f, x, idx, src), f(x, idx, src))
    fp = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    i0, v0 = torch.zeros(0, dtype=torch.long), torch.randn(0, 4, generator=g)
    assert torch.equal(run_counted(fp, x, i0, v0), fp(x, i0, v0))


@pytest.mark.parametrize("case", ["int", "non_adjacent", "blocks"])
def test_index_put_accumulate_limits_are_declared(case):
    # refused by the op table's limits with the reason, not "no lowering"
    f = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    if case == "int":
        args, why = (torch.arange(10), torch.tensor([1, 1, 3]), torch.tensor([5, 6, 7])), "float tensors only"
    elif case == "non_adjacent":
        f = lambda x, i, j, v: torch.ops.aten.index_put(x, [i, None, j], v, True)  # noqa: E731
        args, why = (torch.zeros(4, 5, 6), torch.tensor([0, 1]), torch.tensor([2, 3]), torch.ones(2, 5)), "adjacent"
    else:
        args, why = (torch.zeros(40000, 600), torch.zeros(20000, dtype=torch.long), torch.ones(20000, 600)), \
            "TensorE accumulation blocks"
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(f, backend="neuron", dynamic=False, fullgraph=True)(*args)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert why in str(err) and "no NeuronCore lowering" not in str(err)


def test_index_put_one_index_wraps_and_broadcasts():
    g = torch.Generator().manual_seed(17)
    x = torch.randn(129, 7, 520, generator=g)

    def f(x, i, v):
        y = x.clone()
        y[:, i] = v
        return y

    i = torch.tensor([0, -1, 3, -5])  # distinct rows: eager leaves duplicates undefined
    v = torch.randn(4, 520, generator=g)  # broadcast over dim 0
    _same(run_counted(f, x, i, v), f(x, i, v))
    rows = torch.randperm(129, generator=g)[:100] - 64  # negative ones count from the end
    fr = lambda x, i, v: x.index_put((i,), v)  # noqa: E731
    vr = torch.randn(100, 7, 520, generator=g)
    _same(run_counted(fr, x, rows, vr), fr(x, rows, vr))


_ZERO_D = {
    "gather-0d-self-and-index": (lambda x, i, s: torch.gather(x.sum(), 0, i.sum() * 0), (5,), ()),
    "gather-0d-index": (lambda x, i, s: torch.gather(x, -1, i.sum() % 5), (5,), ()),
    "gather-0d-self": (lambda x, i, s: torch.gather(x.sum(), 0, i * 0), (5,), (3,)),
    "scatter-src-0d": (lambda x, i, s: x.sum().scatter(0, i.sum() * 0, s.sum()), (5,), ()),
    "scatter-value-0d-index": (lambda x, i, s: x.scatter(0, i.sum() % 5, 2.5), (5,), ()),
    "scatter-add-0d-self": (lambda x, i, s: x.sum().scatter_add(0, i * 0, s), (5,), (3,)),
    "scatter-add-0d-src-and-index": (lambda x, i, s: x.scatter_add(0, i.sum() % 5, s.sum()), (5,), ()),
}


@pytest.mark.parametrize("case", sorted(_ZERO_D))
def test_gather_and_scatter_with_0d_operands(case):
    # torch sees a 0-d self, index or src as [1] along dim 0 (they were refused)
    fn, xshape, ishape = _ZERO_D[case]
    x = torch.randn(5)
    i = torch.tensor([3, 1, 4][: ishape[0]] if ishape else [3, 1])
    s = torch.randn(3 if ishape else 2)
    _same(run_counted(fn, x, i, s), fn(x, i, s))


def test_min_dim_of_0d_trains():
    # min.dim's backward of a 0-d input is a scatter into a 0-d gradient
    x = torch.tensor(1.5, requires_grad=True)
    torch._dynamo.reset()
    before = trnc.stats()
    v, _ = torch.compile(lambda t: torch.min(t * 3, 0), backend="neuron", dynamic=False)(x)
    v.backward()
    assert trnc.stats()["backward"] > before["backward"]
    assert v.item() == 4.5 and x.grad.item() == 3.0


def test_scatter_out_of_range_is_a_clear_error():
    torch._dynamo.reset()
    f = torch.compile(lambda x, i, s: x.scatter(0, i, s), backend="neuron", dynamic=False)
    idx = torch.zeros(200, 3, dtype=torch.long)
    idx[150, 2] = 129
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 129 rows"):
        f(torch.zeros(129, 3), idx, torch.ones(200, 3))


@pytest.mark.parametrize("form", ["adjacent", "split", "trailing"])
def test_index_tensor_two_indices(form):
    # flat rows c0 * m0 + c1 * m1 over gcd-strided rows, both indices wrapped
    g = torch.Generator().manual_seed(19)
    x = torch.randn(129, 7, 130, generator=g)
    if form == "adjacent":
        i, j = torch.randint(-129, 129, (140,), generator=g), torch.randint(-7, 7, (140,), generator=g)
        f = lambda x, i, j: x[i, j] * 2  # noqa: E731
    elif form == "split":
        i, j = torch.randint(0, 129, (600,), generator=g), torch.randint(-130, 130, (600,), generator=g)
        f = lambda x, i, j: x[i, :, j]  # noqa: E731
    else:
        i, j = torch.randint(-7, 7, (3, 1), generator=g), torch.randint(-130, 130, (1, 200), generator=g)
        f = lambda x, i, j: x[:, i, j]  # noqa: E731
    _same(run_counted(f, x, i, j), f(x, i, j))


def test_index_tensor_two_indices_out_of_range_is_refused():
    # x[0, 7] of a [*, 7] dim would be row 7 = x[1, 0] in the flat rows: the
    # clamp pushes it below zero, so the DMA refuses it
    x = torch.randn(129, 7, 130)
    torch._dynamo.reset()
    f = torch.compile(lambda x, i, j: x[i, j], backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 903 rows"):
        f(x, torch.tensor([0, 1]), torch.tensor([0, 7]))


def test_index_put_two_indices():
    g = torch.Generator().manual_seed(23)
    x = torch.randn(129, 7, 130, generator=g)
    i = torch.randperm(129, generator=g)[:100] - 50
    j = torch.randint(-7, 7, (100,), generator=g)
    f = lambda x, i, j, v: x.index_put((i, j), v)  # noqa: E731
    for v in (torch.randn(100, 130, generator=g), torch.randn(130, generator=g)):
        _same(run_counted(f, x, i, j, v), f(x, i, j, v))

    def split(x, i, j, v):
        y = x.clone()
        y[i, :, j] = v
        return y

    i2, j2 = torch.randperm(129, generator=g)[:60], torch.randint(0, 130, (60,), generator=g)
    v2 = torch.randn(60, 7, generator=g)
    _same(run_counted(split, x, i2, j2, v2), split(x, i2, j2, v2))


@pytest.mark.parametrize("rows", [5, 129])
def test_cross_backward_gathers_share_their_tables(rows):
    # cross's backward is eight index_selects of three tables by two index
    # vectors in one kernel group: their tensors are shared, not one each
    g = torch.Generator().manual_seed(rows)
    x, y = (torch.randn(rows, 3, generator=g).requires_grad_() for _ in range(2))
    f = lambda x, y: torch.linalg.cross(x, y)  # noqa: E731
    torch._dynamo.reset()
    before = trnc.stats()["graphs"]
    got = torch.compile(f, backend="neuron", dynamic=False)(x, y)
    w = torch.randn(rows, 3, generator=g)
    gx, gy = torch.autograd.grad(got, (x, y), w)
    ex, ey = torch.autograd.grad(f(x, y), (x, y), w)
    assert trnc.stats()["graphs"] >= before + 2, "trnc compiled no forward and backward"
    _same(gx, ex)
    _same(gy, ey)


@pytest.mark.parametrize("mode,shape,size", [("linear", (2, 3, 5), 7), ("bilinear", (2, 3, 4, 4), (3, 5)),
                                             ("bicubic", (2, 3, 4, 4), 3), ("trilinear", (1, 2, 3, 4, 5), 6)])
def test_interpolate_forward_and_grad(mode, shape, size):
    """Interpolation's source indices are float coordinates (clamped, viewed,
    cast to int64) that the legality scan bounds through the view; bicubic's
    16 index gathers over 8 index tensors (index.Tensor's list argument)
    count against one kernel's HBM tensors, so they split into kernels that
    fit (a kernel of them all once failed with "kernel too large")."""
    torch.manual_seed(0)
    x0 = torch.randn(shape)
    f = lambda x: F.interpolate(x, size=size, mode=mode, align_corners=False)  # noqa: E731
    torch.testing.assert_close(run_counted(f, x0), f(x0), rtol=1e-5, atol=1e-5)
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    cot = torch.randn(f(x0).shape)
    torch._dynamo.reset()
    (torch.compile(f, backend="neuron", dynamic=False)(x1) * cot).sum().backward()
    (f(x2) * cot).sum().backward()
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-5, atol=1e-5)
