"""Regressions from the new-user review of the front end: tensor constants in
models, where errors point, model limits reported as the user's problem
(rank > 8, data-dependent shapes and scalars), dynamic-shape and input-dtype
messages, the float64 warning's location, ``trnc dump`` on files that are not
graphs, and ``TRNC_DUMP_IR`` parsing."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.exc import BackendCompilerFailed

import trnc
from helpers import capture
from trnc import cli, errors, fx_pb2, pipeline
from trnc.serialize import (graph_to_proto, meta_location, parse_stack_trace, serialize,
                            tensor_bytes)

pb = fx_pb2
SRC = open(__file__).read().splitlines()


def line_of(marker: str) -> int:
    return next(i for i, s in enumerate(SRC, 1) if s.rstrip().endswith(marker))


def compiled(fn, dynamic=False, **kw):
    return torch.compile(fn, backend="neuron", dynamic=dynamic, **kw)


def compile_error(fn, *args, dynamic=False, **kw) -> trnc.TrncError:
    with pytest.raises(BackendCompilerFailed) as ei:
        compiled(fn, dynamic=dynamic, **kw)(*args)
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.TrncError), type(inner)
    return inner


# --------------------------------------------------------------------------- #
# 1. tensor constants: read under dynamo's FakeTensorMode, lift_fresh_copy


CONSTANT_CASES = {
    "vector": (lambda x: x * torch.tensor([1.0, 2.0, 3.0]), (3,)),
    "scalar": (lambda x: x * torch.tensor(2.0), (3,)),
    "index_select": (lambda x: x.index_select(0, torch.tensor([0, 2])), (4, 6)),
    "advanced index": (lambda x: x[torch.tensor([0, 2])], (4, 6)),
}


@pytest.mark.parametrize("case", sorted(CONSTANT_CASES))
def test_tensor_constant_in_model_matches_eager(case):
    fn, shape = CONSTANT_CASES[case]
    x = torch.randn(*shape)
    out = compiled(fn)(x)
    torch.testing.assert_close(out, fn(x))
    assert trnc.stats()["errors"] == 0 and trnc.stats()["inference"] == 1


@pytest.mark.parametrize("case", sorted(CONSTANT_CASES))
def test_tensor_constant_with_grad_matches_eager(case):
    fn, shape = CONSTANT_CASES[case]
    x = torch.randn(*shape, requires_grad=True)
    w = torch.randn(fn(x).shape)
    (compiled(fn)(x) * w).sum().backward()
    got = x.grad.clone()
    x.grad = None
    (fn(x) * w).sum().backward()
    torch.testing.assert_close(got, x.grad)
    s = trnc.stats()
    assert (s["forward"], s["backward"], s["errors"]) == (1, 1, 0)


def test_constant_values_reach_the_program():
    # distinct values per element: a constant read as zeros or garbage shows
    x = torch.ones(4)
    out = compiled(lambda x: x * torch.tensor([1.0, -2.0, 3.5, 1e3]))(x)
    assert out.tolist() == [1.0, -2.0, 3.5, 1000.0]


def test_tensor_bytes_under_active_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    real = torch.tensor([1.0, 2.0, 3.0])
    want = real.numpy().tobytes()
    mode = FakeTensorMode()
    with mode:
        assert tensor_bytes(real) == want
    # a FakeTensor that carries its value (FakeTensor.constant) is read through it
    fake = mode.from_tensor(real)
    fake.constant = real
    with mode:
        assert tensor_bytes(fake) == want
    # one without a value cannot be serialized: a clear GraphImportError
    with mode:
        empty = torch.empty(3)
    assert getattr(empty, "constant", None) is None
    with pytest.raises(trnc.GraphImportError, match="fake tensor without data"):
        tensor_bytes(empty)


# --------------------------------------------------------------------------- #
# 2. locations: the user's frame, not torch's; modules without a stack trace


def test_location_skips_frames_inside_torch():
    def model(x):
        return F.pad(x[None], (1, 1), mode="circular").sum()  # LINE_PAD

    graphs = capture(model, (torch.randn(4, 6),), backward=False)
    g = graph_to_proto(graphs["inference"][0], "inference")
    files = {(n.loc.file, n.loc.line) for n in g.nodes if n.loc.file}
    assert files == {(__file__, line_of("# LINE_PAD"))}, files


def test_parse_stack_trace_prefers_user_frames():
    st = ('  File "/home/u/model.py", line 7, in forward\n'
          '    y = F.pad(x, (1, 1), mode="circular")\n'
          '  File "/venv/torch/nn/functional.py", line 5823, in pad\n'
          '    return torch._C._nn.pad(input, pad, mode, value)\n')
    lib = ("/venv/torch/",)
    assert parse_stack_trace(st, lib) == ("/home/u/model.py", 7,
                                          'y = F.pad(x, (1, 1), mode="circular")', "forward")
    # only library frames: the innermost one
    inner = st.split("\n", 2)[2]
    assert parse_stack_trace(inner, lib)[:2] == ("/venv/torch/nn/functional.py", 5823)
    # with the real torch directory
    real = ('  File "/home/u/m.py", line 3, in f\n    g(x)\n'
            f'  File "{torch.nn.functional.__file__}", line 10, in pad\n    x\n')
    assert parse_stack_trace(real)[:2] == ("/home/u/m.py", 3)


def test_module_without_stack_trace_is_named_by_module():
    graphs = capture(nn.LeakyReLU(), (torch.randn(4, 8, requires_grad=True),))
    fw = graph_to_proto(graphs["forward"][0], "forward")
    node = next(n for n in fw.nodes if n.target == "aten.leaky_relu.default")
    assert (node.loc.file, node.loc.line) == ("<nn.LeakyReLU module>", 0)
    bw = graph_to_proto(graphs["backward"][0], "backward")  # (decomposed: gt, mul, where)
    calls = [n for n in bw.nodes if n.op == pb.CALL_FUNCTION]
    assert calls and {n.loc.file for n in calls} == {"<nn.LeakyReLU module>"}


def test_meta_location_fallbacks():
    meta = {"nn_module_stack": {"1": ("L['self']", nn.Sequential),
                                "2": ("L['self']._modules['act']", nn.GELU)},
            "source_fn_stack": [("act", nn.GELU)]}
    assert meta_location(meta) == ("<nn.GELU module 'act'>", 0, "", "act")
    assert meta_location({"source_fn_stack": [("relu", torch.relu)]})[0] == "<torch.relu>"
    assert meta_location({}) is None
    # a pseudo-file is printed without ':0'
    d = {"file": "<nn.GELU module 'act'>", "line": 0}
    assert errors._where(d) == "<nn.GELU module 'act'>"
    assert errors._where({"file": "m.py", "line": 3}) == "m.py:3"


# --------------------------------------------------------------------------- #
# 3, 4. model limits are UnsupportedOperatorError; data-dependent shapes


def test_rank_9_input_is_unsupported_and_named():
    e = compile_error(lambda x: x + 1, torch.randn(*([1] * 8 + [2])))  # LINE_RANK9_IN
    assert isinstance(e, trnc.UnsupportedOperatorError)
    msg = str(e)
    assert "input 0 ('x') has rank 9; trnc supports rank <= 8" in msg
    assert f"{__file__}:{line_of('# LINE_RANK9_IN')}" in msg
    assert "trnc bug" not in msg and "arg0_1" not in msg
    assert e.operators == {}


def test_rank_9_intermediate_names_the_op_and_line():
    def f(x):
        return x.view(*([1] * 7 + [2, 3])).relu().sum()  # LINE_RANK9_VIEW

    e = compile_error(f, torch.randn(2, 3))
    assert isinstance(e, trnc.UnsupportedOperatorError)
    assert e.operators == {"aten.view.default": 1}
    assert f"{__file__}:{line_of('# LINE_RANK9_VIEW')}" in str(e)
    assert "has rank 9; trnc supports rank <= 8" in str(e)


def test_item_is_unsupported_at_its_line():
    def f(x):
        n = int(x.sum().item())  # LINE_ITEM
        return x * n

    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        e = compile_error(f, torch.ones(3))
    assert isinstance(e, trnc.UnsupportedOperatorError)
    assert e.operators == {"aten._local_scalar_dense.default": 1}
    msg = str(e)
    assert f"{__file__}:{line_of('# LINE_ITEM')}" in msg
    assert "without host round trips" in msg
    assert "has 0 outputs" not in msg and "trnc bug" not in msg


@pytest.mark.parametrize("capture_dynamic", [False, True])
def test_masked_select_is_data_dependent_not_dynamic(capture_dynamic):
    def f(x):
        return x[x > 0].sum()  # LINE_MASK

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=capture_dynamic):
        e = compile_error(f, torch.randn(5), fullgraph=True)
    assert isinstance(e, trnc.UnsupportedOperatorError)
    msg = str(e)
    assert list(e.operators) == ["aten.index.Tensor"]
    assert f"{__file__}:{line_of('# LINE_MASK')}" in msg
    assert "data-dependent size in dim 0 (u0)" in msg and "torch.where" in msg
    assert "dynamic=False" not in msg  # the user already passed it


def test_nonzero_is_data_dependent():
    def f(x):
        return torch.nonzero(x).float().sum()  # LINE_NONZERO

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        e = compile_error(f, torch.randn(5))
    assert list(e.operators) == ["aten.nonzero.default"]
    assert f"{__file__}:{line_of('# LINE_NONZERO')}" in str(e)
    assert "data-dependent" in str(e)


def test_dynamic_shape_message_names_user_input_once():
    def f(x, y):
        return torch.relu(x) * 2 + y  # LINE_DYN

    e = compile_error(f, torch.randn(3, 4), torch.randn(3, 4), dynamic=True)
    assert isinstance(e, trnc.DynamicShapeError)
    msg = str(e)
    # by position in the graph's inputs (two size symbols come first) and by name
    assert "input 2 ('x') has a symbolic size in dim 0 (s" in msg, msg
    assert f"first used at {__file__}:{line_of('# LINE_DYN')}" in msg
    assert msg.count("dynamic=False") == 1
    assert "arg2_1" not in msg and "output 0" not in msg
    assert msg.count("trnc.buckets") == 1


# --------------------------------------------------------------------------- #
# 5. float64 warning: at the user's line, inputs described by role


def test_float64_warning_points_at_user_code():
    model = nn.Linear(4, 3).double()
    x = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = compiled(model)(x)  # LINE_F64_FW
        out.sum().backward()  # LINE_F64_BW
    ws = [w for w in rec if str(w.message).startswith("trnc")]
    # the backward graph compiles at the .backward() call, or with the forward
    # when torch's AOTAutogradCache stores both (trnc's default): a user line
    fw_line, bw_line = line_of("# LINE_F64_FW"), line_of("# LINE_F64_BW")
    assert [(w.filename, w.lineno) for w in ws] in (
        [(__file__, fw_line), (__file__, bw_line)], [(__file__, fw_line), (__file__, fw_line)])
    fw, bw = (str(w.message) for w in ws)
    assert "3 float64 graph inputs (3 parameters/buffers/user inputs)" in fw
    assert "output gradient" in bw and "saved by the forward graph" in bw
    for m in (fw, bw):
        assert "primals_" not in m and "tangents_" not in m


def test_user_stacklevel_finds_this_frame():
    def warn_from_library():
        warnings.warn("x", UserWarning, stacklevel=pipeline.user_stacklevel())

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        warn_from_library()
    # this test file is user code, so the helper's own frame is the user's
    assert rec[0].filename == __file__


# --------------------------------------------------------------------------- #
# 6. unsupported input dtypes are inputs, not operators


def test_uint16_input_is_reported_as_input_dtype():
    e = compile_error(lambda x: x + 1, torch.zeros(4, dtype=torch.uint16))  # LINE_U16
    assert isinstance(e, trnc.UnsupportedOperatorError)
    msg = str(e)
    assert "input 0 ('x') has dtype torch.uint16, which trnc does not lower" in msg
    assert f"{__file__}:{line_of('# LINE_U16')}" in msg
    assert "operands ()" not in msg and "dtype other" not in msg and "arg0_1" not in msg
    assert msg.startswith("trnc cannot lower 1 input in ")
    assert e.operators == {}


def test_unsupported_message_groups_inputs_apart():
    diags = [{"severity": "error", "node": "arg0_1", "target": "", "file": "", "line": 0,
              "message": "input 'arg0_1' has dtype c64, which NeuronCore engines do not "
                         "compute in", "detail": "()"},
             {"severity": "error", "node": "fft", "target": "aten._fft_r2c.default",
              "file": "m.py", "line": 4, "message": "no lowering for aten._fft_r2c.default",
              "detail": "(f32[4])"}]
    inputs = {"arg0_1": {"index": 0, "role": "input", "user_name": "z",
                         "torch_dtype": "torch.complex64"}}
    msg, counts = errors.unsupported_message(diags, "g", inputs)
    assert counts == {"aten._fft_r2c.default": 1}
    assert msg.splitlines()[:3] == [
        "trnc cannot lower 1 input and 1 operator (1 use) in g:",
        "  input 0 ('z') has dtype torch.complex64, which trnc does not lower",
        "  aten._fft_r2c.default  (1 use)"]


# --------------------------------------------------------------------------- #
# 7. trnc dump of a file that is not a graph


@pytest.mark.parametrize("content,expect", [
    (b"\xff\xff\xff\xff garbage", "is not a trnc graph (fx.proto bytes written by trnc), or it "
                                  "is truncated or corrupt (TRNC_ERR_MALFORMED"),
    (b"", "is empty: it is not a trnc graph"),
    (pb.Graph(version=99, kind=pb.FORWARD).SerializeToString(),
     "was written by a different trnc release (fx schema version 99)"),
])
def test_dump_of_a_file_that_is_not_a_graph(tmp_path, capsys, content, expect):
    path = tmp_path / "g.pb"
    path.write_bytes(content)
    assert cli.main(["dump", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path} {expect}" in err, err
    assert "trnc bug" not in err and "report it" not in err and "reinstall" not in err


# --------------------------------------------------------------------------- #
# 9. TRNC_DUMP_IR


@pytest.mark.parametrize("value,on", [("1", True), ("yes", True), ("true", True),
                                      ("0", False), ("false", False), ("FALSE", False),
                                      ("no", False), ("off", False), ("", False)])
def test_dump_ir_env_values(monkeypatch, capsys, value, on):
    monkeypatch.setenv("TRNC_DUMP_IR", value)
    compiled(lambda x: x + 1, options={"execute": False})(torch.randn(3))
    assert ("# trnc IR:" in capsys.readouterr().out) == on


def test_serialize_without_user_inputs_is_unchanged():
    # goldens and the CLI serialize without dynamo's inputs: no names, no locs on inputs
    graphs = capture(lambda x: x * 2, (torch.randn(3),), backward=False)
    g = pb.Graph.FromString(serialize(graphs["inference"][0], "inference"))
    ph = [n for n in g.nodes if n.op == pb.PLACEHOLDER]
    assert [(n.user_name, n.loc.file) for n in ph] == [("", "")]
