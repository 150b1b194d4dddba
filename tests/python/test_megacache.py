"""trnc's programs in torch's MegaCache (issue 15):
``torch.compiler.save_cache_artifacts()`` carries them beside Inductor's, and
a fresh process with an empty cache compiles nothing after
``torch.compiler.load_cache_artifacts()``.
"""

from __future__ import annotations

import json
import logging
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

TESTS = Path(__file__).parent

# Process 1 compiles a small training step with trnc (forward and backward
# graphs) and a function with Inductor, and saves the MegaCache blob.
SAVE = textwrap.dedent("""
    import json, sys, torch, trnc
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(3, 8)
    y = torch.compile(m, backend="neuron", dynamic=False)(x)
    y.sum().backward()
    z = torch.compile(lambda t: torch.sin(t) * 2 + 1, backend="inductor", dynamic=False)(x)
    blob, info = torch.compiler.save_cache_artifacts()
    open(sys.argv[1], "wb").write(blob)
    torch.save(m.state_dict(), sys.argv[2])
    print(json.dumps({"stats": trnc.stats(), "trnc": len(info.trnc_artifacts),
                      "inductor": len(info.inductor_artifacts)}))
""")

# Process 2: empty trnc and Inductor caches; loads the blob, then the same
# model (same weights) compiles nothing and matches eager.
LOAD = textwrap.dedent("""
    import json, sys, torch, trnc
    from torch._dynamo.utils import counters
    info = torch.compiler.load_cache_artifacts(open(sys.argv[1], "rb").read())
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    m.load_state_dict(torch.load(sys.argv[2]))
    x = torch.randn(3, 8)
    y = torch.compile(m, backend="neuron", dynamic=False)(x)
    y.sum().backward()
    g = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    want = m(x)
    want.sum().backward()
    z = torch.compile(lambda t: torch.sin(t) * 2 + 1, backend="inductor", dynamic=False)(x)
    print(json.dumps({"stats": trnc.stats(), "trnc": len(info.trnc_artifacts),
                      "inductor": len(info.inductor_artifacts),
                      "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
                      "y_err": (y - want).abs().max().item(),
                      "g_err": max((a - p.grad).abs().max().item()
                                   for a, p in zip(g, m.parameters())),
                      "z_err": (z - (torch.sin(x) * 2 + 1)).abs().max().item()}))
""")


def run(code: str, args: list[str], tmp: Path, name: str, **extra: str) -> dict:
    env = dict(os.environ, TRNC_CACHE_DIR=str(tmp / f"trnc-{name}"),
               TORCHINDUCTOR_CACHE_DIR=str(tmp / f"inductor-{name}"))
    for k in ("TRNC_REMOTE_CACHE", "TRNC_CACHE", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TRNC_SIM",
              "TRNC_JIT_AFTER_MS"):
        env.pop(k, None)
    env.update(extra)
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["stderr"] = p.stderr
    return out


def test_megacache_round_trip(tmp_path):
    blob, weights = str(tmp_path / "mega.bin"), str(tmp_path / "w.pt")
    saved = run(SAVE, [blob, weights], tmp_path, "save")
    assert saved["stats"]["compiles"] == 2 and saved["trnc"] == 2 and saved["inductor"] >= 1
    loaded = run(LOAD, [blob, weights], tmp_path, "load")
    assert loaded["trnc"] == 2 and loaded["inductor"] == saved["inductor"]
    s = loaded["stats"]
    assert s["compiles"] == 0 and s["misses"] == 0 and s["hits"] == 2, s
    assert s["forward"] == 1 and s["backward"] == 1
    assert loaded["fxgraph_hits"] >= 1  # Inductor's part came with it
    assert loaded["y_err"] < 1e-5 and loaded["g_err"] < 1e-5 and loaded["z_err"] < 1e-6
    assert "Failed to un-pickle" not in loaded["stderr"]


