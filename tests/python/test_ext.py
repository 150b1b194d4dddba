"""The C extension trnc._trnc over the public C API."""

from __future__ import annotations

import pytest

import trnc
from helpers import run
from trnc import _trnc, examples


def test_versions():
    assert _trnc.version() == trnc.__version__
    major = _trnc.llvm_version().split(".")
    assert len(major) == 3 and major[0] == "16"


def test_ops_table_fields():
    ops = _trnc.ops()
    assert ops
    for o in ops:
        assert set(o) == {"name", "fx_target", "category", "dtypes", "max_rank", "limits"}
        assert o["name"] and o["fx_target"].startswith("aten.")
        assert 0 <= o["max_rank"] <= _trnc.MAX_RANK
    names = [o["fx_target"] for o in ops]
    assert len(names) == len(set(names))
    md = _trnc.ops_markdown()
    assert all(o["fx_target"] in md for o in ops)


def test_graph_object():
    with pytest.raises(TypeError):
        _trnc.Graph()
    model, args = examples.mlp_example()
    run(model, args)
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
    assert status2 == "TRNC_OK" and g2.hash() == h


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
    run(model, args)
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
