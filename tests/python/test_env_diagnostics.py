"""The debugging environment variables (issue 15's smaller gaps).

* ``TRNC_PROFILE=trace.json`` writes one Chrome trace per graph
  (``trace.forward-graph-N.json``), on a cache hit too, so the forward's trace
  survives the backward's compile.
* ``TRNC_DUMP_DIR=dir`` creates a missing directory (a directory that cannot
  be created is a warning, not a failure), names files by graph kind and
  number (``forward-graph-N-02-fold.ir``, ``forward-graph-N-program.s``), and
  writes the program on a cache hit too.
* ``DynamicShapeError`` lists every symbolic dim, not only the first.
* an unknown ``TRNC_LOG`` level is warned about.
"""

from __future__ import annotations

import json
import re
import warnings

import pytest
import torch
import torch.nn as nn

import trnc


def _train_once(model, x):
    torch.compile(model, backend="neuron", dynamic=False)(x).sum().backward()


def _fresh():
    torch._dynamo.reset()
    trnc.reset()


def _graph_numbers(names, pattern):
    return sorted(int(m.group(1)) for n in names if (m := re.fullmatch(pattern, n)))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_profile_keeps_every_graph_and_writes_on_cache_hit(private_cache, monkeypatch):
    prof = private_cache / "prof"
    prof.mkdir()
    monkeypatch.setenv("TRNC_PROFILE", str(prof / "trace.json"))
    model, x = nn.Sequential(nn.Linear(8, 16), nn.ReLU()), torch.randn(4, 8)
    _train_once(model, x)
    assert trnc.stats()["misses"] == 2
    names = sorted(p.name for p in prof.iterdir())
    fw = _graph_numbers(names, r"trace\.forward-graph-(\d+)\.json")
    bw = _graph_numbers(names, r"trace\.backward-graph-(\d+)\.json")
    assert len(fw) == 1 and len(bw) == 1 and len(names) == 2, names  # forward not lost
    for p in prof.iterdir():
        trace = json.loads(p.read_text())
        spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        assert spans and all(e["dur"] > 0 for e in spans), p.name
    # the same graphs again, from the cache: their traces are written again
    for p in prof.iterdir():
        p.unlink()
    _fresh()
    _train_once(model, x)
    s = trnc.stats()
    assert s["hits"] == 2 and s["compiles"] == 0, s
    names = sorted(p.name for p in prof.iterdir())
    assert len(names) == 2 and all(re.fullmatch(r"trace\.(forward|backward)-graph-\d+\.json", n)
                                   for n in names), names


def test_dump_dir_created_files_per_graph_and_program_on_cache_hit(private_cache, monkeypatch):
    dump = private_cache / "missing" / "dumps"  # neither directory exists
    monkeypatch.setenv("TRNC_DUMP_DIR", str(dump))
    x = torch.randn(4, 8)
    _train_once(nn.Sequential(nn.Linear(8, 16), nn.ReLU()), x)
    _train_once(nn.Sequential(nn.Linear(8, 4), nn.Tanh()), x)  # two more graphs
    names = sorted(p.name for p in dump.iterdir())
    programs = _graph_numbers(names, r"forward-graph-(\d+)-program\.s")
    assert len(programs) == 2, names  # the second model did not overwrite the first
    assert len(_graph_numbers(names, r"backward-graph-(\d+)-program\.s")) == 2, names
    for n in programs:
        assert any(re.fullmatch(rf"forward-graph-{n}-\d\d-[a-z_0-9]+\.ir", m) for m in names)
    first = (dump / f"forward-graph-{programs[0]}-program.s").read_text()
    assert first.strip()
    # a cache hit writes the program too
    for p in dump.iterdir():
        p.unlink()
    _fresh()
    _train_once(nn.Sequential(nn.Linear(8, 16), nn.ReLU()), x)
    assert trnc.stats()["hits"] == 2
    names = sorted(p.name for p in dump.iterdir())
    hit = _graph_numbers(names, r"forward-graph-(\d+)-program\.s")
    assert len(hit) == 1, names
    assert (dump / f"forward-graph-{hit[0]}-program.s").read_text() == first


def test_dump_dir_that_cannot_be_created_is_reported(private_cache, monkeypatch):
    blocker = private_cache / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TRNC_DUMP_DIR", str(blocker / "dumps"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(nn.Linear(8, 4), backend="neuron", dynamic=False)(torch.randn(2, 8))
    s = trnc.stats()
    assert out.shape == (2, 4) and s["forward"] == 1  # the compile went on
    msgs = [str(w.message) for w in caught if "TRNC_DUMP_DIR" in str(w.message)]
    # once per graph (a cached compile builds the backward with the forward),
    # not once per pass
    graphs = {m.split(")")[0] for m in msgs}
    assert len(msgs) == len(graphs) == s["forward"] + s["backward"], msgs
    assert all(f"cannot create directory '{blocker / 'dumps'}'" in m for m in msgs)


def test_dynamic_shape_error_lists_every_symbolic_dim():
    def f(x, y):
        return (x * 2).sum() + (y + 1).sum()

    x, y = torch.randn(4, 6), torch.randn(3, 5)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(x, 1)
    torch._dynamo.mark_dynamic(y, 1)
    with pytest.raises(Exception) as info:
        torch.compile(f, backend="neuron")(x, y)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.DynamicShapeError)
    msg = str(err)
    found = re.findall(r"\('(x|y)'\) has a symbolic size in dim (\d)", msg)
    assert sorted(found) == [("x", "0"), ("x", "1"), ("y", "1")], msg
    assert msg.count("dynamic=False") == 1


def test_unknown_log_level_is_warned_about(monkeypatch, capsys):
    monkeypatch.setenv("TRNC_LOG", "verbose-please")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            _fresh()
            torch.compile(nn.Linear(8, 4), backend="neuron", dynamic=False)(torch.randn(2, 8))
    msgs = [str(w.message) for w in caught if "TRNC_LOG" in str(w.message)]
    assert len(msgs) == 1, msgs  # once per value, not once per graph
    assert "'verbose-please' is not a log level" in msgs[0] and "info" in msgs[0]
    assert "trnc:" not in capsys.readouterr().err  # logged as the default level
    monkeypatch.setenv("TRNC_LOG", "INFO")  # known levels, any case: no warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fresh()
        torch.compile(nn.Linear(8, 4), backend="neuron", dynamic=False)(torch.randn(2, 8))
    assert not [w for w in caught if "TRNC_LOG" in str(w.message)]
    assert "forward graph" in capsys.readouterr().err
