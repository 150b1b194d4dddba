"""docs/operators.md is generated from the C op table (`make docs`)."""

from __future__ import annotations

from trnc import _trnc


def test_operators_md_is_current(repo):
    path = repo / "docs" / "operators.md"
    assert path.exists(), "docs/operators.md missing: run `make docs`"
    assert path.read_text() == _trnc.ops_markdown(), \
        "docs/operators.md is stale: run `make docs` and commit it"


def test_dtypes_md_states_the_int64_policy(repo):
    text = (repo / "docs" / "dtypes.md").read_text()
    for word in ("int64", "int32", "range check", "float64", "UserWarning", "complex",
                 "sparse", "nested"):
        assert word in text
