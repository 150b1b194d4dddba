"""Samples for the op sweep (test_op_sweep.py): for every line of trnc's
operator table (ir/ops.def), calls of its aten OpOverload with valid arguments,
per dtype, over odd, size-1, 0-d, non-contiguous and broadcast inputs.

How a line becomes samples:

* ``table()`` parses ir/ops.def (ID, fx_target, the argument-kind
  string, max rank) and takes each op's dtype set, group and limits text
  from the extension (``trnc._trnc.ops()``, the same table compiled in).
* An op whose required arguments are all of simple kinds (T tensor, W tensor
  or scalar, n Scalar, i int, b bool, d ScalarType, and optional ones left at
  their schema defaults) gets *generic* samples: every shape of ``SHAPES`` up
  to its max rank, contiguous, transposed and sliced-with-step inputs, and for
  a W operand a broadcast tensor, a 0-d tensor and a Python number. A new table
  line of that kind is swept without writing anything here.
* Other ops have an entry in ``OVERRIDES``: a function of the dtype returning
  its samples (dims, sizes, index tensors in range, valid conv shapes, ...).
  ``DOMAIN`` keeps inputs of log/sqrt/... in their domain; ``GENERIC_EXTRA``
  adds keyword variants (alpha, approximate) to generic samples.
* An op neither generic nor overridden yields one failing case that says so.

Tensors are made from a seeded generator per case, so every case is
reproducible alone (``-k``).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

REPO = Path(__file__).resolve().parents[2]
A = torch.ops.aten

# --------------------------------------------------------------------------- #
# the table

SWEEP_DTYPES = {  # table spelling -> torch dtype (the dtypes the sweep covers)
    "f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
    "i32": torch.int32, "i64": torch.int64, "bool": torch.bool,
}
SHORT = {v: k for k, v in SWEEP_DTYPES.items()}
FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64)


@dataclass(frozen=True)
class OpLine:
    id: str            # ADD
    target: str        # aten.add.Tensor
    category: str
    args: str          # argument kinds, one char per schema argument
    max_rank: int
    limits: str
    dtypes: tuple      # torch dtypes of the sweep the op claims

    @property
    def overload(self) -> torch._ops.OpOverload:
        ns, name, ov = self.target.split(".")
        if ns == "transformers":  # its custom ops register on import
            import transformers.integrations.moe  # noqa: F401
        return getattr(getattr(getattr(torch.ops, ns), name), ov)


_OP_RE = re.compile(r'^OP\((\w+),\s*"([^"]+)",\s*[\w |]+,\s*"([^"]*)",\s*\w+,\s*\w+,\s*'
                    r'(\d+),\s*\w+,\s*.*,\s*\w+\)\s*$')


@functools.lru_cache(maxsize=1)
def table() -> tuple[OpLine, ...]:
    from trnc import _trnc

    ops = _trnc.ops()
    claimed = {o["fx_target"]: o["dtypes"].split() for o in ops}
    info = {o["fx_target"]: o for o in ops}
    lines = []
    for raw in (REPO / "ir" / "ops.def").read_text().splitlines():
        if not raw.startswith("OP("):
            continue
        m = _OP_RE.match(raw)
        if not m:
            raise ValueError(f"ops.def line the sweep cannot parse: {raw}")
        oid, target, args, rank = m.groups()
        o = info.get(target, {})
        cat, limits = o.get("category", ""), o.get("limits", "")  # group from its TRNC_OPF_* bits
        if cat == "collective":  # need a process group: tests/python/test_collectives.py
            claimed.pop(target, None)
            continue
        dts = tuple(SWEEP_DTYPES[d] for d in SWEEP_DTYPES if d in claimed.get(target, ()))
        lines.append(OpLine(oid, target, cat, args, int(rank), limits, dts))
    if len(lines) != len(claimed):
        raise ValueError(f"ops.def has {len(lines)} lines, the extension {len(claimed)} ops")
    return tuple(lines)


# --------------------------------------------------------------------------- #
# samples

@dataclass(eq=False)
class Sample:
    args: list
    kwargs: dict = field(default_factory=dict)
    tag: str = ""                 # case id fragment: shape, layout, variant
    kind: str = "c"               # c contiguous | nc non-contiguous | bc broadcast | x other
    # close | meta (uninitialized results: shape/dtype only) | dropout |
    # uniform / bernoulli (random results: shape, dtype, range, mean)
    compare: str = "close"
    # ints are clamped in the graph before the op (see test_op_sweep.bound_ints)
    bound_ints: bool = True
    tol: tuple | None = None      # (rtol, atol) for float results, if not the dtype's


SHAPES = [(), (1,), (7,), (3, 5), (2, 1, 129), (130, 3)]
FULL_ONLY_SHAPES = [(3, 0)]       # empty tensors: only in the full sweep


def shape_tag(shape) -> str:
    return "x".join(map(str, shape)) if shape else "0d"


class Maker:
    """Seeded tensor factory for one case."""

    def __init__(self, seed: int):
        self.g = torch.Generator().manual_seed(seed)

    def values(self, shape, dtype, lo=None, hi=None, ties=False):
        g = self.g
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        if dtype in INTS:
            lo = -9 if lo is None else int(lo)
            hi = 10 if hi is None else int(hi)
            return torch.randint(lo, hi, shape, generator=g, dtype=dtype)
        if ties:
            return (torch.randint(-3, 4, shape, generator=g).float() / 2).to(dtype)
        if lo is not None:
            u = torch.rand(shape, generator=g)
            return (lo + (hi - lo) * u).to(dtype)
        return torch.randn(shape, generator=g).to(dtype)

    def tensor(self, shape, dtype, layout="c", **kw):
        """layout: c contiguous, T transposed (last two dims), S every other
        element of the last dim, F the first dim stepped by 2."""
        shape = tuple(shape)
        if layout == "c" or not shape:
            return self.values(shape, dtype, **kw)
        if layout == "T":
            assert len(shape) >= 2
            base = self.values(shape[:-2] + (shape[-1], shape[-2]), dtype, **kw)
            return base.transpose(-1, -2)
        if layout == "S":
            base = self.values(shape[:-1] + (2 * shape[-1],), dtype, **kw)
            return base[..., ::2]
        if layout == "F":
            base = self.values((2 * shape[0],) + shape[1:], dtype, **kw)
            return base[::2]
        raise ValueError(layout)

    def perm(self, n):
        return torch.randperm(n, generator=self.g)

    def index(self, shape, n, dtype=torch.int64):
        return torch.randint(0, n, shape, generator=self.g, dtype=dtype) if n > 0 else \
            torch.zeros(shape, dtype=dtype)


def layouts_for(shape):
    out = ["c"]
    if len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1:
        out.append("T")
    if len(shape) >= 1 and shape[-1] > 1:
        out.append("S")
    elif len(shape) >= 2 and shape[0] > 1:
        out.append("F")
    return out


def bcast_shapes(shape):
    """Shapes of an other operand that broadcast against shape."""
    out = []
    if len(shape) >= 2:
        out.append(("tail", shape[-1:]))                       # (N,) against (..., N)
        out.append(("ones", (1,) * (len(shape) - 1) + shape[-1:]))
        out.append(("col", shape[:-1] + (1,)))                 # (..., 1)
    elif len(shape) == 1 and shape[0] != 1:
        out.append(("one", (1,)))
    if shape:
        out.append(("0d", ()))
    return out


def seed_of(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


# --------------------------------------------------------------------------- #
# domains and tolerances

# op id -> keyword arguments of Maker.values for its float inputs
DOMAIN: dict[str, dict[str, Any]] = {
    "LOG": dict(lo=0.05, hi=4.0), "LOG2": dict(lo=0.05, hi=4.0), "LOG10": dict(lo=0.05, hi=4.0),
    "TAN": dict(lo=-1.3, hi=1.3),                  # away from the poles at +-pi/2
    # products of up to 390 factors stay far from fp32 overflow and underflow
    "PROD": dict(lo=0.8, hi=1.25), "PROD_ALL": dict(lo=0.8, hi=1.25),
    "SQRT": dict(lo=0.0, hi=4.0), "RSQRT": dict(lo=0.05, hi=4.0),
    "LOG1P": dict(lo=-0.9, hi=4.0), "RECIPROCAL": dict(lo=0.1, hi=3.0),
    "POW": dict(lo=0.1, hi=3.0),
    # ties make eq/ne/le/ge and maximum/minimum meaningful
    "EQ": dict(ties=True), "NE": dict(ties=True), "LT": dict(ties=True),
    "LE": dict(ties=True), "GT": dict(ties=True), "GE": dict(ties=True),
    "EQ_SCALAR": dict(ties=True), "NE_SCALAR": dict(ties=True), "LT_SCALAR": dict(ties=True),
    "LE_SCALAR": dict(ties=True), "GT_SCALAR": dict(ties=True), "GE_SCALAR": dict(ties=True),
    "MAXIMUM": dict(ties=True), "MINIMUM": dict(ties=True),
    "LOGICAL_AND": dict(ties=True), "LOGICAL_OR": dict(ties=True),
    "LOGICAL_XOR": dict(ties=True), "LOGICAL_NOT": dict(ties=True),
    "SIGN": dict(ties=True),
}
# domain of the W (second) operand
DOMAIN_OTHER: dict[str, dict[str, Any]] = {
    "POW": dict(lo=-2.0, hi=2.0),
    "DIV": dict(lo=0.5, hi=3.0), "DIV_MODE": dict(lo=0.5, hi=3.0),
}
# scalar for an n argument (first required Scalar); per op if not the default
SCALAR: dict[str, Any] = {
    "DIV_SCALAR": 3, "POW_SCALAR": 2, "THRESHOLD_BACKWARD": 0.1,
    "EQ_SCALAR": 0.5, "NE_SCALAR": 0.5, "LT_SCALAR": 0.5, "LE_SCALAR": 0.5,
    "GT_SCALAR": 0.5, "GE_SCALAR": 0.5,
}
# generic samples with extra keyword variants (op id -> [(tag, kwargs)])
GENERIC_EXTRA: dict[str, list] = {
    "ADD": [("alpha2", {"alpha": 2})], "SUB": [("alpha2", {"alpha": 2})],
    "ADD_SCALAR": [("alpha2", {"alpha": 2})], "RSUB_SCALAR": [("alpha2", {"alpha": 2})],
    "GELU": [("tanh", {"approximate": "tanh"})],
    "GELU_BACKWARD": [("tanh", {"approximate": "tanh"})],
    "LEAKY_RELU": [("slope", {"negative_slope": 0.2})],
    "HARDTANH": [("range", {"min_val": -0.5, "max_val": 2.0})],
    "ELU": [("params", {"alpha": 0.5, "scale": 1.5, "input_scale": 2.0})],
    "POW_SCALAR": [("cube", {"exponent": 3}), ("half", {"exponent": 0.5}),
                   ("neg1", {"exponent": -1})],
}
# Default: float rtol, atol by dtype (results compared with eager in the same dtype).
TOL = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 1e-2),
       torch.float16: (1e-3, 1e-3)}

# --------------------------------------------------------------------------- #
# generic samples


def scalar_for(op: OpLine, dtype, name="other"):
    if op.id in SCALAR:
        v = SCALAR[op.id]
    elif dtype in FLOATS:
        v = 1.5
    elif dtype == torch.bool:
        v = True
    else:
        v = 3
    return v


GENERIC_KINDS = set("TWnibd")


def generic_ok(op: OpLine) -> bool:
    schema = op.overload._schema
    return all(k in GENERIC_KINDS or _optional(a) for k, a in zip(op.args, schema.arguments))


def _optional(arg) -> bool:
    return isinstance(arg.type, torch.OptionalType) or arg.has_default_value()


@functools.lru_cache(maxsize=None)
def takes_number(op: OpLine) -> bool:
    """Whether the OpOverload called directly accepts a Python number for its
    W operand (add.Tensor does; maximum, pow.Tensor_Tensor, ... do not)."""
    n_before = op.args.index("W")
    try:
        op.overload(*([torch.ones(2)] * n_before), 2)
    except (RuntimeError, TypeError):
        return False
    return True


def reduction_variants(op: OpLine, shape) -> list:
    """(tag, kwargs) variants of a reduction line with a dim argument (an
    int or an int list) and keepdim: the other dims the shape has, kept."""
    names = [a.name for a in op.overload._schema.arguments]
    if op.category != "reduction" or "dim" not in names or "keepdim" not in names:
        return []
    kind = op.args[names.index("dim")]
    if kind == "i":
        dims = [("last", -1)] + ([("first", 0)] if len(shape) >= 2 else [])
    elif kind in "IJ":
        dims = _reduce_dims(shape)
    else:
        return []
    return [(f"{tag}-k{int(keep)}", {"dim": d, "keepdim": keep})
            for tag, d in dims for keep in (False, True)]


def generic_samples(op: OpLine, dtype, shapes) -> list[Sample]:
    schema = op.overload._schema
    kinds = op.args
    out = []
    has_w = "W" in kinds
    dom = DOMAIN.get(op.id, {}) if dtype in FLOATS else {}
    dom_w = DOMAIN_OTHER.get(op.id, dom) if dtype in FLOATS else {}

    def build(mk, shape, layout, wshape, wscalar, extra):
        args, kwargs = [], {}
        seen_t = 0
        for k, a in zip(kinds, schema.arguments):
            if a.name in extra:
                val = extra[a.name]
            elif _optional(a):
                continue
            elif k == "T":
                val = mk.tensor(shape, dtype, layout, **dom)
                seen_t += 1
            elif k == "W":
                if wscalar:
                    val = scalar_for(op, dtype)
                else:
                    val = mk.tensor(wshape, dtype, layout if wshape == shape else "c", **dom_w)
                seen_t += 1
            elif k == "n":
                val = scalar_for(op, dtype)
            elif k == "i":
                val = -1
            elif k == "b":
                val = False
            elif k == "d":
                val = dtype
            else:
                raise AssertionError(k)
            if a.kwarg_only:
                kwargs[a.name] = val
            else:
                args.append(val)
        for name, val in extra.items():
            if name not in [a.name for a in schema.arguments]:
                raise AssertionError(f"{op.target} has no argument {name}")
        return args, kwargs

    for shape in shapes:
        if len(shape) > op.max_rank:
            continue
        st = shape_tag(shape)
        variants = [(f"{st}-{lay}", "c" if lay == "c" else "nc", lay, shape, False, {})
                    for lay in layouts_for(shape)]
        if has_w:
            variants += [(f"{st}-b{bt}", "bc", "c", bs, False, {}) for bt, bs in bcast_shapes(shape)]
            if takes_number(op):
                variants.append((f"{st}-py", "bc", "c", shape, True, {}))
        for etag, ekw in GENERIC_EXTRA.get(op.id, []) + reduction_variants(op, shape):
            variants.append((f"{st}-{etag}", "x", "c", shape, False, ekw))
        for tag, kind, lay, wshape, wscalar, extra in variants:
            mk = Maker(seed_of(op.target, SHORT[dtype], tag))
            args, kwargs = build(mk, shape, lay, wshape, wscalar, extra)
            out.append(Sample(args, kwargs, tag, kind))
    return out


# --------------------------------------------------------------------------- #
# overrides: ops that need specific valid arguments

OVERRIDES: dict[str, Callable[[torch.dtype, bool], list[Sample]]] = {}


def override(*ids):
    def deco(fn):
        for i in ids:
            OVERRIDES[i] = fn
        return fn
    return deco


def _shapes(full, max_rank=8, min_rank=0):
    return [s for s in SHAPES + (FULL_ONLY_SHAPES if full else [])
            if min_rank <= len(s) <= max_rank]


def _mk(*parts):
    return Maker(seed_of(*parts))


def _floaty(dtype):
    """The float dtype of an op whose dtype set also covers index operands:
    an int sweep dtype is the index dtype, a float one the data dtype."""
    return dtype if dtype in FLOATS else torch.float32


def _idx_dtype(dtype):
    return dtype if dtype in INTS else torch.int64


@override("WHERE")
def _where(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("where", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, torch.bool, lay), mk.tensor(shape, dtype, lay),
                               mk.tensor(shape, dtype, lay)], tag=f"{st}-{lay}",
                              kind="c" if lay == "c" else "nc"))
        for bt, bs in bcast_shapes(shape):
            mk = _mk("where", dtype, st, bt)
            out.append(Sample([mk.tensor(bs, torch.bool), mk.tensor(shape, dtype),
                               mk.tensor(bs, dtype)], tag=f"{st}-b{bt}", kind="bc"))
        mk = _mk("where", dtype, st, "py")
        if dtype != torch.bool:
            out.append(Sample([mk.tensor(shape, torch.bool), mk.tensor(shape, dtype),
                               2 if dtype in INTS else 0.25], tag=f"{st}-py", kind="bc"))
    return out


@override("MASKED_FILL")
def _masked_fill(dtype, full):
    out = []
    val = True if dtype == torch.bool else (-4 if dtype in INTS else -1.5)
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("masked_fill", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), mk.tensor(shape, torch.bool, lay),
                               val], tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc"))
        for bt, bs in bcast_shapes(shape):
            mk = _mk("masked_fill", dtype, st, bt)
            out.append(Sample([mk.tensor(shape, dtype), mk.tensor(bs, torch.bool), val],
                              tag=f"{st}-b{bt}", kind="bc"))
    return out


@override("CLAMP")
def _clamp(dtype, full):
    out = []
    lo, hi = (-3, 4) if dtype in INTS else (-0.5, 0.75)
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("clamp", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), lo, hi], tag=f"{st}-{lay}",
                              kind="c" if lay == "c" else "nc"))
        mk = _mk("clamp", dtype, st, "min")
        out.append(Sample([mk.tensor(shape, dtype), lo], tag=f"{st}-min", kind="x"))
        mk = _mk("clamp", dtype, st, "max")
        out.append(Sample([mk.tensor(shape, dtype)], {"max": hi}, tag=f"{st}-max", kind="x"))
    return out


@override("DIV_MODE")
def _div_mode(dtype, full):
    out = []
    for mode in ("trunc", "floor", None):
        for shape in _shapes(full):
            st = shape_tag(shape)
            for lay in layouts_for(shape)[:2]:
                mk = _mk("div_mode", dtype, st, lay, mode)
                a = mk.tensor(shape, dtype, lay, **({"lo": -5, "hi": 5} if dtype in FLOATS else {}))
                b = _nonzero(mk.tensor(shape, dtype, lay))
                out.append(Sample([a, b], {"rounding_mode": mode}, tag=f"{st}-{lay}-{mode}",
                                  kind="c" if lay == "c" else "nc"))
            for bt, bs in bcast_shapes(shape)[:1]:
                mk = _mk("div_mode", dtype, st, bt, mode)
                out.append(Sample([mk.tensor(shape, dtype), _nonzero(mk.tensor(bs, dtype))],
                                  {"rounding_mode": mode}, tag=f"{st}-b{bt}-{mode}", kind="bc"))
    return out


def _nonzero(t):
    if t.dtype == torch.bool:
        return torch.ones_like(t)
    if t.dtype in INTS:
        return torch.where(t == 0, torch.ones_like(t), t)
    return torch.where(t.abs() < 0.25, torch.full_like(t, 0.5), t)


@override("DIV")
def _div(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("div", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), _nonzero(mk.tensor(shape, dtype, lay))],
                              tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc"))
        for bt, bs in bcast_shapes(shape):
            mk = _mk("div", dtype, st, bt)
            out.append(Sample([mk.tensor(shape, dtype), _nonzero(mk.tensor(bs, dtype))],
                              tag=f"{st}-b{bt}", kind="bc"))
        mk = _mk("div", dtype, st, "py")
        out.append(Sample([mk.tensor(shape, dtype), 3 if dtype != torch.bool else True],
                          tag=f"{st}-py", kind="bc"))
    return out


# --- reductions ------------------------------------------------------------ #

def _reduce_dims(shape):
    """(tag, dims) pairs valid for shape."""
    r = len(shape)
    out = [("last", [-1])]
    if r >= 2:
        out.append(("first", [0]))
        out.append(("all", list(range(r))))
    if r >= 3:
        out.append(("mid", [0, 2]))
    return out


@override("SUM", "MEAN")
def _sum_dim(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dt, dims in _reduce_dims(shape):
            for keep in (False, True):
                for lay in (layouts_for(shape) if dt == "last" and not keep else ["c"]):
                    mk = _mk("sum", dtype, st, dt, keep, lay)
                    out.append(Sample([mk.tensor(shape, dtype, lay), dims, keep],
                                      tag=f"{st}-{dt}-k{int(keep)}-{lay}",
                                      kind="c" if lay == "c" else "nc"))
    return out


@override("AMAX", "AMIN")
def _amax(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        mk = _mk("amax", dtype, st, "dflt")
        out.append(Sample([mk.tensor(shape, dtype, ties=dtype in FLOATS)], tag=f"{st}-dflt"))
        for dt, dims in _reduce_dims(shape):
            for keep in (False, True):
                for lay in (layouts_for(shape) if dt == "last" and not keep else ["c"]):
                    mk = _mk("amax", dtype, st, dt, keep, lay)
                    out.append(Sample([mk.tensor(shape, dtype, lay), dims, keep],
                                      tag=f"{st}-{dt}-k{int(keep)}-{lay}",
                                      kind="c" if lay == "c" else "nc"))
    return out


def _no_empty_dim(shape, dim):
    return not shape or shape[dim] > 0


@override("ARGMAX", "ARGMIN")
def _argmax(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        if 0 in shape:
            continue                                     # eager refuses an empty argmax
        for lay in layouts_for(shape):
            mk = _mk("argmax", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay, ties=dtype in FLOATS)],
                              tag=f"{st}-flat-{lay}", kind="c" if lay == "c" else "nc"))
        for dim in ([-1, 0] if len(shape) >= 2 else [-1]):
            for keep in (False, True):
                mk = _mk("argmax", dtype, st, dim, keep)
                out.append(Sample([mk.tensor(shape, dtype, ties=dtype in FLOATS), dim, keep],
                                  tag=f"{st}-d{dim}-k{int(keep)}"))
    return out


@override("MAX_DIM", "MIN_DIM", "ANY_DIM", "ALL_DIM")
def _max_dim(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dim in ([-1, 0] if len(shape) >= 2 else [-1]):
            if shape and shape[dim] == 0:
                continue
            for keep in (False, True):
                for lay in (layouts_for(shape) if dim == -1 and not keep else ["c"]):
                    mk = _mk("maxdim", dtype, st, dim, keep, lay)
                    out.append(Sample([mk.tensor(shape, dtype, lay, ties=dtype in FLOATS),
                                       dim, keep], tag=f"{st}-d{dim}-k{int(keep)}-{lay}",
                                      kind="c" if lay == "c" else "nc"))
    return out


@override("VAR_DIM")
def _var_dim(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dt, dims in _reduce_dims(shape):
            for unbiased in (True, False):
                mk = _mk("var_dim", dtype, st, dt, unbiased)
                out.append(Sample([mk.tensor(shape, dtype), dims, unbiased, dt == "first"],
                                  tag=f"{st}-{dt}-u{int(unbiased)}"))
    return out


# (shape, offset, dim1, dim2)
DIAGONAL_CASES = [((3, 5), 0, 0, 1), ((3, 5), 2, 0, 1), ((3, 5), -2, 0, 1), ((5, 3), 1, 1, 0),
                  ((2, 4, 129), 5, 1, 2), ((2, 3, 4), -1, 0, 2), ((130, 3), 0, -1, -2),
                  ((2, 1, 3, 3), 0, 2, 3)]


@override("DIAGONAL")
def _diagonal(dtype, full):
    out = []
    for shape, off, d1, d2 in DIAGONAL_CASES:
        st = shape_tag(shape)
        for lay in (layouts_for(shape) if len(shape) == 2 else ["c"]):
            mk = _mk("diagonal", dtype, st, off, d1, d2, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), off, d1, d2],
                              tag=f"{st}-o{off}-{d1}{d2}-{lay}", kind="c" if lay == "c" else "nc"))
    return out


@override("VAR", "VAR_MEAN")
def _var(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        mk = _mk("var", dtype, st, "dflt")
        out.append(Sample([mk.tensor(shape, dtype)], tag=f"{st}-dflt"))
        for dt, dims in _reduce_dims(shape):
            for corr in (None, 0):
                for lay in (layouts_for(shape) if dt == "last" and corr is None else ["c"]):
                    mk = _mk("var", dtype, st, dt, corr, lay)
                    out.append(Sample([mk.tensor(shape, dtype, lay), dims],
                                      {"correction": corr, "keepdim": dt == "first"},
                                      tag=f"{st}-{dt}-c{corr}-{lay}",
                                      kind="c" if lay == "c" else "nc"))
    return out


# --- normalization --------------------------------------------------------- #

def _softmax_bw(dtype, full, log):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dim in ([-1, 0] if len(shape) >= 2 else [-1]):
            for lay in (layouts_for(shape) if dim == -1 else ["c"]):
                mk = _mk("smbw", dtype, st, dim, lay)
                x = mk.tensor(shape, torch.float32)
                y = torch.softmax(x, dim)
                if log:
                    y = torch.log_softmax(x, dim)
                g = mk.tensor(shape, dtype, lay)
                y = y.to(dtype)
                if lay == "T":
                    y = y.transpose(-1, -2).contiguous().transpose(-1, -2)
                out.append(Sample([g, y, dim, dtype], tag=f"{st}-d{dim}-{lay}",
                                  kind="c" if lay == "c" else "nc"))
    return out


OVERRIDES["SOFTMAX_BACKWARD"] = lambda dtype, full: _softmax_bw(dtype, full, False)
OVERRIDES["LOG_SOFTMAX_BACKWARD"] = lambda dtype, full: _softmax_bw(dtype, full, True)


def _ln_shapes(full):
    return [s for s in _shapes(full, min_rank=1)]


@override("LAYER_NORM")
def _layer_norm(dtype, full):
    out = []
    for shape in _ln_shapes(full):
        st = shape_tag(shape)
        for nd in ([1, 2] if len(shape) >= 2 else [1]):
            norm = list(shape[-nd:])
            for affine in (True, False):
                for lay in (layouts_for(shape) if nd == 1 and affine else ["c"]):
                    mk = _mk("ln", dtype, st, nd, affine, lay)
                    w = mk.tensor(norm, dtype) if affine else None
                    b = mk.tensor(norm, dtype) if affine else None
                    out.append(Sample([mk.tensor(shape, dtype, lay), norm, w, b, 1e-5],
                                      tag=f"{st}-n{nd}-{'aff' if affine else 'plain'}-{lay}",
                                      kind="c" if lay == "c" else "nc"))
    return out


@override("LAYER_NORM_BACKWARD")
def _layer_norm_bw(dtype, full):
    out = []
    for shape in _ln_shapes(full):
        st = shape_tag(shape)
        for nd in ([1, 2] if len(shape) >= 2 else [1]):
            norm = list(shape[-nd:])
            for affine in (True, False):
                mk = _mk("lnbw", dtype, st, nd, affine)
                x = mk.tensor(shape, dtype)
                w = mk.tensor(norm, dtype) if affine else None
                b = mk.tensor(norm, dtype) if affine else None
                _, mean, rstd = A.native_layer_norm.default(x, norm, w, b, 1e-5)
                g = mk.tensor(shape, dtype)
                mask = [True, affine, affine]
                # grad_input is a difference of O(1) terms times rstd: its rounding
                # error grows with rstd (316 for a row of one element, eps 1e-5)
                amp = max(1.0, rstd.float().abs().max().item()) if rstd.numel() else 1.0
                rtol, atol = TOL[dtype]
                out.append(Sample([g, x, norm, mean, rstd, w, b, mask],
                                  tag=f"{st}-n{nd}-{'aff' if affine else 'plain'}",
                                  tol=(rtol, atol * amp)))
    return out


BN_SHAPES = [(4, 3), (2, 3, 5), (2, 3, 4, 5), (1, 5, 7), (3, 1, 2, 2, 3), (130, 2)]


@override("BATCH_NORM_TRAIN", "BATCH_NORM_INFER")
def _bn(dtype, full):
    out = []
    for shape in BN_SHAPES:
        st = shape_tag(shape)
        c = shape[1]
        for affine in (True, False):
            mk = _mk("bn", dtype, st, affine)
            x = mk.tensor(shape, dtype)
            w = mk.tensor((c,), dtype) if affine else None
            b = mk.tensor((c,), dtype) if affine else None
            rm = mk.tensor((c,), dtype)
            rv = mk.tensor((c,), dtype, lo=0.5, hi=2.0)
            out.append(Sample([x, w, b, rm, rv], tag=f"{st}-{'aff' if affine else 'plain'}"))
    return out


def _bn_args(op_id, s: Sample):
    x, w, b, rm, rv = s.args
    if op_id == "BATCH_NORM_TRAIN":
        s.args = [x, w, b, rm, rv, True, 0.1, 1e-5]
    else:
        s.args = [x, w, b, rm, rv, 0.1, 1e-5]
    return s


@override("BATCH_NORM_NO_STATS")
def _bn_no_stats(dtype, full):
    return [Sample([x, w, b, True, 0.1, 1e-5], tag=s.tag)
            for s in _bn(dtype, full) for x, w, b, _, _ in [s.args]]


@override("BATCH_NORM_BACKWARD")
def _bn_bw(dtype, full):
    out = []
    for shape in BN_SHAPES:
        st = shape_tag(shape)
        c = shape[1]
        for train in (True, False):
            mk = _mk("bnbw", dtype, st, train)
            x = mk.tensor(shape, dtype)
            w = mk.tensor((c,), dtype)
            rm = mk.tensor((c,), dtype)
            rv = mk.tensor((c,), dtype, lo=0.5, hi=2.0)
            g = mk.tensor(shape, dtype)
            if train:
                _, sm, si = A.native_batch_norm.default(x, w, None, rm.clone(), rv.clone(),
                                                        True, 0.1, 1e-5)
                out.append(Sample([g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True]],
                                  tag=f"{st}-train"))
            else:
                out.append(Sample([g, x, w, rm, rv, None, None, False, 1e-5,
                                   [True, True, True]], tag=f"{st}-eval"))
    return out


# --- matmul ---------------------------------------------------------------- #

MM_SHAPES = [(1, 1, 1), (3, 5, 7), (2, 129, 3), (130, 7, 5), (1, 600, 2), (5, 3, 513)]


def _mat(mk, shape, dtype, lay):
    return mk.tensor(shape, dtype, lay if lay in layouts_for(shape) else "c")


@override("MM", "ADDMM")
def _mm(dtype, full):
    out = []
    for m, k, n in MM_SHAPES + ([(3, 0, 4)] if full else []):
        st = f"{m}x{k}x{n}"
        for lay in ("c", "T", "S"):
            mk = _mk("mm", dtype, st, lay)
            a = _mat(mk, (m, k), dtype, lay)
            b = _mat(mk, (k, n), dtype, lay)
            out.append(Sample([a, b], tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc"))
    return out


def _addmm_args(s: Sample, mk, variant):
    a, b = s.args
    m, n = a.shape[0], b.shape[1]
    bias = mk.tensor((n,) if variant not in ("full", "beta0") else (m, n), a.dtype)
    s.args = [bias, a, b]
    _bias_variant(s, variant)
    return s


def _bias_variant(s: Sample, variant):
    """scaled: beta 0.5, alpha 2; beta0: beta 0 over a bias holding NaN and
    inf, which eager never reads."""
    if variant == "scaled":
        s.kwargs = {"beta": 0.5, "alpha": 2.0}
    elif variant == "beta0":
        bias = s.args[0].clone()
        bias.view(-1)[0] = float("nan")
        bias.view(-1)[-1] = float("inf")
        s.args[0] = bias
        s.kwargs = {"beta": 0, "alpha": 1.5}
    s.tag += f"-{variant}"


BMM_SHAPES = [(1, 1, 1, 1), (2, 3, 5, 7), (3, 129, 2, 4), (1, 130, 7, 5), (2, 5, 3, 513)]


@override("BMM", "BADDBMM", "ADDBMM")
def _bmm(dtype, full):
    out = []
    for bsz, m, k, n in BMM_SHAPES:
        st = f"{bsz}x{m}x{k}x{n}"
        for lay in ("c", "T", "S"):
            mk = _mk("bmm", dtype, st, lay)
            a = _mat(mk, (bsz, m, k), dtype, lay)
            b = _mat(mk, (bsz, k, n), dtype, lay)
            out.append(Sample([a, b], tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc"))
    return out


# --- conv and pooling ------------------------------------------------------ #

# (tag, input shape, weight shape, stride, padding, dilation, groups)
CONV_CASES = [
    ("1d", (2, 3, 11), (4, 3, 3), [1], [0], [1], 1),
    ("1d-pad-stride", (1, 4, 9), (6, 4, 2), [2], [1], [1], 1),
    ("1d-dil-group", (2, 4, 13), (6, 2, 3), [1], [2], [2], 2),
    ("2d", (2, 3, 7, 9), (5, 3, 3, 3), [1, 1], [0, 0], [1, 1], 1),
    ("2d-pad-stride", (1, 3, 9, 8), (4, 3, 3, 2), [2, 1], [1, 0], [1, 1], 1),
    ("2d-dw", (2, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], 4),
    ("2d-1x1", (1, 130, 3, 5), (7, 130, 1, 1), [1, 1], [0, 0], [1, 1], 1),
    ("2d-dil", (1, 2, 9, 9), (3, 2, 3, 3), [1, 1], [2, 2], [2, 2], 1),
]


@override("CONVOLUTION")
def _conv(dtype, full):
    out = []
    for tag, xs, ws, stride, pad, dil, groups in CONV_CASES:
        for bias in (True, False):
            mk = _mk("conv", dtype, tag, bias)
            x = mk.tensor(xs, dtype)
            w = mk.tensor(ws, dtype)
            b = mk.tensor((ws[0],), dtype) if bias else None
            out.append(Sample([x, w, b, stride, pad, dil, False, [0] * len(stride), groups],
                              tag=f"{tag}-{'bias' if bias else 'nobias'}"))
    return out


@override("CONVOLUTION_BACKWARD")
def _conv_bw(dtype, full):
    out = []
    for tag, xs, ws, stride, pad, dil, groups in CONV_CASES:
        mk = _mk("convbw", dtype, tag)
        x = mk.tensor(xs, dtype)
        w = mk.tensor(ws, dtype)
        y = A.convolution.default(x, w, None, stride, pad, dil, False, [0] * len(stride), groups)
        g = mk.tensor(y.shape, dtype)
        for mask in ([True, True, True], [True, False, False], [False, True, False]):
            out.append(Sample([g, x, w, [ws[0]] if mask[2] else None, stride, pad, dil, False,
                               [0] * len(stride), groups, mask],
                              tag=f"{tag}-m{''.join(str(int(v)) for v in mask)}"))
    return out


# (tag, input shape, kernel, stride, padding, dilation, ceil_mode)
POOL_CASES = [
    ("k2", (1, 2, 6, 6), [2, 2], [2, 2], [0, 0], [1, 1], False),
    ("k3s2p1", (2, 3, 7, 9), [3, 3], [2, 2], [1, 1], [1, 1], False),
    ("k3s1", (1, 1, 5, 5), [3, 3], [1, 1], [0, 0], [1, 1], False),
    ("ceil", (1, 2, 7, 7), [2, 2], [2, 2], [0, 0], [1, 1], True),
    ("rect", (2, 130, 4, 6), [2, 3], [1, 2], [0, 1], [1, 1], False),
    ("3d-input", (3, 5, 5), [2, 2], [2, 2], [0, 0], [1, 1], False),
]


def _distinct(mk, shape, dtype):
    """Values without ties within a pooling window (exact in bf16/fp16)."""
    n = 1
    for s in shape:
        n *= s
    v = (mk.perm(n).reshape(shape) % 241).float() / 16.0 - 7.0
    return v.to(dtype)


@override("MAX_POOL2D")
def _maxpool(dtype, full):
    if dtype not in FLOATS:
        return []
    out = []
    for tag, xs, k, s, p, d, ceil in POOL_CASES + [("dil", (1, 1, 9, 9), [3, 3], [1, 1], [0, 0],
                                                    [2, 2], False)]:
        mk = _mk("maxpool", dtype, tag)
        out.append(Sample([_distinct(mk, xs, dtype), k, s, p, d, ceil], tag=tag))
    return out


def _max_bw_samples(dtype, cases, name, pool):
    """max_pool*_with_indices_backward samples over cases (pool: eager's forward)."""
    if dtype not in FLOATS:
        return []
    out = []
    for tag, xs, k, s, p, d, ceil in cases:
        mk = _mk(name, dtype, tag)
        x = _distinct(mk, xs, dtype)
        y, idx = pool(x, k, s, p, d, ceil)
        out.append(Sample([mk.tensor(y.shape, dtype), x, k, s, p, d, ceil, idx], tag=tag))
    return out


@override("MAX_POOL2D_BACKWARD")
def _maxpool_bw(dtype, full):
    return _max_bw_samples(dtype, POOL_CASES, "maxpoolbw", A.max_pool2d_with_indices.default)


def _avg_samples(dtype, cases, name, pool=None):
    """avg_pool samples over cases (with pool, eager's op: its backward's)."""
    out = []
    for tag, xs, k, s, p, d, ceil in cases:
        for cip, div in ((True, None), (False, None), (True, 3)):
            mk = _mk(name, dtype, tag, cip, div)
            x = mk.tensor(xs, dtype)
            args = [x, k, s, p, ceil, cip, div]
            if pool is not None:
                args = [mk.tensor(pool(*args).shape, dtype)] + args
            out.append(Sample(args, tag=f"{tag}-cip{int(cip)}-div{div}"))
    return out


@override("AVG_POOL2D")
def _avgpool(dtype, full):
    return _avg_samples(dtype, POOL_CASES, "avgpool")


@override("AVG_POOL2D_BACKWARD")
def _avgpool_bw(dtype, full):
    return _avg_samples(dtype, POOL_CASES, "avgpoolbw", A.avg_pool2d.default)


ADAPTIVE_CASES = [((1, 2, 6, 6), [2, 2]), ((2, 3, 7, 5), [3, 2]), ((1, 4, 5, 5), [1, 1]),
                  ((2, 130, 4, 4), [4, 4]), ((3, 9, 9), [4, 5])]


@override("ADAPTIVE_AVG_POOL2D")
def _adaptive(dtype, full):
    out = []
    for xs, os_ in ADAPTIVE_CASES:
        mk = _mk("adaptive", dtype, xs, os_)
        out.append(Sample([mk.tensor(xs, dtype), os_], tag=f"{shape_tag(xs)}-o{shape_tag(os_)}"))
    return out


@override("ADAPTIVE_AVG_POOL2D_BACKWARD")
def _adaptive_bw(dtype, full):
    out = []
    for xs, os_ in ADAPTIVE_CASES:
        mk = _mk("adaptivebw", dtype, xs, os_)
        x = mk.tensor(xs, dtype)
        g = mk.tensor(tuple(xs[:-2]) + tuple(os_), dtype)
        out.append(Sample([g, x], tag=f"{shape_tag(xs)}-o{shape_tag(os_)}"))
    return out


POOL3D_CASES = [
    ("k2", (1, 2, 4, 6, 6), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False),
    ("k3s2p1", (2, 3, 5, 7, 6), [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True),
    ("rect-dil", (1, 2, 6, 5, 7), [3, 2, 3], [1, 2, 1], [1, 0, 1], [2, 1, 1], False),
    ("4d-input", (2, 5, 4, 6), [2, 3, 2], [1, 1, 2], [0, 1, 1], [1, 1, 1], True),
]
ADAPTIVE3D_CASES = [((1, 2, 5, 4, 7), [2, 3, 3]), ((2, 3, 4, 4, 4), [1, 1, 1]), ((3, 6, 5, 4), [4, 2, 3])]


@override("MAX_POOL3D")
def _maxpool3d(dtype, full):
    if dtype not in FLOATS:
        return []
    return [Sample([_distinct(_mk("maxpool3d", dtype, tag), xs, dtype), k, s, p, d, ceil], tag=tag)
            for tag, xs, k, s, p, d, ceil in POOL3D_CASES]


@override("MAX_POOL3D_BACKWARD")
def _maxpool3d_bw(dtype, full):
    return _max_bw_samples(dtype, POOL3D_CASES, "maxpool3dbw", A.max_pool3d_with_indices.default)


def _adaptive_max_cases(sp):
    return ADAPTIVE_CASES if sp == 2 else ADAPTIVE3D_CASES


# adaptive_max_pool{2,3}d and their backward: one sample maker per spatial rank
for _sp in (2, 3):
    def _amax(dtype, full, sp=_sp):
        if dtype not in FLOATS:
            return []
        return [Sample([_distinct(_mk("amax", dtype, xs, os_), xs, dtype), os_],
                       tag=f"{shape_tag(xs)}-o{shape_tag(os_)}") for xs, os_ in _adaptive_max_cases(sp)]

    def _amax_bw(dtype, full, sp=_sp):
        if dtype not in FLOATS:
            return []
        out = []
        for xs, os_ in _adaptive_max_cases(sp):
            mk = _mk("amaxbw", dtype, xs, os_)
            x = _distinct(mk, xs, dtype)
            fn = A.adaptive_max_pool2d.default if sp == 2 else A.adaptive_max_pool3d.default
            y, idx = fn(x, os_)
            out.append(Sample([mk.tensor(y.shape, dtype), x, idx], tag=f"{shape_tag(xs)}-o{shape_tag(os_)}"))
        return out

    override(f"ADAPTIVE_MAX_POOL{_sp}D")(_amax)
    override(f"ADAPTIVE_MAX_POOL{_sp}D_BACKWARD")(_amax_bw)


@override("AVG_POOL3D")
def _avgpool3d(dtype, full):
    if dtype != torch.float32:  # eager's CPU kernels: float32/float64 only
        return []
    return _avg_samples(dtype, POOL3D_CASES, "avgpool3d")


@override("AVG_POOL3D_BACKWARD")
def _avgpool3d_bw(dtype, full):
    if dtype != torch.float32:
        return []
    return _avg_samples(dtype, POOL3D_CASES, "avgpool3dbw", A.avg_pool3d.default)


@override("ADAPTIVE_AVG_POOL3D")
def _adaptive3d(dtype, full):
    if dtype != torch.float32:  # eager's CPU kernels: float32/float64 only
        return []
    return [Sample([_mk("adaptive3d", dtype, xs, os_).tensor(xs, dtype), os_],
                   tag=f"{shape_tag(xs)}-o{shape_tag(os_)}") for xs, os_ in ADAPTIVE3D_CASES]


@override("ADAPTIVE_AVG_POOL3D_BACKWARD")
def _adaptive3d_bw(dtype, full):
    if dtype != torch.float32:  # eager's CPU kernels: float32/float64 only
        return []
    out = []
    for xs, os_ in ADAPTIVE3D_CASES:
        mk = _mk("adaptive3dbw", dtype, xs, os_)
        g = mk.tensor(tuple(xs[:-3]) + tuple(os_), dtype)
        out.append(Sample([g, mk.tensor(xs, dtype)], tag=f"{shape_tag(xs)}-o{shape_tag(os_)}"))
    return out


# --- data movement and views ----------------------------------------------- #

@override("CONSTANT_PAD_ND")
def _pad(dtype, full):
    out = []
    val = True if dtype == torch.bool else (5 if dtype in INTS else -2.5)
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        pads = [("r", [1, 2], None), ("val", [0, 3], val)]
        if len(shape) >= 2:
            pads.append(("2d", [1, 0, 2, 1], val))
            pads.append(("crop", [-1, 1], None)) if shape[-1] > 1 else None
        for pt, pad, v in pads:
            for lay in (layouts_for(shape) if pt == "r" else ["c"]):
                mk = _mk("pad", dtype, st, pt, lay)
                args = [mk.tensor(shape, dtype, lay), pad] + ([v] if v is not None else [])
                out.append(Sample(args, tag=f"{st}-{pt}-{lay}", kind="c" if lay == "c" else "nc",
                                  bound_ints=False))
    return out


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@override("VIEW", "UNSAFE_VIEW", "RESHAPE")
def _view(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        n = _numel(shape)
        targets = [("flat", [-1]), ("lead1", [1] + list(shape))]
        if n and n % 2 == 0:
            targets.append(("split", [2, n // 2]))
        if len(shape) >= 2:
            targets.append(("merge", list(shape[:-2]) + [shape[-2] * shape[-1]]))
        for tt, size in targets:
            mk = _mk("view", dtype, st, tt)
            out.append(Sample([mk.tensor(shape, dtype), size], tag=f"{st}-{tt}", bound_ints=False))
        for lay in layouts_for(shape)[1:]:
            mk = _mk("view", dtype, st, lay)
            # a view of a strided input that keeps its dims grouped: unsqueeze-like
            out.append(Sample([mk.tensor(shape, dtype, lay), list(shape) + [1]],
                              tag=f"{st}-{lay}-unsq", kind="nc", bound_ints=False))
    return out


@override("AS_STRIDED")
def _as_strided(dtype, full):
    out = []
    cases = [("sub", (3, 5), [2, 3], [5, 1], 1), ("tstride", (3, 5), [5, 3], [1, 5], None),
             ("step", (20,), [4, 3], [5, 2], 0), ("bcast", (7,), [3, 7], [0, 1], None),
             ("0d", (), [], [], None), ("one", (1,), [1], [1], 0),
             ("big", (2, 1, 129), [129, 2], [1, 129], None)]
    for tag, shape, size, stride, off in cases:
        mk = _mk("as_strided", dtype, tag)
        args = [mk.tensor(shape, dtype), size, stride] + ([off] if off is not None else [])
        out.append(Sample(args, tag=tag, bound_ints=False))
    return out


@override("PERMUTE")
def _permute(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        r = len(shape)
        perms = [("rev", list(reversed(range(r))))]
        if r >= 3:
            perms.append(("rot", [1, 2, 0] + list(range(3, r))))
        for pt, perm in perms:
            for lay in layouts_for(shape):
                mk = _mk("permute", dtype, st, pt, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), perm], tag=f"{st}-{pt}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("EXPAND")
def _expand(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        size = [3] + [4 if s == 1 else s for s in shape]
        size2 = [-1 if s != 1 else 2 for s in shape]
        for lay in layouts_for(shape):
            mk = _mk("expand", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), size], tag=f"{st}-{lay}",
                              kind="c" if lay == "c" else "nc", bound_ints=False))
        if shape:
            mk = _mk("expand", dtype, st, "neg")
            out.append(Sample([mk.tensor(shape, dtype), size2], tag=f"{st}-keep",
                              bound_ints=False))
    return out


@override("UNSQUEEZE")
def _unsqueeze(dtype, full):
    out = []
    for shape in _shapes(full, max_rank=7):
        st = shape_tag(shape)
        for dim in (0, -1, len(shape) // 2):
            for lay in (layouts_for(shape) if dim == -1 else ["c"]):
                mk = _mk("unsqueeze", dtype, st, dim, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), dim], tag=f"{st}-d{dim}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("SQUEEZE", "SQUEEZE_DIM", "SQUEEZE_DIMS")
def _squeeze(dtype, full):
    out = []
    for shape in _shapes(full) + [(1, 4, 1), (1, 1)]:
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("squeeze", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay)], tag=f"{st}-{lay}",
                              kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


def _squeeze_args(op_id, s: Sample):
    x = s.args[0]
    ones = [i for i, v in enumerate(x.shape) if v == 1]
    if op_id == "SQUEEZE_DIM":
        s.args = [x, ones[0] if ones else -1]
    elif op_id == "SQUEEZE_DIMS":
        s.args = [x, ones if ones else ([0] if x.dim() else [])]
    return s


@override("SLICE")
def _slice(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        n = shape[-1]
        cases = [("dflt", []), ("last", [-1, 1, None]), ("step2", [-1, 0, n, 2]),
                 ("neg", [-1, -3, None]), ("over", [0, 0, 1 << 40])]
        if len(shape) >= 2:
            cases.append(("first", [0, 1, shape[0], 3]))
        for ct, rest in cases:
            for lay in (layouts_for(shape) if ct == "step2" else ["c"]):
                mk = _mk("slice", dtype, st, ct, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay)] + rest, tag=f"{st}-{ct}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("SELECT")
def _select(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        cases = [("last", -1, -1), ("first", 0, 0)]
        if len(shape) >= 2 and shape[-1] > 2:
            cases.append(("mid", -1, shape[-1] // 2))
        for ct, dim, idx in cases:
            if shape[dim] == 0:
                continue
            for lay in (layouts_for(shape) if ct == "last" else ["c"]):
                mk = _mk("select", dtype, st, ct, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), dim, idx],
                                  tag=f"{st}-{ct}-{lay}", kind="c" if lay == "c" else "nc",
                                  bound_ints=False))
    return out


@override("T")
def _t(dtype, full):
    out = []
    for shape in _shapes(full, max_rank=2):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("t", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay)], tag=f"{st}-{lay}",
                              kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("TRANSPOSE")
def _transpose(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        pairs = [("same", -1, -1)] if len(shape) <= 1 else [("last2", -2, -1)]
        if len(shape) >= 3:
            pairs.append(("0-2", 0, 2))
        for pt, d0, d1 in pairs:
            for lay in layouts_for(shape):
                mk = _mk("transpose", dtype, st, pt, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), d0, d1], tag=f"{st}-{pt}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("CAT")
def _cat(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        dims = [0, -1] if len(shape) >= 2 else [0]
        for dim in dims:
            for lay in layouts_for(shape):
                mk = _mk("cat", dtype, st, dim, lay)
                other = list(shape)
                other[dim] = 2
                ts = [mk.tensor(shape, dtype, lay), mk.tensor(other, dtype),
                      mk.tensor(shape, dtype)]
                out.append(Sample([ts, dim], tag=f"{st}-d{dim}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
        mk = _mk("cat", dtype, st, "one")
        out.append(Sample([[mk.tensor(shape, dtype)]], tag=f"{st}-single", bound_ints=False))
    return out


@override("STACK")
def _stack(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dim in sorted({0, -1, len(shape)}):
            for lay in layouts_for(shape):
                mk = _mk("stack", dtype, st, dim, lay)
                ts = [mk.tensor(shape, dtype, lay), mk.tensor(shape, dtype)]
                out.append(Sample([ts, dim], tag=f"{st}-d{dim}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("SPLIT", "SPLIT_WITH_SIZES")
def _split(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        for dim in ([0, -1] if len(shape) >= 2 else [0]):
            n = shape[dim]
            for lay in layouts_for(shape):
                mk = _mk("split", dtype, st, dim, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), n, dim], tag=f"{st}-d{dim}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


def _split_args(op_id, s: Sample):
    x, n, dim = s.args
    if op_id == "SPLIT":
        s.args = [x, 2, dim]
    else:
        sizes = [n // 3, n - n // 3 - max(n // 2, 0), max(n // 2, 0)]
        sizes = [v for v in sizes if v >= 0]
        sizes[-1] = n - sum(sizes[:-1])
        s.args = [x, sizes, dim]
    return s


@override("SLICE_SCATTER")
def _slice_scatter(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        n = shape[-1]
        cases = [("all", 0, None, None, 1), ("last", -1, 1, None, 1), ("step", -1, 0, n, 2)]
        for ct, dim, start, end, step in cases:
            for lay in layouts_for(shape)[:2]:
                mk = _mk("slice_scatter", dtype, st, ct, lay)
                x = mk.tensor(shape, dtype, lay)
                src_shape = list(x[(slice(None),) * (dim % len(shape)) +
                                   (slice(start, end, step),)].shape)
                src = mk.tensor(src_shape, dtype)
                out.append(Sample([x, src, dim, start, end, step], tag=f"{st}-{ct}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("SELECT_SCATTER")
def _select_scatter(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        for ct, dim, idx in (("last", -1, -1), ("first", 0, 0)):
            if shape[dim] == 0:
                continue
            for lay in layouts_for(shape)[:2]:
                mk = _mk("select_scatter", dtype, st, ct, lay)
                x = mk.tensor(shape, dtype, lay)
                src = mk.tensor(x.select(dim, idx).shape, dtype)
                out.append(Sample([x, src, dim, idx], tag=f"{st}-{ct}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("AS_STRIDED_SCATTER")
def _as_strided_scatter(dtype, full):
    out = []
    cases = [("sub", (3, 5), [2, 3], [5, 1], 1), ("step", (20,), [4, 3], [5, 2], 0),
             ("col", (4, 6), [4], [6], 2), ("whole", (2, 1, 129), [2, 1, 129], [129, 129, 1], 0)]
    for tag, shape, size, stride, off in cases:
        mk = _mk("as_strided_scatter", dtype, tag)
        out.append(Sample([mk.tensor(shape, dtype), mk.tensor(size, dtype), size, stride, off],
                          tag=tag, bound_ints=False))
    return out


@override("COPY")
def _copy(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("copy", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype), mk.tensor(shape, dtype, lay)],
                              tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc",
                              bound_ints=False))
        for bt, bs in bcast_shapes(shape):
            mk = _mk("copy", dtype, st, bt)
            out.append(Sample([mk.tensor(shape, dtype), mk.tensor(bs, dtype)], tag=f"{st}-b{bt}",
                              kind="bc", bound_ints=False))
        mk = _mk("copy", dtype, st, "cast")
        src_dt = torch.float32 if dtype != torch.float32 else torch.bfloat16
        out.append(Sample([mk.tensor(shape, dtype), mk.tensor(shape, src_dt)],
                          tag=f"{st}-from{SHORT[src_dt]}", kind="x", bound_ints=False))
    return out


CAST_TO = [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.bool]


@override("TO_COPY")
def _to_copy(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("to_copy", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay)], tag=f"{st}-same-{lay}",
                              kind="c" if lay == "c" else "nc", bound_ints=False))
        for to in CAST_TO:
            if to == dtype:
                continue
            mk = _mk("to_copy", dtype, st, SHORT[to])
            x = mk.tensor(shape, dtype, **({"lo": -40.0, "hi": 40.0} if dtype in FLOATS else {}))
            out.append(Sample([x], {"dtype": to}, tag=f"{st}-to{SHORT[to]}", kind="x",
                              bound_ints=False))
    return out


# --- gathers and scatters -------------------------------------------------- #

@override("EMBEDDING")
def _embedding(dtype, full):
    wdt, idt = _floaty(dtype), _idx_dtype(dtype)
    if dtype == torch.bool:
        return []
    out = []
    for vocab, dim, ishape in [(10, 4, (5,)), (1, 1, (1,)), (33, 129, (2, 7)), (200, 3, (130,)),
                               (7, 5, ()), (16, 8, (2, 1, 3))]:
        for pad in (-1, 2):
            mk = _mk("embedding", dtype, vocab, dim, ishape, pad)
            w = mk.tensor((vocab, dim), wdt)
            ix = mk.index(ishape, vocab, idt)
            out.append(Sample([w, ix, pad if pad < vocab else -1],
                              tag=f"v{vocab}-d{dim}-i{shape_tag(ishape)}-p{pad}",
                              bound_ints=False))
    return out


@override("EMBEDDING_DENSE_BACKWARD")
def _embedding_bw(dtype, full):
    wdt, idt = _floaty(dtype), _idx_dtype(dtype)
    if dtype == torch.bool:
        return []
    out = []
    for vocab, dim, ishape in [(10, 4, (5,)), (1, 1, (1,)), (33, 129, (2, 7)), (200, 3, (130,)),
                               (7, 5, ()), (300, 6, (3, 50))]:
        for pad in (-1, 2):
            mk = _mk("embedding_bw", dtype, vocab, dim, ishape, pad)
            ix = mk.index(ishape, vocab, idt)
            g = mk.tensor(tuple(ishape) + (dim,), wdt)
            out.append(Sample([g, ix, vocab, pad if pad < vocab else -1, False],
                              tag=f"v{vocab}-d{dim}-i{shape_tag(ishape)}-p{pad}",
                              bound_ints=False))
    return out


@override("INDEX_SELECT")
def _index_select(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dim in ([0, -1] if len(shape) >= 2 else [0]):
            n = shape[dim] if shape else 1
            for ishape in ((4,), ()):
                for lay in (layouts_for(shape) if ishape else ["c"]):
                    mk = _mk("index_select", dtype, st, dim, ishape, lay)
                    out.append(Sample([mk.tensor(shape, dtype, lay), dim,
                                       mk.index(ishape, n)], tag=f"{st}-d{dim}-i{len(ishape)}-{lay}",
                                      kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("GATHER")
def _gather(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for dim in ([0, -1] if len(shape) >= 2 else [0]):
            n = shape[dim] if shape else 1
            ishape = list(shape)
            if shape:
                ishape[dim] = 3
            for lay in layouts_for(shape):
                mk = _mk("gather", dtype, st, dim, lay)
                out.append(Sample([mk.tensor(shape, dtype, lay), dim, mk.index(ishape, n)],
                                  tag=f"{st}-d{dim}-{lay}", kind="c" if lay == "c" else "nc",
                                  bound_ints=False))
    return out


@override("INDEX")
def _index(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        mk = _mk("index", dtype, st, "0")
        cases = [("i0", [mk.index((4,), shape[0])]), ("i0-2d", [mk.index((2, 3), shape[0])])]
        if len(shape) >= 2:
            cases.append(("i1", [None, mk.index((5,), shape[1])]))
            cases.append(("i01", [mk.index((3,), shape[0]), mk.index((3,), shape[1])]))
            cases.append(("bcast", [mk.index((3, 1), shape[0]), mk.index((1, 2), shape[1])]))
            cases.append(("i32", [mk.index((4,), shape[0], torch.int32)]))
        for ct, idx in cases:
            for lay in (layouts_for(shape) if ct == "i0" else ["c"]):
                mk2 = _mk("index", dtype, st, ct, lay)
                out.append(Sample([mk2.tensor(shape, dtype, lay), idx], tag=f"{st}-{ct}-{lay}",
                                  kind="c" if lay == "c" else "nc", bound_ints=False))
    return out


@override("INDEX_PUT")
def _index_put(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        n0 = shape[0]
        for acc in (False, True):
            mk = _mk("index_put", dtype, st, acc)
            k = min(n0, 3)
            uniq = mk.perm(n0)[:k]                      # unique rows: deterministic writes
            idx = mk.index((5,), n0) if acc else uniq
            vshape = (idx.shape[0],) + tuple(shape[1:])
            cases = [("rows", [idx], mk.tensor(vshape, dtype)),
                     ("rows-bc", [idx], mk.tensor(tuple(shape[1:]) or (1,), dtype)
                      if len(shape) > 1 else mk.tensor((), dtype))]
            if len(shape) >= 2:
                pairs = mk.perm(n0 * shape[1])[:min(4, n0 * shape[1])]
                i0, i1 = pairs // shape[1], pairs % shape[1]
                if acc:
                    i0, i1 = mk.index((6,), n0), mk.index((6,), shape[1])
                cases.append(("pair", [i0, i1], mk.tensor((i0.shape[0],) + tuple(shape[2:]),
                                                          dtype)))
            for ct, ix, v in cases:
                if acc and dtype == torch.bool:
                    continue
                out.append(Sample([mk.tensor(shape, dtype), ix, v, acc],
                                  tag=f"{st}-{ct}-acc{int(acc)}", bound_ints=acc))
    return out


@override("SCATTER_VALUE", "SCATTER_SRC", "SCATTER_ADD")
def _scatter(dtype, full):
    out = []
    for shape in _shapes(full, min_rank=1):
        st = shape_tag(shape)
        for dim in ([0, -1] if len(shape) >= 2 else [0]):
            n = shape[dim]
            if n == 0:
                continue
            k = min(n, 2)
            mk = _mk("scatter", dtype, st, dim)
            # per line along dim: k distinct positions (no duplicate writes)
            ishape = list(shape)
            ishape[dim] = k
            moved = torch.argsort(torch.rand(tuple(ishape[:dim % len(shape)]) +
                                             tuple(ishape[dim % len(shape) + 1:]) + (n,),
                                             generator=mk.g), dim=-1)[..., :k]
            idx = moved.movedim(-1, dim % len(shape)).contiguous()
            dup = mk.index(ishape, n)
            out.append(Sample([mk.tensor(shape, dtype), dim, idx, mk.tensor(ishape, dtype)],
                              tag=f"{st}-d{dim}", bound_ints=True))
            out[-1].dup = dup  # type: ignore[attr-defined]
    return out


def _scatter_args(op_id, s: Sample):
    x, dim, idx, src = s.args
    if op_id == "SCATTER_VALUE":
        val = True if x.dtype == torch.bool else (7 if x.dtype in INTS else -2.5)
        s.args = [x, dim, idx, val]
    elif op_id == "SCATTER_ADD":
        s.args = [x, dim, s.dup, src]  # type: ignore[attr-defined]
    return s



@override("SCATTER_REDUCE")
def _scatter_reduce(dtype, full):
    """Duplicate indices (several values reduced at one position), every
    reduce trnc lowers, with and without self."""
    out = []
    for s in _scatter(dtype, full):
        x, dim, _, src = s.args
        for red in ("sum", "mean"):
            for inc in (True, False):
                out.append(Sample([x, dim, s.dup, src, red], {"include_self": inc},  # type: ignore[attr-defined]
                                  tag=f"{s.tag}-{red}-{'self' if inc else 'noself'}"))
    return out


# --- creation -------------------------------------------------------------- #

def _fill_for(dtype):
    return True if dtype == torch.bool else (7 if dtype in INTS else -1.25)


@override("FULL", "ZEROS", "ONES", "EMPTY", "EFFICIENTZEROTENSOR")
def _full(dtype, full):
    return [Sample([list(shape)], {"dtype": dtype}, tag=shape_tag(shape), bound_ints=False)
            for shape in _shapes(full)]


def _full_args(op_id, s: Sample):
    if op_id == "FULL":
        s.args = [s.args[0], _fill_for(s.kwargs["dtype"])]
    if op_id == "EMPTY":
        s.compare = "meta"
    return s


@override("FULL_LIKE")
def _full_like(dtype, full):
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            mk = _mk("full_like", dtype, st, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), _fill_for(dtype)],
                              tag=f"{st}-{lay}", kind="c" if lay == "c" else "nc",
                              bound_ints=False))
        mk = _mk("full_like", dtype, st, "cast")
        out.append(Sample([mk.tensor(shape, torch.float32), _fill_for(dtype)], {"dtype": dtype},
                          tag=f"{st}-dtype", kind="x", bound_ints=False))
    return out


@override("NEW_EMPTY_STRIDED")
def _new_empty_strided(dtype, full):
    out = []
    for shape in _shapes(full):
        stride = [0] * len(shape)
        acc = 1
        for i in reversed(range(len(shape))):
            stride[i] = acc
            acc *= max(shape[i], 1)
        mk = _mk("nes", dtype, shape)
        out.append(Sample([mk.tensor((2, 3), dtype), list(shape), stride], {"dtype": dtype},
                          tag=shape_tag(shape), compare="meta", bound_ints=False))
    return out


EMPTY_STRIDED_CASES = {
    "EMPTY_STRIDED": [((2, 3), [3, 1]), ((2, 3), [1, 2]), ((5,), [1]), ((), []),
                      ((2, 1, 129), [129, 1, 1])],
    "EMPTY_PERMUTED": [((2, 3, 4), [0, 2, 1]), ((2, 3), [1, 0]), ((130, 3), [0, 1])]}


def _empty_strided(op_id, dtype):
    return [Sample([list(shape), second], {"dtype": dtype},
                   tag=f"{shape_tag(shape)}-{'_'.join(map(str, second)) or 'none'}",
                   compare="meta", bound_ints=False)
            for shape, second in EMPTY_STRIDED_CASES[op_id]]


for _id in EMPTY_STRIDED_CASES:
    OVERRIDES[_id] = lambda dtype, full, _id=_id: _empty_strided(_id, dtype)


@override("SCALAR_TENSOR")
def _scalar_tensor(dtype, full):
    return [Sample([v], {"dtype": dtype}, tag=f"v{v}", bound_ints=False)
            for v in ((_fill_for(dtype), 0) if dtype != torch.bool else (True, False))]


@override("ARANGE", "ARANGE_START", "ARANGE_START_STEP")
def _arange(dtype, full):
    if dtype == torch.bool:
        return []
    cases = [("7", [7]), ("1", [1]), ("130", [130]), ("0", [0])]
    if dtype in FLOATS:
        cases.append(("5.5", [5.5]))
    return [Sample(list(a), {"dtype": dtype}, tag=t, bound_ints=False) for t, a in cases]


def _arange_args(op_id, s: Sample):
    (end,) = s.args
    if op_id == "ARANGE_START":
        s.args = [-3, end]
    elif op_id == "ARANGE_START_STEP":
        s.args = [end, -4, -3] if end else [0, 9, 2]
    return s


# --- losses and random ----------------------------------------------------- #

# --- attention ---------------------------------------------------------- #

# (tag, B, Hq, Hk, L, S, E, is_causal, mask, scale, layout). mask: None, "pad"
# (additive [B,1,L,S], -inf over the first columns of batch 1, as HF pads),
# "row" (one row masked entirely: eager returns 0 there), "2d" ([L,S]).
# layout "blhe": q/k/v are transposes of [B,L,H,E] tensors, as HF passes them.
# Boundary sizes: 127/128/129 rows and columns (one partition tile and more).
SDPA_CASES = [
    ("b2h4-13", 2, 4, 4, 13, 13, 16, False, "pad", None, "blhe"),
    ("causal-5x7", 1, 2, 2, 5, 7, 8, True, None, None, "c"),
    ("causal-7x4", 1, 2, 2, 7, 4, 8, True, None, 0.3, "c"),
    ("gqa-h4k2", 2, 4, 2, 9, 11, 8, False, "2d", None, "c"),
    ("gqa-causal", 1, 6, 2, 6, 6, 4, True, None, None, "blhe"),
    ("maskrow", 2, 2, 2, 6, 5, 8, False, "row", None, "c"),
    ("s127", 1, 1, 1, 127, 127, 8, True, None, None, "c"),
    ("s128", 1, 2, 1, 128, 128, 8, False, "pad", None, "c"),
    ("s129", 1, 1, 1, 129, 129, 8, True, "pad", None, "c"),
]


def _sdpa_inputs(mk, dtype, B, Hq, Hk, L, S, E, mask, layout):
    def qkv(h, n):
        if layout == "blhe":
            return mk.tensor((B, n, h, E), dtype).transpose(1, 2)
        return mk.tensor((B, h, n, E), dtype)
    q, k, v = qkv(Hq, L), qkv(Hk, S), qkv(Hk, S)
    m = None
    if mask == "pad":
        m = torch.zeros(B, 1, L, S, dtype=dtype)
        m[-1, :, :, : max(1, S // 4)] = -float("inf")
    elif mask == "row":
        m = mk.tensor((B, 1, L, S), dtype)
        m[0, :, 1] = -float("inf")
    elif mask == "2d":
        m = mk.tensor((L, S), dtype)
    return q, k, v, m


def _sdpa_kwargs(m, scale):
    kw = {"attn_mask": m} if m is not None else {}
    if scale is not None:
        kw["scale"] = scale
    return kw


def _sdpa_samples(dtype, backward: bool):
    out = []
    for tag, B, Hq, Hk, L, S, E, causal, mask, scale, lay in SDPA_CASES:
        mk = _mk("sdpabw" if backward else "sdpa", dtype, tag)
        q, k, v, m = _sdpa_inputs(mk, dtype, B, Hq, Hk, L, S, E, mask, lay)
        kw = _sdpa_kwargs(m, scale)
        args = [q, k, v, 0.0, causal]
        if backward:
            o, lse = A._scaled_dot_product_flash_attention_for_cpu.default(*args, **kw)
            args = [mk.tensor(o.shape, dtype), q, k, v, o, lse, 0.0, causal]
        out.append(Sample(args, kw, tag=tag,
                          kind="nc" if lay != "c" else ("b" if m is not None else "c")))
    return out


OVERRIDES["SDPA_FLASH"] = lambda dtype, full: _sdpa_samples(dtype, False)
OVERRIDES["SDPA_FLASH_BACKWARD"] = lambda dtype, full: _sdpa_samples(dtype, True)


# (shape, dim, layout): scans along every position of the dim, 127/128/129
# long (one partition tile and more), and across the rows of a transpose.
CUMSUM_CASES = [((), 0, "c"), ((7,), 0, "c"), ((3, 5), 1, "T"), ((3, 5), 0, "c"),
                ((2, 127), 1, "c"), ((2, 128), -1, "S"), ((129, 3), 0, "c"),
                ((2, 3, 129), 1, "c"), ((2, 1, 129), -1, "c")]


@override("CUMSUM")
def _cumsum(dtype, full):
    out = []
    for shape, dim, lay in CUMSUM_CASES:
        st = shape_tag(shape)
        mk = _mk("cumsum", dtype, st, dim, lay)
        x = mk.tensor(shape, dtype, lay)
        out.append(Sample([x, dim], tag=f"{st}-d{dim}-{lay}", kind="c" if lay == "c" else "nc"))
    if dtype != torch.float32:
        mk = _mk("cumsum", dtype, "to-f32")
        out.append(Sample([mk.tensor((4, 9), dtype), 1], {"dtype": torch.float32},
                          tag="4x9-d1-f32out", kind="x"))
    return out


# (shape, repeats or dims)
SHAPE_LIST_CASES = {
    "REPEAT": [((), [3]), ((3,), [2]), ((3,), [2, 1]), ((2, 3), [1, 1]), ((2, 3), [2, 3]),
               ((2, 1, 5), [1, 4, 1]), ((2, 3), [2, 1, 2]), ((1, 7), [2, 1]), ((3, 43), [1, 3])],
    "FLIP": [((7,), [0]), ((3, 5), [0, 1]), ((3, 5), [-1]), ((2, 1, 129), [2, 1]),
             ((130, 3), [0]), ((), [])],
    # (reflection pads must be smaller than the padded dim)
    "REFLECTION_PAD1D": [((7,), [2, 3]), ((3, 5), [4, 0]), ((2, 1, 129), [1, 128]), ((3, 5), [-1, 2])],
    "REFLECTION_PAD2D": [((3, 5), [1, 2, 2, 1]), ((2, 3, 7), [0, 6, 2, 0]), ((2, 4, 129), [3, 1, 0, 3])],
    "REFLECTION_PAD3D": [((2, 3, 4), [1, 1, 2, 1, 0, 2]), ((1, 2, 3, 5), [4, 0, 1, 2, 1, 1])],
    "REPLICATION_PAD1D": [((7,), [2, 9]), ((3, 5), [4, 0]), ((2, 1, 129), [1, 130])],
    "REPLICATION_PAD2D": [((3, 5), [1, 2, 2, 1]), ((2, 1, 7), [0, 6, 3, 2]), ((2, 4, 129), [3, 1, 0, 3])],
    "REPLICATION_PAD3D": [((2, 3, 4), [1, 1, 2, 1, 0, 2]), ((1, 1, 3, 5), [4, 0, 1, 2, 3, 1])],
}


@override("GRID_SAMPLER_2D", "GRID_SAMPLER_2D_BACKWARD")
def _grid_sampler(dtype, full, backward=False):
    out = []
    for (shape, go), mode, pad, align in [(((2, 3, 5, 7), (4, 6)), 0, 0, False),
                                          (((1, 2, 3, 129), (2, 5)), 0, 1, True),
                                          (((2, 1, 4, 4), (3, 3)), 0, 2, False),
                                          (((1, 3, 1, 1), (2, 2)), 1, 2, True),
                                          (((2, 2, 6, 5), (3, 4)), 1, 0, False)]:
        mk = _mk("grid_sampler", dtype, shape, mode, pad, align)
        grid = (mk.tensor((shape[0], *go, 2), torch.float32) * 1.5).to(dtype)
        args = [mk.tensor(shape, dtype), grid, mode, pad, align]
        if backward:
            args = [mk.tensor((shape[0], shape[1], *go), dtype)] + args + [[True, True]]
        out.append(Sample(args, tag=f"{shape_tag(shape)}-m{mode}-p{pad}-a{int(align)}"))
    return out


OVERRIDES["GRID_SAMPLER_2D_BACKWARD"] = lambda dtype, full: _grid_sampler(dtype, full, True)


# replication_padNd_backward(grad_output, self, padding): (self's shape, padding),
# negative pads (crops) among them
PAD_BW_CASES = {
    "REPLICATION_PAD1D_BACKWARD": [((7,), [2, 9]), ((3, 5), [4, 0]), ((2, 1, 129), [1, 130]),
                                   ((3, 5), [-1, 2]), ((3, 4), [-4, 5]), ((2, 1), [3, 2])],
    "REPLICATION_PAD2D_BACKWARD": [((3, 5), [1, 2, 2, 1]), ((2, 1, 7), [0, 6, 3, 2]),
                                   ((2, 4, 129), [3, 1, 0, 3]), ((2, 4, 4), [5, -4, -4, 3])],
    "REPLICATION_PAD3D_BACKWARD": [((2, 3, 4), [1, 1, 2, 1, 0, 2]), ((1, 1, 3, 5), [4, 0, 1, 2, 3, 1]),
                                   ((2, 3, 4), [-1, 1, 0, 0, 1, -2])],
}


def _pad_bw(op_id, dtype):
    out = []
    for shape, pad in PAD_BW_CASES[op_id]:
        st = shape_tag(shape)
        gshape = list(shape)
        for i in range(len(pad) // 2):
            gshape[len(shape) - 1 - i] += pad[2 * i] + pad[2 * i + 1]
        mk = _mk(op_id, dtype, st, pad)
        out.append(Sample([mk.tensor(tuple(gshape), dtype), mk.tensor(shape, dtype), pad],
                          tag=f"{st}-{'_'.join(map(str, pad))}"))
    return out


for _id in PAD_BW_CASES:
    OVERRIDES[_id] = lambda dtype, full, _id=_id: _pad_bw(_id, dtype)


def _shape_list(op_id, dtype):
    out = []
    for shape, second in SHAPE_LIST_CASES[op_id]:
        st = shape_tag(shape)
        for lay in (layouts_for(shape) if len(shape) == 2 else ["c"]):
            mk = _mk(op_id, dtype, st, second, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), second],
                              tag=f"{st}-{'_'.join(map(str, second)) or 'none'}-{lay}",
                              kind="c" if lay == "c" else "nc"))
    return out


for _id in SHAPE_LIST_CASES:
    OVERRIDES[_id] = lambda dtype, full, _id=_id: _shape_list(_id, dtype)


# (shape, ord, dim, keepdim)
VECTOR_NORM_CASES = [((7,), 2, None, False), ((3, 5), 2, [-1], True), ((3, 5), 1, [0], False),
                     ((2, 1, 129), float("inf"), [2], False),
                     ((2, 1, 129), float("-inf"), None, False), ((130, 3), 3, [0], False),
                     ((3, 5), 0, [1], False), ((3, 5), 0.5, None, True), ((), 2, None, False)]


@override("VECTOR_NORM")
def _vector_norm(dtype, full):
    out = []
    for shape, ord_, dim, keep in VECTOR_NORM_CASES:
        st = shape_tag(shape)
        for lay in (layouts_for(shape) if len(shape) == 2 else ["c"]):
            mk = _mk("vnorm", dtype, st, ord_, dim, lay)
            out.append(Sample([mk.tensor(shape, dtype, lay), ord_, dim, keep],
                              tag=f"{st}-ord{ord_}-{dim}-{'k' if keep else 'n'}-{lay}",
                              kind="c" if lay == "c" else "nc"))
    return out


# (shape, groups, affine); the last dims are HxW (1 for a 2-D input)
GROUP_NORM_CASES = [((2, 4, 5, 5), 2, True), ((2, 6, 7), 3, False), ((1, 8, 3, 3), 8, True),
                    ((3, 4), 2, True), ((2, 6, 129), 1, True), ((2, 4, 128), 4, False)]


@override("GROUP_NORM")
def _group_norm(dtype, full):
    out = []
    for shape, groups, affine in GROUP_NORM_CASES:
        st = shape_tag(shape)
        mk = _mk("gn", dtype, st, groups, affine)
        c, hw = shape[1], math.prod(shape[2:])
        w = mk.tensor((c,), dtype) if affine else None
        b = mk.tensor((c,), dtype) if affine else None
        out.append(Sample([mk.tensor(shape, dtype), w, b, shape[0], c, hw, groups, 1e-5],
                          tag=f"{st}-g{groups}-{'aff' if affine else 'plain'}"))
    return out


@override("GROUP_NORM_BACKWARD")
def _group_norm_bw(dtype, full):
    """The forward's cases, with the saved mean and rstd of eager's forward
    and every output mask."""
    out = []
    for shape, groups, affine in GROUP_NORM_CASES:
        st = shape_tag(shape)
        mk = _mk("gnbw", dtype, st, groups, affine)
        c, hw = shape[1], math.prod(shape[2:])
        x, go = mk.tensor(shape, dtype), mk.tensor(shape, dtype)
        w = mk.tensor((c,), dtype) if affine else None
        _, mean, rstd = A.native_group_norm(x, w, None, shape[0], c, hw, groups, 1e-5)
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            if not affine and mask[1]:
                mask = [mask[0], False, mask[2]]
            out.append(Sample([go, x, mean, rstd, w, shape[0], c, hw, groups, mask],
                              tag=f"{st}-g{groups}-{'aff' if affine else 'plain'}-"
                                  f"{''.join(str(int(m)) for m in mask)}"))
    return out


# (shape, dim, layout): rows of 1, odd lengths and 127/128/129 (one partition
# tile and more), along the last dim, a first dim and across a transpose.
SORT_CASES = [((), 0, "c"), ((1,), 0, "c"), ((7,), 0, "c"), ((3, 5), 1, "T"), ((3, 5), 0, "c"),
              ((4, 9), 1, "c"), ((2, 127), 1, "c"), ((2, 128), -1, "S"), ((129, 3), 0, "c"),
              ((2, 1, 129), -1, "c")]


def _sort_values(mk, shape, dim, dtype, lay, ties):
    """Ties (and NaN in float rows of 9) where eager's order is defined:
    sort.stable, and rows of at most 16 (eager's sort is an insertion sort
    there); otherwise distinct values (a permutation of the row)."""
    if ties:
        x = mk.tensor(shape, dtype, lay, ties=True)
        if dtype in FLOATS and shape == (4, 9):
            x = x.clone()
            x[1, 3] = x[1, 7] = x[2, 0] = float("nan")
            x[3, :] = float("nan")
        return x
    n = shape[dim] if shape else 1
    vals = torch.stack([mk.perm(n) for _ in range(math.prod(shape) // max(n, 1))])
    x = (vals - n // 2).to(dtype).reshape([s for i, s in enumerate(shape) if i != dim % len(shape)]
                                          + [n]).movedim(-1, dim % len(shape)).contiguous()
    if lay == "T":
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    elif lay == "S":
        x = torch.stack([x, x], -1).flatten(-2)[..., ::2]
    return x


def _sort_samples(dtype, stable):
    """sort (positional dim, descending) or sort.stable (keywords)."""
    out = []
    for shape, dim, lay in SORT_CASES:
        st = shape_tag(shape)
        n = shape[dim] if shape else 1
        for desc in (False, True):
            mk = _mk("sort", dtype, st, dim, lay, desc, stable)
            x = (mk.tensor(shape, dtype, lay) if not shape else
                 _sort_values(mk, shape, dim, dtype, lay, ties=stable or n <= 16))
            tag = f"{st}-d{dim}-{'desc' if desc else 'asc'}-{lay}"
            kind = "c" if lay == "c" else "nc"
            if stable:
                out.append(Sample([x], {"stable": True, "dim": dim, "descending": desc},
                                  tag=tag, kind=kind))
            else:
                out.append(Sample([x, dim, desc], tag=tag, kind=kind))
    return out


OVERRIDES["SORT"] = lambda dtype, full: _sort_samples(dtype, False)
OVERRIDES["SORT_STABLE"] = lambda dtype, full: _sort_samples(dtype, True)

# (shape, k, dim, layout)
TOPK_CASES = [((), 1, 0, "c"), ((1,), 1, 0, "c"), ((7,), 3, 0, "c"), ((3, 5), 2, 1, "T"),
              ((26, 4), 2, -1, "c"), ((130, 3), 2, 0, "c"), ((2, 127), 5, -1, "c"),
              ((2, 128), 128, -1, "S"), ((2, 1, 129), 1, -1, "c")]


@override("TOPK")
def _topk(dtype, full):
    """Distinct values (eager leaves the order of equal values unspecified);
    a float row with one NaN (the largest, in eager)."""
    out = []
    for shape, k, dim, lay in TOPK_CASES:
        st = shape_tag(shape)
        for largest in (True, False):
            mk = _mk("topk", dtype, st, k, dim, lay, largest)
            x = (mk.tensor(shape, dtype, lay) if not shape else
                 _sort_values(mk, shape, dim, dtype, lay, ties=False))
            out.append(Sample([x, k, dim, largest, True],
                              tag=f"{st}-k{k}-d{dim}-{'max' if largest else 'min'}-{lay}",
                              kind="c" if lay == "c" else "nc"))
    if dtype in FLOATS:
        mk = _mk("topk", dtype, "nan")
        x = _sort_values(mk, (3, 9), 1, dtype, "c", ties=False).clone()
        x[0, 4] = x[2, 8] = float("nan")
        out.append(Sample([x, 3, 1, True, True], tag="3x9-nan-max", kind="x"))
        out.append(Sample([x, 3, 1, False, True], tag="3x9-nan-min", kind="x"))
    return out


# (shape, dim, layout) of median, nanmedian, kthvalue and mode: rows of 1,
# odd and even lengths, 127/128/129 (one partition tile and more), first and
# last dims, a transpose and a strided slice.
SELECT_CASES = [((), 0, "c"), ((1,), 0, "c"), ((7,), 0, "c"), ((3, 5), 1, "T"), ((4, 6), 0, "c"),
                ((2, 127), 1, "c"), ((2, 128), -1, "S"), ((129, 3), 0, "c"), ((2, 3, 129), -1, "c")]


def _select_samples(op, dtype):
    """Distinct values (eager's index among equal values is unspecified:
    nth_element, an unstable sort past 16 elements), and float rows with
    NaN: median's result is the first NaN of its row, nanmedian's the lower
    median of the other elements, kthvalue's NaN the largest."""
    out = []
    for shape, dim, lay in SELECT_CASES:
        st = shape_tag(shape)
        n = shape[dim] if shape else 1
        mk = _mk("select", op, dtype, st, dim, lay)
        x = mk.tensor(shape, dtype, lay) if not shape else _sort_values(mk, shape, dim, dtype,
                                                                        lay, ties=False)
        kind = "c" if lay == "c" else "nc"
        if op in ("MEDIAN_ALL", "NANMEDIAN_ALL"):
            out.append(Sample([x], tag=f"{st}-{lay}", kind=kind))
            continue
        for keep in (False, True):
            args = [x, (n + 1) // 2, dim, keep] if op == "KTHVALUE" else [x, dim, keep]
            out.append(Sample(args, tag=f"{st}-d{dim}-k{int(keep)}-{lay}", kind=kind))
    if dtype in FLOATS and op != "MODE":  # mode's row with a NaN: eager's sort is unspecified
        mk = _mk("select", op, dtype, "nan")
        x = _sort_values(mk, (4, 9), 1, dtype, "c", ties=False).clone()
        x[0, 4] = x[2, 8] = x[2, 1] = x[3, 0] = float("nan")
        x[1, 2] = float("inf")
        x[3, 5] = float("-inf")
        if op in ("MEDIAN_ALL", "NANMEDIAN_ALL"):
            out.append(Sample([x], tag="4x9-nan", kind="x"))
            out.append(Sample([x[1]], tag="9-inf", kind="x"))
        elif op == "KTHVALUE":
            for k in (1, 5, 8, 9):
                out.append(Sample([x, k, 1, False], tag=f"4x9-nan-k{k}", kind="x"))
        else:
            out.append(Sample([x, 1, False], tag="4x9-nan", kind="x"))
    return out


for _op in ("MEDIAN_ALL", "MEDIAN_DIM", "NANMEDIAN_ALL", "NANMEDIAN_DIM", "KTHVALUE"):
    OVERRIDES[_op] = functools.partial(lambda op, dtype, full: _select_samples(op, dtype), _op)


@override("MODE")
def _mode(dtype, full):
    """The selection samples (each value once: the smallest is the mode) and
    rows of at most 16 with repeated values, where eager's sort is an
    insertion sort and reports the last of the mode's equal elements."""
    out = _select_samples("MODE", dtype)
    g = torch.Generator().manual_seed(5)
    for shape, dim in (((5, 16), 1), ((16, 3), 0), ((2, 3, 7), -1)):
        x = torch.randint(-2, 3, shape, generator=g).to(dtype)
        out.append(Sample([x, dim, False], tag=f"{shape_tag(shape)}-d{dim}-ties", kind="x"))
    return out


# (shape, bins, min, max, values): randn, values on the bin edges, MoE expert
# ids (eager's routing: bins = experts over [0, experts - 1]), NaN and inf
HISTC_CASES = [((1000,), 7, -1.3, 2.1, "randn"), ((3, 5), 4, -1.0, 1.0, "randn"),
               ((52,), 4, 0, 3, "ids"), ((129,), 10, -2.0, 3.0, "edges"), ((), 3, 0, 1, "randn"),
               ((1,), 1, -1.0, 1.0, "randn"), ((2, 64), 129, -3.0, 3.0, "randn"),
               ((40,), 5, -1.0, 1.0, "nan")]


@override("HISTC")
def _histc(dtype, full):
    out = []
    for shape, bins, lo, hi, what in HISTC_CASES:
        st = shape_tag(shape)
        mk = _mk("histc", dtype, st, bins, what)
        if what == "ids":
            x = mk.index(shape, bins).to(dtype)
        elif what == "edges":
            x = torch.linspace(lo, hi, bins + 1, dtype=dtype).repeat(13)[:shape[0]]
        else:
            x = mk.tensor(shape, dtype)
            if what == "nan":
                x[::7] = float("nan")
                x[1], x[2] = float("inf"), -float("inf")
                x[3], x[4] = lo, hi
        out.append(Sample([x, bins, lo, hi], tag=f"{st}-b{bins}-{what}"))
        if len(shape) == 2:
            out.append(Sample([mk.tensor(shape, dtype, "T"), bins, lo, hi],
                              tag=f"{st}-b{bins}-{what}-T", kind="nc"))
    return out


# (rows, K, N, experts, counts per expert (None: random), weight layout):
# an expert with no rows, rows past the last group (offs[-1] < rows), one
# expert, 127/128/129 rows, and Mixtral's transposed [E, N, K] weight.
GROUPED_CASES = [(13, 6, 5, 4, (3, 0, 6, 4), "c"), (13, 6, 5, 4, (2, 5, 0, 3), "c"),
                 (9, 4, 3, 1, (9,), "c"), (52, 16, 8, 4, None, "T"), (127, 8, 4, 3, None, "c"),
                 (129, 8, 4, 2, None, "T")]


def _grouped_samples(dtype, backward):
    data = _floaty(dtype)
    offs_dt = dtype if dtype in INTS else torch.int32
    out = []
    for S_, K, N, E, counts, lay in GROUPED_CASES:
        mk = _mk("grouped", dtype, S_, E, lay, backward)
        if counts is None:
            counts = torch.bincount(mk.index((S_,), E), minlength=E).tolist()
        offs = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(offs_dt)
        x = mk.tensor((S_, K), data)
        w = mk.tensor((E, K, N), data, lay)
        args = [x, w, offs] + ([mk.tensor((S_, N), data)] if backward else [])
        out.append(Sample(args, tag=f"{S_}x{K}x{N}-e{E}-{'-'.join(map(str, counts))}-{lay}",
                          kind="c" if lay == "c" else "nc"))
    return out


OVERRIDES["GROUPED_MM"] = lambda dtype, full: _grouped_samples(dtype, False)
OVERRIDES["GROUPED_MM_BACKWARD"] = lambda dtype, full: _grouped_samples(dtype, True)


NLL_CASES = [(5, 3), (1, 1), (130, 7), (3, 129), (1, 4)]


@override("NLL_LOSS")
def _nll(dtype, full):
    fdt, idt = _floaty(dtype), _idx_dtype(dtype)
    if dtype in (torch.bool, torch.int32):
        return []                             # eager's nll_loss takes int64 targets only
    out = []
    for n, c in NLL_CASES + [("0d", 4)]:
        for red in (0, 1, 2):
            for weighted in (False, True):
                mk = _mk("nll", dtype, n, c, red, weighted)
                if n == "0d":
                    x = torch.log_softmax(mk.tensor((c,), torch.float32), -1).to(fdt)
                    t = mk.index((), c, idt)
                else:
                    x = torch.log_softmax(mk.tensor((n, c), torch.float32), -1).to(fdt)
                    t = mk.index((n,), c, idt)
                    if n > 2:
                        t[1] = -100
                w = mk.tensor((c,), fdt, lo=0.5, hi=2.0) if weighted else None
                out.append(Sample([x, t, w, red, -100],
                                  tag=f"{n}x{c}-r{red}-{'w' if weighted else 'nw'}",
                                  bound_ints=False))
    return out


@override("NLL_LOSS_BACKWARD")
def _nll_bw(dtype, full):
    fdt = _floaty(dtype)
    out = []
    for s in _nll(dtype, full):
        x, t, w, red, ign = s.args
        _, total = A.nll_loss_forward.default(x, t, w, red, ign)
        mk = _mk("nllbw", s.tag)
        g = mk.tensor(t.shape if red == 0 else (), fdt)
        s.args = [g, x, t, w, red, ign, total]
        out.append(s)
    return out


@override("DROPOUT")
def _dropout(dtype, full):
    if dtype not in FLOATS:
        return []
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for p, train, ct in ((0.0, True, "p0"), (0.5, False, "eval"), (0.5, True, "p05"),
                             (1.0, True, "p1")):
            mk = _mk("dropout", dtype, st, ct)
            out.append(Sample([mk.tensor(shape, dtype), p, train], tag=f"{st}-{ct}",
                              compare="dropout" if ct == "p05" else "close",
                              bound_ints=False))
    return out


def _per_layout(key, dtype, full, variants, build, **kw):
    """One sample per shape x layout x variant: build(mk, shape, layout,
    variant) gives the args (tag shape-layout[-variant])."""
    out = []
    for shape in _shapes(full):
        st = shape_tag(shape)
        for lay in layouts_for(shape):
            for v in variants:
                mk = _mk(key, dtype, st, lay, *([] if v is None else [v]))
                out.append(Sample(build(mk, shape, lay, v),
                                  tag=f"{st}-{lay}" + ("" if v is None else f"-{v}"),
                                  kind="c" if lay == "c" else "nc", bound_ints=False, **kw))
    return out


@override("DROPOUT_BACKWARD")
def _dropout_bw(dtype, full):
    if dtype not in FLOATS:
        return []
    return _per_layout("dropout_bw", dtype, full, [None], lambda mk, shape, lay, _: [
        mk.tensor(shape, dtype, lay), mk.tensor(shape, torch.bool, lay), 2.0])


@override("RAND")
def _rand(dtype, full):
    if dtype not in FLOATS:
        return []
    return [Sample([list(shape)], {"dtype": dtype}, tag=shape_tag(shape), compare="uniform",
                   bound_ints=False) for shape in _shapes(full)]


def _bernoulli(op_id, dtype, full):
    if dtype not in FLOATS:
        return []
    p = [] if op_id == "BERNOULLI" else [0.25]
    return _per_layout(op_id, dtype, full, [None], lambda mk, shape, lay, _: [
        mk.tensor(shape, dtype, lay, lo=0.0, hi=1.0)] + p, compare="bernoulli")


for _id in ("BERNOULLI", "BERNOULLI_P"):
    OVERRIDES[_id] = lambda dtype, full, _id=_id: _bernoulli(_id, dtype, full)


@override("BITWISE_RIGHT_SHIFT_SCALAR")
def _rshift(dtype, full):
    if dtype not in INTS:
        return []
    return _per_layout("rshift", dtype, full, (0, 3, 31), lambda mk, shape, lay, sh: [
        mk.tensor(shape, dtype, lay, lo=-2 ** 31, hi=2 ** 31 - 1), sh])


# post-processing of shared generators: op id -> fn(op_id, sample) -> sample
POST: dict[str, Callable] = {
    "BATCH_NORM_TRAIN": _bn_args, "BATCH_NORM_INFER": _bn_args,
    "SQUEEZE_DIM": _squeeze_args, "SQUEEZE_DIMS": _squeeze_args,
    "SPLIT": _split_args, "SPLIT_WITH_SIZES": _split_args,
    "SCATTER_VALUE": _scatter_args, "SCATTER_ADD": _scatter_args,
    "FULL": _full_args, "EMPTY": _full_args,
    "ARANGE_START": _arange_args, "ARANGE_START_STEP": _arange_args,
}


@functools.lru_cache(maxsize=None)
def samples(op: OpLine, dtype, full: bool) -> list[Sample]:
    """Every sample of op for dtype (the full sweep draws on all of them).
    Cached: collection and the test share them (no op writes its inputs)."""
    if op.id in OVERRIDES:
        out = OVERRIDES[op.id](dtype, full)
        if op.id in POST:
            out = [POST[op.id](op.id, s) for s in out]
        if op.id in ("ADDMM", "BADDBMM", "ADDBMM"):
            res = []
            for i, s in enumerate(out):
                mk = _mk("bias", op.id, s.tag)
                a, b = s.args
                for variant in ("vec", "full", "scaled", "beta0")[:4 if a.is_floating_point() else 3]:
                    s2 = Sample(list(s.args), dict(s.kwargs), s.tag, s.kind)
                    if op.id == "ADDMM":
                        _addmm_args(s2, mk, variant)
                    else:
                        full_shape = ((a.shape[0], a.shape[1], b.shape[-1]) if op.id == "BADDBMM"
                                      else (a.shape[1], b.shape[-1]))
                        bias = mk.tensor((b.shape[-1],) if variant == "vec" else full_shape,
                                         a.dtype)
                        s2.args = [bias, a, b]
                        _bias_variant(s2, variant)
                    res.append(s2)
            out = res
        return out
    if generic_ok(op):
        return generic_samples(op, dtype, SHAPES + (FULL_ONLY_SHAPES if full else []))
    return []


def needs_override(op: OpLine) -> bool:
    return op.id not in OVERRIDES and not generic_ok(op)


# --------------------------------------------------------------------------- #
# default subset

DEFAULT_PER_DTYPE = {torch.float32: 4}
DEFAULT_OTHER = 2


def default_subset(op: OpLine, dtype, all_samples: list[Sample]) -> list[Sample]:
    """A fixed, representative subset: for fp32 up to 4 samples, for other
    dtypes 2, taken round-robin over the kinds (contiguous, non-contiguous,
    broadcast, other) in an order seeded by op and dtype, so that different
    dtypes of one op pick different shapes."""
    k = DEFAULT_PER_DTYPE.get(dtype, DEFAULT_OTHER)
    if len(all_samples) <= k:
        return all_samples
    g = torch.Generator().manual_seed(seed_of("subset", op.target, SHORT[dtype]))
    groups: dict[str, list[Sample]] = {}
    for s in all_samples:
        groups.setdefault(s.kind, []).append(s)
    for key in groups:
        order = torch.randperm(len(groups[key]), generator=g).tolist()
        groups[key] = [groups[key][i] for i in order]
    kinds = sorted(groups, key=lambda x: "cnbx".index(x[0]))
    picked = []
    for i in itertools.count():
        for kind in kinds:
            if i < len(groups[kind]) and len(picked) < k:
                picked.append(groups[kind][i])
        if len(picked) >= k or i > len(all_samples):
            break
    return picked


# --------------------------------------------------------------------------- #
# what the sweep accepts besides a matching value

# An UnsupportedOperatorError is accepted when every error diagnostic states a
# documented limit: the integer range policy of docs/dtypes.md for integer
# cases, or the op's own limits text (ir/ops.def) as matched here.
INT_POLICY = re.compile(r"\+-2\^24|eager PyTorch would wrap around|within int32|outside int32")
REFUSALS: dict[str, list[str]] = {
    # "bool tensors only"
    "BITWISE_XOR": [r"bool tensors only|2\^24"],
    "SCATTER_REDUCE": [r"floating tensors"],
    # a tensor degree n: no closed form, a data-dependent trip count
    "SPECIAL_LAGUERRE_POLYNOMIAL_L": [r"n must be a Python number"],
    "SPECIAL_LEGENDRE_POLYNOMIAL_P": [r"n must be a Python number"],
}

# Table lines a direct call of the OpOverload cannot reach trnc with: what
# reaches trnc instead (the case still must compile and match eager).
NOT_REACHED: dict[str, str] = {
    "aten.reshape.default": "CompositeImplicitAutograd: aot_autograd traces it as view/_unsafe_view",
    "aten.var.dim": "CompositeImplicitAutograd: dynamo traces it as var.correction (torch.export's "
                    "Core ATen graphs carry it)",
}

# Open bugs: (op id, dtype short name or "*", tag regex) -> one-line reason.
# A listed case that passes fails the sweep (strict xfail): remove its line.
_S2 = "S2: output strides of a non-contiguous self are rejected by the importer (GraphImportError)"
_S4 = "S4: refused (emitter or table limits) although the table claims this dtype"
XFAIL: dict[tuple[str, str, str], str] = {
    ("SLICE_SCATTER", "*", r".*-S"): _S2,
    ("SELECT_SCATTER", "*", r".*-S"): _S2,
    **{("BATCH_NORM_TRAIN", dt, r".*"): "S3: running stats come back float32"
       for dt in ("bf16", "f16")},
    **{(oid, dt, r".*"): _S4 for oid in ("ARGMAX", "ARGMIN", "MAX_DIM", "MIN_DIM")
       for dt in ("i32", "i64")},
    **{("SCATTER_ADD", dt, r".*"): _S4 for dt in ("i32", "i64", "bool")},
    **{("INDEX_PUT", dt, r".*-acc1"): _S4 for dt in ("i32", "i64")},
}


def xfail_reason(op: OpLine, dtype, tag: str) -> str | None:
    for (oid, dt, rx), reason in XFAIL.items():
        if oid == op.id and dt in ("*", SHORT[dtype]) and re.fullmatch(rx, tag):
            return reason
    return None


def _searchsorted_samples(dtype):
    """searchsorted(sorted_sequence, values, out_int32, right): the
    boundaries sorted along their last dim (unsorted ones are undefined in
    eager), with ties and values equal to a boundary."""
    g = torch.Generator().manual_seed(11)
    out = []
    for shape, nv in (((3, 5), 5), ((130, 3), 4), ((2, 1, 129), 7), ((17,), 9)):
        seq = torch.sort(torch.randint(-4, 5, shape, generator=g).to(dtype), -1).values
        vals = torch.randint(-5, 6, tuple(shape[:-1]) + (nv,), generator=g).to(dtype)
        for right in (False, True):
            out.append(Sample([seq, vals], {"right": right}, tag=f"{shape_tag(shape)}-r{int(right)}"))
    return out


def _pdist_samples(dtype):
    """_pdist_forward(x [N, M], p): 2-D only (eager raises otherwise)."""
    g = torch.Generator().manual_seed(12)
    return [Sample([torch.randn(n, m, generator=g).to(dtype), p], tag=f"{n}x{m}-p{p}")
            for n, m in ((5, 3), (1, 4), (17, 129)) for p in (1.0, 2.0, 3.0)]


OVERRIDES["SEARCHSORTED"] = lambda dtype, full: _searchsorted_samples(dtype)
OVERRIDES["PDIST"] = lambda dtype, full: _pdist_samples(dtype)


def _bucketize_samples(dtype):
    """bucketize(input, boundaries [sorted 1-D], out_int32, right)."""
    g = torch.Generator().manual_seed(13)
    out = []
    for n, nb in ((7, 5), (130, 9), (1, 1)):
        b = torch.sort(torch.randint(-4, 5, (nb,), generator=g).to(dtype)).values
        x = torch.randint(-5, 6, (n,), generator=g).to(dtype)
        for right in (False, True):
            out.append(Sample([x, b], {"right": right}, tag=f"{n}-{nb}-r{int(right)}"))
    return out


def _cdist_samples(dtype, backward):
    """_cdist_forward(x1 [P, M], x2 [R, M], p, None) and its backward (grad,
    x1, x2, p, cdist) with cdist from eager."""
    g = torch.Generator().manual_seed(14)
    out = []
    for (p_, r, m), p in itertools.product(((5, 4, 3), (17, 3, 129)), (1.0, 2.0, 3.0)):
        x1, x2 = torch.randn(p_, m, generator=g).to(dtype), torch.randn(r, m, generator=g).to(dtype)
        if backward:
            cd = torch.ops.aten._cdist_forward(x1.float(), x2.float(), p, None).to(dtype)
            out.append(Sample([torch.randn(cd.shape, generator=g).to(dtype), x1, x2, p, cd],
                              tag=f"{p_}x{r}x{m}-p{p}"))
        else:
            out.append(Sample([x1, x2, p, None], tag=f"{p_}x{r}x{m}-p{p}"))
    return out


def _pdist_bw_samples(dtype):
    """_pdist_backward(grad, x [N, M], p, pdist) with pdist from eager."""
    g = torch.Generator().manual_seed(15)
    out = []
    for (n, m), p in itertools.product(((5, 3), (17, 9)), (1.0, 2.0)):
        x = torch.randn(n, m, generator=g).to(dtype)
        pd = torch.ops.aten._pdist_forward(x.float(), p).to(dtype)
        out.append(Sample([torch.randn(pd.shape, generator=g).to(dtype), x, p, pd], tag=f"{n}x{m}-p{p}"))
    return out


def _index_reduce_samples(dtype):
    """index_reduce(self, dim, index, source, reduce, include_self); float
    dtypes only (the table's check refuses integers with a reason)."""
    if not dtype.is_floating_point:
        return []
    g = torch.Generator().manual_seed(16)
    out = []
    for red, inc in itertools.product(("prod", "mean", "amax", "amin"), (True, False)):
        x = torch.randn(6, 5, generator=g).to(dtype)
        idx = torch.tensor([0, 2, 2, 5])
        src = torch.randn(4, 5, generator=g).to(dtype)
        out.append(Sample([x, 0, idx, src, red], {"include_self": inc}, tag=f"{red}-{int(inc)}"))
    return out


def _masked_scatter_bw_samples(dtype):
    """masked_scatter_backward(grad, mask, sizes of the source): float
    gradients (the decomposition's scatter_add of integers is not lowered)."""
    if not dtype.is_floating_point:
        return []
    g = torch.Generator().manual_seed(17)
    grad = torch.randn(4, 6, generator=g).to(dtype)
    mask = torch.rand(4, 6, generator=g) > 0.5
    return [Sample([grad, mask, [int(mask.sum()) + 3]], tag="4x6")]


OVERRIDES["BUCKETIZE"] = lambda dtype, full: _bucketize_samples(dtype)
OVERRIDES["CDIST"] = lambda dtype, full: _cdist_samples(dtype, False)
OVERRIDES["CDIST_BACKWARD"] = lambda dtype, full: _cdist_samples(dtype, True)
OVERRIDES["PDIST_BACKWARD"] = lambda dtype, full: _pdist_bw_samples(dtype)
OVERRIDES["INDEX_REDUCE"] = lambda dtype, full: _index_reduce_samples(dtype)
OVERRIDES["MASKED_SCATTER_BACKWARD"] = lambda dtype, full: _masked_scatter_bw_samples(dtype)
