"""Differential test of the host backend: the same compiled programs run on the
interpreter (TRNC_SIM=interp) and as JIT-compiled host code (TRNC_SIM=jit) in
one process, and every output and gradient must be bit-identical; the results
also match eager. TRNC_SIM is read on every run, so one compiled callable
serves both engines. TRNC_SIM=check (both engines on every run, any differing
byte an error) covers the programs a model compiles in one go, and reruns the
op sweep's float32 cases and part of the model suite (test_suite_under_check).
The C suite's programs run the same way (ctest's *_jit tests).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import trnc
from trnc import examples


def _compile(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


@pytest.fixture(autouse=True)
def _restore_engine():
    old = os.environ.get("TRNC_SIM")
    yield
    if old is None:
        os.environ.pop("TRNC_SIM", None)
    else:
        os.environ["TRNC_SIM"] = old


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def _assert_bit_identical(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape
            assert torch.equal(_bits(x), _bits(y)), (x, y)


def _run(fn, args, params, engine):
    """Outputs and gradients (of params and of args that require grad) of one
    call + backward with TRNC_SIM=engine."""
    os.environ["TRNC_SIM"] = engine
    for p in params:
        p.grad = None
    for a in args:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            a.grad = None
    out = fn(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    diff = [o for o in outs if o.requires_grad]
    if diff:
        sum(o.float().sum() for o in diff).backward()
    grads = [p.grad for p in params]
    grads += [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return [o.detach().clone() for o in outs], [g.clone() if g is not None else None for g in grads]


def _differential(fn, args, params=(), *, eager=None, rtol=1e-5, atol=1e-5):
    before = trnc.stats()["graphs"]
    cfn = _compile(fn)
    want = _run(eager or fn, args, list(params), "interp")
    interp = _run(cfn, args, list(params), "interp")
    jit = _run(cfn, args, list(params), "jit")
    assert trnc.stats()["graphs"] > before, "trnc compiled no graph"
    _assert_bit_identical(interp[0], jit[0])
    _assert_bit_identical(interp[1], jit[1])
    for g, w in zip(interp[0], want[0]):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
    # both engines again in one run, compared byte for byte in C
    os.environ["TRNC_SIM"] = "check"
    check = _run(cfn, args, list(params), "check")
    _assert_bit_identical(interp[0], check[0])


def test_mlp_training_step():
    model, args = examples.mlp_example(batch=4)
    _differential(model, args, list(model.parameters()))


def test_cnn_training_step():
    model, (x,) = examples.cnn_example(batch=2, size=8)
    _differential(model, (x,), list(model.parameters()))


def test_gpt_decoder_training_step():
    model, (idx,) = examples.gpt_decoder_example(batch=2, seq=13, d_model=32)
    _differential(model, (idx,), list(model.parameters()), atol=1e-4)


def test_gpt_decoder_bf16_autocast():
    model, (idx,) = examples.gpt_decoder_example(batch=2, seq=9, d_model=32)

    def f(i):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(i)

    _differential(f, (idx,), list(model.parameters()), rtol=5e-2, atol=0.25)


def test_bf16_matmul_larger_than_one_tile():
    torch.manual_seed(0)
    a = torch.randn(200, 300, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(300, 260, dtype=torch.bfloat16, requires_grad=True)
    _differential(lambda a, b: a @ b, (a, b), rtol=2e-2, atol=0.5)


def _sequential_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b with fp32 products added to an fp32 accumulator for k = 0, 1,
    ..., K-1 in order (TensorE's order: PSUM accumulation across K tiles),
    rounded to a's dtype once at the end."""
    a32, b32 = a.float(), b.float()
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[k:k + 1, :]
    return acc.to(a.dtype)


