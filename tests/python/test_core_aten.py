"""Core ATen coverage (tests/python/core_aten.py): how many of torch's
``torch.Tag.core`` overloads trnc's operator table lowers, natively or by its
own decomposition. The floor only rises: a table change that drops a core op
fails here."""

from __future__ import annotations

import pytest

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

CORE_LOWERED_FLOOR = 172


def test_core_aten_coverage_does_not_drop(repo):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(repo / "tests" / "python" / "core_aten.py"), "--json"],
                         check=True, capture_output=True, text=True).stdout
    c = json.loads(out)
    total = sum(len(v) for v in c.values())
    assert total == 189, f"torch 2.13.0 tags 189 overloads core, this torch {total}"
    lowered = len(c["native"]) + len(c["decomposed"])
    assert lowered >= CORE_LOWERED_FLOOR, (
        f"{lowered} core ATen overloads lowered, fewer than {CORE_LOWERED_FLOOR}; "
        f"missing: {c['missing']}")


def test_decomposition_column_reaches_python():
    from trnc import _trnc

    ops = {op["fx_target"]: op for op in _trnc.ops()}
    assert ops["aten.repeat.default"]["decomposition"] == "decomp_repeat"
    assert ops["aten.scatter_reduce.two"]["decomposition"] == "decomp_scatter_reduce"
    assert ops["aten.add.Tensor"]["decomposition"] == ""
