"""The differential shape fuzzer's machinery (tests/python/test_shape_fuzz.py
holds the op families).

A fuzz case is Python source text: the code that builds its inputs (shape,
layout/view, dtype, values from a seeded generator) and a lambda body. The
same text is executed to run the case and printed as the repro when it fails,
so what a report shows is exactly what ran:

    import torch
    import torch.nn.functional as F
    x = torch.randn((129, 128), generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    fn = lambda x: torch.sum(x, dim=(0,), keepdim=True)
    f = torch.compile(fn, backend="neuron", dynamic=False)
    print(f(x), fn(x))

``run_case`` compiles the lambda with ``backend="neuron", dynamic=False,
fullgraph=True`` after ``torch._dynamo.reset()`` (trnc is a static-shape
compiler: every shape is a new program, none may fall back to eager), checks
that trnc compiled or loaded a program (``trnc.stats()``), and compares with
eager at the tolerances stated in ``TOLERANCES``.

Outcomes:
* pass;
* refusal — ``trnc.UnsupportedOperatorError`` (an op, dtype or emitter limit
  trnc cannot lower, TRNC_ERR_LIMIT at compile time included) or an
  ``ExecutionError`` with TRNC_ERR_LIMIT (an input value outside what the
  program supports): counted by family and reason, printed in the session
  summary, not a failure;
* failure — a wrong number, a wrong dtype/shape, a crash, a
  ``GraphImportError`` / ``CompilerError`` ("a trnc bug"), any other exception,
  or no trnc program at all. The assertion message carries the repro.

Profiles (``TRNC_FUZZ_PROFILE``): ``ci`` (the default; derandomized, a fixed
budget per family, no shrinking, no example database) and ``long``
(random seed, ``TRNC_FUZZ_EXAMPLES`` examples per family budget unit, shrinking
on). ``TRNC_FUZZ_KEEP_GOING=1`` records failures in
``$TRNC_FUZZ_LOG`` (default ``build/fuzz-shapes-failures.txt``) and goes on,
``TRNC_FUZZ_SIZES=big`` draws the largest sizes four times as often,
so one long run collects many distinct bugs instead of stopping at the first.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

REPO = Path(__file__).resolve().parents[2]
# hypothesis' own files (no example database: database=None below) under
# build/, never in the source tree
set_hypothesis_home_dir(str(REPO / "build" / "hypothesis"))

# --------------------------------------------------------------------------- #
# Profiles

PROFILE = os.environ.get("TRNC_FUZZ_PROFILE", "ci")
KEEP_GOING = os.environ.get("TRNC_FUZZ_KEEP_GOING", "") not in ("", "0")
FAIL_LOG = Path(os.environ.get("TRNC_FUZZ_LOG", str(REPO / "build" / "fuzz-shapes-failures.txt")))
# examples per budget unit in the long profile (a family of weight w runs w * this)
LONG_EXAMPLES = int(os.environ.get("TRNC_FUZZ_EXAMPLES", "200"))
# TRNC_FUZZ_SIZES=big: 30% of the examples at the largest element cap (else 7%)
BIG_SIZES = os.environ.get("TRNC_FUZZ_SIZES", "") == "big"

_common = dict(deadline=None, database=None, print_blob=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much,
                                      HealthCheck.large_base_example])
settings.register_profile("ci", derandomize=True, max_examples=10,
                          phases=[Phase.explicit, Phase.generate], **_common)
settings.register_profile("long", derandomize=False, max_examples=LONG_EXAMPLES,
                          phases=[Phase.explicit, Phase.generate, Phase.target, Phase.shrink],
                          **_common)
settings.load_profile(PROFILE)


def budget(ci: int, long: float = 1.0) -> settings:
    """Settings of a family: ``ci`` examples in the ci profile (derandomized,
    the same examples every run), ``long * TRNC_FUZZ_EXAMPLES`` in the long one.
    ``TRNC_FUZZ_EXAMPLES`` set in the ci profile scales nothing: CI stays bounded."""
    if PROFILE == "long":
        return settings(max_examples=max(1, int(long * LONG_EXAMPLES)))
    return settings(max_examples=ci)


# --------------------------------------------------------------------------- #
# Tolerances, stated per dtype
#
# rtol      relative to |eager| (elementwise results, softmax, norms)
# atol      absolute, for results of magnitude ~1
# red       for accumulations (sum, mean, matmul, conv, var, backward sums):
#           |trnc - eager| <= red * scale + rtol * |eager|, where scale is the
#           same accumulation over |x| (sum |x|, |a| @ |b|, conv(|x|, |w|), ...)
#           in float64. A dropped or repeated tile moves the result by a whole
#           tile's share of the scale, far above red.
# Integers and bools, and every op that only moves or selects values (views,
# cat, pad, gather, amax/amin, max/min, any/all, max-pool), compare exactly.


@dataclasses.dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float
    red: float


TOLERANCES: dict[torch.dtype, Tol] = {
    torch.float32: Tol(rtol=1e-4, atol=1e-5, red=1e-4),
    torch.float16: Tol(rtol=4e-3, atol=2e-3, red=4e-3),
    torch.bfloat16: Tol(rtol=3e-2, atol=2e-2, red=2e-2),
}
EXACT = Tol(0.0, 0.0, 0.0)


def tol_for(dtype: torch.dtype) -> Tol:
    return TOLERANCES.get(dtype, EXACT)


# --------------------------------------------------------------------------- #
# Shapes and sizes

# tile and partition boundaries: 128 partitions, 512-wide moving tiles,
# 128 x 128 = 16384 elements of one partition tile, and beyond
BOUNDARIES = (1, 127, 128, 129, 512, 513, 16383, 16384, 16385, 65536, 131072)
MM_SIZES = (1, 127, 128, 129, 511, 512, 513)
MM_BIG = (2048, 2049, 2176)
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
ALL_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.bool)
MAX_ELEMENTS = 1 << 21
MAX_BASE_ELEMENTS = 1 << 22     # storage behind a view (slices with steps, offsets)


@st.composite
def element_cap(draw, big: int = MAX_ELEMENTS) -> int:
    """Elements allowed in one example: small most of the time (the simulator
    runs on 2 shared cores), up to ``big`` now and then."""
    u = draw(st.integers(0, 99))
    small, medium, large = (20, 40, 70) if BIG_SIZES else (55, 80, 93)
    if u < small:
        return 1 << 12
    if u < medium:
        return 1 << 15
    if u < large:
        return 1 << 17
    return big


@st.composite
def dim_size(draw, limit: int, zero: bool = True) -> int:
    """One dim of at most ``limit``: a tile boundary often, else small or medium."""
    limit = max(1, limit)
    kind = draw(st.integers(0, 19))
    bounds = [b for b in BOUNDARIES if b <= limit]
    if kind < 8 and bounds:
        return draw(st.sampled_from(bounds))
    if kind < 12:
        return draw(st.integers(1, min(limit, 8)))
    if kind < 17:
        return draw(st.integers(1, min(limit, 700)))
    if kind < 19 or not zero:
        return draw(st.integers(1, limit))
    return 0


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = 5, cap: int | None = None,
           zero: bool = True) -> tuple[int, ...]:
    if cap is None:
        cap = draw(element_cap())
    rank = draw(st.integers(min_rank, max_rank))
    dims: list[int] = []
    left = cap
    for _ in range(rank):
        d = draw(dim_size(max(1, left), zero=zero))
        dims.append(d)
        left = max(1, left // max(d, 1))
    order = draw(st.permutations(range(rank))) if rank > 1 else list(range(rank))
    return tuple(dims[i] for i in order)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --------------------------------------------------------------------------- #
# Inputs: values, views, the code that builds them

@dataclasses.dataclass
class Input:
    """One tensor input, as the code that builds it."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    values: str          # randn | ints | pos | ones | offset | bool:<p> | int:<lo>:<hi>
    seed: int
    view: tuple = ("contig",)
    requires_grad: bool = False

    def code(self) -> str:
        base_shape, post = _view_plan(self.shape, self.view)
        gen = _values_code(self.values, base_shape, self.dtype, self.seed)
        line = f"{self.name} = {gen}{post}"
        if self.requires_grad:
            line += ".detach().requires_grad_()"
        return line

    def layout(self) -> str:
        return _view_desc(self.view)


