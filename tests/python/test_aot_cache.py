"""Warm starts without aot_autograd (issue 14, aot_cache.py): trnc's forward,
backward and inference graphs go into torch's AOTAutogradCache, so that a
process with a full cache traces no joint graph, partitions nothing and
compiles nothing, and still matches eager (forward and backward); a changed
graph or option misses.

Every test points TRNC_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR at its own
temporary directories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="C extension not built")


@pytest.fixture
def dirs(tmp_path, monkeypatch) -> dict[str, str]:
    d = {"TRNC_CACHE_DIR": str(tmp_path / "trnc"),
         "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    for k, v in d.items():
        monkeypatch.setenv(k, v)
    for k in ("TRNC_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE", "TORCHINDUCTOR_FX_GRAPH_CACHE",
              "TRNC_TARGET", "TRNC_DUMP_IR"):
        monkeypatch.delenv(k, raising=False)
    return d


# One process: a training step (forward + backward) and an inference call of
# a small model, compared with eager; prints what trnc and aot_autograd did.
_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import torch
    import trnc
    import trnc.backend as be
    from torch._dynamo.utils import counters

    calls = {"n": 0}
    orig = be._compile_graph
    def counting(*a, **k):
        calls["n"] += 1
        return orig(*a, **k)
    be._compile_graph = counting
    built = {"n": 0}
    orig_decomps = be.decompositions
    def building():
        built["n"] += 1
        return orig_decomps()
    be.decompositions = building
    if len(sys.argv) > 3:  # another torch build, as the key sees it
        import trnc.aot_cache as ac
        ac._torch_version_key = lambda: sys.argv[3]

    act, options = sys.argv[1], json.loads(sys.argv[2])
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(6, 12), getattr(torch.nn, act)(),
                            torch.nn.Linear(12, 3))
    x = torch.randn(4, 6, requires_grad=True)
    def mutate(a, b):
        a.mul_(2)
        return a + b
    cm = torch.compile(m, backend="trnc", dynamic=False, options=options)
    cmut = torch.compile(mutate, backend="trnc", dynamic=False, options=options)
    out = cm(x)
    grad_fn = type(out.grad_fn).__name__
    out.square().sum().backward()
    got = (out.detach(), x.grad.clone(), [p.grad.clone() for p in m.parameters()])
    x.grad = None
    for p in m.parameters():
        p.grad = None
    ref = m(x)
    ref.square().sum().backward()
    ok = torch.allclose(got[0], ref, atol=1e-5) and torch.allclose(got[1], x.grad, atol=1e-5)
    ok = ok and all(torch.allclose(g, p.grad, atol=1e-5) for g, p in zip(got[2], m.parameters()))
    with torch.no_grad():
        ok = ok and torch.allclose(cm(x), m(x), atol=1e-5)
        dt = getattr(torch, os.environ.get("TEST_MUTATE_DTYPE", "float32"))
        a, b = torch.arange(4.0, dtype=dt), torch.ones(4, dtype=dt)
        r = cmut(a, b)
        ok = ok and a.tolist() == [0.0, 2.0, 4.0, 6.0] and r.tolist() == [1.0, 3.0, 5.0, 7.0]
    print("RESULT " + json.dumps({"ok": bool(ok), "compile_graph_calls": calls["n"],
                                  "stats": trnc.stats(), "decompositions_built": built["n"],
                                  "grad_fn": grad_fn,
                                  "inductor_codegen_imported":
                                      "torch._inductor.codegen.wrapper" in sys.modules,
                                  "inductor_scheduler_imported":
                                      "torch._inductor.scheduler" in sys.modules,
                                  "aot": dict(counters["aot_autograd"])}))
""")


def _run(act: str = "ReLU", options: dict | None = None, torch_version: str | None = None) -> dict:
    p = subprocess.run([sys.executable, "-c", _SCRIPT, act, json.dumps(options or {})] +
                       ([torch_version] if torch_version else []),
                       env=dict(os.environ), capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"child failed (exit {p.returncode}):\n{p.stderr[-4000:]}")


