"""Runs one PyTorch OpInfo entry through trnc, as TorchInductor's
test/inductor/test_torchinductor_opinfo.py does for Inductor: every entry of
``torch.testing._internal.common_methods_invocations.op_db``, its first
float32 CPU sample, compiled with ``torch.compile(backend="neuron",
dynamic=False, fullgraph=True)`` and compared with eager; for entries that
support autograd, also the input gradients of the first ``requires_grad``
sample under a fixed random cotangent.

Each phase ("forward", "grad") ends in one outcome:

* ``pass``     trnc compiled the graph(s) (``trnc.stats()`` grew: a forward
               or inference graph, and for "grad" a backward graph too) and
               every result equals eager's (or, where eager's float32 kernel
               is the inexact side, float64's) within tolerance, or is at
               least as accurate as eager's against float64 (TorchInductor's
               rule: _as_accurate_as_eager).
* ``refused``  trnc raised UnsupportedOperatorError; ``reason`` is its error
               diagnostics without source locations (what the expected list
               records).
* ``untraced`` trnc never saw a graph: eager rejects the sample, the op has no
               float32 sample, dynamo cannot trace it in one graph (data-
               dependent output shapes, a Python number result), or the
               entry is not differentiable. Not counted as reaching trnc.
* ``bug``      anything else: a wrong value, GraphImportError, CompilerError,
               ExecutionError or another exception from trnc's compile or run.

Eigenvectors and singular vectors are specified only up to sign (LAPACK's
choice is arbitrary): for the entries of SIGN_FREE both phases run the op
followed by a normalization of each vector's sign (the entry of largest
magnitude made positive; a pair of singular vectors flips with the left
one), in eager and compiled alike, so every value is still compared.

Random ops (those whose eager run calls an ATen op tagged
``nondeterministic_seeded``) and the entries whose values are unspecified
(UNINITIALIZED: torch.empty and its kin) are compared by shape and dtype only.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

RTOL, ATOL = 1e-4, 1e-5
UNINITIALIZED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                 "new_empty_strided"}


def _sign_normalized(u):
    """u [..., m, k] with each column's sign set so that its entry of
    largest magnitude is positive, and those signs [..., 1, k]."""
    if u.numel() == 0:
        return u, torch.ones(u.shape[:-2] + (1, u.shape[-1]), dtype=u.dtype)
    i = u.detach().abs().argmax(-2, keepdim=True)
    s = torch.where(torch.gather(u.detach(), -2, i) < 0, -1.0, 1.0).to(u.dtype)
    return u * s, s


def _eigh_signs(out):
    w, v = out
    return w, _sign_normalized(v)[0]


def _svd_signs(vh_is_rows):
    def norm(out):
        u, s, v = out
        u, sg = _sign_normalized(u)
        k = sg.shape[-1]
        if vh_is_rows:  # linalg.svd's Vh: rows
            v = torch.cat([v[..., :k, :] * sg.mT, v[..., k:, :]], -2) if v.numel() else v
        else:  # torch.svd's V: columns
            v = torch.cat([v[..., :k] * sg, v[..., k:]], -1) if v.numel() else v
        return u, s, v
    return norm


# entry -> the sign normalization of its outputs (see the module docstring)
SIGN_FREE = {"linalg.eigh": _eigh_signs, "linalg.svd": _svd_signs(True), "svd": _svd_signs(False)}


@dataclass
class Outcome:
    kind: str          # pass | refused | untraced | bug
    reason: str = ""


def entries():
    """(key, OpInfo) for every op_db entry, keyed "name" or "name.variant"."""
    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        key = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        out.append((key, op))
    return out


class _RngSeen(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()):
            self.seen = True
        return func(*args, **(kwargs or {}))


def first_sample(op, requires_grad: bool):
    """The op's first float32 CPU sample (seeded), or None."""
    if torch.float32 not in op.supported_dtypes("cpu"):
        return None
    torch.manual_seed(0)
    try:
        return next(iter(op.sample_inputs("cpu", torch.float32, requires_grad=requires_grad)))
    except StopIteration:
        return None


