"""Silent-divergence regressions through torch.compile(backend="neuron") on the
simulator, against eager:

* NaN propagates through max/min: amax/amin, clamp, maximum/minimum, relu
  (torch's semantics; C fmaxf/fminf would drop the NaN).
* fp8 casts of edge values are bit-exact with torch: e4m3fn saturates finite
  overflow and +-inf to +-448, e5m2 overflows to +-inf, NaN keeps its sign,
  round-to-nearest-even ties and subnormals.
"""

from __future__ import annotations

import pytest
import torch

import trnc

nan, inf = float("nan"), float("inf")

X = torch.tensor([[nan, 1.0, -2.0], [inf, -inf, 0.0]])
# a NaN in every position of a row, rows without NaN, +-inf, signed zeros
X2 = torch.tensor([[nan, 1.0, -2.0, 3.0, 0.5, -0.0],
                   [1.0, -2.0, 3.0, 0.5, -0.0, nan],
                   [1.0, -2.0, nan, inf, -inf, 0.0],
                   [-0.0, 0.0, -inf, 3.0, -5.0, 2.0],
                   [inf, -inf, 1.0, 2.0, 3.0, 4.0]])


def compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def check(fn, *args):
    want = fn(*args)
    with torch.no_grad():
        got = compiled(fn)(*args)
    rep = trnc.last_report()
    assert rep["kernels"] >= 1, "the graph must run on the NeuronCore simulator"
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    return got


NAN_CASES = {
    "amax": lambda x: x.amax(-1),
    "amin": lambda x: x.amin(-1),
    "amax_all": lambda x: x.amax(),
    "clamp": lambda x: x.clamp(-1, 1),
    "clamp_min": lambda x: x.clamp(min=0.5),
    "clamp_max": lambda x: x.clamp(max=0.5),
    "maximum_scalar": lambda x: torch.maximum(x, torch.tensor(0.0)),
    "minimum_scalar": lambda x: torch.minimum(x, torch.tensor(0.0)),
    "relu": torch.relu,
    "relu_mul": lambda x: torch.relu(x * 2.0),
}


@pytest.mark.parametrize("name", sorted(NAN_CASES))
@pytest.mark.parametrize("x", [X, X2], ids=["review", "rows"])
def test_nan_propagates(name, x):
    check(NAN_CASES[name], x.clone())


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum], ids=["maximum", "minimum"])
@pytest.mark.parametrize("x", [X, X2], ids=["review", "rows"])
def test_nan_propagates_binary(op, x):
    # every NaN meets a number from either side, and NaN meets NaN
    check(op, x.clone(), x.flip(-1).contiguous())
    check(op, x.flip(-1).contiguous(), x.clone())


def test_review_example():
    got = check(lambda x: x.amax(-1), X.clone())
    assert torch.isnan(got[0]) and got[1] == inf
    got = check(lambda x: x.clamp(-1, 1), X.clone())
    assert torch.isnan(got[0, 0])
    got = check(lambda x: torch.maximum(x, torch.zeros(())), X.clone())
    assert torch.isnan(got[0, 0])


def _bits(t):
    return t.view(torch.uint8)


def _f32(bits):
    return torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)


# edge values for fp8 casts: overflow, +-inf, NaN (both signs, a signalling
# payload), 448..480, 57344..65536, round-to-nearest-even ties, subnormals
EDGES = torch.cat([
    torch.tensor([500.0, 1000.0, -1000.0, 448.0, 449.0, 455.0, 456.0, 463.99, 464.0, 465.0,
                  479.0, 480.0, -464.0, -465.0, 1e6, -1e6, 3e38, -3e38, inf, -inf, nan, -nan,
                  57344.0, 60000.0, 61439.0, 61440.0, 65536.0, -61440.0,
                  1.0625, 1.1875, 1.125, 1.375, 232.0, 240.0, -0.0, 0.0,
                  2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -17,
                  1e-30, 1e-40]),
    _f32([0x7F800001, 0xFFBFFFFF, 0x7FFFFFFF, 0x00000001, 0x80000001]),
])


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2],
                         ids=["e4m3fn", "e5m2"])
def test_fp8_cast_bit_exact(dtype):
    x = EDGES.clone()
    fn = lambda x: (x * 1.0).to(dtype)  # noqa: E731  (a kernel, not a bare input cast)
    want = fn(x)
    with torch.no_grad():
        got = compiled(fn)(x)
    assert got.dtype == dtype
    assert trnc.last_report()["kernels"] >= 1
    assert torch.equal(_bits(got), _bits(want)), (
        [(v, hex(g), hex(w)) for v, g, w in zip(x.tolist(), _bits(got).tolist(), _bits(want).tolist())
         if g != w])


def test_fp8_e4m3_review_example():
    fn = lambda x: (x + 0.0).to(torch.float8_e4m3fn)  # noqa: E731
    with torch.no_grad():
        got = compiled(fn)(torch.tensor([500.0, 1000.0, -1000.0]))
    assert got.float().tolist() == [448.0, 448.0, -448.0]


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2],
                         ids=["e4m3fn", "e5m2"])
def test_fp8_round_trip_bit_exact(dtype):
    # every fp8 bit pattern decodes and re-encodes as torch does
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)
    fn = lambda c: (c.float() * 2.0).to(dtype)  # noqa: E731
    want = fn(codes)
    with torch.no_grad():
        got = compiled(fn)(codes)
    assert torch.equal(_bits(got), _bits(want))
