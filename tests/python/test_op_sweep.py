"""The op sweep: every line of trnc's operator table (ir/ops.def), for every
dtype it claims among f32 bf16 f16 i32 i64 bool, over 0-d, size-1, odd,
non-contiguous and broadcast inputs, called as its aten OpOverload, compiled
with torch.compile(backend="neuron", dynamic=False) and compared with eager
(in the style of ggml's test-backend-ops). Samples: op_sweep_samples.py.

* Values: ints and bools exact; floats per dtype (TOL: f32 1e-5 rel, bf16
  1.6e-2, f16 1e-3; the absolute tolerance is scaled by the largest |result|
  so accumulating ops are judged relative to their outputs' size).
* Every case must compile with trnc (trnc.stats() compiles+hits grow, so a
  graph break cannot make it eager-vs-eager) and the op must reach trnc's
  importer (the serialized graph names its aten target), except the
  NOT_REACHED lines, which say what reaches trnc instead.
* A refusal passes only as an UnsupportedOperatorError whose every reason is
  a documented limit (INT_POLICY, REFUSALS). GraphImportError, CompilerError,
  any other error or a wrong value fails. Open bugs: XFAIL (strict).
* Integer inputs of arithmetic samples go through a clamp in the graph first
  (values unchanged): graph inputs may be anywhere in int32 under
  docs/dtypes.md, so without it trnc rightly refuses integer products and
  fp32-path integer ops (division, reductions) and the sweep would test
  nothing there.

Default (``make test``): a fixed subset (default_subset: up to 4 samples per
op for f32, 2 per other dtype), each (op, dtype) compiled as one graph.
TRNC_OP_SWEEP=full (``make op-sweep``) runs every sample alone, plus empty
tensors. TRNC_OP_SWEEP_REPORT=FILE appends one JSON line per case/sample.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import op_sweep_samples as S
from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")

FULL = os.environ.get("TRNC_OP_SWEEP", "").strip().lower() in ("1", "full", "all", "yes")
REPORT = os.environ.get("TRNC_OP_SWEEP_REPORT", "")
INT_BOUND = 1000


def _cases():
    """Default: one case per (op, dtype), its subset compiled as one graph
    (a failing graph is rerun sample by sample to name the failing ones), and
    one more case for the subset's XFAIL-listed samples. Full: one case per
    sample."""
    if not has_extension():
        return []
    cases = []
    for op in S.table():
        n = 0
        for dtype in op.dtypes:
            all_s = S.samples(op, dtype, FULL)
            picked = all_s if FULL else S.default_subset(op, dtype, all_s)
            xf = [s for s in picked if S.xfail_reason(op, dtype, s.tag)]
            rest = [s for s in picked if s not in xf]
            dt = S.SHORT[dtype]
            if FULL:
                groups = [(s.tag, (s.tag,)) for s in picked]
            else:
                groups = [("xfail", tuple(s.tag for s in xf))] if xf else []
                if rest:
                    groups.append((None, tuple(s.tag for s in rest)))
            for name, tags in groups:
                cid = f"{op.target}-{dt}" + (f"-{name}" if name else "")
                cases.append(pytest.param(op, dtype, tags, id=cid))
                n += 1
        if n == 0:
            cases.append(pytest.param(op, None, (), id=f"{op.target}-nosamples"))
    return cases


@pytest.fixture(scope="module", autouse=True)
def _quiet_float64_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _samples(op, dtype, tags) -> list[S.Sample]:
    by_tag = {s.tag: s for s in S.samples(op, dtype, FULL)}
    return [by_tag[t] for t in tags]


def _flatten_args(obj, tensors):
    """obj with every tensor replaced by ('__t', i); tensors collected."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj)
        return ("__t", len(tensors) - 1)
    if isinstance(obj, list):
        return [_flatten_args(o, tensors) for o in obj]
    if isinstance(obj, dict):
        return {k: _flatten_args(v, tensors) for k, v in obj.items()}
    return obj


def _rebuild(obj, ts):
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "__t":
        return ts[obj[1]]
    if isinstance(obj, list):
        return [_rebuild(o, ts) for o in obj]
    if isinstance(obj, dict):
        return {k: _rebuild(v, ts) for k, v in obj.items()}
    return obj


def make_fn(op: S.OpLine, s: S.Sample):
    tensors: list[torch.Tensor] = []
    args = _flatten_args(list(s.args), tensors)
    kwargs = _flatten_args(dict(s.kwargs), tensors)
    overload = op.overload
    bound = s.bound_ints

    def fn(*ts):
        if bound:
            ts = [torch.ops.aten.clamp.default(t, -INT_BOUND, INT_BOUND)
                  if t.dtype in S.INTS else t for t in ts]
        return overload(*_rebuild(args, ts), **_rebuild(kwargs, ts))

    return fn, tensors


def _outputs(r):
    if isinstance(r, (tuple, list)):
        out = []
        for v in r:
            out.extend(_outputs(v))
        return out
    return [r]


