"""Static-shape ergonomics (issue 7): set_default_backend with dynamo's
default dynamic=None, recompile reports, the recompile limit, and the
bucketing helpers and wrapper of trnc.buckets."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import trnc
from trnc import buckets as tb
from trnc import examples

from conftest import has_extension

needs_ext = pytest.mark.skipif(not has_extension(), reason="C extension not built")


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRNC_CACHE", raising=False)
    monkeypatch.delenv("TRNC_TARGET", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def default_neuron():
    prev = torch.compiler.get_default_backend()
    torch.compiler.set_default_backend("neuron")
    yield
    torch.compiler.set_default_backend(prev)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


# --------------------------------------------------------------------------- #
# set_default_backend + dynamic=None


@needs_ext
def test_default_backend_batch_4_8_4(own_cache, default_neuron, capfd, monkeypatch):
    monkeypatch.setenv("TRNC_LOG", "info")
    m = mlp()
    compiled = torch.compile(m)           # backend and dynamic left at their defaults
    with torch.no_grad():
        for i, b in enumerate((4, 8, 4)):
            x = torch.randn(b, 8)
            torch.testing.assert_close(compiled(x), m(x), rtol=1e-4, atol=1e-5)
            if i == 1:
                st = trnc.stats()
                assert (st["inference"], st["compiles"], st["errors"]) == (2, 2, 0), st
    st = trnc.stats()
    # the third call (batch 4 again) compiled nothing: dynamo's static entry served it
    assert (st["graphs"], st["compiles"], st["misses"], st["errors"]) == (2, 2, 2, 0), st
    err = capfd.readouterr().err
    assert "trnc: recompiling Sequential.forward" in err
    assert "input dim 0: 4 -> 8" in err          # names the input and the dim that changed


@needs_ext
def test_default_backend_training(own_cache, default_neuron):
    m = mlp()
    ref = mlp()
    compiled = torch.compile(m)
    for b in (4, 8, 4):
        x = torch.randn(b, 8)
        compiled(x).square().sum().backward()
        ref(x).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    st = trnc.stats()
    assert (st["forward"], st["backward"], st["compiles"]) == (2, 2, 4), st


@needs_ext
def test_dynamic_true_still_fails(own_cache):
    compiled = torch.compile(mlp(), backend="neuron", dynamic=True)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as ei:
        with torch.no_grad():
            compiled(torch.randn(4, 8))
    assert isinstance(ei.value.inner_exception, trnc.DynamicShapeError)


@needs_ext
def test_mark_dynamic_still_fails(own_cache, default_neuron):
    x = torch.randn(4, 8)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as ei:
        with torch.no_grad():
            torch.compile(mlp())(x)
    assert isinstance(ei.value.inner_exception, trnc.DynamicShapeError)


@needs_ext
def test_recompile_limit_warning(own_cache, default_neuron):
    m = mlp()
    compiled = torch.compile(m, recompile_limit=2)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.randn(2, 8))
        assert not [w for w in caught if "recompile_limit" in str(w.message)]
        compiled(torch.randn(3, 8))           # the last version dynamo compiles
        msgs = [str(w.message) for w in caught if "recompile_limit" in str(w.message)]
        assert len(msgs) == 1 and "run eagerly" in msgs[0], msgs
        assert "fail_on_recompile_limit_hit" in msgs[0]
        x = torch.randn(5, 8)
        torch.testing.assert_close(compiled(x), m(x))   # beyond the limit: eager, by torch
    assert trnc.stats()["graphs"] == 2


# --------------------------------------------------------------------------- #
# helpers


def test_bucket_for():
    assert tb.bucket_for(1, [32, 64]) == 32
    assert tb.bucket_for(33, [64, 32]) == 64
    assert tb.bucket_for(64, [32, 64]) == 64
    with pytest.raises(tb.BucketError, match="larger than the largest bucket 64"):
        tb.bucket_for(65, [32, 64])


def test_pad_and_unpad():
    x = torch.arange(6.0).reshape(2, 3)
    p = tb.pad(x, {0: [4], 1: [2, 8]}, value=-1.0)
    assert p.tensor.shape == (4, 8) and p.sizes == (2, 3)
    assert p.mask.sum() == 6 and p.mask[:2, :3].all()
    assert (p.tensor[~p.mask] == -1).all()
    torch.testing.assert_close(tb.unpad(p.tensor, {0: 2, 1: 3}), x)
    same = tb.pad(x, {1: [3]})
    assert same.tensor is x and same.mask.all()


def test_pad_sequences():
    seqs = [torch.tensor([1, 2, 3]), torch.tensor([4])]
    out, lens, mask = tb.pad_sequences(seqs, [4, 8], value=0, batch_buckets=[1, 4])
    assert out.shape == (4, 4) and lens.tolist() == [3, 1, 0, 0]
    assert out[0].tolist() == [1, 2, 3, 0] and out[1].tolist() == [4, 0, 0, 0]
    assert mask.sum() == 4 and mask[0, :3].all() and not mask[2:].any()


def test_spec_validation():
    spec = tb.BucketSpec(inputs=[tb.Input("idx", ("batch", "seq"), torch.int64)],
                         buckets={"batch": [1, 4], "seq": [64, 32]})
    assert spec.combinations() == [{"batch": 1, "seq": 32}, {"batch": 1, "seq": 64},
                                   {"batch": 4, "seq": 32}, {"batch": 4, "seq": 64}]
    ex = spec.example_inputs({"batch": 4, "seq": 32})
    assert ex[0].shape == (4, 32) and ex[0].dtype == torch.int64
    with pytest.raises(tb.BucketError, match="axis 'seq'"):
        spec.bucket({"seq": 100})
    with pytest.raises(tb.BucketError, match="no buckets"):
        tb.BucketSpec(inputs=[tb.Input("x", ("n",))], buckets={"batch": [1]})
    two = tb.BucketSpec.of({"inputs": [{"name": "a", "dims": ["b", 3]},
                                       {"name": "c", "dims": ["b"]}],
                            "buckets": {"b": [2, 4]}})
    with pytest.raises(tb.BucketError, match="another input has 3"):
        two.sizes_of([torch.zeros(3, 3), torch.zeros(2)])


# --------------------------------------------------------------------------- #
# the wrapper on a causal language model


class CausalLM(examples.GPTBlock):
    """The GPT-style block returning logits [B, T, vocab] (no loss)."""

    def forward(self, idx: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(self.positions[:t])
        x = x + self.attn(self.ln1(x))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(self.ln_f(x))


@needs_ext
def test_bucketed_causal_lm_matches_eager(own_cache):
    torch.manual_seed(0)
    lm = CausalLM(vocab=64, d_model=32, n_heads=2, max_len=64).eval()
    spec = tb.BucketSpec(inputs=[tb.Input("idx", ("batch", "seq"), torch.int64)],
                         buckets={"batch": [1, 4], "seq": [16, 32, 64]},
                         outputs=[("batch", "seq", None)])
    model = tb.Bucketed(torch.compile(lm, backend="neuron", dynamic=False), spec)
    shapes = [(3, 20), (1, 5), (4, 32), (2, 17)]
    with torch.no_grad():
        for b, t in shapes:
            idx = torch.randint(0, 64, (b, t))
            got = model(idx)
            assert got.shape == (b, t, 64)
            # padding must not change the logits of the real tokens
            torch.testing.assert_close(got, lm(idx), rtol=1e-4, atol=1e-4)
    st = trnc.stats()
    # (3,20)->(4,32), (1,5)->(1,16), (4,32) reuses (4,32), (2,17)->(4,32): 2 programs
    assert (st["inference"], st["compiles"]) == (2, 2), st
    assert not math.isnan(float(got.sum()))


# --------------------------------------------------------------------------- #
# the README section runs as written


def test_readme_deploying_section(repo, own_cache):
    text = (repo / "README.md").read_text()
    assert "## Deploying with precompiled buckets" in text
    section = text.split("## Deploying with precompiled buckets", 1)[1].split("\n## ", 1)[0]
    for word in ("trnc precompile", "--train", "--jobs", "trnc cache import",
                 "set_default_backend", "recompile_limit", "fail_on_recompile_limit_hit",
                 "DynamicShapeError", "docs/deploying.md"):
        assert word in section, word
    assert (repo / "docs" / "deploying.md").exists()
    if not has_extension():
        return
    code = section.split("```python\n", 1)[1].split("```", 1)[0]   # step 1, as written
    torch.manual_seed(0)
    ns = {"lm": CausalLM(vocab=64, d_model=32, n_heads=2, max_len=128).eval(),
          "idx": torch.randint(0, 64, (3, 50))}
    with torch.no_grad():
        exec(compile(code, "README.md", "exec"), ns)
        assert ns["logits"].shape == (3, 50, 64)
        torch.testing.assert_close(ns["logits"], ns["lm"](ns["idx"]), rtol=1e-4, atol=1e-4)


def test_buckets_reachable_after_plain_import():
    import subprocess
    import sys

    code = "import trnc; print(trnc.buckets.__name__, callable(trnc.buckets.Bucketed))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "trnc.buckets True"
