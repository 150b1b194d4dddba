"""End to end: torch.compile(backend="neuron") compiles graphs to NeuronCore
programs and runs them on the simulator. Numerics against eager, the boxed
calling convention, output strides, zero-size and 0-d tensors, strided inputs,
int64 range checks, float64, weights as inputs, the compile report, TRNC_LOG,
targets, and the errors of the compile and run paths.

Tolerances: fp32 rtol/atol 1e-5 (the simulator computes in fp32 like eager;
matmuls accumulate in a different order, transcendental functions come from
libm instead of torch's vectorized kernels: both differ by a few ulp).
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn as nn
from torch._dynamo.exc import BackendCompilerFailed

import trnc
from helpers import capture
from trnc import backend, errors, pipeline

TOL = {"rtol": 1e-5, "atol": 1e-5}


def compiled(fn, **options):
    """torch.compile(fn, backend="neuron", dynamic=False, options=options)."""
    return torch.compile(fn, backend="neuron", dynamic=False, options=options or None)


def check(fn, *args, tol=None, **options):
    """Compiles fn, runs it on args and asserts the result matches eager."""
    want = fn(*args)
    got = compiled(fn, **options)(*args)
    torch.testing.assert_close(got, want, **(tol or TOL))
    return got


# --------------------------------------------------------------------------- #
# numerics


def test_elementwise_chain():
    def f(x):
        y = torch.relu(x * 2 + 1)
        return torch.exp(torch.tanh(torch.sigmoid(y)))

    x = torch.randn(4, 33, 7)
    with torch.no_grad():
        check(f, x)
    rep = trnc.last_report()
    assert rep["kind"] == "inference" and rep["kernels"] >= 1 and rep["instructions"] > 0


def test_elementwise_chain_training_forward_and_backward():
    def f(x):
        return torch.tanh(torch.sigmoid(x * 2 + 1)) * x

    x = torch.randn(6, 10, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    got = compiled(f)(x)
    want = f(x_ref)
    torch.testing.assert_close(got, want, **TOL)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, **TOL)
    assert [r.kind for r in trnc.last_graphs()] == ["forward", "backward"]
    assert all(r.report is not None for r in trnc.last_graphs())


def test_broadcasting_add():
    x = torch.randn(2, 3, 5, 7)
    b = torch.randn(1, 3, 1, 1)
    with torch.no_grad():
        check(torch.add, x, b)


def test_where_broadcasts_size_one_dims():
    def f(c, x, y):
        return torch.where(c, x, y)

    c = torch.rand(2, 1, 5, 1) > 0.5
    x = torch.randn(2, 3, 5, 7)
    y = torch.randn(1, 3, 1, 7)
    with torch.no_grad():
        out = check(f, c, x, y)
    assert out.shape == (2, 3, 5, 7)


def test_linear_21_rows_128_to_256():
    torch.manual_seed(0)
    lin = nn.Linear(128, 256)
    x = torch.randn(21, 128)
    with torch.no_grad():
        check(lin, x)
    rep = trnc.last_report()
    assert rep["engine_instructions"]["tensor"] > 0
    assert rep["ops_per_engine"]["tensor"] >= 1
    assert 0.0 < rep["tensor_flop_util"] <= 1.0


def test_linear_training_grads():
    torch.manual_seed(0)
    lin = nn.Linear(128, 256)
    ref = copy.deepcopy(lin)
    x = torch.randn(21, 128)
    out = compiled(lin)(x)
    want = ref(x)
    torch.testing.assert_close(out, want, **TOL)
    out.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad, **TOL)
    torch.testing.assert_close(lin.bias.grad, ref.bias.grad, **TOL)


def test_zero_size_batch():
    def f(x):
        return torch.relu(x * 2 + 1)

    x = torch.randn(0, 8)
    with torch.no_grad():
        out = check(f, x)
    assert out.shape == (0, 8)


def test_zero_size_linear():
    lin = nn.Linear(8, 4)
    with torch.no_grad():
        out = check(lin, torch.randn(0, 8))
    assert out.shape == (0, 4)


def test_zero_d_scalar_input():
    def f(x, s):
        return x * s + s

    x = torch.randn(3, 4)
    s = torch.tensor(1.75)
    with torch.no_grad():
        check(f, x, s)
        out = check(lambda s: s * 3 - 1, s)
    assert out.dim() == 0


def test_noncontiguous_inputs():
    def f(a, b):
        return a * 2 + b

    base = torch.randn(8, 12)
    a = base.t()                      # transposed: strides (1, 12)
    b = torch.randn(12, 16)[:, ::2]   # strided: strides (16, 2)
    assert not a.is_contiguous() and not b.is_contiguous()
    with torch.no_grad():
        check(f, a, b)


def test_output_strides_follow_meta():
    def f(x):
        return (x + 1).t()  # a transposed view of a contiguous result

    x = torch.randn(5, 7)
    with torch.no_grad():
        got = compiled(f)(x)
    want = f(x)
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, **TOL)


def test_int64_input_in_range_and_out_of_range():
    def f(idx):
        return idx + 1

    fn = compiled(f)
    idx = torch.tensor([[0, -5, 7], [(1 << 23) - 2, -(1 << 23), 3]])
    out = fn(idx)
    assert out.dtype == torch.int64
    torch.testing.assert_close(out, idx + 1, rtol=0, atol=0)
    bad = idx.clone()
    bad[1, 2] = 1 << 31
    with pytest.raises(trnc.ExecutionError) as ei:
        fn(bad)
    msg = str(ei.value)
    assert "2147483648" in msg and "input 0" in msg and "[1,2]" in msg
    assert "TRNC_ERR_LIMIT" in msg
    assert ei.value.diagnostics and ei.value.diagnostics[0]["code"] == "TRNC_ERR_LIMIT"
    # idx + 1 is exact in int32 for inputs within +-2^30 (the bound the
    # legality scan proved): one past it is an error naming the bound
    bad[1, 2] = -(1 << 30) - 1
    with pytest.raises(trnc.ExecutionError, match="-1073741825.*compiled for"):
        fn(bad)


def test_int64_arithmetic_is_exact_in_int32():
    """docs/dtypes.md: int64 inputs run as int32 and their arithmetic runs on
    GpSimd in native int32: exact far beyond fp32's 2^24."""
    from trnc import _trnc

    assert (_trnc.I64_INPUT_MIN, _trnc.I64_INPUT_MAX) == (-(1 << 31), (1 << 31) - 1)
    b = 1 << 29
    idx = torch.tensor([b, -b, b - 1, 123456789, (1 << 24) + 1])
    out = compiled(lambda i: i + 1)(idx)
    torch.testing.assert_close(out, idx + 1, rtol=0, atol=0)
    out = compiled(lambda i: i * 2)(idx)
    torch.testing.assert_close(out, idx * 2, rtol=0, atol=0)