# Table lines whose vectors have an arbitrary sign (LAPACK's choice): both
# outputs are sign-normalized as the OpInfo harness does (opinfo_run.py),
# then every value is compared.
SIGN_FREE = {"LINALG_SVD": "svd", "LINALG_EIGH": "eigh"}


def _sign_free(op, outs):
    import opinfo_run

    norm = opinfo_run._svd_signs(True) if SIGN_FREE[op.id] == "svd" else opinfo_run._eigh_signs
    return list(norm(tuple(outs)))


def _compare(op, s: S.Sample, got, want, inputs):
    g_all, w_all = _outputs(got), _outputs(want)
    assert len(g_all) == len(w_all), f"{len(g_all)} outputs, eager {len(w_all)}"
    if op.id in SIGN_FREE and s.compare == "close":
        g_all, w_all = _sign_free(op, g_all), _sign_free(op, w_all)
    if s.compare in ("uniform", "bernoulli"):
        (g,), (w,) = g_all, w_all
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        u = g.float()
        if s.compare == "uniform":
            assert bool((u >= 0).all() and (u <= 1).all()), "rand outside [0, 1]"
        else:
            assert set(u.unique().tolist()) <= {0.0, 1.0}, "bernoulli not 0/1"
        if g.numel() >= 128 and s.compare == "uniform":
            assert 0.3 < u.mean().item() < 0.7, f"rand mean {u.mean().item():.2f}"
        return
    if s.compare == "dropout":
        out, mask = g_all
        x, p = inputs[0], s.args[1]
        assert mask.dtype == torch.bool and mask.shape == x.shape
        assert out.dtype == x.dtype and out.shape == x.shape
        expect = torch.where(mask, x.float() / (1 - p), torch.zeros(()))
        torch.testing.assert_close(out.float(), expect, rtol=S.TOL[x.dtype][0] * 4,
                                   atol=S.TOL[x.dtype][1])
        if x.numel() >= 64:
            frac = mask.float().mean().item()
            assert 0.3 < frac < 0.7, f"dropout keeps {frac:.2f} of the elements at p=0.5"
        return
    for i, (g, w) in enumerate(zip(g_all, w_all)):
        if w is None or not isinstance(w, torch.Tensor):
            assert g == w or (g is None and w is None), f"output {i}: {g!r}, eager {w!r}"
            continue
        assert isinstance(g, torch.Tensor), f"output {i}: {type(g).__name__}, eager a tensor"
        assert g.shape == w.shape, f"output {i}: shape {tuple(g.shape)}, eager {tuple(w.shape)}"
        assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype}, eager {w.dtype}"
        if s.compare == "meta":
            continue
        if w.dtype.is_floating_point:
            rtol, atol = s.tol or S.TOL.get(w.dtype, S.TOL[torch.float32])
            finite = w[torch.isfinite(w)]
            scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
            torch.testing.assert_close(g, w, rtol=rtol, atol=atol * scale, equal_nan=True,
                                       msg=lambda m, i=i: f"output {i}: {m}")
        else:
            if not torch.equal(g, w):
                bad = (g != w).nonzero()
                first = tuple(bad[0].tolist()) if bad.numel() else ()
                raise AssertionError(
                    f"output {i}: {int((g != w).sum())} of {w.numel()} elements differ, "
                    f"first at {first}: {g[first].item() if first or g.dim() == 0 else g} "
                    f"vs eager {w[first].item() if first or w.dim() == 0 else w}")


def _refusal_reason(op, exc) -> str | None:
    """The documented limit a refusal states, or None if it is not one."""
    import trnc

    inner = exc.inner_exception if isinstance(exc, BackendCompilerFailed) else exc
    if not isinstance(inner, trnc.UnsupportedOperatorError):
        return None
    msgs = [d.get("message", "") for d in inner.diagnostics if d.get("severity") == "error"]
    if not msgs:
        return None
    pats = [S.re.compile(p) for p in S.REFUSALS.get(op.id, [])]
    for m in msgs:
        if S.INT_POLICY.search(m) and ("i32" in m or "i64" in m or "int" in m):
            continue
        if any(p.search(m) for p in pats):
            continue
        return None
    return "; ".join(sorted(set(msgs)))


def _targets_seen():
    import trnc
    from trnc import fx_pb2

    seen = set()
    for rec in trnc.last_graphs():
        pb = fx_pb2.Graph()
        pb.ParseFromString(rec.serialized)
        seen.update(n.target for n in pb.nodes)
    return seen


def _report(case_id, outcome, detail=""):
    if REPORT:
        with open(REPORT, "a") as f:
            f.write(json.dumps({"case": case_id, "outcome": outcome, "detail": detail[:500]}) + "\n")


