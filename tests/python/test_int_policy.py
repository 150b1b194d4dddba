"""Integer semantics (docs/dtypes.md): trnc never wraps, saturates or rounds
integers silently. Engines compute through fp32, exact up to 2^24; int8,
int16 and uint8 results that could leave their dtype's range (where eager
PyTorch wraps around) are refused at compile time; int32/int64 inputs are
range-checked at run time."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import trnc


def _compiled(f):
    return torch.compile(f, backend="neuron", dynamic=False)


@pytest.mark.parametrize("dtype,f", [
    (torch.uint8, lambda a, b: a + b),      # 200 + 100 wraps to 44 in eager
    (torch.uint8, lambda a, b: a - b),      # 1 - 2 wraps to 255
    (torch.int8, lambda a, b: a * b),       # 100 * 3 wraps to 44
    (torch.int16, lambda a, b: a * b),      # 300 * 300 wraps
])
def test_small_int_arithmetic_that_may_wrap_is_refused(dtype, f):
    a = torch.tensor([1, 2], dtype=dtype)
    b = torch.tensor([3, 4], dtype=dtype)
    with pytest.raises(BackendCompilerFailed) as ei:
        _compiled(f)(a, b)
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.UnsupportedOperatorError)
    assert "wrap around" in str(inner)


def test_small_int_ops_that_cannot_wrap_run_exactly():
    a = torch.tensor([200, 3, 0, 255], dtype=torch.uint8)
    b = torch.tensor([1, 2, 0, 0], dtype=torch.bool)

    def f(a, b):
        return torch.where(b, a, 7), (a > 100), a.to(torch.int32) * 3 - 1

    got = _compiled(f)(a, b)
    want = f(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_int32_input_beyond_the_exact_range_is_an_error():
    fn = _compiled(lambda a: a + 1)
    ok = torch.tensor([0, -(1 << 23), 1 << 23], dtype=torch.int32)
    torch.testing.assert_close(fn(ok), ok + 1, rtol=0, atol=0)
    bad = torch.tensor([0, (1 << 24) + 1, 5], dtype=torch.int32)
    with pytest.raises(trnc.ExecutionError, match="16777217"):
        fn(bad)


def test_int64_sign_is_bounded():
    x = torch.tensor([-5, 0, 7])
    torch.testing.assert_close(_compiled(lambda x: torch.sign(x) * 2)(x), torch.sign(x) * 2,
                               rtol=0, atol=0)


def test_mixed_bool_arithmetic_backward_of_amax():
    x = torch.randn(4, 6, requires_grad=True)
    xe = x.detach().clone().requires_grad_(True)
    _compiled(lambda x: x.amax(dim=1).sum())(x).backward()
    xe.amax(dim=1).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad, rtol=1e-6, atol=1e-6)
