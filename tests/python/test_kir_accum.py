"""The kernel IR's accumulating scatter (`accum`, codegen/kir/accum.c): the
one-hot TensorE matmul into PSUM behind embedding_dense_backward,
index_put(accumulate=True) and scatter_add, compiled with trnc against eager
PyTorch at the block boundaries (127/128/129 and 16385 index rows, tables of
more than 128 rows and rows of more than 512 columns), with duplicate
indices, padding_idx, +inf/-inf/NaN sources, negative indices (wrapped by
index_put, refused by scatter_add and embedding backward naming the user's
value), non-contiguous sources and broadcast values; and the functional
copy_ (kir data) with a broadcast and a cast."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

NAN, INF = float("nan"), float("inf")


def _close(got, want, tol=1e-5):
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)


def _emb_bw(rows, pad):
    return lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, rows, pad, False)  # noqa: E731


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_embedding_backward_index_rows(n):
    # source rows around one partition tile of 128, and 16385 (129 tiles);
    # a table of 300 rows (3 blocks) and rows of 520 columns (2 chunks)
    g = torch.Generator().manual_seed(n)
    cols = 520 if n < 16385 else 24
    ids = torch.randint(0, 300, (n,), generator=g)
    ids[:5] = 299       # duplicates of the last row
    ids[5:9] = 7        # the padding row
    gr = torch.randn(n, cols, generator=g)
    gr[0, cols - 7], gr[10, 0], gr[11, 0], gr[12, 1] = INF, INF, -INF, NAN
    ids[10] = ids[11] = 130  # +inf and -inf meet in a row of the second block: NaN
    f = _emb_bw(300, 7)
    out = run_counted(f, gr, ids)
    _close(out, f(gr, ids), 1e-4)
    assert torch.all(out[7] == 0)


def test_embedding_backward_2d_index_non_contiguous_grad():
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 140, (3, 50), generator=g)
    gr = torch.randn(3, 600, 50, generator=g).transpose(1, 2)  # [3, 50, 600], strided
    f = _emb_bw(140, -1)
    _close(run_counted(f, gr, ids), f(gr.contiguous(), ids), 1e-4)


@pytest.mark.parametrize("bad", [-1, 300])
def test_embedding_backward_out_of_range_names_the_rows(bad):
    ids = torch.tensor([0, 5, bad, 7])
    gr = torch.randn(4, 16)
    torch._dynamo.reset()
    f = torch.compile(_emb_bw(300, -1), backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 300 rows"):
        f(gr, ids)


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_index_put_accumulate_negative_and_duplicate_indices(n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(200, 3 if n == 16385 else 530, generator=g)
    i = torch.randint(-200, 200, (n,), generator=g)
    i[:6] = -1          # the last row, as a negative index, and as 199
    i[6:9] = 199
    v = torch.randn(n, x.shape[1], generator=g)
    v[0, 1], v[1, 2], v[7, 2], v[8, 0] = NAN, INF, -INF, -INF
    f = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    _close(run_counted(f, x, i, v), f(x, i, v), 1e-4)


def test_index_put_accumulate_broadcast_values_and_two_indices():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(130, 600, generator=g)
    i = torch.randint(0, 130, (129,), generator=g)
    v = torch.randn(129, 1, generator=g)  # broadcast along the row
    f = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    _close(run_counted(f, x, i, v), f(x, i, v), 1e-4)
    y = torch.randn(12, 11, 5, generator=g)
    i0 = torch.randint(-12, 12, (129,), generator=g)
    i1 = torch.randint(0, 11, (129,), generator=g)
    i0[:4], i1[:4] = 3, 4  # duplicates of one combined row
    w = torch.randn(129, 5, generator=g)
    f2 = lambda y, a, b, w: y.index_put((a, b), w, accumulate=True)  # noqa: E731
    _close(run_counted(f2, y, i0, i1, w), f2(y, i0, i1, w))


def test_index_put_accumulate_out_of_range():
    x = torch.randn(20, 4)
    torch._dynamo.reset()
    f = torch.compile(lambda x, i, v: x.index_put((i,), v, accumulate=True), backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 20 rows"):
        f(x, torch.tensor([1, 20]), torch.randn(2, 4))


@pytest.mark.parametrize("n", [127, 128, 129, 16385])
def test_scatter_add_rows(n):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(150, 3, generator=g)
    idx = torch.randint(0, 150, (n, 3), generator=g)
    idx[:4] = 149
    src = torch.randn(n, 3, generator=g)
    src[0, 0], src[1, 0], src[2, 1], src[3, 2] = INF, -INF, NAN, INF
    f = lambda x, i, s: x.scatter_add(0, i, s)  # noqa: E731
    _close(run_counted(f, x, idx, src), f(x, idx, src), 1e-4)


def test_scatter_add_along_dim_1_non_contiguous_src():
    g = torch.Generator().manual_seed(9)
    x = torch.randn(4, 140, generator=g)
    idx = torch.randint(0, 140, (4, 300), generator=g)
    src = torch.randn(300, 6, generator=g).t()[:4]  # [4, 300], strided
    f = lambda x, i, s: x.scatter_add(1, i, s)  # noqa: E731
    _close(run_counted(f, x, idx, src), f(x, idx, src.contiguous()), 1e-4)


@pytest.mark.parametrize("bad", [-1, 140])
def test_scatter_add_out_of_range_names_the_users_value(bad):
    x = torch.randn(3, 140)
    idx = torch.tensor([[0, 1], [2, bad], [4, 5]])
    torch._dynamo.reset()
    f = torch.compile(lambda x, i, s: x.scatter_add(1, i, s), backend="neuron", dynamic=False)
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 140 rows"):
        f(x, idx, torch.randn(3, 2))


@pytest.mark.parametrize("shape", [(3, 129), (2, 600)])
def test_functional_copy_broadcast_and_cast(shape):
    g = torch.Generator().manual_seed(4)
    s = torch.randint(-50, 50, (shape[1],), generator=g, dtype=torch.int32)

    def f(x, s):
        y = x.clone()
        y.copy_(s)
        return y + 1

    x = torch.randn(*shape, generator=g)
    _close(run_counted(f, x, s), f(x, s))
    t = torch.randn(shape[1], shape[0], generator=g).t()  # same dtype, transposed
    _close(run_counted(f, x, t), f(x, t))
