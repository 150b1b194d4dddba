"""Hugging Face transformers models train on trnc: one training step
(forward, language-modelling loss, backward) of a tiny random model (zoo.py)
compiled with backend="neuron", against a deep copy run eagerly.

Attention is the default implementation ("sdpa"): on CPU it reaches trnc as
the fused flash-attention forward and backward ops, which trnc decomposes
(passes/decomp_attention.c). Every test asserts that trnc compiled both a
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


def _train_step(model, ids, mask, labels):
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    out.loss.backward()
    return out.loss.detach()


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


@pytest.mark.parametrize("name", zoo.NAMES)
def test_training_step_sdpa(name):
    model = zoo.build(name, attn="sdpa")
    ref = copy.deepcopy(model)
    ids, mask, labels = zoo.batch(name)
    want = _train_step(ref, ids, mask, labels)
    got = _train_step(torch.compile(model, backend="neuron", dynamic=False), ids, mask, labels)
    s = trnc.stats()
    assert s["forward"] >= 1 and s["backward"] >= 1 and s["errors"] == 0, s
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    errs = _grad_errors(model, ref)
    worst = max(errs, key=errs.get)
    assert errs[worst] < 1e-4, f"{worst}: gradient off by {errs[worst]:.2e} of its scale"
