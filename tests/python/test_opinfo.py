"""PyTorch's OpInfo database through trnc (as TorchInductor's
test_torchinductor_opinfo.py): every op_db entry's first float32 CPU sample
compiled with torch.compile(backend="neuron", dynamic=False) against eager,
forward and input gradients (opinfo_run.py says how each outcome is decided).

The expected list, opinfo_expected.py, names every entry phase that does not
pass and why: REFUSED holds the reason of trnc's UnsupportedOperatorError,
UNTRACED why trnc never sees a graph. A refusal with another reason, a pass of
a listed phase (strict: take it off the list), or any wrong value, crash,
GraphImportError or CompilerError fails the test.

Default (``make test``): every SUBSET_STRIDE-th entry (59 of 702). TRNC_OPINFO=full
(``make opinfo``): every entry; TRNC_OPINFO_SHARD=i/n runs the entries whose
index is i mod n (make opinfo runs one shard per core). TRNC_OPINFO_REPORT=FILE
appends one JSON line per entry phase (opinfo_report.py turns the lines into
the pass rates and a new expected list).
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

FULL = os.environ.get("TRNC_OPINFO", "").strip().lower() in ("1", "full", "all", "yes")
SHARD = os.environ.get("TRNC_OPINFO_SHARD", "")
REPORT = os.environ.get("TRNC_OPINFO_REPORT", "")
SUBSET_STRIDE = 12
PHASES = ("forward", "grad")


def _selected():
    if not has_extension():
        return []
    import opinfo_run

    sel = opinfo_run.entries()
    if SHARD:
        i, n = (int(v) for v in SHARD.split("/"))
        sel = [e for k, e in enumerate(sel) if k % n == i]
    elif not FULL:
        sel = sel[::SUBSET_STRIDE]
    return sel


_ENTRIES = _selected()


def _expected(key: str, phase: str):
    import opinfo_expected as X

    if (key, phase) in X.REFUSED:
        return "refused", X.REFUSED[(key, phase)]
    if (key, phase) in X.UNTRACED:
        return "untraced", X.UNTRACED[(key, phase)]
    return "pass", ""


@pytest.fixture(scope="module", autouse=True)
def _quiet_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("key,op", _ENTRIES, ids=[k for k, _ in _ENTRIES])
def test_opinfo(key, op, phase):
    import opinfo_run

    got = (opinfo_run.run_forward if phase == "forward" else opinfo_run.run_grad)(op)
    if REPORT:
        with open(REPORT, "a") as f:
            f.write(json.dumps({"entry": key, "phase": phase, "outcome": got.kind,
                                "reason": got.reason}) + "\n")
    want_kind, want_reason = _expected(key, phase)
    assert got.kind != "bug", f"{key} {phase}: {got.reason}"
    assert (got.kind, got.reason) == (want_kind, want_reason), (
        f"{key} {phase}: {got.kind} ({got.reason or 'no reason'}), the expected list says "
        f"{want_kind} ({want_reason or 'no reason'}): update tests/python/opinfo_expected.py "
        f"(python tests/python/opinfo_report.py --write REPORT)")
