"""Shared fixtures for trnc's pytest suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The suite never touches the user's artifact cache (~/.cache/trnc): every
# session gets a fresh private one (tests that need their own set it again).
if "TRNC_CACHE_DIR" not in os.environ:
    import tempfile

    _cache_dir = tempfile.mkdtemp(prefix="trnc-test-cache-")
    os.chmod(_cache_dir, 0o700)
    os.environ["TRNC_CACHE_DIR"] = _cache_dir
# nor torch's (inductor's caches, and the AOTAutogradCache entries that hold
# trnc's forward/backward splits: aot_cache.py)
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="trnc-test-inductor-")


# Tests marked `long` (the rest of a size or dtype cross product whose
# representative cases stay in `make test`) run only with TRNC_TESTS=long:
# `make test-long`.
LONG = os.environ.get("TRNC_TESTS", "").strip().lower() == "long"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "long: the rest of a size/dtype cross product; runs with TRNC_TESTS=long (make test-long)")


def pytest_collection_modifyitems(config, items):
    if LONG:
        return
    keep = [it for it in items if it.get_closest_marker("long") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[it for it in items if it.get_closest_marker("long") is not None])
        items[:] = keep


def has_extension() -> bool:
    try:
        from trnc import _trnc  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: no dynamo cache hits, no trnc records."""
    import torch._dynamo

    torch._dynamo.reset()
    try:
        import trnc

        trnc.reset()
    except Exception:  # noqa: BLE001
        pass
    os.environ.pop("TRNC_DUMP_IR", None)
    yield
    torch._dynamo.reset()


@pytest.fixture
def repo() -> Path:
    return REPO


def pytest_terminal_summary(terminalreporter):
    """The shape fuzzer's per-family counts (passed, refused with reasons, failed)."""
    fuzz = sys.modules.get("shape_fuzz")
    if fuzz is None:
        return
    for line in fuzz.summary_lines():
        terminalreporter.write_line(line)
