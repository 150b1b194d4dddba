"""Graphs the importer rejected as trnc bugs (``GraphImportError``) although
they are valid: writes into a slice at a nonzero offset (T5/BART/Whisper shift
their decoder inputs so), views of 0-d tensors, a Python number as ``self``
of sub/add/mul, index_select of a 0-d tensor; and a boolean-mask index_put,
which is now refused as an unsupported operator with its reason."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _same(fn, *args, exact=True):
    want = fn(*args)
    torch._dynamo.reset()
    got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    # trnc compiled the graph (a view of an input needs no kernel: the
    # runtime copies it from the input's memory)
    assert trnc.last_report() is not None and trnc.stats()["compiles"] + trnc.stats()["hits"] >= 1
    if exact:
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:
        torch.testing.assert_close(got, want)


def _shift_right(x):
    y = torch.zeros_like(x)
    y[:, 1:] = x[:, :-1]
    return y


def _shift_right_t(x):
    y = torch.zeros_like(x).t()
    y[1:] = x.t()[:-1]
    return y


@pytest.mark.parametrize("fn", [_shift_right, _shift_right_t])
def test_write_into_offset_slice(fn):
    _same(fn, torch.randn(2, 11))


@pytest.mark.parametrize("fn", [lambda x: torch.ravel(x), lambda x: x.view(1, 1), lambda x: x.reshape(1)])
def test_view_of_0d(fn):
    _same(fn, torch.tensor(1.5))


def test_view_of_full_sum():
    _same(lambda x: x.sum().view(1), torch.randn(5), exact=False)   # summation order


@pytest.mark.parametrize("fn", [lambda x: torch.sub(2, x), lambda x: torch.sub(2.5, x, alpha=3),
                                lambda x: torch.add(2, x), lambda x: torch.mul(0.5, x)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_number_as_self(fn, dtype):
    _same(fn, torch.arange(-3, 4).to(dtype))


def test_index_select_of_0d():
    _same(lambda x, i: torch.index_select(x, 0, i), torch.tensor(2.0), torch.tensor([0]))


def test_boolean_mask_index_put_is_unsupported_not_a_bug():
    def f(x, m):
        x = x.clone()
        x[m] = 0.0
        return x

    with pytest.raises(BackendCompilerFailed) as ei:
        torch.compile(f, backend="neuron", dynamic=False)(torch.randn(5), torch.rand(5) > 0.5)
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.UnsupportedOperatorError), type(inner)
    assert "aten.index_put.default" in str(inner) and "boolean mask" in str(inner)
