"""The Llama-style decoder block of bench/llama.py (bench/llama_model.py:
RMSNorm, rotary embeddings, causal SDPA with head dim 128, SwiGLU MLP),
one training step (forward + backward of out.float().pow(2).mean()) on the
NeuronCore simulator against eager, at a scaled-down size (width 256, 2 heads
of 128, MLP 704, sequence 128); the bench compiles the same block at width
2048 and sequence 2048 without running it.

Tolerances (as tests/python/test_training.py): gradients of every parameter
and of x compared by the largest difference over the largest entry of the
eager gradient (a denominator floor of 1e-6 keeps an all-zero gradient
meaningful). fp32: 1e-4 and the loss 1e-5 relative; bf16 autocast: every
store rounds to bf16 (2^-8 relative) at other points than eager, 5e-2 and the
loss 2e-2 relative.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch

import trnc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import llama_model as lm  # noqa: E402


def _rel(got: torch.Tensor, want: torch.Tensor, floor: float = 1e-6) -> float:
    return ((got - want).abs().max() / max(want.abs().max().item(), floor)).item()


def _step(fn, model, x, autocast: bool):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = fn(x)
    loss = lm.step_loss(out)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    grads["x"] = x.grad.clone()
    return out.detach(), loss.item(), grads


@pytest.mark.parametrize("autocast,grad_tol,loss_tol", [(False, 1e-4, 1e-5),
                                                         (True, 5e-2, 2e-2)],
                         ids=["fp32", "bf16-autocast"])
def test_llama_block_training_step_matches_eager(autocast, grad_tol, loss_tol):
    model, x = lm.build(lm.SMALL)
    with torch.no_grad():  # RMSNorm weights away from 1 so their gradients matter
        for norm in (model.attn_norm, model.mlp_norm):
            norm.weight.uniform_(0.5, 1.5)
    ref, x_ref = copy.deepcopy(model), x.detach().clone().requires_grad_(True)
    cm = torch.compile(model, backend="neuron", dynamic=False)
    out, loss, grads = _step(cm, model, x, autocast)
    want_out, want_loss, want_grads = _step(ref, ref, x_ref, autocast)

    st = trnc.stats()
    assert st["forward"] == 1 and st["backward"] == 1 and st["errors"] == 0, st
    # the residual stream stays fp32 (x + a bf16 projection promotes)
    assert out.dtype == want_out.dtype == torch.float32
    assert _rel(out, want_out) <= grad_tol
    assert abs(loss - want_loss) <= loss_tol * abs(want_loss), (loss, want_loss)
    errs = {n: _rel(grads[n], want_grads[n]) for n in want_grads}
    assert len(errs) == 10  # two norms, seven projections, x
    assert max(errs.values()) <= grad_tol, errs
    for n, p in model.named_parameters():  # fp32 master weights, fp32 gradients
        assert p.grad.dtype == torch.float32, n


def test_llama_model_flops_match_torch_flop_counter():
    # the bench's formula (2 N tokens + 4 T^2 d forward, x3 for the step):
    # the projections against torch's FlopCounterMode on the eager step (its
    # aten.mm count, forward and backward; it does not count the CPU flash
    # SDPA kernel), attention by hand
    from torch.utils.flop_counter import FlopCounterMode

    cfg = lm.LlamaConfig(d_model=64, n_heads=2, d_ff=96, seq=32)
    model, x = lm.build(cfg)
    with FlopCounterMode(display=False) as fc:
        lm.train_step(model, model, x)
    d, f, t = 64, 96, 32
    fl = lm.model_flops(cfg)
    assert 3 * fl["forward_projections"] == 3 * 2 * (4 * d * d + 3 * d * f) * t
    assert 3 * fl["forward_projections"] == fc.get_flop_counts()["Global"][torch.ops.aten.mm]
    assert fl["forward_attention"] == 2 * (2 * t * t * d)  # q k^T and p v, all heads
    assert fl["step"] == 3 * (fl["forward_projections"] + fl["forward_attention"])


def test_llama_bench_compiles_the_small_block(tmp_path):
    # bench/llama.py end to end at the test's size: a compile-only step, the
    # report table and per-kernel times from the TRNC_PROFILE traces
    import subprocess

    bench = Path(__file__).resolve().parents[2] / "bench" / "llama.py"
    p = subprocess.run([sys.executable, str(bench), "--size", "small", "--out", str(tmp_path),
                        "--top", "5"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    import json

    res = json.loads((tmp_path / "llama-results.json").read_text())
    assert [g["kind"] for g in res["graphs"]] == ["forward", "backward"]
    assert res["stats"]["forward"] == 1 and res["stats"]["backward"] == 1
    for g in res["graphs"]:
        r = g["report"]
        assert r["kernels"] > 0 and r["instructions"] > 0 and r["est_time_s"] > 0
        ks = g["kernels"]
        assert len(ks) == r["kernels"]
        # the kernels' spans tile the program's estimate
        assert sum(k["time_us"] for k in ks) == pytest.approx(r["est_time_s"] * 1e6, rel=1e-6)
    md = (tmp_path / "llama-results.md").read_text()
    assert "| **step** |" in md and "MFU" in md and "### backward" in md
