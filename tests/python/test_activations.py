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


# Inverse and hyperbolic trig, atan2, isinf, round, fmod/remainder, fill,
# pow.Scalar and clamp.Tensor (new table lines found refused by the OpInfo
# test), on edge values eager defines: ties to even, signed zeros, the atan2
# quadrants and (0, 0), fmod/remainder signs and division by zero.
TIES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7, -3.7, 1e8, float("nan"),
        float("inf"), -float("inf"), -0.3, 4194304.5, 8388607.0, 0.0]
EDGE_CASES = {
    "asin": (torch.asin, [[-1.0, -0.999, -0.3, 0.0, 0.5, 0.999, 1.0, 1.5]]),
    "acos": (torch.acos, [[-1.0, -0.999, -0.3, 0.0, 0.5, 0.999, 1.0, 1.5]]),
    "atanh": (torch.atanh, [[-0.999, -0.3, 0.0, 0.5, 0.999, 1.0, -1.0]]),
    "acosh": (torch.acosh, [[1.0, 1.001, 2.0, 30.0, 0.5]]),
    "asinh": (torch.asinh, [[-30.0, -1.0, -1e-3, 0.0, 1e-3, 2.0, 40.0]]),
    "sinh": (torch.sinh, [[-10.0, -1.0, -1e-3, 0.0, 1e-3, 2.0, 20.0]]),
    "cosh": (torch.cosh, [[-10.0, -1.0, -1e-3, 0.0, 1e-3, 2.0, 20.0]]),
    "atan2": (torch.atan2, [[1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 3.0, -3.0, 0.0],
                            [1.0, -1.0, 1.0, -1.0, 0.0, -2.0, 0.0, 0.0, 5.0]]),
    "round": (torch.round, [TIES]),
    "isinf": (torch.isinf, [TIES]),
    "fmod": (torch.fmod, [[5.5, -5.5, 5.5, -5.5, 3.0, 1.0, 7.25],
                          [2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 0.5]]),
    "remainder": (torch.remainder, [[5.5, -5.5, 5.5, -5.5, 3.0, -6.0, 7.25],
                                    [2.0, 2.0, -2.0, -2.0, 0.0, 3.0, -0.5]]),
    "remainder_scalar": (lambda a: torch.remainder(a, -1.5), [[5.5, -5.5, 3.0, 0.0, -4.5]]),
    "fmod_scalar": (lambda a: torch.fmod(a, 1.5), [[5.5, -5.5, 3.0, 0.0, -4.5]]),
    "fill": (lambda a: torch.ops.aten.fill.Scalar(a, 2.5) + a, [[1.0, -2.0, 3.0]]),
    "pow_scalar": (lambda a: torch.pow(2.0, a), [[-3.0, 0.0, 0.5, 10.0]]),
    "pow_scalar_negative_base": (lambda a: torch.pow(-2.0, a), [[-3.0, 0.0, 2.0, 3.0, 0.5]]),
    "clamp_tensor": (lambda a, lo, hi: torch.clamp(a, lo, hi),
                     [[-3.0, 0.0, 0.5, 10.0], [-1.0, 0.25, 1.0, 2.0], [1.0, 0.5, 2.0, 5.0]]),
    "clamp_tensor_min": (lambda a, lo: torch.clamp(a, min=lo), [[-3.0, 0.0, 0.5, 10.0], [0.0]]),
    "div_scalar_floor": (lambda a: torch.div(a, -0.7, rounding_mode="floor"), [[5.5, -5.5, 0.7, 0.0]]),
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_values_match_eager(name):
    import trnc

    f, values = EDGE_CASES[name]
    args = [torch.tensor(v) for v in values]
    want = f(*args)
    before = trnc.stats()["graphs"]
    got = torch.compile(f, backend="neuron", dynamic=False, fullgraph=True)(*args)
    assert trnc.stats()["graphs"] > before
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("n", [0, 3])
def test_float32_output_of_a_float64_computation_stays_float32(n):
    """x.double().exp().float(): after float64 runs as float32 the final
    _to_copy is an identity copy, but the graph output must stay float32 (the
    simplify pass moved the output to the float64 value: eager's float32
    result came back as float64; found by the OpInfo test's logspace)."""
    f = lambda x: torch.exp(x.double()).float()  # noqa: E731
    x = torch.linspace(-1, 1, n)
    got = torch.compile(f, backend="neuron", dynamic=False)(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, f(x))


def test_logspace_without_steps_is_float32():
    f = lambda: torch.logspace(0, -3, 0, dtype=torch.float32)  # noqa: E731
    assert torch.compile(f, backend="neuron", dynamic=False)().dtype == torch.float32
