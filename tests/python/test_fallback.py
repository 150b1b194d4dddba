"""Opt-in partial CPU fallback (``options={"fallback": "cpu"}``, ``TRNC_FALLBACK=cpu``).

A model with one op trnc cannot lower (``torch.segment_reduce`` with 2-D
lengths, a form trnc's decomposition leaves whole under the fallback; its
backward needs ``_segment_reduce_backward``) trains with the fallback and matches eager; the
ops trnc refused run with torch, everything else in trnc programs; one
warning per graph names each fallback op and its file:line;
``trnc.fallback_ops()`` lists them. Without the option the error is the
default hard failure, unchanged.
"""

from __future__ import annotations

import copy
import inspect
import warnings

import pytest
import torch
import torch.nn as nn

import trnc


LENGTHS = ((10, 6),) * 4  # 2-D: segments along dim 1 of each row


class SegmentMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(2, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        h = torch.segment_reduce(h * 0.5, "sum", lengths=torch.tensor(LENGTHS), axis=1)  # not lowered
        return self.b(h)


SEG_LINE = next(i for i, line in enumerate(inspect.getsource(SegmentMLP).splitlines())
                if "torch.segment_reduce" in line) + inspect.getsourcelines(SegmentMLP)[1]


def _train(model, compile_kw, steps=2):
    """Eager and compiled copies, SGD, the same batches; forward outputs and
    gradients compared every step. Returns the fallback warnings."""
    torch.manual_seed(0)
    compiled_model = copy.deepcopy(model)
    compiled = torch.compile(compiled_model, backend="neuron", dynamic=False, **compile_kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(steps):
            x = torch.randn(4, 8)
            want, got = model(x), compiled(x)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
            want.square().sum().backward()
            got.square().sum().backward()
            for (name, p), q in zip(model.named_parameters(), compiled_model.parameters()):
                torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6,
                                           msg=lambda m: f"step {step} {name}: {m}")
            with torch.no_grad():
                for p in list(model.parameters()) + list(compiled_model.parameters()):
                    p -= 0.1 * p.grad
                    p.grad = None
    return [w for w in caught if "eagerly on the CPU" in str(w.message)]


def _check_fallback(warned):
    # one warning per graph (forward, backward), none on the second step
    assert len(warned) == 2, [str(w.message) for w in warned]
    fw, bw = (str(w.message) for w in warned)
    where = f"{__file__}:{SEG_LINE}"
    assert "forward graph" in fw and f"aten.segment_reduce.default at {where}" in fw
    assert "backward graph" in bw and f"aten._segment_reduce_backward.default at {where}" in bw
    assert all(w.filename == __file__ for w in warned)  # attributed to the user's call
    ops = trnc.fallback_ops()
    assert [(o["op"], o["kind"]) for o in ops] == [
        ("aten.segment_reduce.default", "forward"), ("aten._segment_reduce_backward.default", "backward")]
    assert all(o["file"] == __file__ and o["line"] == SEG_LINE for o in ops)
    s = trnc.stats()
    # forward: the layers before and after the segment_reduce, two trnc
    # programs; the backward: trnc programs around the eager
    # _segment_reduce_backward
    assert s["forward"] == 2 and s["backward"] >= 1 and s["errors"] == 0, s


def test_fallback_option_trains_and_matches_eager():
    _check_fallback(_train(SegmentMLP(), {"options": {"fallback": "cpu"}}))


def test_fallback_environment_variable(monkeypatch):
    monkeypatch.setenv("TRNC_FALLBACK", "cpu")
    _check_fallback(_train(SegmentMLP(), {}))


def test_without_fallback_the_error_is_unchanged():
    x = torch.randn(4, 8)
    with pytest.raises(Exception) as info:
        torch.compile(SegmentMLP(), backend="neuron", dynamic=False)(x)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError)
    # trnc's decomposition names the form it does not cover, and torch the
    # user's line
    lines = str(err).splitlines()
    assert lines[0] == ("trnc cannot lower aten.segment_reduce.default: 2-D lengths "
                        "(only 1-D, segments along data's dim 0)"), lines
    assert f'File "{__file__}", line {SEG_LINE}' in str(err)
    assert trnc.fallback_ops() == []


@pytest.mark.parametrize("value", ["gpu", "CPU!"])
def test_unknown_fallback_mode_is_rejected(monkeypatch, value):
    x = torch.randn(4, 8)
    with pytest.raises(Exception, match="not a fallback mode"):
        torch.compile(SegmentMLP(), backend="neuron", dynamic=False,
                      options={"fallback": value})(x)
    torch._dynamo.reset()
    monkeypatch.setenv("TRNC_FALLBACK", value)
    with pytest.raises(Exception, match="TRNC_FALLBACK"):
        torch.compile(SegmentMLP(), backend="neuron", dynamic=False)(x)


def test_partitioned_again_counts_each_graph_once(monkeypatch):
    """A subgraph trnc refuses once cut out partitions the graph again; the
    subgraphs compiled for the partition given up leave neither a record
    nor a ``trnc.stats()`` count (they were counted twice)."""
    import trnc.backend as be
    from trnc import errors

    def f(x):
        return (torch.segment_reduce(x.sin(), "sum", lengths=torch.tensor([[100, 29]]),
                                     axis=1).cos() + 1).exp()

    real_lower = be.pipeline.lower
    refused_once = []

    def lower(data, name, kind, **kw):
        lowered = real_lower(data, name, kind, **kw)
        if " part " in name and "cos" in lowered.text() and not refused_once:
            refused_once.append(name)  # as if the cut-out cos were refused
            raise errors.UnsupportedOperatorError(
                "refused for the test", [{"severity": "error", "node": "cos",
                                          "message": "refused for the test"}], name)
        return lowered

    monkeypatch.setattr(be.pipeline, "lower", lower)
    x = torch.randn(1, 129)
    torch._dynamo.reset()
    trnc.reset()
    cf = torch.compile(f, backend="neuron", dynamic=False, options={"fallback": "cpu"})
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        got = cf(x)
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-6)
    assert refused_once, "the test's refusal did not happen"
    ops = [o["op"] for o in trnc.fallback_ops()]
    assert ops == ["aten.segment_reduce.default", "aten.cos.default"], ops
    # the final partition: sin | segment_reduce, cos on the CPU | add, exp
    s = trnc.stats()
    assert s["inference"] == 2 and s["graphs"] == 2 and s["errors"] == 0, s
    assert len(trnc.last_graphs()) == 2
    assert len([w for w in caught if "eagerly on the CPU" in str(w.message)]) == 1
