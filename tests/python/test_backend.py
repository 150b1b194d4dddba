"""backend="neuron": forward and backward graphs of real models reach the C
library, import, legalize, verify and print; canonical hashes; options."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from torch._decomp import core_aten_decompositions, get_decompositions

import trnc
from helpers import run_ir
from trnc import _trnc, examples
from trnc.backend import EXTRA_DECOMPOSITIONS, decompositions, native_targets


def _records(kind=None):
    recs = trnc.last_graphs()
    return [r for r in recs if kind is None or r.kind == kind]


def _compile_and_hash(make, **kw):
    torch._dynamo.reset()
    trnc.reset()
    model, args = make(**kw)
    run_ir(model, args)
    return {r.kind: r for r in _records()}


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_forward_and_backward_reach_c(name):
    model, args = examples.EXAMPLES[name]()
    ref_model = copy.deepcopy(model)
    out = run_ir(model, args)
    ref = ref_model(*args)
    ref.sum().backward()
    # execute=False (front-end test): the captured aten graph ran with torch
    torch.testing.assert_close(out, ref)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(p.grad, q.grad)

    recs = _records()
    assert [r.kind for r in recs] == ["forward", "backward"]
    graph_counts = {k: v for k, v in trnc.stats().items()
                    if k in ("forward", "backward", "inference", "errors", "graphs")}
    assert graph_counts == {"forward": 1, "backward": 1, "inference": 0, "errors": 0,
                            "graphs": 2}
    ops = {o["fx_target"]: o["name"] for o in _trnc.ops()}
    for r in recs:
        assert r.summary["kind"] == r.kind
        assert r.summary["nodes"] > 0 and r.summary["inputs"] > 0 and r.summary["outputs"] > 0
        assert r.summary["distinct_ops"] > 1
        assert len(r.hash) == 32 and r.text.strip()
        assert r.serialized
        print(f"--- {name} {r.kind}: {r.summary}\n{r.text}")
    fw = recs[0]
    # the IR names the native ops the graph uses
    want = {"mlp": ["aten.addmm.default", "aten.relu.default"],
            "cnn": ["aten.convolution.default", "aten.max_pool2d_with_indices.default"],
            "gpt": ["aten.embedding.default", "aten.native_layer_norm.default",
                    "aten.gelu.default", "aten._softmax.default"]}[name]
    for target in want:
        if target in ops:
            assert ops[target] in fw.text, f"{ops[target]} ({target}) missing from IR"


def test_mlp_ir_shapes():
    model, args = examples.mlp_example(batch=4, d_in=16)
    run_ir(model, args)
    fw, bw = _records("forward")[0], _records("backward")[0]
    assert fw.text.startswith("graph forward {") and bw.text.startswith("graph backward {")
    assert "placeholder primal : f32[4,16]" in fw.text
    assert "addmm(" in fw.text and ": f32[4,32]" in fw.text and "relu(" in fw.text
    assert "placeholder tangent : f32[4,8]" in bw.text and "mm(" in bw.text
    # natively lowered ops stay whole (not decomposed by Core ATen tables)
    assert "threshold_backward(" in bw.text


@pytest.mark.parametrize("make,kw_a,kw_b", [
    (examples.mlp_example, {"batch": 4}, {"batch": 5}),
    (examples.cnn_example, {"size": 8}, {"size": 12}),
    (examples.gpt_example, {"seq": 8}, {"seq": 6}),
])
def test_canonical_hash(make, kw_a, kw_b):
    a1 = _compile_and_hash(make, **kw_a)
    a2 = _compile_and_hash(make, **kw_a)
    b = _compile_and_hash(make, **kw_b)
    for kind in ("forward", "backward"):
        assert a1[kind].hash == a2[kind].hash, f"{kind}: same model, different hash"
        assert a1[kind].text == a2[kind].text
        assert a1[kind].hash != b[kind].hash, f"{kind}: a dim changed, same hash"
    assert a1["forward"].hash != a1["backward"].hash


def test_inference_graph():
    model, (x,) = examples.mlp_example()
    with torch.no_grad():
        run_ir(model, (x,), backward=False)
    assert [r.kind for r in _records()] == ["inference"]
    assert trnc.stats()["inference"] == 1


def test_alias_name_trnc():
    model, args = examples.mlp_example()
    run_ir(model, args, backend="trnc")
    assert trnc.stats()["forward"] == 1 and trnc.stats()["backward"] == 1


def test_dump_ir_env(monkeypatch, capsys):
    monkeypatch.setenv("TRNC_DUMP_IR", "1")
    model, args = examples.mlp_example()
    run_ir(model, args)
    out = capsys.readouterr().out
    assert "# trnc IR: forward graph" in out and "# trnc IR: backward graph" in out
    for r in _records():
        assert r.text.strip() in out


def test_options_dump_ir_and_name(capsys):
    model, args = examples.mlp_example()
    run_ir(model, args, options={"dump_ir": True, "name": "mlp"})
    out = capsys.readouterr().out
    assert "# trnc IR: mlp forward graph" in out
    assert all(r.name.startswith("mlp ") for r in _records())


def test_unknown_option_is_an_error():
    model, args = examples.mlp_example()
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as ei:
        run_ir(model, args, options={"dump_irr": True})
    inner = ei.value.inner_exception
    assert isinstance(inner, trnc.InvalidOptionError)
    assert "'dump_irr'" in str(inner)
    for known in ("dump_ir", "warn_float64", "name", "target", "autocast_bf16", "no_fusion"):
        assert known in str(inner)


def test_bad_option_type_is_an_error():
    model, args = examples.mlp_example()
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as ei:
        run_ir(model, args, options={"dump_ir": "yes"})
    assert isinstance(ei.value.inner_exception, trnc.InvalidOptionError)
    assert "must be bool" in str(ei.value.inner_exception)


def test_decompositions_keep_native_ops():
    native = native_targets()
    assert native, "the C op table is empty"
    # Core ATen's table plus torch's decompositions of EXTRA_DECOMPOSITIONS
    # plus trnc's own (python/trnc/decomp.py), minus what trnc lowers natively
    from trnc import decomp

    table = dict(core_aten_decompositions())
    extra = get_decompositions([getattr(torch.ops.aten, name) for name in EXTRA_DECOMPOSITIONS])
    for op, fn in extra.items():
        table.setdefault(op, fn)
    for op, fn in decomp.TABLE.items():
        table.setdefault(op, fn)
    decomps = decompositions()
    assert not {str(op) for op in decomps} & native
    assert set(decomps) == {op for op in table if str(op) not in native}


def test_set_default_backend():
    assert hasattr(torch.compiler, "set_default_backend")
    model, args = examples.mlp_example()
    before = torch.compiler.get_default_backend()
    torch.compiler.set_default_backend("neuron")
    try:
        out = torch.compile(model, dynamic=False, options={"execute": False})(*args)
        out.sum().backward()
    finally:
        torch.compiler.set_default_backend(before)
    assert trnc.stats()["forward"] == 1 and trnc.stats()["backward"] == 1


def test_trnc_set_default():
    before = torch.compiler.get_default_backend()
    try:
        trnc.set_default()
        assert torch.compiler.get_default_backend() == "neuron"
    finally:
        torch.compiler.set_default_backend(before)


def test_records_are_bounded_and_reset():
    model = nn.Linear(4, 4)
    for n in range(3):
        torch._dynamo.reset()
        run_ir(model, (torch.randn(n + 1, 4),))
    assert trnc.stats()["graphs"] == 6
    assert len(trnc.last_graphs(2)) == 2
    trnc.reset()
    assert trnc.last_graphs() == [] and trnc.stats()["graphs"] == 0
