"""Edge cases from review: reductions over empty tensors, matmuls with an
empty contraction dim, matmul operand dtype mismatches (a user error) and the
index reported by gather's bounds error — all against eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch._dynamo.exc import BackendCompilerFailed

import trnc


def _compile(f):
    torch._dynamo.reset()
    return torch.compile(f, backend="neuron", dynamic=False)


REDUCTIONS = {
    "sum0": lambda x: x.sum(0),
    "mean0": lambda x: x.mean(0),
    "sum_all": lambda x: x.sum(),
    "mean_all": lambda x: x.mean(),
    "sum_keepdim": lambda x: x.sum(0, keepdim=True) + 1,
    "mean_dims": lambda x: x.mean((0, 2)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape", [(0, 5), (0, 5, 3)])
def test_reduction_over_empty_tensor_matches_eager(name, shape):
    f = REDUCTIONS[name]
    if name == "mean_dims" and len(shape) < 3:
        pytest.skip("needs rank 3")
    x = torch.randn(*shape)
    want = f(x)
    got = _compile(f)(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


def test_sum_over_empty_int_tensor_is_zero():
    x = torch.zeros(0, 4, dtype=torch.int32)
    f = lambda x: x.sum(0)  # noqa: E731
    got = _compile(f)(x)
    want = f(x)
    assert got.dtype == want.dtype
    assert torch.equal(got, want)


MATMULS = {
    "mm": (lambda a, b: a @ b, lambda: (torch.randn(3, 0), torch.randn(0, 4))),
    "bmm": (lambda a, b: torch.bmm(a, b), lambda: (torch.randn(2, 3, 0), torch.randn(2, 0, 4))),
    "addmm_bias_n": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
                     lambda: (torch.randn(4), torch.randn(3, 0), torch.randn(0, 4))),
    "addmm_bias_2d": (lambda c, a, b: torch.addmm(c, a, b, beta=2.0),
                      lambda: (torch.randn(3, 4), torch.randn(3, 0), torch.randn(0, 4))),
    "addmm_relu": (lambda c, a, b: torch.relu(torch.addmm(c, a, b)),
                   lambda: (torch.randn(4), torch.randn(3, 0), torch.randn(0, 4))),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5),
                lambda: (torch.randn(2, 3, 4), torch.randn(2, 3, 0), torch.randn(2, 0, 4))),
    "linear_no_features": (lambda x, w, b: torch.nn.functional.linear(x, w, b),
                           lambda: (torch.randn(5, 0), torch.randn(3, 0), torch.randn(3))),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_with_empty_contraction_matches_eager(name):
    f, make = MATMULS[name]
    torch.manual_seed(0)
    args = make()
    want = f(*args)
    got = _compile(f)(*args)
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_linear_dtype_mismatch_is_a_user_error():
    # eager: RuntimeError("mat1 and mat2 must have the same dtype ...")
    m = nn.Linear(5, 3)
    x = torch.randn(2, 5, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="same dtype"):
        m(x)
    with pytest.raises(BackendCompilerFailed) as ei:
        _compile(m)(x)
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.TrncError) and isinstance(inner, RuntimeError)
    assert not isinstance(inner, trnc.GraphImportError)
    msg = str(inner)
    assert "trnc bug" not in msg
    assert "different dtypes" in msg and "same dtype" in msg
    assert "bf16 vs f32" in msg
    assert "autocast" in msg


def test_gather_bounds_error_reports_the_users_index():
    x = torch.randn(2, 5)
    i = torch.tensor([[0, 9], [1, 2]])
    with pytest.raises(RuntimeError):
        torch.gather(x, 1, i)
    f = lambda x, i: torch.gather(x, 1, i)  # noqa: E731
    with pytest.raises(trnc.ExecutionError) as ei:
        _compile(f)(x, i)
    msg = str(ei.value)
    assert "index 9 " in msg and "outside the 5 rows" in msg
    assert "-16777" not in msg


def test_gather_negative_index_reported_as_written():
    x = torch.randn(2, 5)
    i = torch.tensor([[0, 1], [-3, 2]])
    f = lambda x, i: torch.gather(x, 1, i)  # noqa: E731
    with pytest.raises(trnc.ExecutionError, match=r"index -3 .*outside the 5 rows"):
        _compile(f)(x, i)


def test_gather_in_range_still_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(6, 300)
    i = torch.randint(0, 300, (6, 200))
    f = lambda x, i: torch.gather(x, 1, i)  # noqa: E731
    torch.testing.assert_close(_compile(f)(x, i), f(x, i), rtol=0, atol=0)


def test_scatter_bounds_error_reports_the_users_index():
    x = torch.zeros(3, 4)
    i = torch.tensor([[0, 7]])
    src = torch.ones(1, 2)
    f = lambda x, i, s: x.scatter(1, i, s)  # noqa: E731
    with pytest.raises(trnc.ExecutionError, match=r"index 7 .*outside the 4 rows"):
        _compile(f)(x, i, src)