# Host code: a process whose programs ran on the JIT saves the blob after
# running them; a process on this host that loads it runs the same programs
# from the stored machine code, compiling nothing, with the same bits.
HOST_SAVE = textwrap.dedent("""
    import json, sys, torch, trnc
    f = torch.compile(lambda x: torch.tanh(x) * 3 + 1, backend="neuron", dynamic=False)
    x = torch.arange(160, dtype=torch.float32).reshape(4, 40) / 40 - 2
    y = f(x)
    blob, info = torch.compiler.save_cache_artifacts()
    open(sys.argv[1], "wb").write(blob)
    print(json.dumps({"bits": y.view(torch.int32).tolist(),
                      "jit_compiles": trnc.stats()["jit_compiles"]}))
""")

HOST_LOAD = textwrap.dedent("""
    import json, sys, torch, trnc
    torch.compiler.load_cache_artifacts(open(sys.argv[1], "rb").read())
    f = torch.compile(lambda x: torch.tanh(x) * 3 + 1, backend="neuron", dynamic=False)
    x = torch.arange(160, dtype=torch.float32).reshape(4, 40) / 40 - 2
    y = f(x)
    s = trnc.stats()
    print(json.dumps({"bits": y.view(torch.int32).tolist(), "jit_compiles": s["jit_compiles"],
                      "compiles": s["compiles"], "hits": s["hits"],
                      "jit_s": trnc.last_report()["jit_s"]}))
""")


def test_megacache_carries_host_code(tmp_path):
    blob = str(tmp_path / "mega.bin")
    saved = run(HOST_SAVE, [blob, ""], tmp_path, "hsave", TRNC_SIM="jit")
    assert saved["jit_compiles"] >= 1
    loaded = run(HOST_LOAD, [blob, ""], tmp_path, "hload")  # another, empty cache
    assert loaded["compiles"] == 0 and loaded["hits"] >= 1, loaded
    assert loaded["jit_compiles"] == 0 and loaded["jit_s"] > 0, loaded  # loaded, not compiled
    assert loaded["bits"] == saved["bits"]


@pytest.fixture
def fresh_mega(tmp_path, monkeypatch):
    from torch.compiler._cache import CacheArtifactManager

    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRNC_REMOTE_CACHE", raising=False)
    with CacheArtifactManager.with_fresh_cache():
        yield tmp_path


def compile_net(x):
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        torch.compile(m, backend="neuron", dynamic=False)(x)


def test_cache_hits_are_recorded_too(fresh_mega):
    """A process whose programs all came from trnc's cache still ships them."""
    x = torch.randn(3, 8)
    compile_net(x)
    from torch.compiler._cache import CacheArtifactManager

    CacheArtifactManager.clear()
    trnc.reset()
    compile_net(x)
    assert trnc.stats()["hits"] == 1 and trnc.stats()["compiles"] == 0
    blob, info = torch.compiler.save_cache_artifacts()
    assert len(info.trnc_artifacts) == 1


def test_bad_megacache_entries_are_rejected_and_logged(fresh_mega, monkeypatch, caplog):
    from trnc.megacache import TrncCacheArtifact

    x = torch.randn(3, 8)
    compile_net(x)
    blob, info = torch.compiler.save_cache_artifacts()
    (hexkey,) = info.trnc_artifacts
    from torch.compiler._cache import CacheArtifactManager

    arts = CacheArtifactManager.deserialize(blob)
    (good,) = arts["trnc"]
    content = good.content
    bad = [TrncCacheArtifact(hexkey, content[:-3]),
           TrncCacheArtifact(hexkey, content[:200] + bytes([content[200] ^ 1]) + content[201:]),
           TrncCacheArtifact("00" * 16, content),
           TrncCacheArtifact("not-a-key", content)]
    monkeypatch.setenv("TRNC_CACHE_DIR", str(fresh_mega / "other"))
    with caplog.at_level(logging.WARNING, logger="trnc.cache"):
        for a in bad:
            a.populate_cache()
    msgs = [r.getMessage() for r in caplog.records if r.name == "trnc.cache"]
    assert len(msgs) == 4 and all("rejected MegaCache entry" in t for t in msgs), msgs
    assert not list((fresh_mega / "other").glob("??/??/*.trnc"))
    good.populate_cache()
    assert len(list((fresh_mega / "other").glob("??/??/*.trnc"))) == 1
    trnc.reset()
    compile_net(x)
    assert trnc.stats()["compiles"] == 0 and trnc.stats()["hits"] == 1
