"""The C extension trnc._trnc over the public C API."""

from __future__ import annotations

import pytest

import trnc
from helpers import run_ir
from trnc import _trnc, examples


def test_versions():
    assert _trnc.version() == trnc.__version__
    major = _trnc.llvm_version().split(".")
    assert len(major) == 3 and major[0] == "16"


def test_ops_table_fields():
    ops = _trnc.ops()
    assert ops
    for o in ops:
        assert set(o) == {"name", "fx_target", "category", "dtypes", "max_rank", "limits", "decomposition"}
        assert o["name"] and o["fx_target"].startswith(("aten.", "_c10d_functional.", "transformers."))
        assert 0 <= o["max_rank"] <= _trnc.MAX_RANK
    names = [o["fx_target"] for o in ops]
    assert len(names) == len(set(names))
    md = _trnc.ops_markdown()
    assert all(o["fx_target"] in md for o in ops)


def test_graph_object():
    with pytest.raises(TypeError):
        _trnc.Graph()
    model, args = examples.mlp_example()
    run_ir(model, args)
    rec = trnc.last_graphs()[0]
    g, status, diags = _trnc.import_graph(rec.serialized)
    assert status == "TRNC_OK" and g is not None
    assert not [d for d in diags if d["severity"] == "error"]
    assert g.check_lowerable()[0] == "TRNC_OK"
    assert g.legalize()[0] == "TRNC_OK"
    assert g.verify()[0] == "TRNC_OK"
    h = g.hash()
    assert isinstance(h, bytes) and len(h) == 16 and h.hex() == rec.hash
    assert g.text() == rec.text
    s = g.summary()
    assert set(s) == {"kind", "nodes", "inputs", "outputs", "constants", "values",
                      "distinct_ops"}
    assert s == rec.summary
    # bytes-like objects other than bytes are accepted
    g2, status2, _ = _trnc.import_graph(memoryview(bytearray(rec.serialized)))
    assert status2 == "TRNC_OK" and g2.legalize()[0] == "TRNC_OK" and g2.hash() == h


def test_import_graph_rejects_non_bytes():
    with pytest.raises(TypeError):
        _trnc.import_graph("not bytes")


def test_status_names():
    names = _trnc.status_names()
    assert names[0] == "TRNC_OK" and "TRNC_ERR_UNSUPPORTED" in names


def test_no_reference_or_memory_leaks():
    """Repeated calls keep the process size flat (refcounts, trnc_free)."""
    import gc
    import resource

    model, args = examples.mlp_example()
    run_ir(model, args)
    data = trnc.last_graphs()[0].serialized

    def churn(n):
        for _ in range(n):
            g, _, _ = _trnc.import_graph(data)
            g.check_lowerable(), g.legalize(), g.verify()
            g.text(), g.hash(), g.summary()
            _trnc.import_graph(b"\xff\xff")
            _trnc.ops(), _trnc.ops_markdown()

    churn(200)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    churn(2000)
    gc.collect()
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 20 * 1024, f"RSS grew by {grown_kb} KiB over 2000 iterations"


def _elementwise_graph():
    """A legalized, verified Graph of f(x, y) = relu(x * 2 + y) for x f32[3,4]
    (transposed strides) and y f32[4] (its serialized bytes too)."""
    import torch

    def f(x, y):
        return torch.relu(x * 2 + y)

    with torch.no_grad():
        run_ir(f, (torch.randn(4, 3).t(), torch.randn(4)), backward=False)
    data = trnc.last_graphs()[-1].serialized
    g, status, _ = _trnc.import_graph(data)
    assert status == "TRNC_OK"
    assert g.check_lowerable()[0] == g.legalize()[0] == g.verify()[0] == "TRNC_OK"
    return g, data