def _run(op, samples):
    """Compiles the samples as one graph and checks every result. Returns the
    refusal reason if trnc refused within its limits, else None; raises on a
    failure."""
    import trnc

    built = [make_fn(op, s) for s in samples]

    def fn(*ts):
        out, i = [], 0
        for f, inputs in built:
            out.append(f(*ts[i:i + len(inputs)]))
            i += len(inputs)
        return tuple(out)

    flat = [t for _, inputs in built for t in inputs]
    with torch.no_grad():
        want = [f(*inputs) for f, inputs in built]
    before = trnc.stats()
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            got = torch.compile(fn, backend="neuron", dynamic=False)(*flat)
    except Exception as e:  # noqa: BLE001
        why = _refusal_reason(op, e)
        if why is not None:
            return why
        raise
    after = trnc.stats()
    ran = (after["compiles"] + after["hits"]) - (before["compiles"] + before["hits"])
    assert ran >= 1, f"trnc compiled nothing (graph break? eager fallback?): {after}"
    if op.target not in S.NOT_REACHED:
        seen = _targets_seen()
        assert op.target in seen, (f"{op.target} never reached trnc: the graphs hold "
                                   f"{sorted(t for t in seen if t.startswith('aten'))}")
    for s, g, w, (f, inputs) in zip(samples, got, want, built):
        try:
            _compare(op, s, g, w, inputs)
        except AssertionError as e:
            if not _close_to_float64(op, s, f, inputs, g, w):
                raise AssertionError(f"sample {s.tag}: {e}") from None
    return None


def _close_to_float64(op, s, f, inputs, got, want) -> bool:
    """Where eager's bf16/fp16 kernel is the inexact side (prod accumulates
    in bf16 on the CPU), a result within the dtype's tolerance of the op
    computed in float64 from the same inputs (rounded to eager's dtypes)
    passes, as in the shape fuzzer."""
    low = (torch.bfloat16, torch.float16)
    if not any(t.dtype in low for t in inputs):
        return False
    try:
        with torch.no_grad():
            ref = f(*[t.double() if t.dtype in low else t for t in inputs])
        ref = [r.to(w.dtype) if isinstance(r, torch.Tensor) and isinstance(w, torch.Tensor) else r
               for r, w in zip(_outputs(ref), _outputs(want))]
        _compare(op, s, got, ref[0] if len(ref) == 1 and not isinstance(want, (tuple, list)) else ref,
                 inputs)
    except (AssertionError, RuntimeError, TypeError):
        return False
    return True


def _error_text(e) -> str:
    inner = e.inner_exception if isinstance(e, BackendCompilerFailed) else e
    return f"{type(inner).__name__}: {inner}"


@pytest.mark.parametrize("op,dtype,tags", _cases())
def test_op(op, dtype, tags, request):
    cid = request.node.callspec.id
    if dtype is None:
        what = ("no generic sample for its argument kinds "
                f"{op.args!r}: add an entry to OVERRIDES in op_sweep_samples.py"
                if S.needs_override(op) else "its generator returned no sample for any dtype")
        pytest.fail(f"{op.target}: {what}")
    reasons = {S.xfail_reason(op, dtype, t) for t in tags}
    if None not in reasons:       # an XFAIL-listed case (default: all of one op and dtype)
        request.node.add_marker(pytest.mark.xfail(reason="; ".join(sorted(reasons)), strict=True))
    samples = []
    for s in _samples(op, dtype, tags):
        fn, inputs = make_fn(op, s)
        try:
            with torch.no_grad():
                fn(*inputs)
        except Exception as e:  # noqa: BLE001  (arguments eager rejects: not a trnc case)
            _report(f"{cid}[{s.tag}]", "eager-rejects", str(e))
            continue
        samples.append(s)
    if not samples:
        pytest.skip("eager rejects the arguments of every sample")
    try:
        why = _run(op, samples)
    except Exception as batch_err:  # noqa: BLE001
        if len(samples) == 1:
            _report(cid, "fail", _error_text(batch_err))
            raise
        # name the failing samples: each alone
        fails = []
        for s in samples:
            torch._dynamo.reset()
            try:
                _run(op, [s])
            except Exception as e:  # noqa: BLE001
                fails.append(f"[{s.tag}] {_error_text(e)}")
        for f in fails:
            _report(cid, "fail", f)
        if not fails:
            _report(cid, "fail", "only together: " + _error_text(batch_err))
            raise AssertionError("the samples pass alone but fail compiled together: "
                                 + _error_text(batch_err)) from batch_err
        raise AssertionError(f"{len(fails)} of {len(samples)} samples fail:\n"
                             + "\n".join(f[:1500] for f in fails)) from None
    if why is not None and len(samples) > 1:
        # one sample's refusal refuses the graph: run each alone
        for s in samples:
            torch._dynamo.reset()
            w = _run(op, [s])
            _report(f"{cid}[{s.tag}]", "refused" if w else "ok", w or "")
        return
    _report(cid, "refused" if why else "ok", why or "")