def _dt(dtype: torch.dtype) -> str:
    return str(dtype)  # "torch.float32"


def _values_code(values: str, shape, dtype, seed) -> str:
    g = f"generator=torch.Generator().manual_seed({seed})"
    s = repr(tuple(shape))
    if values.startswith("bool:"):
        return f"(torch.rand({s}, {g}) < {values[5:]})"
    if values.startswith("int:"):
        _, lo, hi = values.split(":")
        return f"torch.randint({lo}, {hi}, {s}, {g}, dtype={_dt(dtype)})"
    expr = {
        "randn": f"torch.randn({s}, {g})",
        "ints": f"torch.randint(-4, 5, {s}, {g}).float()",       # ties, exact sums
        "pos": f"(torch.rand({s}, {g}) + 0.5)",                   # prod, log, pow
        "ones": f"torch.ones({s})",
        "offset": f"(torch.randn({s}, {g}) + 300.0)",             # |mean| >> std
        "wide": f"(torch.randn({s}, {g}) * 30.0)",                # softmax peaks
    }[values]
    if dtype != torch.float32:
        expr += f".to({_dt(dtype)})"
    return expr


def _view_plan(shape, view) -> tuple[tuple[int, ...], str]:
    """(storage shape, suffix turning it into a ``shape`` tensor laid out as ``view``)."""
    kind = view[0]
    if kind == "contig":
        return tuple(shape), ""
    if kind == "permute":
        perm = view[1]
        base = [0] * len(shape)
        for k, p in enumerate(perm):
            base[p] = shape[k]
        return tuple(base), f".permute{tuple(perm)!r}"
    if kind == "transpose":
        i, j = view[1], view[2]
        base = list(shape)
        base[i], base[j] = base[j], base[i]
        return tuple(base), f".transpose({i}, {j})"
    if kind == "slice":
        d, off, step = view[1], view[2], view[3]
        base = list(shape)
        n = shape[d]
        base[d] = off + (n - 1) * step + 1 + view[4] if n > 0 else off
        idx = ", ".join([":"] * d + [f"{off}:{off + n * step}:{step}"])
        return tuple(base), f"[{idx}]"
    if kind == "expand":
        dims = view[1]
        base = tuple(1 if k in dims else s for k, s in enumerate(shape))
        return base, f".expand{tuple(shape)!r}"
    if kind == "offset":
        off = view[1]
        n = _numel(shape)
        return (n + off,), f"[{off}:].view({tuple(shape)!r})"
    raise ValueError(view)


