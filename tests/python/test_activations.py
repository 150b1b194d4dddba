"""Activation and elementwise ops beyond the core set, on the simulator vs
eager (fp32: rtol 1e-5 / atol 1e-6; exp2/log2 go through ScalarE exp/log with
a scale, so they track eager to a few ulps)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

CASES = {
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.75),
    "relu6": lambda x: F.relu6(x * 4),
    "elu": lambda x: F.elu(x, alpha=0.7),
    "selu": lambda x: torch.selu(x),
    "celu": lambda x: F.celu(x, alpha=1.3),
    "hardsigmoid": lambda x: F.hardsigmoid(x * 4),
    "hardswish": lambda x: F.hardswish(x * 4),
    "trunc": lambda x: torch.trunc(x * 3),
    "exp2": lambda x: torch.exp2(x),
    "log2": lambda x: torch.log2(x.abs() + 0.5),
    "isnan": lambda x: torch.isnan(torch.where(x > 1, x * float("nan"), x)),
    "xor": lambda x: torch.logical_xor(x > 0, x > 0.5) ^ (x < -1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name):
    f = CASES[name]
    torch.manual_seed(0)
    x = torch.randn(37, 53) * 2
    want = f(x)
    got = torch.compile(f, backend="neuron", dynamic=False)(x)
    assert got.dtype == want.dtype
    if want.dtype == torch.bool:
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_int_trunc_passes_values_through():
    x = torch.tensor([-7, 0, 12345], dtype=torch.int32)
    got = torch.compile(lambda x: torch.trunc(x) + 1, backend="neuron", dynamic=False)(x)
    torch.testing.assert_close(got, x + 1, rtol=0, atol=0)