def _mm_on_both_engines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b compiled once and run on the interpreter and on the JIT; asserts
    the two bit-identical and returns the result."""
    f = _compile(lambda a, b: a @ b)
    os.environ["TRNC_SIM"] = "interp"
    interp = f(a, b)
    os.environ["TRNC_SIM"] = "jit"
    _assert_bit_identical([interp], [f(a, b)])
    return interp


# (M, K, N): K one element, one short of and one past a 128-partition tile;
# M, N one element, 127, 129, 513 (past a 512-column moving tile)
MM_SHAPES = [(1, 1, 1), (127, 129, 513), (129, 127, 1), (513, 2, 129)]


@pytest.mark.parametrize("m,k,n", MM_SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in MM_SHAPES])
def test_bf16_matmul_edge_shapes_match_sequential_fp32(m, k, n):
    """Interpreter and JIT bit for bit, and both equal to the fp32
    accumulation in k order, rounded to bf16 (torch computes the reference)."""
    torch.manual_seed(m * 7 + k * 3 + n)
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(k, n, dtype=torch.bfloat16)
    interp = _mm_on_both_engines(a, b)
    torch.testing.assert_close(interp, _sequential_mm(a, b), rtol=0, atol=0)


def test_bf16_matmul_nan_inf_subnormal_operands():
    """NaN, infinities, signed zeros and bf16 subnormals among ordinary
    values (fused multiply-adds must not run where they would differ)."""
    torch.manual_seed(3)
    m, k, n = 127, 129, 129
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(k, n, dtype=torch.bfloat16)
    specials = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 2.0 ** -130, -3 * 2.0 ** -133,
                             2.0 ** -126, 2.0 ** 100], dtype=torch.bfloat16)
    a.view(-1)[torch.arange(0, m * k, 997)] = specials.repeat(m * k // 997 // 8 + 1)[: len(range(0, m * k, 997))]
    b[:, 5] = 2.0 ** -120  # column 5: subnormal products of ordinary a
    b[7, :] = 2.0 ** 120  # row 7: products past the fp32 range for large a
    interp = _mm_on_both_engines(a, b)
    torch.testing.assert_close(interp, _sequential_mm(a, b), rtol=0, atol=0, equal_nan=True)


ACTIVATIONS = {
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp, "erf": torch.erf,
    "softplus": F.softplus, "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1), "sin": torch.sin,
    "log": lambda x: torch.log(x.abs() + 0.5), "sign": torch.sign, "pow": lambda x: x.abs() ** 1.7,
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_forward_backward(name):
    torch.manual_seed(0)
    x = (torch.randn(7, 33) * 3).requires_grad_()
    _differential(ACTIVATIONS[name], (x,), rtol=1e-5, atol=1e-5)


def test_reductions_with_nan_and_softmax_layernorm():
    torch.manual_seed(0)
    x = torch.randn(6, 50)
    x[2, 7] = float("nan")

    def f(x):
        return (x.amax(dim=1), x.amin(dim=0), x.sum(dim=1), torch.softmax(x, dim=-1),
                F.layer_norm(x, (50,)), x.abs().amax(dim=1))

    _differential(f, (x,))


def test_masks_compares_and_casts():
    torch.manual_seed(0)
    x = torch.randn(5, 40)

    def f(x):
        m = torch.triu(torch.ones(5, 40, dtype=torch.bool))
        y = torch.where(m & (x > 0), x, -x)
        return (y, (x >= 0.5).to(torch.int32) * 3, x.to(torch.float16), x.to(torch.bfloat16),
                torch.clamp(x, -0.5, 0.5), torch.arange(40) * x[0])

    _differential(f, (x,))


def test_embedding_gather_scatter():
    torch.manual_seed(0)
    emb = nn.Embedding(30, 12)
    idx = torch.randint(0, 30, (4, 9))
    idx[0, :3] = 5  # duplicates accumulate in the backward scatter
    _differential(emb, (idx,), list(emb.parameters()))


def test_gather_out_of_range_same_error_on_both_engines():
    x = torch.randn(2, 5)
    i = torch.tensor([[0, 9], [1, 2]])
    f = _compile(lambda x, i: torch.gather(x, 1, i))
    msgs = []
    for engine in ("interp", "jit", "check"):
        os.environ["TRNC_SIM"] = engine
        with pytest.raises(trnc.ExecutionError) as ei:
            f(x, i)
        msgs.append(str(ei.value))
    assert msgs[0] == msgs[1] == msgs[2]
    assert "index 9 " in msgs[0] and "outside the 5 rows" in msgs[0]


def test_unknown_engine_is_a_clear_error():
    f = _compile(lambda x: x + 1)
    x = torch.randn(4)
    f(x)
    os.environ["TRNC_SIM"] = "fast"
    with pytest.raises(trnc.ExecutionError, match=r"TRNC_SIM=fast: expected interp"):
        f(x)


def test_default_engine_compiles_once_the_interpreter_paid_for_it():
    """Unset TRNC_SIM: the first runs interpret; once the interpreter time
    reaches the expected JIT compile time (TRNC_JIT_AFTER_MS overrides it) the
    program is compiled once, reported in last_report()["jit_s"] and
    stats()["jit_compiles"] / ["jit_s"], and later runs give the same bits."""
    os.environ.pop("TRNC_SIM", None)
    old = os.environ.get("TRNC_JIT_AFTER_MS")
    os.environ["TRNC_JIT_AFTER_MS"] = "1e9"  # never within this test
    try:
        f = _compile(lambda x: torch.tanh(x) * 3 + 1)
        x = torch.randn(4, 40)
        first = f(x)
        before = trnc.stats()
        for _ in range(3):
            assert torch.equal(_bits(f(x)), _bits(first))
        assert trnc.stats()["jit_compiles"] == before["jit_compiles"]
        assert trnc.last_report()["jit_s"] == 0.0
        os.environ["TRNC_JIT_AFTER_MS"] = "0"  # the next run compiles
        assert torch.equal(_bits(f(x)), _bits(first))
        after = trnc.stats()
        assert after["jit_compiles"] == before["jit_compiles"] + 1
        rep = trnc.last_report()
        assert 0.0 < rep["jit_s"] <= after["jit_s"] - before["jit_s"] + 1e-9
        for _ in range(2):  # compiled once
            assert torch.equal(_bits(f(x)), _bits(first))
        assert trnc.stats()["jit_compiles"] == after["jit_compiles"]
        torch.testing.assert_close(first, torch.tanh(x) * 3 + 1)
    finally:
        if old is None:
            os.environ.pop("TRNC_JIT_AFTER_MS", None)
        else:
            os.environ["TRNC_JIT_AFTER_MS"] = old


# Python suites rerun with TRNC_SIM=check: every program run executes on the
# interpreter and on the JIT's host code, outputs compared byte for byte in C
# (a difference is TRNC_ERR_INTERNAL, so the child's test fails with an
# ExecutionError). TRNC_DEBUG=1 logs each program the JIT compiles, which
# shows the JIT did run. The op sweep's float32 cases cover every lowered op
# (forward and backward); the models cover attention, norms, embeddings,
# convolutions and their training steps.
CHECK_SUITES = {
    "op_sweep_f32": ("tests/python/test_op_sweep.py", "f32", 150),
    "models": ("tests/models/test_transformers.py",
               "gpt2-default or llama-default or resnet-default or (inference and bert)", 4),
}


@pytest.mark.parametrize("suite", sorted(CHECK_SUITES))
def test_suite_under_check(suite, repo):
    path, select, min_passed = CHECK_SUITES[suite]
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRNC_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "PYTEST_ADDOPTS",
                        "TRNC_JIT_AFTER_MS")}
    env.update(TRNC_SIM="check", TRNC_DEBUG="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                        str(repo / path), "-k", select],
                       env=env, capture_output=True, text=True, timeout=3000, cwd=repo)
    tail = r.stdout[-6000:] + r.stderr[-3000:]
    assert r.returncode == 0, tail
    passed = re.search(r"(\d+) passed", r.stdout)
    assert passed and int(passed.group(1)) >= min_passed, tail
    jitted = len(re.findall(r"instructions compiled to host code", r.stdout + r.stderr))
    assert jitted >= min_passed, (jitted, tail)
    assert "TRNC_SIM=check:" not in r.stdout + r.stderr, tail


_WARM_SCRIPT = r"""
import json, os, sys, torch
import trnc
f = torch.compile(lambda x: torch.tanh(x) * 3 + 1, backend="neuron", dynamic=False)
x = torch.arange(160, dtype=torch.float32).reshape(4, 40) / 40 - 2
y = f(x)
torch.testing.assert_close(y, torch.tanh(x) * 3 + 1)
s, r = trnc.stats(), trnc.last_report()
print(json.dumps({"bits": y.view(torch.int32).tolist(), "jit_compiles": s["jit_compiles"],
                  "jit_s": r["jit_s"], "hits": s["hits"], "graphs": s["graphs"]}))
"""


def test_warm_process_loads_stored_host_code(tmp_path):
    """A process whose programs the JIT compiled stores their object code in
    the cache at exit; the next process on this host loads it on the first
    run (no compile), with the same bits; a cache entry whose host code is
    for another CPU would be a miss (tests/c/test_exec.c covers that)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRNC_SIM", "TRNC_JIT_AFTER_MS")}
    env.update(TRNC_CACHE_DIR=str(tmp_path / "cache"),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))

    def run(**extra):
        r = subprocess.run([sys.executable, "-c", _WARM_SCRIPT], env={**env, **extra},
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        import json
        return json.loads(r.stdout.strip().splitlines()[-1])

    cold = run(TRNC_SIM="jit")
    assert cold["graphs"] >= 1 and cold["jit_compiles"] >= 1 and cold["jit_s"] > 0
    warm = run()  # default engine: stored code for this host runs from the first run
    assert warm["hits"] >= 1, warm
    assert warm["jit_compiles"] == 0, warm
    assert warm["jit_s"] > 0, warm  # the load
    assert warm["bits"] == cold["bits"]
