"""``trnc precompile`` (issue 7): compile-only mode, the bucket table, and a
deployment in a fresh process that compiles nothing — before and after
``trnc cache export`` / ``clear`` / ``import``."""

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
from trnc import precompile as tp
from trnc.cli import main as cli_main

from conftest import REPO, has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="C extension not built")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("TRNC_CACHE_DIR", str(d))
    for k in ("TRNC_CACHE", "TRNC_TARGET", "TRNC_LOG", "TRNC_CACHE_MAX_BYTES"):
        monkeypatch.delenv(k, raising=False)
    return d


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("??/??/*.trnc"))


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_compile_only_option(cache_dir):
    m = mlp()
    x = torch.randn(4, 8)
    with torch.no_grad():
        y = torch.compile(m, backend="neuron", dynamic=False,
                          options={"compile_only": True})(x)
    # compiled and stored, not run: zeros of the right shape, dtype and strides
    assert y.shape == (4, 4) and y.dtype == torch.float32 and y.stride() == (4, 1)
    assert not y.any()
    assert trnc.stats()["compiles"] == 1 and len(entries(cache_dir)) == 1
    torch._dynamo.reset()
    with torch.no_grad():
        y = torch.compile(m, backend="neuron", dynamic=False)(x)   # the real thing: a hit
    torch.testing.assert_close(y, m(x), rtol=1e-4, atol=1e-5)
    assert trnc.stats()["hits"] == 1 and trnc.stats()["compiles"] == 1
    # compile-only again: torch's AOTAutogradCache has the entry now, and the
    # graph it loads does not run either
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    hits = counters["aot_autograd"]["autograd_cache_hit"]
    with torch.no_grad():
        z = torch.compile(m, backend="neuron", dynamic=False,
                          options={"compile_only": True})(x)
    assert counters["aot_autograd"]["autograd_cache_hit"] == hits + 1
    assert z.shape == (4, 4) and not z.any()
    assert trnc.stats()["hits"] == 2 and trnc.stats()["compiles"] == 1


def test_precompile_inference_from_file(cache_dir, tmp_path):
    f = tmp_path / "factory.py"
    f.write_text(textwrap.dedent("""
        import torch
        from trnc.buckets import BucketSpec, Input

        def make():
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                        torch.nn.Linear(16, 4))
            return model, {"inputs": [{"name": "x", "dims": ["batch", 8]}],
                           "buckets": {"batch": [2, 16]}}
    """))
    res = tp.precompile(f"{f}:make", progress=False)
    assert [r.label for r in res] == ["batch=2", "batch=16"]
    assert all(r.graphs == {"inference": 1} and (r.hits, r.misses) == (0, 1) and not r.error
               for r in res), res
    assert all(r.est_time_s > 0 and r.target == "trn2" for r in res)
    again = tp.precompile(f"{f}:make", progress=False)
    assert all((r.hits, r.misses, r.compiles) == (1, 0, 0) for r in again), again
    table = tp.format_table(again)
    assert "est. trn2/call" in table and "1 inf" in table and "2 hit, 0 miss" in table


def test_precompile_cli_errors(cache_dir, capsys):
    assert cli_main(["precompile", "no_such_module_xyz:f"]) == 2
    assert "No module named" in capsys.readouterr().err
    assert cli_main(["precompile", "trnc.examples:gpt_buckets", "--target", "trn9"]) == 2
    assert "unknown target" in capsys.readouterr().err


DEPLOY = textwrap.dedent("""
    import json, torch, trnc
    from trnc import examples

    torch.compiler.set_default_backend("neuron")
    model, spec = examples.gpt_buckets()
    compiled = torch.compile(model)            # dynamic left at its default
    torch.manual_seed(1)
    for sizes in spec.combinations():
        b, t = sizes["batch"], sizes["seq"]
        idx = torch.randint(0, 64, (b, t))
        targets = torch.randint(0, 64, (b, t))
        loss = compiled(idx, targets)
        torch.testing.assert_close(loss, model(idx, targets), rtol=1e-4, atol=1e-4)
        loss.backward()
    from torch._dynamo.utils import counters
    print(json.dumps({**trnc.stats(), "aot": dict(counters["aot_autograd"])}))
""")


def deploy(env: dict[str, str]) -> dict[str, int]:
    r = subprocess.run([sys.executable, "-c", DEPLOY], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_precompile_train_buckets_then_deploy(cache_dir, tmp_path):
    env = {**os.environ, "TRNC_CACHE_DIR": str(cache_dir),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    r = subprocess.run([sys.executable, "-m", "trnc.cli", "precompile",
                        "trnc.examples:gpt_buckets", "--train", "--jobs", "2"],
                       env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("batch=")]
    assert [ln.split("  ")[0].strip() for ln in rows] == [
        f"batch={b} seq={s}" for b in (1, 4) for s in (32, 64, 128)]
    assert all("1 fw + 1 bw" in ln and "0 hit, 2 miss" in ln for ln in rows), r.stdout
    assert "trnc precompile" in r.stderr and "6/6" in r.stderr       # the progress bar
    assert "6 of 6 buckets compiled for training" in r.stdout
    assert len(entries(cache_dir)) == 12                              # 6 x (forward, backward)

    # a fresh process running the six shapes compiles nothing; precompile
    # stored AOTAutogradCache entries too, and the first shape traces no
    # joint graph. (torch's key of a later shape depends on what the process
    # traced before: node names and example-input metadata of the graph
    # dynamo re-traces for it, so a shape another worker precompiled misses
    # there and only trnc's artifact cache serves it.)
    st = deploy(env)
    assert (st["compiles"], st["misses"], st["hits"], st["errors"]) == (0, 0, 12, 0), st
    assert (st["forward"], st["backward"]) == (6, 6)
    aot = st["aot"]
    assert aot.get("autograd_cache_hit", 0) >= 1, aot
    assert aot.get("autograd_cache_hit", 0) + aot.get("autograd_cache_miss", 0) == 6, aot

    # ship it: export -> clear -> import -> again nothing to compile
    bundle = tmp_path / "buckets.trnc"
    assert cli_main(["cache", "export", str(bundle)]) == 0
    assert cli_main(["cache", "clear"]) == 0
    assert entries(cache_dir) == []
    assert cli_main(["cache", "import", str(bundle)]) == 0
    assert len(entries(cache_dir)) == 12
    st = deploy(env)
    assert (st["compiles"], st["misses"], st["hits"], st["errors"]) == (0, 0, 12, 0), st
