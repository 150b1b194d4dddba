"""Data movement as kernel IR (codegen/kir/data.c): cat, stack, constant_pad_nd
and the slice scatters are one kernel of copy and fill parts; values match
eager at partition boundaries, with empty pieces, non-contiguous inputs and
integer dtypes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _check(fn, *args, kernels=1):
    got, rep = compile_run(fn, *args)
    want = fn(*args)
    if kernels is not None:
        assert rep["kernels"] == kernels, rep
    assert got.dtype == want.dtype
    assert torch.equal(got, want)


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=g).to(dtype)
    return torch.randint(-1000, 1000, shape, generator=g).to(dtype)


@pytest.mark.parametrize("rows", [127, 128, 129, 16385])
def test_cat_rows(rows):
    a, b = _x(rows, 3), _x(5, 3, seed=1)
    _check(lambda a, b: torch.cat([a, b, a], 0), a, b)
    _check(lambda a, b: torch.cat([a, torch.zeros(rows, 0), a.flip(0)], 1), a, b, kernels=None)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bfloat16, torch.bool])
def test_cat_stack_dtypes_and_views(dtype):
    a = _x(129, 40, dtype=dtype)
    b = _x(40, 129, dtype=dtype, seed=2)
    _check(lambda a, b: torch.cat([a, b.t(), a[:, ::2].repeat(1, 2)], 0), a, b, kernels=None)
    _check(lambda a, b: torch.stack([a, b.t()], 1), a, b)


def test_cat_mixed_dtypes_and_empty_pieces():
    a, b = _x(128, 7, dtype=torch.int32), _x(0, 7)
    _check(lambda a, b: torch.cat([a, b, a], 0), a, b)
    _check(lambda a, b: torch.cat([torch.empty(0), a.float().flatten()]), a, b, kernels=None)


@pytest.mark.parametrize("shape, pad, value", [((2, 3, 129, 65), (1, 2, 3, 4), 1.5),
                                               ((128, 256), (-3, 5, 2, -1), 0.0),
                                               ((16385,), (0, 3), -2.0),
                                               ((4, 3), (2, -3), 7.0),           # no interior
                                               ((3, 0, 4), (1, 1, 2, 0), 9.0)])  # empty input
def test_pad(shape, pad, value):
    _check(lambda x: F.pad(x, pad, value=value), _x(*shape))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_pad_int_and_strided(dtype):
    x = _x(129, 130, dtype=dtype)
    _check(lambda x: F.pad(x.t()[1:], (2, 1, 0, 3), value=-5), x)


@pytest.mark.parametrize("step", [1, 3])
def test_slice_scatter(step):
    x, s = _x(129, 64), _x(129, 64, seed=3)
    src = s[:, 5:60:step]
    _check(lambda x, src: torch.slice_scatter(x, src, 1, 5, 60, step), x, src.contiguous())
    _check(lambda x, v: torch.select_scatter(x, v, 0, 128), x, s[0].clone())


# ---- gathers along a short dim (codegen/kir/gather.c element_gather) ----------------------------

@pytest.mark.parametrize("shape, dim, dtype", [((16385, 2), 1, torch.float32), ((129, 3), 1, torch.int32),
                                               ((5, 128), 0, torch.bfloat16), ((3, 127, 4), 2, torch.int64)])
def test_short_dim_gather_fuses_with_its_consumer(shape, dim, dtype):
    g = torch.Generator().manual_seed(len(shape) + dim)
    x = _x(*shape, dtype=dtype, seed=dim)
    ishape = list(shape)
    ishape[dim] = max(1, shape[dim] - 1)
    idx = torch.randint(0, shape[dim], ishape, generator=g)
    _check(lambda x, i: torch.gather(x, dim, i) * 3, x, idx)


def test_short_dim_gather_non_contiguous():
    g = torch.Generator().manual_seed(5)
    x = _x(2, 16385)
    idx = torch.randint(0, 2, (16385, 2), generator=g)
    _check(lambda x, i: torch.gather(x.t(), 1, i), x, idx.t().contiguous().t())


def test_short_dim_gather_out_of_range_is_a_clear_error():
    import trnc

    torch._dynamo.reset()
    fc = torch.compile(lambda x, i: torch.gather(x, 1, i), backend="neuron", dynamic=False)
    x = _x(300, 3)
    bad = torch.zeros(300, 2, dtype=torch.long)
    bad[200, 1] = 3
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 3 rows"):
        fc(x, bad)
    bad[200, 1] = -1
    with pytest.raises(trnc.errors.ExecutionError, match="outside the 3 rows"):
        fc(x, bad)


def test_short_dim_gather_of_a_flipped_view():
    g = torch.Generator().manual_seed(6)
    x = _x(300, 3)
    idx = torch.randint(0, 3, (300, 2), generator=g)
    _check(lambda x, i: torch.gather(x.flip(0, 1), 1, i), x, idx, kernels=None)
