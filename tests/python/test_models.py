"""Whole models, inference, on the NeuronCore simulator against eager PyTorch.

Tolerances: fp32 graphs run fp32 on every engine (fp32 x fp32 -> fp32 PSUM),
so results track eager to rounding: rtol 1e-5 (atol 1e-5 on values of order
1; GPT logits of order 10: atol 1e-4). bf16 under autocast: every store
rounds to bf16 (8 mantissa bits: one ulp is 2^-7 of the value's binade) and
eager rounds at other points (trnc fuses scale and activation epilogues into
the fp32 PSUM evacuation, rounding once), so logits may differ by about one
bf16 ulp of the largest logit: atol = 2^-7 * max|logit|, rtol 5e-2.
"""

from __future__ import annotations

import torch

import trnc
from trnc import examples


def _compile(model):
    return torch.compile(model, backend="neuron", dynamic=False)


def test_mlp_inference():
    model, args = examples.mlp_example(batch=4)
    model.eval()
    with torch.no_grad():
        want = model(*args)
        got = _compile(model)(*args)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_cnn_inference():
    # conv, batch norm (inference statistics), ReLU, max pool, adaptive avg pool, linear
    model, (x,) = examples.cnn_example(batch=2, size=12)
    with torch.no_grad():
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 2.0)
    model.eval()
    with torch.no_grad():
        want = model(x)
        got = _compile(model)(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    r = trnc.last_report()
    assert r["kernels"] >= 1 and r["est_time_s"] > 0


def test_gpt_decoder_inference_and_fusion():
    model, (idx,) = examples.gpt_decoder_example(batch=2, seq=37, d_model=96)
    model.eval()
    with torch.no_grad():
        want = model(idx)
        got = _compile(model)(idx)
    assert got.shape == (2, 37, 256)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
    r = trnc.last_report()
    # elementwise chains (scale+mask, residual adds, bias+GELU epilogues)
    # fuse: fewer kernels than IR ops
    assert r["kernels"] < r["ir_nodes"], r
    assert r["engine_instructions"]["tensor"] > 0
    assert 0 < r["tensor_flop_util"] <= 1 and r["est_time_s"] > 0


def test_gpt_decoder_bf16_autocast():
    model, (idx,) = examples.gpt_decoder_example(batch=2, seq=37, d_model=96)
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = model(idx)
        got = _compile(model)(idx)
    assert got.dtype == want.dtype == torch.bfloat16
    scale = want.float().abs().max().item()
    torch.testing.assert_close(got.float(), want.float(), rtol=5e-2, atol=scale / 128)


def test_cnn_inference_channels_last():
    # channels_last inputs: adaptive_avg_pool2d restrides its result with
    # aten.as_strided, a view of trnc's own buffer here
    model, (x,) = examples.cnn_example(batch=2, size=12)
    model.eval()
    x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        want = model(x)
        got = _compile(model)(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
