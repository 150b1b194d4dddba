"""native_layer_norm_backward at real sizes through torch.compile(backend=
"neuron", dynamic=False) on the simulator, against float64 eager on the same
inputs. Rows of 2 to 65536 elements are one kernel-IR row kernel
(codegen/kir/rules.c: dx, and dW and dB as column sums on TensorE); longer
rows decompose (passes/decomp_norm.c) into the dx row kernel and float32
column sums for dW and dB.

Partition-tile boundaries (127/128/129 rows), rows across SBUF chunks
(16384/16385) and 65536+, a 2-D normalized shape, no affine, bf16.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

CASES = [((127, 96), 1), ((128, 300), 1), ((129, 4096), 1), ((3, 16384), 1), ((129, 16385), 1),
         ((2, 65537), 1), ((4, 3, 5500), 2), ((129, 4097), 1)]


def _grads(f, x, w, b, g):
    args = [a for a in (x, w, b) if a is not None]
    return torch.autograd.grad(f(x, w, b), args, g)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,nd", CASES, ids=[f"{s}-{d}" for s, d in CASES])
def test_layer_norm_backward(shape, nd, dtype, affine):
    gen = torch.Generator().manual_seed(sum(shape))
    ns = shape[-nd:]
    x = (torch.randn(shape, generator=gen) * 2 + 3).to(dtype).requires_grad_()
    w = (torch.rand(ns, generator=gen) + 0.5).to(dtype).requires_grad_() if affine else None
    b = torch.randn(ns, generator=gen).to(dtype).requires_grad_() if affine else None
    g = torch.randn(shape, generator=gen).to(dtype)

    def f(x, w, b):
        return F.layer_norm(x, ns, w, b, 1e-5)

    d = lambda t: None if t is None else t.detach().double().requires_grad_()  # noqa: E731
    want = _grads(f, d(x), d(w), d(b), g.double())
    torch._dynamo.reset()
    got = _grads(torch.compile(f, backend="neuron", dynamic=False), x, w, b, g)
    bw = [r for r in trnc.last_graphs() if r.kind == "backward"]
    assert bw and bw[-1].report["kernels"] >= 1
    rt = 2e-2 if dtype == torch.bfloat16 else 2e-4
    for gg, ww in zip(got, want):
        assert gg.dtype == dtype
        scale = ww.abs().max().item()
        torch.testing.assert_close(gg.double(), ww, rtol=rt, atol=rt * scale)
