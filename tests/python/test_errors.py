"""Hard failures: every unlowerable op at once with the user's file:line;
float64 warning; dynamic shapes; malformed graphs."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
from torch._dynamo.exc import BackendCompilerFailed

import trnc
from trnc import _trnc, fx_pb2, pipeline

pb = fx_pb2
SRC = open(__file__).read().splitlines()
# the float64 warning tests check the front end; tests/python/test_runtime.py
# runs float64 models on the simulator
IR_ONLY = {"execute": False}


def line_of(marker: str) -> int:
    return next(i for i, s in enumerate(SRC, 1) if s.rstrip().endswith(marker))


class SpectralSVD(nn.Module):
    def forward(self, x):
        spec = torch.view_as_real(torch.fft.rfft(x, n=65537))  # LINE_RFFT (a prime length)
        a, tau = torch.geqrf(x)  # LINE_SVD
        return spec.sum() + tau.sum()


def _compile_error(model, *args, dynamic=False):
    with pytest.raises(BackendCompilerFailed) as ei:
        torch.compile(model, backend="neuron", dynamic=dynamic)(*args)
    return ei.value


def test_unsupported_ops_all_listed_with_lines():
    err = _compile_error(SpectralSVD(), torch.randn(4, 16))
    inner = err.inner_exception
    assert isinstance(inner, trnc.UnsupportedOperatorError)
    assert isinstance(inner, trnc.TrncError) and isinstance(inner, RuntimeError)
    msg = str(inner)
    assert "aten._fft_r2c.default" in msg
    assert "aten.geqrf.default" in msg
    assert f"{__file__}:{line_of('# LINE_RFFT (a prime length)')}" in msg
    assert f"{__file__}:{line_of('# LINE_SVD')}" in msg
    assert "spec = torch.view_as_real(torch.fft.rfft(x, n=65537))" in msg
    assert "f32[4,16]" in msg or "f32[4, 16]" in msg
    assert "docs/operators.md" in msg
    assert inner.operators["aten._fft_r2c.default"] == 1
    assert inner.operators["aten.geqrf.default"] == 1
    targets = {d["target"] for d in inner.diagnostics if d["severity"] == "error"}
    assert {"aten._fft_r2c.default", "aten.geqrf.default"} <= targets
    # what the user sees first is our message
    assert str(err).startswith("backend='neuron' raised:\nUnsupportedOperatorError: trnc cannot lower")
    assert trnc.stats()["errors"] == 1


def test_unsupported_op_counts_uses():
    class TwoFFT(nn.Module):
        def forward(self, x):
            a = torch.view_as_real(torch.fft.rfft(x, n=65537))  # LINE_FFT_A
            b = torch.view_as_real(torch.fft.rfft(x + x, n=65537))  # LINE_FFT_B
            return a + b

    err = _compile_error(TwoFFT(), torch.randn(2, 8))
    inner = err.inner_exception
    assert inner.operators["aten._fft_r2c.default"] == 2
    assert f"{__file__}:{line_of('# LINE_FFT_A')}" in str(inner)
    assert f"{__file__}:{line_of('# LINE_FFT_B')}" in str(inner)


def test_complex_ops_without_lowering_are_refused():
    def f(x):
        return x.exp()  # complex64 runs as float32 pairs; complex exp has no lowering

    err = _compile_error(f, torch.randn(3, dtype=torch.complex64))
    assert isinstance(err.inner_exception, trnc.UnsupportedOperatorError)
    assert "c64" in str(err.inner_exception) and "no complex lowering" in str(err.inner_exception)


class OverLimits(nn.Module):
    """Three ops outside the limits their table lines state (ir/ops.c's
    predicates, which the code generator decided during emission before)."""

    def forward(self, x, xi, w, ix):
        a = torch.argmax(xi, dim=1)  # LINE_ARGMAX_INT
        b = torch.nn.functional.embedding(ix, w)  # LINE_EMBED_EMPTY
        c = torch.nn.functional.nll_loss(x[:0], ix[:0].reshape(0))  # LINE_NLL_EMPTY
        return a, b, c


def test_limits_all_listed_at_once():
    """argmax of int32, an embedding into an empty weight and nll_loss over
    an empty batch: one UnsupportedOperatorError from the legality scan
    names all three, each with its reason and line."""
    err = _compile_error(OverLimits(), torch.randn(4, 5), torch.randint(0, 9, (4, 5), dtype=torch.int32),
                         torch.randn(0, 3), torch.zeros(2, dtype=torch.int64))
    inner = err.inner_exception
    assert isinstance(inner, trnc.UnsupportedOperatorError)
    msg = str(inner)
    for marker in ("# LINE_ARGMAX_INT", "# LINE_EMBED_EMPTY", "# LINE_NLL_EMPTY"):
        assert f"{__file__}:{line_of(marker)}" in msg, (marker, msg)
    assert "32/64-bit integer inputs are not lowered" in msg
    assert "empty weight" in msg
    assert "nll_loss over an empty batch" in msg
    assert {"aten.argmax.default", "aten.embedding.default", "aten.nll_loss_forward.default"} <= \
        set(inner.operators)


def _trnc_warnings(record):
    return [w for w in record if issubclass(w.category, UserWarning)
            and str(w.message).startswith("trnc")]


def test_float64_inference_warns_once():
    model = nn.Linear(4, 3).double()
    x = torch.randn(2, 4, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as rec, torch.no_grad():
        warnings.simplefilter("always")
        out = torch.compile(model, backend="neuron", dynamic=False, options=IR_ONLY)(x)
    assert out.dtype == torch.float64
    ws = _trnc_warnings(rec)
    assert len(ws) == 1, [str(w.message) for w in ws]
    msg = str(ws[0].message)
    assert "float64" in msg and "float32" in msg
    ir = trnc.last_graphs()[-1].text
    assert "f64" not in ir


def test_float64_training_warns_once_per_graph():
    model = nn.Linear(4, 3).double()
    x = torch.randn(2, 4, dtype=torch.float64)
    with pytest.warns(UserWarning, match="float64") as rec:
        torch.compile(model, backend="neuron", dynamic=False, options=IR_ONLY)(x).sum().backward()
    ws = _trnc_warnings(rec)
    assert len(ws) == 2
    assert "forward graph" in str(ws[0].message) and "backward graph" in str(ws[1].message)


def test_float64_warning_can_be_silenced():
    model = nn.Linear(4, 3).double()
    x = torch.randn(2, 4, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as rec, torch.no_grad():
        warnings.simplefilter("always")
        torch.compile(model, backend="neuron", dynamic=False,
                      options={**IR_ONLY, "warn_float64": False})(x)
    assert not _trnc_warnings(rec)


def test_dynamic_shape_error():
    model = nn.Linear(4, 3)
    err = _compile_error(model, torch.randn(5, 4), dynamic=True)
    inner = err.inner_exception
    assert isinstance(inner, trnc.DynamicShapeError)
    msg = str(inner)
    assert "dynamic=False" in msg and "bucket" in msg
    # names the tensor input (by position and the user's name: model(x) passes
    # it as args[0]) and which of its dims is symbolic; not the FX placeholder
    assert "input 3 ('args[0]') has a symbolic size in dim 0" in msg, msg
    assert "primals_4" not in msg
    nodes = {d["node"] for d in inner.diagnostics if d["node"]}
    assert nodes == {"primals_4"}  # the diagnostics keep the FX name, for tools


def test_malformed_bytes():
    g, status, diags = _trnc.import_graph(b"\xff\xff\xff\xff")
    assert g is None and status == "TRNC_ERR_MALFORMED"
    assert diags and diags[0]["severity"] == "error" and diags[0]["code"] == "TRNC_ERR_MALFORMED"
    assert set(diags[0]) == {"severity", "code", "node", "target", "file", "line", "source",
                             "detail", "message"}
    with pytest.raises(trnc.GraphImportError) as ei:
        pipeline.lower(b"\xff\xff\xff\xff", "junk")
    assert "trnc bug or a torch version mismatch" in str(ei.value)


def test_wrong_version():
    data = pb.Graph(version=99, kind=pb.FORWARD).SerializeToString()
    g, status, _ = _trnc.import_graph(data)
    assert g is None and status == "TRNC_ERR_VERSION"


def _meta(shape):
    tm = pb.TensorMeta(dtype=pb.FLOAT32, layout=pb.STRIDED, device="cpu",
                       torch_dtype="torch.float32")
    stride = 1
    strides = []
    for d in reversed(shape):
        strides.append(stride)
        stride *= d
    for d in shape:
        tm.shape.add().value = d
    for s in reversed(strides):
        tm.stride.add().value = s
    return tm


def test_invalid_graph_names_the_node():
    g = pb.Graph(version=1, kind=pb.INFERENCE, name="bad")
    x = g.nodes.add(op=pb.PLACEHOLDER, name="arg0_1", placeholder_role="input")
    x.outputs.append(_meta([2, 3]))
    r = g.nodes.add(op=pb.CALL_FUNCTION, name="relu_bad", target="aten.relu.default")
    r.args.add(name="self").ref.node = 7  # dangling reference
    r.outputs.append(_meta([2, 3]))
    g.output.values.add().ref.node = 1
    with pytest.raises(trnc.GraphImportError) as ei:
        pipeline.lower(g.SerializeToString(), "bad graph")
    assert "relu_bad" in str(ei.value)
    assert ei.value.diagnostics


class UnloweredGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x + x

    @staticmethod
    def backward(ctx, grad):
        return torch.igamma(grad.sigmoid(), grad.sigmoid())  # not lowered


def test_backward_error_propagates_directly():
    x = torch.randn(4, 8, requires_grad=True)
    y = torch.compile(UnloweredGrad.apply, backend="neuron", dynamic=False)(x)
    assert trnc.stats()["forward"] == 1
    with pytest.raises(trnc.UnsupportedOperatorError) as ei:
        y.sum().backward()  # the backward graph compiles lazily, here
    assert "aten.igamma.default" in str(ei.value)
    assert "backward graph" in str(ei.value)