def test_compiled_object():
    import torch

    with pytest.raises(TypeError):
        _trnc.Compiled()
    g, _ = _elementwise_graph()
    c, status, diags = g.compile()
    assert status == "TRNC_OK" and isinstance(c, _trnc.Compiled)
    assert not [d for d in diags if d["severity"] == "error"]
    ins, outs = c.inputs(), c.outputs()
    assert [set(d) for d in ins + outs] == [{"dtype", "shape", "stride", "extent_bytes", "is_none",
                                              "rng_seed", "complex"}] * (len(ins) + len(outs))
    assert ins[0] == {"dtype": "f32", "shape": [3, 4], "stride": [1, 3], "extent_bytes": 48,
                      "is_none": False, "rng_seed": False, "complex": False}
    assert ins[1]["shape"] == [4] and len(outs) == 1 and outs[0]["shape"] == [3, 4]
    rep = c.report()
    assert rep["target"] == "trn2" and rep["kernels"] >= 1
    assert set(rep["engine_instructions"]) == {"tensor", "vector", "scalar", "gpsimd", "dma"}
    assert set(rep["ops_per_engine"]) == {"tensor", "vector", "scalar", "gpsimd"}
    text = c.asm()
    assert text.startswith(".version 2") and ".target trn2" in text and "dma_copy" in text

    x, y = torch.randn(4, 3).t(), torch.randn(4)
    out = torch.empty_strided(outs[0]["shape"], outs[0]["stride"])
    status, diags = c.run([x.data_ptr(), y.data_ptr()], [out.data_ptr()])
    assert status == "TRNC_OK", diags
    torch.testing.assert_close(out, torch.relu(x * 2 + y), rtol=1e-5, atol=1e-5)

    # a missing tensor is an error status, not a crash
    status, diags = c.run([0, y.data_ptr()], [out.data_ptr()])
    assert status == "TRNC_ERR_INVALID_ARGUMENT" and "input 0" in diags[0]["message"]
    with pytest.raises(ValueError, match="the program has 2 inputs"):
        c.run([x.data_ptr()], [out.data_ptr()])
    with pytest.raises(TypeError, match="int address"):
        c.run([x.data_ptr(), "y"], [out.data_ptr()])
    with pytest.raises(TypeError):
        c.run(None, [out.data_ptr()])
    # execute(): the per-call form, None on success, (status, diags) on failure
    out.fill_(0)
    assert c.execute([x.data_ptr(), y.data_ptr()], [out.data_ptr()]) is None
    torch.testing.assert_close(out, torch.relu(x * 2 + y), rtol=1e-5, atol=1e-5)
    status, diags = c.execute([0, y.data_ptr()], [out.data_ptr()])
    assert status == "TRNC_ERR_INVALID_ARGUMENT" and "input 0" in diags[0]["message"]
    with pytest.raises(ValueError, match="the program has 1 outputs"):
        c.execute([x.data_ptr(), y.data_ptr()], [])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        c.execute([x.data_ptr(), y.data_ptr()])

    c3, status, _ = g.compile(target="trn3", no_fusion=True, autocast_bf16=False)
    assert status == "TRNC_OK" and c3.report()["target"] == "trn3"
    assert ".target trn3" in c3.asm()
    bad, status, diags = g.compile(target="trn9")
    assert bad is None and status == "TRNC_ERR_INVALID_ARGUMENT" and diags


def test_compile_and_run_do_not_leak():
    import gc
    import resource

    import torch

    g, data = _elementwise_graph()
    x, y = torch.randn(4, 3).t(), torch.randn(4)
    out = torch.empty(3, 4)
    ptrs = ([x.data_ptr(), y.data_ptr()], [out.data_ptr()])

    def churn(n):
        for _ in range(n):
            g2, _, _ = _trnc.import_graph(data)
            g2.legalize(), g2.verify()
            c, _, _ = g2.compile()
            c.inputs(), c.outputs(), c.report(), c.asm()
            c.run(*ptrs)
            c.run([0, 0], [0])
            c.execute(*ptrs)
            c.execute([0, 0], [0])
            g2.compile(target="nope")

    churn(50)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    churn(500)
    gc.collect()
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 20 * 1024, f"RSS grew by {grown_kb} KiB over 500 iterations"