def test_float64_model_runs_in_float32():
    torch.manual_seed(0)
    lin = nn.Linear(16, 8).double()
    x = torch.randn(5, 16, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as rec, torch.no_grad():
        warnings.simplefilter("always")
        got = compiled(lin)(x)
        want = lin(x)
    assert any("float64" in str(w.message) for w in rec)
    assert got.dtype == torch.float64
    # float32 precision: ~1e-7 relative per op, K = 16
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_weights_are_inputs_not_baked_in():
    lin = nn.Linear(4, 3)
    x = torch.randn(2, 4)
    fn = compiled(lin)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), lin(x), **TOL)
        lin.weight.add_(1.0)  # in place: no recompile
        torch.testing.assert_close(fn(x), lin(x), **TOL)
    assert trnc.stats()["graphs"] == 1


def test_boxed_callable_checks_inputs_and_clears_args():
    def f(x):
        return x * 2

    gm = capture(f, (torch.randn(3, 4),), backward=False)["inference"][0]
    opts = backend._parse_options({})
    fn = backend._compile_graph("inference", opts, gm, [torch.randn(3, 4)])
    assert getattr(fn, "_boxed_call", False)
    x = torch.randn(3, 4)
    args = [x]
    (out,) = fn(args)
    assert args == []
    torch.testing.assert_close(out, x * 2)
    with pytest.raises(trnc.InputMismatchError, match="compiled for"):
        fn([torch.randn(3, 5)])
    with pytest.raises(trnc.InputMismatchError, match="compiled for"):
        fn([torch.randn(3, 4, dtype=torch.float64)])
    with pytest.raises(trnc.InputMismatchError, match="compiled for"):
        fn([torch.randn(4, 3).t()])
    with pytest.raises(trnc.InputMismatchError, match="takes 1 inputs"):
        fn([x, x])


# --------------------------------------------------------------------------- #
# report, logging, options


