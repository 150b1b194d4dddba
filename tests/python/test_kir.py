"""Kernel IR (codegen/kir/): an elementwise prologue and the reduction of its
result are one kernel, the kernel IR prints with TRNC_DUMP=kir, and the
fused kernels match eager at tile boundaries."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


_run = compile_run


@pytest.mark.parametrize("shape, dim", [((7,), None), ((129, 16385), 1), ((16385, 3), 0), ((4, 131072), None),
                                        ((3, 5, 129), (0, 2))])
def test_prologue_and_reduction_are_one_kernel(shape, dim):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape)))
    y = torch.randn(*shape[-1:])
    fn = (lambda x, y: ((x - y) ** 2).sum()) if dim is None else (lambda x, y: ((x - y) ** 2).mean(dim))
    got, rep = _run(fn, x, y)
    assert rep["kernels"] == 1, rep
    want = fn(x.double(), y.double()).float()
    torch.testing.assert_close(got, want, rtol=2e-5, atol=1e-5)


def test_prologue_value_needed_later_is_stored_and_reduced():
    x = torch.randn(300, 40)
    fn = lambda x: (lambda e: (e, e.amax(1, keepdim=True)))(torch.exp(x))  # noqa: E731
    (e, m), rep = _run(fn, x)
    assert rep["kernels"] == 1
    torch.testing.assert_close(e, torch.exp(x))
    torch.testing.assert_close(m, torch.exp(x).amax(1, keepdim=True))   # exp within an ulp of torch


def test_bf16_result_rounds_once():
    x = torch.randn(64, 257, dtype=torch.bfloat16)
    got, rep = _run(lambda x: (x * 3).sum(1), x)
    assert rep["kernels"] == 1
    want = (x * 3).float().sum(1).to(torch.bfloat16)   # bf16 products, fp32 accumulation
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_dump_kir(tmp_path):
    code = ("import torch, trnc\n"
            "f = torch.compile(lambda x: (x * x).sum(0), backend='neuron', dynamic=False)\n"
            "f(torch.ones(5, 3))\n")
    env = dict(os.environ, TRNC_DUMP="kir", TRNC_CACHE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "kernel mul (a0:5 red, a1:3)" in out.stderr
    assert "= reduce add, %1, {a0}" in out.stderr


@pytest.mark.parametrize("n", [1, 5, 128, 129, 4097, 16385])
@pytest.mark.parametrize("log", [False, True])
def test_scaled_masked_softmax_is_one_kernel(n, log):
    """Attention's scores * scale + mask -> softmax: the elementwise prologue
    and the three passes of the row op are one kernel."""
    g = torch.Generator().manual_seed(n)
    x, mask = torch.randn(3, n, generator=g) * 4, torch.randn(n, generator=g)
    sm = torch.log_softmax if log else torch.softmax
    fn = lambda x, m: sm(x * 0.125 + m, -1)  # noqa: E731
    got, rep = _run(fn, x, mask)
    assert rep["kernels"] == 1
    want = fn(x.double(), mask.double()).float()
    torch.testing.assert_close(got, want, rtol=n * 2e-9 + 2e-6, atol=n * 2e-9 + 2e-6)


@pytest.mark.parametrize("shape, dim", [((4, 7), 0), ((2, 129, 3), 1), ((130, 5000), 1)])
def test_softmax_backward_matches_eager(shape, dim):
    torch.manual_seed(sum(shape))
    for sm in (torch.softmax, torch.log_softmax):
        x = torch.randn(*shape, requires_grad=True)
        w = torch.randn(*shape)
        fn = lambda x: (sm(x, dim) * w).sum()  # noqa: E731
        torch._dynamo.reset()
        before = trnc.stats()["compiles"] + trnc.stats()["hits"]
        g, = torch.autograd.grad(torch.compile(fn, backend="neuron", dynamic=False)(x), [x])
        assert trnc.stats()["compiles"] + trnc.stats()["hits"] >= before + 2
        want, = torch.autograd.grad(fn(x.double()), [x])
        torch.testing.assert_close(g, want.float(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 5, 129, 4097, 16385])
def test_residual_add_and_layer_norm_are_one_kernel(n):
    """x + residual -> layer_norm(w, b): one kernel; the shift K of the
    two-pass statistics is the sum's first element, computed in the kernel."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(n)
    x, r = torch.randn(3, n, generator=g) * 2 + 100, torch.randn(3, n, generator=g)
    w, b = torch.randn(n, generator=g), torch.randn(n, generator=g)
    fn = lambda x, r, w, b: F.layer_norm(x + r, (n,), w, b)  # noqa: E731
    got, rep = _run(fn, x, r, w, b)
    assert rep["kernels"] == 1
    torch.testing.assert_close(got, fn(x, r, w, b), rtol=1e-4, atol=2e-5)