def _view_desc(view) -> str:
    return {"contig": "contiguous"}.get(view[0], view[0] + repr(tuple(view[1:])))


@st.composite
def views(draw, shape, allow_expand: bool = True) -> tuple:
    """A layout for a tensor of ``shape``: contiguous half of the time, else
    permuted/transposed, sliced with an offset and step, expanded from size-1
    dims, or at a storage offset."""
    rank = len(shape)
    kinds = ["contig"] * 4 + ["offset"]
    if rank >= 2:
        kinds += ["transpose", "permute"]
    if rank >= 1:
        kinds += ["slice", "slice"]
        if allow_expand and any(s > 1 for s in shape):
            kinds += ["expand"]
    kind = draw(st.sampled_from(kinds))
    if kind == "contig":
        return ("contig",)
    if kind == "offset":
        return ("offset", draw(st.integers(1, 129)))
    if kind == "transpose":
        i = draw(st.integers(0, rank - 2))
        j = draw(st.integers(i + 1, rank - 1))
        return ("transpose", i, j)
    if kind == "permute":
        return ("permute", tuple(draw(st.permutations(range(rank)))))
    if kind == "slice":
        d = draw(st.integers(0, rank - 1))
        step = draw(st.sampled_from([1, 2, 3]))
        off = draw(st.sampled_from([0, 1, 3, 128]))
        extra = draw(st.integers(0, 2))
        plan = _view_plan(shape, ("slice", d, off, step, extra))[0]
        if _numel(plan) > MAX_BASE_ELEMENTS:
            return ("contig",)
        return ("slice", d, off, step, extra)
    if kind == "expand":
        cand = [k for k, s in enumerate(shape) if s > 1]
        ks = draw(st.lists(st.sampled_from(cand), min_size=1, max_size=len(cand), unique=True))
        return ("expand", tuple(sorted(ks)))
    raise AssertionError(kind)


