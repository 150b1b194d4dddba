"""tests/golden: the serialized graphs the C tests read are current, and the
C library reproduces the expected IR text for each of them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from trnc import pipeline

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PBS = sorted(GOLDEN.glob("*.pb"))


def _generate_module():
    spec = importlib.util.spec_from_file_location("golden_generate", GOLDEN / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["golden_generate"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_goldens_exist_and_are_small():
    names = {p.stem for p in PBS}
    for model in ("mlp", "cnn", "gpt"):
        for kind in ("forward", "backward"):
            assert f"{model}_{kind}" in names
    for p in PBS:
        assert p.stat().st_size < 200 * 1024, p


@pytest.mark.parametrize("path", PBS, ids=[p.stem for p in PBS])
def test_golden_lowers_to_expected_text(path):
    lowered = pipeline.lower(path.read_bytes(), path.stem, warn=False)
    txt = path.with_suffix(".txt")
    assert txt.exists(), f"{txt.name} missing: run tests/golden/generate.py"
    assert lowered.text().rstrip("\n") == txt.read_text().rstrip("\n")


def test_goldens_are_current():
    gen = _generate_module()
    for model in ("mlp", "gpt"):
        for kind, data in gen.capture(model).items():
            assert (GOLDEN / f"{model}_{kind}.pb").read_bytes() == data, \
                f"{model}_{kind}.pb is stale: run tests/golden/generate.py"
