"""The `trnc` console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trnc
from helpers import run_ir
from trnc import _trnc, examples

TRNC = shutil.which("trnc", path=str(Path(sys.executable).parent)) or "trnc"


def cli(*args, timeout=300):
    return subprocess.run([TRNC, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def mlp_graphs(tmp_path):
    model, args = examples.mlp_example()
    run_ir(model, args)
    paths = {}
    for r in trnc.last_graphs():
        p = tmp_path / f"mlp_{r.kind}.pb"
        p.write_bytes(r.serialized)
        paths[r.kind] = (p, r)
    return paths


def test_dump_prints_ir(mlp_graphs):
    for kind, (path, rec) in mlp_graphs.items():
        p = cli("dump", str(path))
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == rec.text.strip()


def test_dump_summary(mlp_graphs):
    path, rec = mlp_graphs["forward"]
    p = cli("dump", "--summary", str(path))
    assert p.returncode == 0, p.stderr
    assert f"hash={rec.hash}" in p.stdout and f"nodes={rec.summary['nodes']}" in p.stdout


def test_dump_bad_graph(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\xff\xff")
    p = cli("dump", str(bad))
    assert p.returncode == 1
    assert "GraphImportError" in p.stderr and "TRNC_ERR_MALFORMED" in p.stderr
    p = cli("dump", str(tmp_path / "missing.pb"))
    assert p.returncode == 2 and "cannot read" in p.stderr


def test_ops():
    p = cli("ops")
    assert p.returncode == 0, p.stderr
    ops = _trnc.ops()
    assert f"{len(ops)} operators" in p.stdout
    for o in ops[:5]:
        assert o["fx_target"] in p.stdout
    p = cli("ops", "--markdown")
    assert p.returncode == 0 and p.stdout == _trnc.ops_markdown()


def test_version():
    p = cli("version")
    assert p.returncode == 0, p.stderr
    assert f"trnc {trnc.__version__}" in p.stdout and "LLVM" in p.stdout
    assert "torch 2.13.0" in p.stdout


def test_dump_of_an_endless_stream_returns(monkeypatch, capsys):
    from trnc import cli

    monkeypatch.setattr(cli, "MAX_GRAPH_BYTES", 4096)
    assert cli.main(["dump", "/dev/zero"]) == 1
    assert "not a serialized trnc graph" in capsys.readouterr().err