def _prepare(op, requires_grad: bool):
    """(fn over the first sample's tensors, those tensors), or an Outcome."""
    sample = first_sample(op, requires_grad)
    if sample is None:
        return Outcome("untraced", "no float32 CPU sample")
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    pos = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    f = op.get_op()
    post = SIGN_FREE.get(op.name + (f".{op.variant_test_name}" if op.variant_test_name else ""))

    def fn(*ts):
        vals = list(leaves)
        for i, t in zip(pos, ts):
            vals[i] = t
        inp, args, kwargs = pytree.tree_unflatten(vals, spec)
        out = f(inp, *args, **kwargs)
        return post(out) if post else out

    return fn, [leaves[i] for i in pos]


def _reason(exc) -> str:
    msgs = set()
    for d in getattr(exc, "diagnostics", []):
        if d.get("severity") != "error":
            continue
        tgt = d.get("target") or ""
        msg = re.sub(r"\s+", " ", d.get("message", "")).strip()
        msgs.add(f"{tgt}: {msg}" if tgt and tgt not in msg else msg)
    return "; ".join(sorted(msgs)) or str(exc).splitlines()[0]


def _classify(exc) -> Outcome:
    import trnc
    from torch._dynamo.exc import BackendCompilerFailed, Unsupported, UserError

    inner = exc
    while isinstance(inner, BackendCompilerFailed):
        inner = inner.inner_exception
    if isinstance(inner, trnc.UnsupportedOperatorError):
        return Outcome("refused", _reason(inner))
    if isinstance(inner, trnc.TrncError):
        return Outcome("bug", f"{type(inner).__name__}: {str(inner)[:800]}")
    if isinstance(exc, (Unsupported, UserError)):
        return Outcome("untraced", f"dynamo: {str(exc).splitlines()[0][:200]}")
    return Outcome("bug", f"{type(exc).__name__}: {str(exc)[:800]}")


def _compare(got, want, ref64, what: str):
    g_all, _ = pytree.tree_flatten(got)
    w_all, _ = pytree.tree_flatten(want)
    r_all = pytree.tree_flatten(ref64)[0] if ref64 is not None else [None] * len(w_all)
    if len(g_all) != len(w_all):
        return f"{what}: {len(g_all)} outputs, eager {len(w_all)}"
    for i, (g, w, r) in enumerate(zip(g_all, w_all, r_all)):
        if not isinstance(w, torch.Tensor):
            if isinstance(g, torch.Tensor) or g != w:
                return f"{what} {i}: {g!r}, eager {w!r}"
            continue
        if not isinstance(g, torch.Tensor):
            return f"{what} {i}: {type(g).__name__}, eager a tensor"
        if g.shape != w.shape or g.dtype != w.dtype:
            return (f"{what} {i}: {g.dtype} {tuple(g.shape)}, "
                    f"eager {w.dtype} {tuple(w.shape)}")
        if r is _META:
            continue
        err = _close(g, w)
        if err and isinstance(r, torch.Tensor) and (not _close(g, r.to(w.dtype))
                                                    or _as_accurate_as_eager(g, w, r)):
            err = None
        if err:
            return f"{what} {i}: {err}"
    return None


_META = object()


def _close(g, w):
    if not w.dtype.is_floating_point and not w.dtype.is_complex:
        return None if torch.equal(g, w) else f"{int((g != w).sum())} of {w.numel()} differ"
    finite = w[torch.isfinite(w)]
    scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    try:
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL * scale, equal_nan=True)
    except AssertionError as e:
        return " ".join(str(e).split())[:400]
    return None


def _as_accurate_as_eager(g, w, r) -> bool:
    """TorchInductor's float64 rule (torch._dynamo.utils.same with fp64_ref):
    where eager's float32 result is itself far from float64's (an
    ill-conditioned formula: logcumsumexp's backward subtracts two large
    exponentials), the compiled result passes if its root-mean-square error
    against float64 is at most twice eager's (three times for fewer than 1,000
    elements) plus a tenth of the absolute tolerance. Non-finite values must
    sit where float64's do."""
    if not w.dtype.is_floating_point or g.shape != r.shape:
        return False
    r = r.to(torch.float64)
    finite, inf = torch.isfinite(r), torch.isinf(r)
    if (not torch.equal(finite, torch.isfinite(g)) or not torch.equal(torch.isnan(g), torch.isnan(r))
            or not torch.equal(g[inf].double(), r[inf])):
        return False
    if not finite.any():
        return True
    res = (g.double() - r)[finite].square().mean().sqrt().item()
    ref = (w.double() - r)[finite].square().mean().sqrt().item()
    scale = max(1.0, r[finite].abs().max().item())
    return res <= (3.0 if r.numel() < 1000 else 2.0) * ref + ATOL * scale / 10