def test_warm_process_compiles_nothing_and_matches_eager(dirs):
    cold = _run()
    assert cold["ok"]
    # forward + backward of the step, inference under no_grad, the mutating function
    assert cold["stats"]["compiles"] == 4 and cold["compile_graph_calls"] == 4
    assert cold["aot"].get("autograd_cache_saved") == 3
    assert list(Path(dirs["TORCHINDUCTOR_CACHE_DIR"]).rglob("*")), "no AOTAutogradCache entry"

    warm = _run()
    assert warm["ok"]
    assert warm["compile_graph_calls"] == 0          # no joint trace, no partition, no compile
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["misses"] == 0
    assert warm["stats"]["hits"] == 4
    assert warm["stats"]["forward"] == 1 and warm["stats"]["backward"] == 1
    assert warm["stats"]["inference"] == 2
    assert warm["aot"].get("autograd_cache_hit") == 3
    assert not warm["aot"].get("autograd_cache_miss")
    # the loaded pair runs through trnc's autograd Function (training.py), as the cold one
    assert cold["grad_fn"] == warm["grad_fn"] == "TrncFunctionBackward"
    # the warm start neither builds the decomposition table nor imports
    # inductor's code generators for torch's key (aot_cache._graph_details_for_trnc)
    assert warm["decompositions_built"] == 0
    assert not warm["inductor_codegen_imported"]
    # nor inductor's scheduler and IR (torch's aot_autograd wrapper imports
    # them for its debug logging: backend._aot_autograd)
    assert not warm["inductor_scheduler_imported"]


def test_changed_graph_or_option_misses(dirs, monkeypatch):
    assert _run()["ok"]
    monkeypatch.setenv("TEST_MUTATE_DTYPE", "float16")  # the mutating function's inputs
    other_dtype = _run()
    assert other_dtype["ok"] and other_dtype["stats"]["compiles"] == 1
    assert other_dtype["aot"].get("autograd_cache_miss") == 1
    assert other_dtype["aot"].get("autograd_cache_hit") == 2
    monkeypatch.delenv("TEST_MUTATE_DTYPE")
    other_graph = _run(act="GELU")   # the model's graph changes, the mutating function's not
    assert other_graph["ok"] and other_graph["stats"]["compiles"] == 3
    assert other_graph["aot"].get("autograd_cache_miss") == 2
    assert other_graph["aot"].get("autograd_cache_hit") == 1
    other_torch = _run(torch_version="torch 0.0.0 git 0 (another build)")
    assert other_torch["ok"] and other_torch["stats"]["compiles"] == 0  # trnc's cache: same programs
    assert other_torch["aot"].get("autograd_cache_miss") == 3
    assert not other_torch["aot"].get("autograd_cache_hit")
    other_option = _run(options={"no_fusion": True})
    assert other_option["ok"] and other_option["stats"]["compiles"] == 4
    assert other_option["aot"].get("autograd_cache_miss") == 3
    assert not other_option["aot"].get("autograd_cache_hit")


def test_lost_artifact_compiles_stored_graph(dirs):
    """An AOTAutogradCache entry whose trnc artifact is gone compiles the
    stored fx.proto bytes again (no trace) and stores the artifact again."""
    assert _run()["ok"]
    for f in Path(dirs["TRNC_CACHE_DIR"]).rglob("*"):
        if f.is_file() and f.suffix not in (".json", ".lock") and "stats" not in f.name:
            f.unlink()
    again = _run()
    assert again["ok"] and again["compile_graph_calls"] == 0
    assert again["aot"].get("autograd_cache_hit") == 3
    assert again["stats"]["compiles"] == 4
    warm = _run()
    assert warm["ok"] and warm["stats"]["compiles"] == 0 and warm["stats"]["hits"] == 4