REPORT_KEYS = {"ir_nodes", "kernels", "instructions", "engine_instructions", "ops_per_engine",
               "hbm_planned_bytes", "hbm_unplanned_bytes", "sbuf_peak_bytes", "psum_peak_bytes",
               "est_time_s", "tensor_flop_util", "dma_bw_util", "compile_s", "target", "kind",
               "name"}


def test_last_report():
    assert trnc.last_report() is None
    with torch.no_grad():
        compiled(lambda x: x + 1, name="inc")(torch.randn(8, 8))
    rep = trnc.last_report()
    assert REPORT_KEYS <= set(rep)
    assert rep["kind"] == "inference" and rep["name"].startswith("inc inference graph ")
    assert rep["target"] == "trn2"
    assert rep["ir_nodes"] >= 1 and rep["kernels"] >= 1
    assert rep["instructions"] == sum(rep["engine_instructions"].values())
    assert rep["engine_instructions"]["dma"] >= 2
    assert rep["est_time_s"] > 0 and rep["sbuf_peak_bytes"] > 0
    assert 0.0 <= rep["dma_bw_util"] <= 1.0
    # the record's report plus the JIT's compile time so far: a graph run once
    # interprets (docs/simulator.md), so none
    assert rep["jit_s"] == 0.0
    assert trnc.last_graphs()[-1].report == {k: v for k, v in rep.items() if k != "jit_s"}
    rep["kind"] = "changed"
    assert trnc.last_report()["kind"] == "inference"  # a copy
    trnc.reset()
    assert trnc.last_report() is None


def test_trnc_log_info(monkeypatch, capsys):
    monkeypatch.setenv("TRNC_LOG", "info")
    x = torch.randn(4, 4, requires_grad=True)
    compiled(lambda x: torch.sigmoid(x) * 3)(x).sum().backward()
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("trnc: ")]
    assert len(lines) == 2, err
    for ln, kind in zip(lines, ("forward", "backward")):
        assert f"({kind})" in ln
        for word in ("IR nodes", "kernels", "instructions", "HBM planned", "SBUF peak",
                     "est.", "on trn2", "TensorE util"):
            assert word in ln, (word, ln)


def test_no_log_by_default(capsys):
    with torch.no_grad():
        compiled(lambda x: x + 1)(torch.randn(2, 2))
    assert "trnc: " not in capsys.readouterr().err


@pytest.mark.parametrize("target", ["trn3", "trn1"])
@pytest.mark.parametrize("how", ["option", "env"])
def test_target_selection(how, target, monkeypatch):
    x = torch.randn(4, 4)
    if how == "env":
        monkeypatch.setenv("TRNC_TARGET", target)
        fn = compiled(lambda x: x * 3)
    else:
        fn = compiled(lambda x: x * 3, target=target)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), x * 3)
    assert trnc.last_report()["target"] == target
    assert trnc.stats()["graphs"] >= 1


def test_trn1_matmul_estimate():
    """A bf16 matmul costs less on trn1's 2.8 GHz TensorE than on trn2's 2.4 GHz,
    and its utilization is of trn1's 91.8 TFLOPS peak."""
    a, b = torch.randn(512, 1024), torch.randn(1024, 2048)
    est = {}
    for target in ("trn2", "trn1"):
        torch._dynamo.reset()
        with torch.no_grad():
            got = compiled(lambda x, y: x @ y, target=target, autocast_bf16=True)(a, b)
        torch.testing.assert_close(got, a @ b, rtol=2e-2, atol=2.0)
        rep = trnc.last_report()
        assert rep["target"] == target
        est[target] = rep
    flops = 2 * 512 * 1024 * 2048
    for target, peak in (("trn2", 2 * 128 * 128 * 2.4e9), ("trn1", 2 * 128 * 128 * 2.8e9)):
        util = flops / peak / est[target]["est_time_s"]
        assert util == pytest.approx(est[target]["tensor_flop_util"], rel=1e-6)


def test_bad_target_is_an_error(monkeypatch):
    with pytest.raises(BackendCompilerFailed) as ei:
        compiled(lambda x: x + 1, target="trn9")(torch.randn(2))
    assert isinstance(ei.value.inner_exception, trnc.InvalidOptionError)
    assert "trn2" in str(ei.value.inner_exception) and "trn1" in str(ei.value.inner_exception)
    torch._dynamo.reset()
    monkeypatch.setenv("TRNC_TARGET", "bogus")
    with pytest.raises(BackendCompilerFailed) as ei:
        compiled(lambda x: x + 1)(torch.randn(2))
    assert "TRNC_TARGET" in str(ei.value.inner_exception)


