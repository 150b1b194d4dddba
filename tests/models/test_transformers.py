"""Hugging Face transformers models on trnc. Training: one training step
(forward, loss, backward) of a tiny random model (zoo.py: decoders, encoders,
encoder-decoders, Whisper, ViT, ResNet, and Mixtral's mixture of experts
with transformers' default grouped_mm experts) compiled with backend="neuron",
against a deep copy run eagerly. Inference: the outputs (loss, logits, ...)
of the model in eval mode under no_grad, in its default attention (and,
for some, eager attention).

Attention runs in the model's default implementation ("sdpa" where
transformers has it: on CPU it reaches trnc as the fused flash-attention
forward and backward ops, which trnc decomposes, passes/decomp_attention.c)
and in attn_implementation="eager" (matmuls, softmax and masks in the graph). Every test asserts that trnc compiled both a
forward and a backward graph, so a graph break cannot turn it into eager
against eager.

Tolerances: the graphs run fp32 throughout, so the loss matches to rtol 1e-5
and every gradient to 1e-4 of max(its own largest entry, 1e-2 of the largest
gradient entry of the model) — the floor, because a parameter whose exact
gradient is 0 (attention key biases: softmax is invariant to them) carries
only rounding noise, in eager too. Measured: at most 6e-7.
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

# The suite never touches the user's artifact cache (as tests/python/conftest.py).
if "TRNC_CACHE_DIR" not in os.environ:
    os.environ["TRNC_CACHE_DIR"] = tempfile.mkdtemp(prefix="trnc-model-test-cache-")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import trnc  # noqa: E402
import zoo  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch and counts only its own graphs."""
    torch._dynamo.reset()
    trnc.reset()
    yield
    torch._dynamo.reset()


def _train_step(model, inputs):
    loss = model(**inputs).loss
    loss.backward()
    return loss.detach()


def _grad_errors(model, ref):
    grads = {n: p.grad for n, p in model.named_parameters()}
    want = {n: p.grad for n, p in ref.named_parameters() if p.grad is not None}
    assert want, "the eager step produced no gradients"
    scale = max(g.abs().max().item() for g in want.values())
    errs = {}
    for name, w in want.items():
        g = grads[name]
        assert g is not None, f"{name}: no gradient from the compiled step"
        floor = max(w.abs().max().item(), 1e-2 * scale)
        errs[name] = (g - w).abs().max().item() / floor
    return errs


# `make test` trains every model of zoo.CORE in its default attention and
# three of them (a decoder, an encoder-decoder, a grouped-query decoder) with
# eager attention too, and runs four in inference (one of them the mixture of
# experts); TRNC_MODEL_SUITE=full (`make models`) trains every model of
# zoo.NAMES both ways and runs all of them in inference both ways.
FULL = os.environ.get("TRNC_MODEL_SUITE", "").strip().lower() in ("1", "full", "all", "yes")
EAGER_SUBSET = ("gpt2", "bart", "llama")
TRAIN_NAMES = zoo.NAMES if FULL else zoo.CORE
CASES = [(name, "default") for name in TRAIN_NAMES] + [
    (name, "eager") for name in TRAIN_NAMES
    if name not in zoo.NO_ATTENTION and (FULL or name in EAGER_SUBSET)]


@pytest.mark.parametrize("name,attn", CASES)
def test_training_step(name, attn):
    model = zoo.build(name, attn=None if attn == "default" else attn)
    ref = copy.deepcopy(model)
    inputs = zoo.batch(name)
    want = _train_step(ref, inputs)
    got = _train_step(torch.compile(model, backend="neuron", dynamic=False), inputs)
    s = trnc.stats()
    assert s["forward"] >= 1 and s["backward"] >= 1 and s["errors"] == 0, s
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    errs = _grad_errors(model, ref)
    worst = max(errs, key=errs.get)
    assert errs[worst] < 1e-4, f"{worst}: gradient off by {errs[worst]:.2e} of its scale"


def _outputs(out):
    """The float tensors of a model output (logits, and what else it returns)."""
    return [v for v in out.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]


INFERENCE_SUBSET = ("llama", "bert", "vit", "mixtral")
INFERENCE_CASES = [(name, "default") for name in zoo.NAMES if FULL or name in INFERENCE_SUBSET] + [
    (name, "eager") for name in zoo.NAMES
    if name not in zoo.NO_ATTENTION and FULL]


@pytest.mark.parametrize("name,attn", INFERENCE_CASES)
def test_inference(name, attn):
    model = zoo.build(name, attn=None if attn == "default" else attn).eval()
    inputs = zoo.batch(name)
    with torch.no_grad():
        want = _outputs(model(**inputs))
        got = _outputs(torch.compile(model, backend="neuron", dynamic=False)(**inputs))
    assert trnc.stats()["inference"] >= 1, trnc.stats()
    assert len(got) == len(want) >= 1
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5 * max(1.0, w.abs().max().item()))