def value_kinds(dtype: torch.dtype, extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    if dtype == torch.bool:
        return st.sampled_from(["bool:0.5", "bool:0.002", "bool:0.998"])
    if dtype in (torch.int32, torch.int64):
        return st.sampled_from(["int:-50:51", "int:0:2", "int:-3:4"])
    return st.sampled_from(["randn", "ints", "randn", "ones"] + list(extra))


@st.composite
def tensor_input(draw, name: str, shape, dtype, values: str | None = None,
                 view: tuple | None = None, extra_values: tuple[str, ...] = (),
                 allow_expand: bool = True) -> Input:
    return Input(name=name, shape=tuple(shape), dtype=dtype,
                 values=values or draw(value_kinds(dtype, extra_values)),
                 seed=draw(st.integers(0, 2**16)),
                 view=view or draw(views(tuple(shape), allow_expand=allow_expand)))


# --------------------------------------------------------------------------- #
# Cases

@dataclasses.dataclass
class Case:
    """``fn = lambda <args>: <expr>`` over inputs built by code.

    compare: "close" (rtol/atol of the dtype, or ``scale``), "exact", or
    "arg:<input>:<dim>:<keepdim>" (argmax/argmin: compare the input's values
    at trnc's and eager's indices, so ties need not pick the same index).
    scale: an expression over the inputs giving float64 magnitudes of the
    result (``red`` tolerance), e.g. ``x.double().abs().sum(0)``.
    backward: ``loss = (f(*args).float() * r).mean()`` (r: fixed random
    weights) differentiated through trnc's backward graph; the gradients of
    the inputs with requires_grad compare.
    """

    family: str
    op: str
    expr: str
    inputs: list[Input]
    dtype: torch.dtype
    compare: str = "close"
    scale: str | None = None
    rtol: float | None = None
    atol: float | None = None
    red: float | None = None
    backward: bool = False
    prelude: str = ""       # extra lines (constants, modules) before fn
    # bf16/fp16: also accept eager computed in float32 on the same inputs and
    # rounded once (trnc fuses a chain and rounds on the store, eager after each op)
    alt_fp32: bool = False

    @property
    def args(self) -> str:
        return ", ".join(i.name for i in self.inputs)

    def describe(self) -> str:
        parts = [f"{i.name}: shape={list(i.shape)} {str(i.dtype).replace('torch.', '')} "
                 f"{i.layout()} values={i.values}" for i in self.inputs]
        return f"[{self.family}] {self.op}  " + "; ".join(parts)

    def repro(self) -> str:
        lines = ["import torch", "import torch.nn.functional as F"]
        lines += [i.code() for i in self.inputs]
        if self.prelude:
            lines += self.prelude.strip().splitlines()
        lines.append(f"fn = lambda {self.args}: {self.expr}")
        lines.append('f = torch.compile(fn, backend="neuron", dynamic=False)')
        if self.backward:
            grads = [i.name for i in self.inputs if i.requires_grad]
            g = ", ".join(grads)
            lines.append(f"out, ref = f({self.args}), fn({self.args})")
            lines.append(f"r = {WEIGHTS.format('out.shape')}")
            lines.append(f"got = torch.autograd.grad((out.float() * r).mean(), [{g}])")
            lines.append(f"want = torch.autograd.grad((ref.float() * r).mean(), [{g}])")
            lines.append("print(got, want)")
        else:
            lines.append(f"print(f({self.args}), fn({self.args}))")
        return "\n".join(lines)

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with this
        return f"Case({self.describe()})\n--- repro ---\n{self.repro()}\n-------------"

    def _repr_pretty_(self, p, cycle) -> None:   # hypothesis' pretty printer
        p.text(repr(self))


# --------------------------------------------------------------------------- #
# Session bookkeeping (printed by conftest's pytest_terminal_summary)

_lock = threading.Lock()
SUMMARY: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
REFUSALS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
REFUSAL_EXAMPLE: dict[str, str] = {}    # reason -> the first case refused for it
FAILURES: list[str] = []


def _record(family: str, outcome: str) -> None:
    with _lock:
        SUMMARY[family][outcome] += 1


def summary_lines() -> list[str]:
    if not SUMMARY:
        return []
    out = ["trnc shape fuzz (profile %s): examples per family" % PROFILE]
    for fam in sorted(SUMMARY):
        c = SUMMARY[fam]
        out.append(f"  {fam:14s} ran {sum(c.values()):5d}  passed {c['pass']:5d}  "
                   f"refused {c['refused']:4d}  eager-invalid {c['invalid']:4d}  "
                   f"failed {c['fail']:3d}")
    if any(REFUSALS.values()):
        out.append("refusals (family: reason x count):")
        for fam in sorted(REFUSALS):
            for reason, n in REFUSALS[fam].most_common(8):
                out.append(f"  {fam}: {reason} x{n}")
                out.append(f"      e.g. {REFUSAL_EXAMPLE.get(fam + reason, '?')}")
    if FAILURES:
        out.append(f"{len(FAILURES)} failure(s) recorded in {FAIL_LOG} (TRNC_FUZZ_KEEP_GOING)")
    return out


# --------------------------------------------------------------------------- #
# Running a case

class Invalid(Exception):
    """Eager itself rejects the case (the generator produced an invalid call)."""


def _namespace() -> dict[str, Any]:
    import torch.nn.functional as F  # noqa: PLC0415

    return {"torch": torch, "F": F}


def build(case: Case) -> tuple[dict[str, Any], Callable[..., Any], list[Any]]:
    ns = _namespace()
    for i in case.inputs:
        exec(i.code(), ns)  # noqa: S102 - the case's own source text
    if case.prelude:
        exec(textwrap.dedent(case.prelude), ns)  # noqa: S102
    fn = eval(f"lambda {case.args}: {case.expr}", ns)  # noqa: S307
    return ns, fn, [ns[i.name] for i in case.inputs]


def _refusal_reason(exc: BaseException) -> str | None:
    """The reason of a clear refusal, None when ``exc`` is a failure."""
    import trnc  # noqa: PLC0415

    inner = getattr(exc, "inner_exception", None) or exc
    if isinstance(inner, trnc.UnsupportedOperatorError):
        ops = ",".join(sorted(getattr(inner, "operators", {}) or {})) or "?"
        first = next((d.get("message", "") for d in inner.diagnostics
                      if d.get("severity", "error") == "error"), "") or str(inner).splitlines()[0]
        return f"unsupported {ops}: {_squash(first)}"
    if isinstance(inner, trnc.ExecutionError) and "TRNC_ERR_LIMIT" in str(inner):
        return "limit at run time: " + _squash(str(inner).splitlines()[-1])
    return None


def _squash(s: str, n: int = 110) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\d{3,}", "N", s)          # group the same reason over shapes
    return s[:n]


def _counts() -> tuple[int, int]:
    """(programs compiled or loaded from the cache, backward graphs compiled)."""
    import trnc  # noqa: PLC0415

    s = trnc.stats()
    return s["compiles"] + s["hits"], s["backward"]


def _fail(case: Case, what: str) -> None:
    msg = (f"{what}\n{case.describe()}\n--- standalone repro ---\n{case.repro()}\n")
    _record(case.family, "fail")
    if KEEP_GOING:
        with _lock:
            FAILURES.append(msg)
            FAIL_LOG.parent.mkdir(parents=True, exist_ok=True)
            with open(FAIL_LOG, "a") as fh:
                fh.write(msg + "=" * 72 + "\n")
        return
    raise AssertionError(msg)


def run_case(case: Case) -> str:
    """Runs ``case`` under trnc and eager; returns pass/refused/invalid or fails."""
    from hypothesis import assume  # noqa: PLC0415
    from hypothesis.errors import InvalidArgument  # noqa: PLC0415

    # the failure message and hypothesis' falsifying example (Case.__repr__)
    # both carry the repro
    ns, fn, args = build(case)
    try:
        want = _eager(case, fn, args)
    except Invalid:
        _record(case.family, "invalid")
        try:
            assume(False)
        except InvalidArgument:
            raise AssertionError(f"eager rejects the case:\n{case.repro()}") from None
        return "invalid"
    # rebuild: the eager run must not leave gradients or state on the inputs
    ns, fn, args = build(case)
    torch._dynamo.reset()
    before = _counts()
    compiled = torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)
    try:
        got = _trnc(case, compiled, args)
    except Exception as e:  # noqa: BLE001
        reason = _refusal_reason(e)
        if reason is not None:
            _record(case.family, "refused")
            with _lock:
                key = f"{case.op}: {reason}"
                REFUSALS[case.family][key] += 1
                REFUSAL_EXAMPLE.setdefault(case.family + key,
                                           f"{case.expr}  with {case.describe()}")
            return "refused"
        _fail(case, f"trnc raised {type(e).__name__}: {_first_lines(e)}")
        return "fail"
    after = _counts()
    if after[0] <= before[0] or (case.backward and after[1] <= before[1]):
        _fail(case, "trnc compiled no program" + (" for the backward graph" if case.backward
                                                   else "") +
              ": the graph did not reach the backend (eager-vs-eager is not a test)")
        return "fail"
    noise = _eager_noise(case, fn, args, want) if case.backward else None
    problem = compare(case, got, want, args, noise)
    if problem and case.alt_fp32 and case.dtype in (torch.bfloat16, torch.float16):
        up = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in args]
        with torch.no_grad():
            alt = [t.to(case.dtype) if t.is_floating_point() else t
                   for t in _flatten(fn(*up))]
        if compare(case, got, alt, args) is None:
            problem = None
        else:
            problem += "\n(and differs from eager computed in float32 and rounded once)"
    if problem and not case.backward:
        # eager's own kernels can be the inexact side (CPU layer norm of rows
        # with a large mean, bf16 convolution): trnc passes if it is within
        # tolerance of the float64 result, rounded once to the case's dtype
        up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in args]
        try:
            with torch.no_grad():
                exact = [t.to(w.dtype) if t.is_floating_point() else t
                         for t, w in zip(_flatten(fn(*up)), _flatten(want))]
        except Exception:  # noqa: BLE001 - no float64 kernel for the op
            exact = None
        if exact is not None and compare(case, got, exact, args) is None:
            problem = None
        elif exact is not None:
            problem += "\n(and differs from eager computed in float64 and rounded once)"
    if problem:
        _fail(case, problem)
        return "fail"
    _record(case.family, "pass")
    return "pass"