@pytest.mark.parametrize("opt", [{"no_fusion": True}, {"autocast_bf16": True}])
def test_fusion_and_autocast_options(opt):
    def f(x, w):
        return torch.relu(x @ w * 2 + 1)

    x, w = torch.randn(8, 32), torch.randn(32, 16)
    with torch.no_grad():
        want = f(x, w)
        got = compiled(f, **opt)(x, w)
    # autocast_bf16: matmul inputs rounded to bf16 (8 mantissa bits), fp32 accumulation
    tol = {"rtol": 2e-2, "atol": 5e-2} if opt.get("autocast_bf16") else TOL
    torch.testing.assert_close(got, want, **tol)


def test_no_fusion_gives_more_kernels():
    def f(x):
        return torch.relu(x * 2 + 1)

    x = torch.randn(16, 16)
    with torch.no_grad():
        compiled(f)(x)
        fused = trnc.last_report()["kernels"]
        torch._dynamo.reset()
        compiled(f, no_fusion=True)(x)
        unfused = trnc.last_report()["kernels"]
    assert unfused >= 3 and unfused > fused


# --------------------------------------------------------------------------- #
# compile errors (C statuses -> exceptions), with a stand-in Graph


class _FakeGraph:
    def __init__(self, status, diags):
        self.status, self.diags = status, diags

    def compile(self, **kw):
        return None, self.status, self.diags


def _lowered(status, diags):
    return pipeline.LoweredGraph(name="forward graph 7", kind="forward",
                                 graph=_FakeGraph(status, diags))


def _diag(**kw):
    d = {"severity": "error", "code": "TRNC_ERR_UNSUPPORTED", "node": "", "target": "",
         "file": "", "line": 0, "source": "", "detail": "", "message": ""}
    d.update(kw)
    return d


def test_compile_unsupported_is_grouped_like_the_legality_scan():
    diags = [_diag(node="cumsum", target="aten.cumsum.default", file="/m.py", line=3,
                   source="y = x.cumsum(0)", detail="(f32[4,300000])",
                   message="no NeuronCore lowering for these operands"),
             _diag(node="cumsum_1", target="aten.cumsum.default", file="/m.py", line=9,
                   detail="(f32[4,300000])", message="no NeuronCore lowering"),
             _diag(node="sort", target="aten.sort.default", file="/m.py", line=5)]
    with pytest.raises(trnc.UnsupportedOperatorError) as ei:
        pipeline.compile_program(_lowered("TRNC_ERR_UNSUPPORTED", diags))
    msg = str(ei.value)
    assert ei.value.operators == {"aten.cumsum.default": 2, "aten.sort.default": 1}
    assert "/m.py:3" in msg and "/m.py:9" in msg and "(f32[4,300000])" in msg
    assert "y = x.cumsum(0)" in msg and "forward graph 7" in msg


def test_compile_internal_error_is_a_compiler_error():
    diags = [_diag(code="TRNC_ERR_INTERNAL", node="main#3 vector.tensor_tensor",
                   message="PSUM bank overflow")]
    with pytest.raises(trnc.CompilerError) as ei:
        pipeline.compile_program(_lowered("TRNC_ERR_INTERNAL", diags))
    assert isinstance(ei.value, trnc.TrncError)
    msg = str(ei.value)
    assert "trnc" in msg and "bug" in msg and "TRNC_DUMP_DIR" in msg
    assert "PSUM bank overflow" in msg and "forward graph 7" in msg
    assert ei.value.diagnostics == diags


def test_execution_error_names_placeholders():
    diags = [_diag(code="TRNC_ERR_LIMIT", message="input 1: int64 value 5000000000 at "
                   "index [3] is outside [-1073741824, 1073741824]")]
    msg = errors.execution_error_message("TRNC_ERR_LIMIT", diags, "g", ["arg0_1", "arg1_1"])
    assert "input 1 (arg1_1)" in msg and "5000000000" in msg


def test_exceptions_are_exported():
    for name in ("CompilerError", "InputMismatchError", "ExecutionError"):
        assert issubclass(getattr(trnc, name), trnc.TrncError)
    assert issubclass(trnc.InputMismatchError, ValueError)


def test_mlp_end_to_end():
    from trnc import examples

    model, args = examples.mlp_example(batch=4, d_in=16)
    ref = copy.deepcopy(model)
    out = compiled(model)(*args)
    want = ref(*args)
    torch.testing.assert_close(out, want, **TOL)
    out.sum().backward()
    want.sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL)
