"""Shared fixtures for trnc's pytest suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


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