def _first_lines(e: BaseException, n: int = 12) -> str:
    inner = getattr(e, "inner_exception", None)
    text = str(e) if inner is None else f"{type(inner).__name__}: {inner}"
    return "\n".join(text.splitlines()[:n])


# the loss of a backward case is mean(out * r), r fixed random weights: a plain
# mean would send the same gradient to every output element, so a backward
# graph that permutes or drops positions would go unseen (and the mean of a
# softmax or a normalized row has an exactly zero gradient)
WEIGHTS = "torch.randn({}, generator=torch.Generator().manual_seed(0))"


def _grads(case: Case, fn, args):
    out = fn(*args)
    r = eval(WEIGHTS.format("out.shape"), {"torch": torch, "out": out})  # noqa: S307
    out = out if out.dtype == torch.float64 else out.float()
    loss = (out * r.to(out.dtype)).mean()
    leaves = [a for a, i in zip(args, case.inputs) if i.requires_grad]
    return tuple(torch.autograd.grad(loss, leaves))


def _eager(case: Case, fn, args):
    try:
        if case.backward:
            return _grads(case, fn, args)
        with torch.no_grad():
            return fn(*args)
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        raise Invalid(str(e)) from e


def _trnc(case: Case, compiled, args):
    if case.backward:
        return _grads(case, compiled, args)
    with torch.no_grad():
        return compiled(*args)