def test_layer_norm_statistics_and_constant_rows():
    import torch.nn.functional as F

    x = torch.full((4, 33), 7.0)
    got, rep = _run(lambda x: F.layer_norm(x + 1, (33,)), x)
    assert rep["kernels"] == 1 and bool((got == 0).all())
    x = torch.randn(2, 3, 40) * 3 + 1000
    y, mean, rstd = _run(lambda x: torch.ops.aten.native_layer_norm(x, [3, 40], None, None, 1e-5), x)[0]
    wy, wm, wr = torch.ops.aten.native_layer_norm(x.double(), [3, 40], None, None, 1e-5)
    torch.testing.assert_close(mean, wm.float(), rtol=1e-6, atol=1e-4)
    torch.testing.assert_close(rstd, wr.float(), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(y, wy.float(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, fn, most", [
    ((257, 4, 127, 3), lambda x: x.amin((0, 2, 3)), 400),
    ((7, 4097, 3, 2), lambda x: torch.logsumexp(torch.tanh(x) * 2, (1, 2, 3)), 500),
    ((16385, 9, 4, 1), lambda x: torch.logsumexp(x * x, (0, 2, 3)), 1500),
])
def test_contiguous_reduced_dims_merge(shape, fn, most):
    """Neighbouring reduced dims that every tensor walks contiguously are one
    axis, and the tile takes whole inner axes before chunking an outer one:
    these took 86K-260K instructions (one DMA per 3-element run), over what a
    cache entry may hold. (A large tile's DMA is split by rows over up to 8
    queues, which the bounds allow.)"""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    got, rep = _run(fn, x)
    assert rep["instructions"] <= most, rep["instructions"]
    torch.testing.assert_close(got, fn(x.double()).float(), rtol=2e-5, atol=2e-4)


@pytest.mark.parametrize("shape", [(3, 255), (3, 256), (2, 16385), (16, 2, 4096), (127, 1000)])
def test_map_over_few_outer_rows_and_a_long_inner_axis(shape):
    # the rotary backward's terms: [heads, T * D] with a table broadcast over
    # the heads; a long innermost axis under few outer rows is tiled as
    # [<= 128 rows, cols] (plus a remainder: 16385 = 127 x 129 + 2), the
    # outer axes looped; values exactly as eager (one rounding per op)
    torch.manual_seed(shape[-1])
    x, t = torch.randn(*shape), torch.randn(*shape[1:])
    z = torch.randn(*shape[::-1]).transpose(0, -1)  # a permuted operand
    fn = lambda x, t, z: x * t + z.bfloat16().float() - 1  # noqa: E731
    got, rep = _run(fn, x, t, z)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, fn(x, t, z), rtol=0, atol=0)
    xb = x.bfloat16()
    got, _ = _run(lambda a, b: a * b.bfloat16(), xb, t)
    torch.testing.assert_close(got, xb * t.bfloat16(), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(3, 300, 64), (5, 129, 16), (2, 128, 2)])
def test_map_with_the_partition_axis_inside_short_rows(shape):
    # rotary's halves: x[..., :D/2] of [heads, T, D] times a [T, D/2] table
    # (broadcast over the heads): T goes on partitions outermost and the
    # heads join the free dims (not one tile per head of D/2 elements)
    torch.manual_seed(shape[1])
    h, t, d = shape
    x, c = torch.randn(h, t, d), torch.randn(t, d // 2)
    fn = lambda x, c: x[..., : d // 2] * c - 1  # noqa: E731
    got, rep = _run(fn, x, c)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, fn(x, c), rtol=0, atol=0)
    got, _ = _run(lambda x, c: x[..., : d // 2] * c + x[..., d // 2:], x, c)
    torch.testing.assert_close(got, x[..., : d // 2] * c + x[..., d // 2:], rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(2, 300, 64), (1, 257, 64), (4, 1024, 128)])
def test_map_over_many_short_rows(shape):
    # rotate_half's pieces: [heads * T, D / 2] rows of a few elements are
    # tiled several rows per partition (600 rows: 150 partitions of 4; 257
    # rows: one per partition)
    torch.manual_seed(shape[1])
    x = torch.randn(*shape).bfloat16()
    d = shape[-1] // 2
    got, rep = _run(lambda x: -x[..., :d] * 2, x)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, -x[..., :d] * 2, rtol=0, atol=0)
    got, _ = _run(lambda x: torch.cat((-x[..., d:], x[..., :d]), dim=-1), x)
    torch.testing.assert_close(got, torch.cat((-x[..., d:], x[..., :d]), dim=-1), rtol=0, atol=0)


@pytest.mark.parametrize("n", [255, 256, 32770])
def test_long_fill_on_every_partition(n):
    # a whole-tensor constant (slice_scatter's zeros) tiled [rows <= 128,
    # cols] plus a remainder (32770 = 127 x 257 + 131), every dtype's fill
    x = torch.randn(3)
    fn = lambda x: (torch.full((2, n), 1.5), torch.zeros(n, dtype=torch.bfloat16),  # noqa: E731
                    torch.full((n,), -7, dtype=torch.int64), x + 1)
    got, _ = _run(fn, x)
    for g, w in zip(got, fn(x)):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)