def test_in_process_hit_records_graphs(dirs):
    def f(x):
        return torch.nn.functional.gelu(x) * 2

    x = torch.randn(5, 7)
    cold = torch.compile(f, backend="trnc", dynamic=False)(x)
    torch._dynamo.reset()
    trnc.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    warm = torch.compile(f, backend="trnc", dynamic=False)(x)
    torch.testing.assert_close(warm, f(x))
    torch.testing.assert_close(cold, warm, rtol=0, atol=0)
    assert counters["aot_autograd"]["autograd_cache_hit"] == 1
    s = trnc.stats()
    assert s["compiles"] == 0 and s["hits"] == 1 and s["inference"] == 1
    rec = trnc.last_graphs()[-1]
    assert rec.kind == "inference" and "gelu" in rec.text and rec.report["cache"] == "hit"


def test_in_process_hit_keeps_the_random_seed_input(dirs):
    # the cached entry's runner finds the rng_seed input in the stored
    # artifact's descriptors: same seed, same mask as the cold compile
    def f(x):
        return torch.nn.functional.dropout(x, 0.5, True)

    x = torch.ones(6, 50)
    torch.manual_seed(3)
    cold = torch.compile(f, backend="trnc", dynamic=False)(x)
    torch._dynamo.reset()
    trnc.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    torch.manual_seed(3)
    warm = torch.compile(f, backend="trnc", dynamic=False)(x)
    assert counters["aot_autograd"]["autograd_cache_hit"] == 1
    assert trnc.stats()["compiles"] == 0
    assert torch.equal(cold, warm) and 0 < int((warm == 0).sum()) < warm.numel()
    assert trnc.last_graphs()[-1].compiled().inputs()[-1]["rng_seed"]


def test_cache_off_traces(dirs, monkeypatch):
    monkeypatch.setenv("TRNC_CACHE", "0")
    from torch._dynamo.utils import counters

    counters.clear()
    x = torch.randn(3)
    out = torch.compile(lambda t: t * 3 + 1, backend="trnc", dynamic=False)(x)
    torch.testing.assert_close(out, x * 3 + 1)
    assert not counters["aot_autograd"].get("autograd_cache_miss")
    assert not counters["aot_autograd"].get("autograd_cache_saved")
    assert trnc.stats()["compiles"] == 1


def test_inputs_sharing_storage_trace(dirs):
    """torch's key does not see inputs aliasing each other: such a compile
    never stores or loads an entry (and the result stays eager's)."""
    from torch._dynamo.utils import counters

    def f(a, b):
        a.mul_(2)
        return a + b

    counters.clear()
    base = torch.arange(8.0)
    ref_base = base.clone()
    out = torch.compile(f, backend="trnc", dynamic=False)(base[:4], base[2:6])
    ref = f(ref_base[:4], ref_base[2:6])
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(base, ref_base)
    assert not counters["aot_autograd"].get("autograd_cache_saved")


def test_exported_bundle_gives_a_warm_start_elsewhere(dirs, monkeypatch, tmp_path, capsys):
    """`trnc cache export` carries the AOTAutogradCache entries of trnc's
    graphs: a process whose caches were filled by `trnc cache import` only
    loads (no trace, no partition, no compile). A tampered entry is rejected."""
    from trnc.cli import main as cli_main

    assert _run()["ok"]
    bundle = tmp_path / "b.trncbundle"
    assert cli_main(["cache", "export", str(bundle)]) == 0
    assert "and 3 AOTAutogradCache entries" in capsys.readouterr().out
    for k in dirs:  # another machine: empty caches
        monkeypatch.setenv(k, str(tmp_path / "elsewhere" / k))
    assert cli_main(["cache", "import", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "imported 4 entries, rejected 0" in out and "imported 3 into" in out
    warm = _run()
    assert warm["ok"] and warm["compile_graph_calls"] == 0
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["hits"] == 4
    assert warm["aot"].get("autograd_cache_hit") == 3
    # one byte of an entry changed: its name is no longer its hash
    data = bytearray(bundle.read_bytes())
    data[data.index(b"TrncOutputCode") + 3] ^= 1
    bundle.write_bytes(bytes(data))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "third"))
    assert cli_main(["cache", "import", str(bundle)]) == 1
    captured = capsys.readouterr()
    assert "rejected 1" in captured.out and "not the hash of a trnc entry" in captured.err