# --------------------------------------------------------------------------- #
# Comparison

def _flatten(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for e in x for t in _flatten(e)]
    if hasattr(x, "values") and hasattr(x, "indices"):   # torch.return_types
        return [x.values, x.indices]
    return [x]


def _eager_noise(case: Case, fn, args, want) -> list[float] | None:
    """Per gradient, max |eager - float64 eager|: how much rounding the gradient
    suffers in eager itself. A gradient whose exact value is ~0 (the mean of a
    normalized row has zero gradient) is pure rounding noise in both; trnc may
    be a few times as far from the exact value as eager is."""
    up = []
    for a, i in zip(args, case.inputs):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            a = a.detach().double().requires_grad_(i.requires_grad)
        up.append(a)
    try:
        ref = _grads(case, fn, up)
    except Exception:  # noqa: BLE001 - no float64 kernel: no noise estimate
        return None
    return [float((w.double() - r).abs().max()) if w.numel() else 0.0
            for w, r in zip(_flatten(want), _flatten(ref))]


def compare(case: Case, got, want, args, noise=None) -> str | None:
    gs, ws = _flatten(got), _flatten(want)
    if len(gs) != len(ws):
        return f"trnc returned {len(gs)} outputs, eager {len(ws)}"
    scale = None
    if case.scale:
        ns = _namespace()
        ns.update({i.name: a for i, a in zip(case.inputs, args)})
        with torch.no_grad():
            scale = eval(case.scale, ns)  # noqa: S307
        scale = _flatten(scale)
    for k, (g, w) in enumerate(zip(gs, ws)):
        what = f"output {k}" if len(gs) > 1 else "output"
        if not isinstance(w, torch.Tensor):
            if g != w:
                return f"{what}: trnc {g!r}, eager {w!r}"
            continue
        if not isinstance(g, torch.Tensor):
            return f"{what}: trnc returned {type(g).__name__}, eager a tensor"
        if g.shape != w.shape or g.dtype != w.dtype:
            return (f"{what}: trnc {tuple(g.shape)} {g.dtype}, eager {tuple(w.shape)} {w.dtype}")
        if case.compare.startswith("arg:") and not w.is_floating_point():
            p = _check_arg(case, g, w, args, what)
        elif (case.compare == "exact" or case.compare.startswith("arg:")
              or not w.is_floating_point()):
            p = _check_exact(g, w, what)
        else:
            sc = scale[k] if scale is not None and k < len(scale) else None
            nz = noise[k] if noise is not None and k < len(noise) else 0.0
            p = _check_close(case, g, w, sc, what, nz)
        if p:
            return p
    return None


