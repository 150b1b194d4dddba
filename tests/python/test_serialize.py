"""serialize.py: FX GraphModule -> fx.proto, checked by parsing the bytes back
with trnc.fx_pb2 (no C library needed)."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import capture
from trnc import examples, fx_pb2
from trnc.serialize import graph_to_proto, parse_stack_trace, serialize, tensor_bytes

pb = fx_pb2


def parse(data: bytes):
    g = pb.Graph()
    g.ParseFromString(data)
    return g


def calls(g, target):
    return [n for n in g.nodes if n.op == pb.CALL_FUNCTION and n.target == target]


def dims(tm):
    return [d.value for d in tm.shape]


def test_mlp_forward_backward_structure():
    model, args = examples.mlp_example(batch=4, d_in=16)
    graphs = capture(model, args)
    fw = parse(serialize(graphs["forward"][0], "forward", "mlp fw"))
    bw = parse(serialize(graphs["backward"][0], "backward", "mlp bw"))
    assert fw.version == 1 and fw.kind == pb.FORWARD and fw.name == "mlp fw"
    assert bw.kind == pb.BACKWARD

    ph = [n for n in fw.nodes if n.op == pb.PLACEHOLDER]
    assert [n.placeholder_role for n in ph] == ["primal"] * 5
    shapes = sorted(dims(n.outputs[0]) for n in ph)
    assert shapes == sorted([[32, 16], [32], [4, 16], [8, 32], [8]])
    assert all(n.outputs[0].dtype == pb.FLOAT32 and n.outputs[0].torch_dtype == "torch.float32"
               for n in ph)

    addmm = calls(fw, "aten.addmm.default")
    assert len(addmm) == 2
    # schema-normalized: self, mat1, mat2, beta, alpha with defaults filled
    assert [a.name for a in addmm[0].args] == ["self", "mat1", "mat2", "beta", "alpha"]
    assert addmm[0].args[3].i == 1 and addmm[0].args[4].i == 1
    assert dims(addmm[0].outputs[0]) == [4, 32]
    assert [d.value for d in addmm[0].outputs[0].stride] == [32, 1]

    roles = {n.placeholder_role for n in bw.nodes if n.op == pb.PLACEHOLDER}
    assert "tangent" in roles
    # grad of the input x is None in the backward outputs
    kinds = [v.WhichOneof("kind") for v in bw.output.values]
    assert kinds.count("none") == 1 and kinds.count("ref") == 4


def test_refs_point_backwards_and_getitem_is_folded():
    model, args = examples.gpt_example()
    graphs = capture(model, args)
    for kind in ("forward", "backward"):
        gm = graphs[kind][0]
        g = graph_to_proto(gm, kind)
        assert not calls(g, "operator.getitem")
        fx_getitems = [n for n in gm.graph.nodes if n.target is operator.getitem]
        if kind == "forward":
            assert fx_getitems, "the GPT forward uses multi-output ops"

        def check(arg, i):
            k = arg.WhichOneof("kind")
            if k == "ref":
                assert arg.ref.node < i
                src = g.nodes[arg.ref.node]
                if arg.ref.output:
                    assert src.outputs_tuple and arg.ref.output < len(src.outputs)
            elif k == "list":
                for it in arg.list.items:
                    check(it, i)

        for i, n in enumerate(g.nodes):
            for a in n.args:
                check(a, i)
        for v in g.output.values:
            check(v, len(g.nodes))

    fw = graph_to_proto(graphs["forward"][0], "forward")
    ln = calls(fw, "aten.native_layer_norm.default")
    assert len(ln) == 3
    assert ln[0].outputs_tuple and len(ln[0].outputs) == 3
    assert [a.name for a in ln[0].args] == ["input", "normalized_shape", "weight", "bias", "eps"]
    assert [i.i for i in ln[0].args[1].list.items] == [32]
    assert ln[0].args[4].f == pytest.approx(1e-5)
    # some user of native_layer_norm reads output 0 through a folded getitem
    idx = list(fw.nodes).index(ln[0])
    users = [a for n in fw.nodes for a in n.args if a.WhichOneof("kind") == "ref"
             and a.ref.node == idx]
    assert users and all(a.ref.output == 0 for a in users)


def test_kwarg_only_and_dtype_args():
    class M(nn.Module):
        def forward(self, x):
            return torch.sum(x, dim=1, dtype=torch.float64).to(torch.float32)

    graphs = capture(M(), (torch.randn(3, 4),), backward=False)
    g = graph_to_proto(graphs["inference"][0], "inference")
    assert g.kind == pb.INFERENCE
    s = calls(g, "aten.sum.dim_IntList")[0]
    assert [a.name for a in s.args] == ["self", "dim", "keepdim", "dtype"]
    assert s.args[2].b is False
    assert s.args[3].WhichOneof("kind") == "dtype" and s.args[3].dtype == pb.FLOAT64
    assert s.outputs[0].dtype == pb.FLOAT64
    ph = [n for n in g.nodes if n.op == pb.PLACEHOLDER]
    assert all(n.placeholder_role == "input" for n in ph)


def test_source_locations_are_user_lines():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)  # LINE_LIN
            return F.gelu(y)  # LINE_GELU

    src = open(__file__).read().splitlines()
    lin_line = next(i for i, s in enumerate(src, 1) if s.strip().endswith("# LINE_LIN"))
    gelu_line = next(i for i, s in enumerate(src, 1) if s.strip().endswith("# LINE_GELU"))
    graphs = capture(M(), (torch.randn(2, 4),))
    fw = graph_to_proto(graphs["forward"][0], "forward")
    gelu = calls(fw, "aten.gelu.default")[0]
    assert gelu.loc.file == __file__ and gelu.loc.line == gelu_line
    assert gelu.loc.code == "return F.gelu(y)  # LINE_GELU"
    assert gelu.loc.function == "forward"
    addmm = calls(fw, "aten.addmm.default")[0]
    assert addmm.loc.line == lin_line
    bw = graph_to_proto(graphs["backward"][0], "backward")
    lines = {n.loc.line for n in bw.nodes if n.op == pb.CALL_FUNCTION}
    assert gelu_line in lines and lin_line in lines


def test_parse_stack_trace_innermost_frame():
    st = ('  File "/a/model.py", line 10, in forward\n    x = self.block(x)\n'
          '  File "/a/block.py", line 3, in forward\n    return torch.fft.rfft(x)\n'
          '           ^^^^^^^\n')
    assert parse_stack_trace(st) == ("/a/block.py", 3, "return torch.fft.rfft(x)", "forward")
    assert parse_stack_trace(None) is None
    assert parse_stack_trace("garbage") is None


def test_symbolic_dims_are_symbols():
    model = nn.Linear(4, 3)
    graphs = capture(model, (torch.randn(5, 4),), backward=False, dynamic=True)
    g = graph_to_proto(graphs["forward"][0], "forward")  # parameters need grad
    sym_ph = [n for n in g.nodes if n.op == pb.PLACEHOLDER and not n.outputs]
    assert sym_ph and sym_ph[0].scalar_outputs[0].startswith("s")
    tensors = [n for n in g.nodes if n.op == pb.PLACEHOLDER and n.outputs]
    syms = [d.symbol for n in tensors for d in n.outputs[0].shape if d.symbol]
    assert syms, "the batch dim is symbolic"


def test_get_attr_constant_bytes():
    gm = torch.fx.GraphModule(nn.Module(), torch.fx.Graph())
    gm.register_buffer("c", torch.arange(6, dtype=torch.float32).reshape(2, 3).t())
    graph = gm.graph
    c = graph.get_attr("c")
    c.meta["val"] = gm.c
    x = graph.placeholder("arg0_1")
    x.meta["val"] = torch.empty(3, 2)
    add = graph.call_function(torch.ops.aten.add.Tensor, (x, c))
    add.meta["val"] = torch.empty(3, 2)
    graph.output((add,))
    gm.recompile()
    g = graph_to_proto(gm, "inference")
    const_node = g.nodes[0]
    assert const_node.op == pb.GET_ATTR and const_node.constant == 0
    k = g.constants[0]
    assert k.name == "c" and dims(k.meta) == [3, 2]
    assert [s.value for s in k.meta.stride] == [2, 1]
    expected = torch.arange(6, dtype=torch.float32).reshape(2, 3).t().contiguous()
    assert k.data == expected.numpy().astype("<f4").tobytes()
    # alpha default filled for add.Tensor
    assert [a.name for a in g.nodes[2].args] == ["self", "other", "alpha"]
    assert tensor_bytes(torch.tensor([True, False])) == b"\x01\x00"
    assert tensor_bytes(torch.tensor([1.0], dtype=torch.bfloat16)) == b"\x80\x3f"


def test_unfoldable_getitem_is_kept_explicit():
    graph = torch.fx.Graph()
    x = graph.placeholder("arg0_1")
    x.meta["val"] = [torch.empty(2), torch.empty(3)]  # a list input
    item = graph.call_function(operator.getitem, (x, 1))
    item.meta["val"] = torch.empty(3)
    graph.output((item,))
    g = graph_to_proto(torch.fx.GraphModule(nn.Module(), graph), "inference")
    gi = calls(g, "operator.getitem")
    assert len(gi) == 1 and gi[0].args[0].ref.node == 0 and gi[0].args[1].i == 1


def test_none_in_tuple_output_and_scalars():
    graph = torch.fx.Graph()
    x = graph.placeholder("arg0_1")
    x.meta["val"] = torch.empty(2, 2)
    n = graph.call_function(torch.ops.aten.native_dropout.default, (x, 0.5, True))
    n.meta["val"] = (torch.empty(2, 2), None)
    o = graph.call_function(operator.getitem, (n, 0))
    o.meta["val"] = torch.empty(2, 2)
    m = graph.call_function(torch.ops.aten.mul.Scalar, (o, float("inf")))
    m.meta["val"] = torch.empty(2, 2)
    graph.output((m, None))
    g = graph_to_proto(torch.fx.GraphModule(nn.Module(), graph), "inference")
    drop = calls(g, "aten.native_dropout.default")[0]
    assert drop.outputs_tuple and len(drop.outputs) == 2
    assert drop.outputs[1].dtype == pb.DTYPE_UNSPECIFIED and not drop.outputs[1].shape
    assert [a.name for a in drop.args] == ["input", "p", "train"]
    assert drop.args[2].b is True
    mul = calls(g, "aten.mul.Scalar")[0]
    assert mul.args[1].f == float("inf")
    assert [v.WhichOneof("kind") for v in g.output.values] == ["ref", "none"]


def test_deterministic_bytes():
    model, args = examples.cnn_example()
    a = capture(model, args)
    torch._dynamo.reset()
    b = capture(model, args)
    for kind in ("forward", "backward"):
        assert serialize(a[kind][0], kind) == serialize(b[kind][0], kind)