def _float64(fn, ts):
    """fn over float64 copies of the float32 inputs (leaves again where they
    require grad), or None where the op has no float64 kernel."""
    try:
        return fn([t.detach().double().requires_grad_(t.requires_grad)
                   if t.dtype == torch.float32 else t for t in ts])
    except Exception:  # noqa: BLE001
        return None


def _ran(before, after, kinds) -> bool:
    return sum(after[k] - before[k] for k in kinds) >= 1


def run_forward(op) -> Outcome:
    import trnc

    prep = _prepare(op, requires_grad=False)
    if isinstance(prep, Outcome):
        return prep
    fn, ts = prep
    rng = _RngSeen()
    try:
        with torch.no_grad(), rng:
            want = fn(*ts)
    except Exception as e:  # noqa: BLE001
        return Outcome("untraced", f"eager rejects the sample: {str(e).splitlines()[0][:200]}")
    torch._dynamo.reset()
    before = trnc.stats()
    try:
        with torch.no_grad():
            got = torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)(*ts)
    except Exception as e:  # noqa: BLE001
        return _classify(e)
    if not _ran(before, trnc.stats(), ("inference", "forward")):
        return Outcome("untraced", "trnc compiled no graph (nothing to compute)")
    if rng.seen or op.name in UNINITIALIZED:
        ref = pytree.tree_map(lambda _: _META, want)
    else:
        with torch.no_grad():
            ref = _float64(lambda t64: fn(*t64), ts)
    err = _compare(got, want, ref, "output")
    return Outcome("bug", f"wrong value: {err}") if err else Outcome("pass")


def run_grad(op) -> Outcome:
    import trnc

    if not op.supports_autograd:
        return Outcome("untraced", "not differentiable")
    prep = _prepare(op, requires_grad=True)
    if isinstance(prep, Outcome):
        return prep
    fn, ts = prep
    diff = [i for i, t in enumerate(ts) if t.requires_grad]
    if not diff:
        return Outcome("untraced", "no input requires grad")

    def grads(call, inputs, mode=None):
        with mode or contextlib.nullcontext():
            res = call(*inputs)
        outs = [o for o in pytree.tree_flatten(res)[0]
                if isinstance(o, torch.Tensor) and o.requires_grad]
        if not outs:
            return None
        gen = torch.Generator().manual_seed(1)
        cot = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs]
        got = torch.autograd.grad(outs, [inputs[i] for i in diff], cot, allow_unused=True)
        return [g if g is not None else torch.zeros_like(inputs[i]) for g, i in zip(got, diff)]

    def fresh(src):
        return [t.detach().clone().requires_grad_(t.requires_grad) for t in src]

    rng = _RngSeen()
    try:
        want = grads(fn, fresh(ts), rng)
    except Exception as e:  # noqa: BLE001
        return Outcome("untraced", f"eager rejects the sample: {str(e).splitlines()[0][:200]}")
    if want is None:
        return Outcome("untraced", "no output requires grad")
    if rng.seen:
        return Outcome("untraced", "random op: gradients depend on the random values")
    torch._dynamo.reset()
    before = trnc.stats()
    try:
        got = grads(torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True), fresh(ts))
    except Exception as e:  # noqa: BLE001
        return _classify(e)
    after = trnc.stats()
    if not (_ran(before, after, ("forward",)) and _ran(before, after, ("backward",))):
        return Outcome("untraced", "trnc compiled no forward and backward graph pair")
    ref = _float64(lambda t64: grads(fn, t64), ts)
    err = _compare(got, want, ref, "gradient")
    return Outcome("bug", f"wrong value: {err}") if err else Outcome("pass")