def _check_exact(g, w, what) -> str | None:
    if g.is_floating_point():
        same = (g == w) | (g.isnan() & w.isnan())
    else:
        same = g == w
    if bool(same.all()):
        return None
    return _mismatch(g, w, ~same, what, "exactly")


NOISE_FACTOR = 8.0   # trnc may be this many times as far from float64 as eager is


def _check_close(case: Case, g, w, scale, what, noise: float = 0.0) -> str | None:
    t = tol_for(case.dtype if w.dtype == torch.float32 else w.dtype)
    rtol = t.rtol if case.rtol is None else case.rtol
    atol = t.atol if case.atol is None else case.atol
    red = t.red if case.red is None else case.red
    gd, wd = g.double(), w.double()
    bound = rtol * wd.abs()
    if case.compare == "maxrel":      # chains, gradients: relative to the largest |eager|
        finite_w = wd[wd.isfinite()]
        top = float(finite_w.abs().max()) if finite_w.numel() else 0.0
        bound = bound + red * top + NOISE_FACTOR * noise + 1e-30
    elif scale is not None:
        bound = bound + red * scale.double().abs().broadcast_to(wd.shape)
    else:
        bound = bound + atol
    finite = wd.isfinite()
    err = (gd - wd).abs()
    ok = torch.where(finite, err <= bound, (gd == wd) | (gd.isnan() & wd.isnan()))
    if bool(ok.all()):
        return None
    how = f"within rtol={rtol:g}" + (
        f" + red={red:g} * max|eager| + {NOISE_FACTOR:g} * eager's own error ({noise:.3g})"
        if case.compare == "maxrel"
        else f" + red={red:g} * scale" if scale is not None else f", atol={atol:g}")
    return _mismatch(g, w, ~ok, what, how, scale)


def _check_arg(case: Case, g, w, args, what) -> str | None:
    """argmax/argmin: the input's values at both indices must be equal."""
    _, name, dim, keepdim = case.compare.split(":")
    x = args[[i.name for i in case.inputs].index(name)].detach()
    if bool((g == w).all()):
        return None
    if dim == "None":
        xf = x.reshape(-1)
        ok = bool(((g.reshape(-1) >= 0) & (g.reshape(-1) < max(xf.numel(), 1))).all())
        if ok:
            gv, wv = xf[g.reshape(-1)], xf[w.reshape(-1)]
            if bool(((gv == wv) | (gv.isnan() & wv.isnan())).all()):
                return None
        return _mismatch(g, w, g != w, what, "by the value at the index")
    d = int(dim)
    gi, wi = (g, w) if keepdim == "True" else (g.unsqueeze(d), w.unsqueeze(d))
    n = x.shape[d]
    inb = (gi >= 0) & (gi < n)
    if not bool(inb.all()):
        return _mismatch(g, w, g != w, what, "(index out of range)")
    gv, wv = x.gather(d, gi), x.gather(d, wi)
    same = (gv == wv) | (gv.isnan() & wv.isnan())
    if bool(same.all()):
        return None
    return _mismatch(g, w, (g != w), what, "by the value at the index")


def _mismatch(g, w, bad, what, how, scale=None) -> str:
    nbad = int(bad.sum())
    idx = bad.nonzero()[:4].tolist()
    show = []
    for ix in idx:
        t = tuple(ix)
        s = f"  at {list(t)}: trnc {g[t].item()!r}, eager {w[t].item()!r}"
        if scale is not None:
            s += f", scale {scale.broadcast_to(w.shape)[t].item():.6g}"
        show.append(s)
    head = (f"{what} differs from eager {how}: {nbad} of {w.numel()} elements "
            f"(shape {list(w.shape)}, {w.dtype})")
    if w.numel() <= 8:
        show.append(f"  trnc  {g.tolist()}\n  eager {w.tolist()}")
    return head + "\n" + "\n".join(show)
