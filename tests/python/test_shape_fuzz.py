"""Differential shape fuzzer: random shapes, layouts, dtypes and reduction
dims through torch.compile(backend="neuron", dynamic=False) against eager.

Why: a full reduction over more than 16384 elements returned a silently wrong
value (torch.ones(65536).sum() gave 16512, fixed in 8add6d7) and every
hand-written test used shapes too small to see it. Here shapes have rank 0-5
and up to 2^21 elements, with the tile and partition boundaries (1, 127, 128,
129, 512, 513, 16383, 16384, 16385, 65536, 131072) drawn often; inputs are
contiguous, transposed/permuted, sliced with offsets and steps, expanded or at
a storage offset; dtypes fp32, bf16, fp16, int32, int64, bool.

Families: reductions (sum, mean, amax/amin, max/min and their .dim forms,
argmax/argmin, var/std, prod, any/all, vector/linalg norms, logsumexp),
matmul (mm, bmm, linear, addmm, broadcast matmul; M, N, K across 1, 127, 128,
129, 511, 512, 513 and now and then 2048+), softmax/log_softmax/layer_norm
row lengths, gather/index_select/embedding/indexing, cat/stack/slice/pad,
conv1d/conv2d and max/avg/adaptive pooling, short elementwise chains with
broadcasting and casts, fusion (chains feeding reductions and row kernels,
matmul epilogues, several outputs), and backward: gradients of
mean(f(x) * r), r fixed random weights, through trnc's backward graph of
reductions, norms, matmuls, conv, pooling, gathers and cat/slice/pad.

Tolerances are stated per dtype in shape_fuzz.TOLERANCES (accumulations are
bounded relative to the same accumulation over |x|). A clear refusal
(UnsupportedOperatorError, TRNC_ERR_LIMIT) is counted in the summary at the
end of the session, not failed; a wrong number, a crash, a GraphImportError
or CompilerError fails with a standalone repro.

    make test          # TRNC_FUZZ_PROFILE=ci: derandomized, bounded (~2-3 min)
    make fuzz-shapes   # TRNC_FUZZ_PROFILE=long: random seed, TRNC_FUZZ_EXAMPLES per family
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import has_extension
from shape_fuzz import (ALL_DTYPES, BOUNDARIES, FLOAT_DTYPES, MM_BIG, MM_SIZES, Case, Input,
                        budget, dim_size, element_cap, run_case, shapes, tensor_input, views)

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


@st.composite
def reduce_dims(draw, rank: int, single: bool = False, allow_full: bool = True):
    """None (every dim) or a dim / tuple of dims, sometimes negative."""
    if rank == 0:
        return None
    if allow_full and not single and draw(st.integers(0, 3)) == 0:
        return None
    if single:
        d = draw(st.integers(0, rank - 1))
        return d - rank if draw(st.booleans()) else d
    ds = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    ds = [d - rank if draw(st.booleans()) else d for d in sorted(ds)]
    return ds[0] if len(ds) == 1 else tuple(ds)


def _abs_dims(dims, rank):
    if dims is None:
        return list(range(rank))
    ds = [dims] if isinstance(dims, int) else list(dims)
    return sorted(d % rank for d in ds) if rank else []


def _reduced(shape, dims) -> int:
    n = 1
    for d in _abs_dims(dims, len(shape)):
        n *= shape[d]
    return n if shape else 1


# --------------------------------------------------------------------------- #
# reductions

REDUCTION_OPS = ["sum", "mean", "amax", "amin", "max", "min", "max.dim", "min.dim",
                 "argmax", "argmin", "var", "std", "prod", "any", "all",
                 "vector_norm", "norm", "logsumexp"]
FLOAT_ONLY = {"mean", "var", "std", "vector_norm", "norm", "logsumexp", "prod"}
NO_GRAD = {"argmax", "argmin", "any", "all"}
NO_BOOL = {"argmax", "argmin", "max.dim", "min.dim", "max", "min", "amax", "amin"}


@st.composite
def reduction_cases(draw, backward: bool = False):
    op = draw(st.sampled_from([o for o in REDUCTION_OPS if o not in NO_GRAD] if backward
                              else REDUCTION_OPS))
    dtypes = FLOAT_DTYPES if op in FLOAT_ONLY or backward else (
        tuple(d for d in ALL_DTYPES if d != torch.bool) if op in NO_BOOL else ALL_DTYPES)
    dtype = draw(st.sampled_from(dtypes))
    cap = draw(element_cap(big=(1 << 18) if backward else (1 << 21)))
    shape = draw(shapes(max_rank=5, cap=cap))
    rank = len(shape)
    extra = ("pos",) if op == "prod" else ("offset",) if op in ("var", "std") else ("wide",)
    x = draw(tensor_input("x", shape, dtype, extra_values=extra, allow_expand=not backward))
    if backward:
        x.requires_grad = True
    keepdim = draw(st.booleans())
    k = f", keepdim={keepdim}"
    single = op in ("max.dim", "min.dim", "prod", "any", "all", "argmax", "argmin")
    dims = draw(reduce_dims(rank, single=single, allow_full=op not in ("max.dim", "min.dim")))
    if op in ("max.dim", "min.dim") and dims is None:
        dims = 0          # rank 0: dim 0 of a scalar
    if op in ("any", "all", "prod") and dims is None and draw(st.booleans()) is False:
        dims = 0 if rank == 0 else draw(st.integers(0, rank - 1))
    dimarg = "" if dims is None else f"dim={dims!r}"
    n = _reduced(shape, dims)
    ax = "" if dims is None else f"{dims!r}, keepdim={keepdim}"
    sc = None
    compare, rtol, red = "close", None, None
    if op == "sum":
        expr = f"torch.sum(x{', ' + ax if ax else ''})"
        sc = f"x.double().abs().sum({ax})"
    elif op == "mean":
        expr = f"torch.mean(x{', ' + ax if ax else ''})"
        sc = f"x.double().abs().mean({ax})"
    elif op in ("amax", "amin"):
        expr = f"torch.{op}(x{', ' + dimarg if dimarg else ''}{k})"
        compare = "exact"
    elif op in ("max", "min"):
        expr = f"torch.{op}(x)"
        compare = "exact"
    elif op in ("max.dim", "min.dim"):
        o = op.split(".")[0]
        expr = f"torch.{o}(x, {dims}{k})"
        compare = f"arg:x:{dims}:{keepdim}"
    elif op in ("argmax", "argmin"):
        expr = f"torch.{op}(x{', dim=' + repr(dims) if dims is not None else ''}{k})"
        compare = f"arg:x:{dims}:{keepdim}"
    elif op in ("var", "std"):
        c = draw(st.sampled_from([0, 1]))
        expr = f"torch.{op}(x{', ' + dimarg if dimarg else ''}, correction={c}{k})"
        m2 = f"(x.double().square().sum({ax}) / max({n} - {c}, 1))"
        sc = m2 if op == "var" else f"{m2}.sqrt()"
    elif op == "prod":
        expr = f"torch.prod(x{', ' + str(dims) + k if dims is not None else ''})"
        eps = {torch.float32: 6e-8, torch.bfloat16: 4e-3, torch.float16: 5e-4}[dtype]
        rtol = min(0.05, 8 * eps * max(n, 1))
    elif op in ("any", "all"):
        expr = f"torch.{op}(x{', ' + str(dims) + k if dims is not None else ''})"
        compare = "exact"
    elif op == "vector_norm":
        o = draw(st.sampled_from([2, 1, "inf", "-inf", 3]))
        ordarg = f"float('{o}')" if isinstance(o, str) else str(o)
        expr = f"torch.linalg.vector_norm(x, ord={ordarg}{', ' + dimarg if dimarg else ''}{k})"
        rtol = None
    elif op == "norm":
        expr = f"x.norm({'dim=' + repr(dims) + k if dims is not None else ''})"
    else:  # logsumexp
        d = dims if dims is not None else tuple(range(rank)) if rank else 0
        expr = f"torch.logsumexp(x, {d!r}{k})"
    if op in ("vector_norm", "norm", "logsumexp"):
        t = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 4e-3}[dtype]
        rtol = t
        sc = "torch.tensor(1.0)" if op == "logsumexp" else None
    if backward:
        compare = "maxrel"
        sc = None
        if op in ("max.dim", "min.dim"):
            expr += "[0]"          # the values; the indices have no gradient
    return Case("reduction-bw" if backward else "reduction", op, expr, [x], dtype,
                compare=compare, scale=sc, rtol=rtol, red=red, backward=backward)


# the shape of the fixed bug (8add6d7): full sums over 128*k elements, k > 128
_ONES = Case("reduction", "sum", "torch.sum(x)",
             [Input("x", (65536,), torch.float32, "ones", 0)], torch.float32,
             scale="x.double().abs().sum()")
_ONES_MEAN = Case("reduction", "mean", "torch.mean(x)",
                  [Input("x", (129, 513), torch.float32, "randn", 1, ("transpose", 0, 1))],
                  torch.float32, scale="x.double().abs().mean()")


# fuzz-findings F1: var over an empty reduced dim must be NaN like eager
_VAR_EMPTY = Case("reduction", "var", "torch.var(x, dim=0, correction=1)",
                  [Input("x", (0, 3), torch.float32, "ones", 0)], torch.float32,
                  scale="(x.double().square().sum(0) / max(0 - 1, 1))")


@budget(ci=160, long=3)
@given(case=reduction_cases())
@example(case=_ONES)
@example(case=_ONES_MEAN)
def test_fuzz_reductions(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# matmul

@st.composite
def mm_size(draw, big: bool):
    k = draw(st.integers(0, 9))
    if big and k == 0:
        return draw(st.sampled_from(MM_BIG))
    if k < 6:
        return draw(st.sampled_from(MM_SIZES))
    return draw(st.integers(1, 700))


@st.composite
def matmul_cases(draw, backward: bool = False):
    op = draw(st.sampled_from(["mm", "bmm", "linear", "addmm", "matmul"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    big = draw(st.integers(0, 9)) == 0         # 2048+ in one dim now and then
    which = draw(st.integers(0, 2))
    M, N, K = (draw(mm_size(big and which == i)) for i in range(3))
    B = draw(st.sampled_from([1, 2, 3, 129])) if op in ("bmm", "matmul") else 1
    flops = B * M * N * K
    limit = 1 << 31 if big else 1 << 27
    while flops > limit:                       # keep the simulator's time bounded
        if B > 3:
            B = 3
        elif M >= max(N, K) and M > 1 and not (big and which == 0):
            M = max(1, M // 2)
        elif N >= K and N > 1 and not (big and which == 1):
            N = max(1, N // 2)
        elif K > 1 and not (big and which == 2):
            K = max(1, K // 2)
        else:
            break
        flops = B * M * N * K

    def inp(name, shape, allow_t=True):
        v = ("contig",)
        if allow_t and len(shape) >= 2 and draw(st.booleans()):
            v = ("transpose", len(shape) - 2, len(shape) - 1)
        elif draw(st.integers(0, 4)) == 0:
            v = draw(views(tuple(shape), allow_expand=not backward))
        i = Input(name, tuple(shape), dtype, draw(st.sampled_from(["randn", "ints", "randn"])),
                  draw(st.integers(0, 2**16)), v, requires_grad=backward)
        return i

    if op == "mm":
        ins = [inp("a", (M, K)), inp("b", (K, N))]
        expr = "torch.mm(a, b)"
        sc = "a.double().abs() @ b.double().abs()"
    elif op == "bmm":
        ins = [inp("a", (B, M, K)), inp("b", (B, K, N))]
        expr = "torch.bmm(a, b)"
        sc = "a.double().abs() @ b.double().abs()"
    elif op == "matmul":
        lead = draw(st.sampled_from(["vec", "bcast"]))
        if lead == "vec":
            ins = [inp("a", (K,)), inp("b", (B, K, N) if B > 1 else (K, N))]
        else:
            ins = [inp("a", (B, M, K)), inp("b", (K, N))]
        expr = "torch.matmul(a, b)"
        sc = "torch.matmul(a.double().abs(), b.double().abs())"
    elif op == "linear":
        lead = draw(st.sampled_from([(M,), (B, M), (2, 3, M)] if M <= 700 else [(M,)]))
        bias = draw(st.booleans())
        ins = [inp("x", lead + (K,)), inp("w", (N, K))]
        if bias:
            ins.append(inp("b", (N,), allow_t=False))
            expr = "F.linear(x, w, b)"
            sc = "F.linear(x.double().abs(), w.double().abs(), b.double().abs())"
        else:
            expr = "F.linear(x, w)"
            sc = "F.linear(x.double().abs(), w.double().abs())"
    else:  # addmm
        cshape = draw(st.sampled_from([(N,), (M, N), (1, N)]))
        beta = draw(st.sampled_from([1.0, 0.5, 0.0]))
        alpha = draw(st.sampled_from([1.0, 2.0]))
        ins = [inp("c", cshape, allow_t=False), inp("a", (M, K)), inp("b", (K, N))]
        expr = f"torch.addmm(c, a, b, beta={beta}, alpha={alpha})"
        sc = (f"{abs(beta)} * c.double().abs() + {alpha} * (a.double().abs() @ "
              "b.double().abs())")
    if backward:
        return Case("matmul-bw", op, expr, ins, dtype, compare="maxrel", backward=True)
    return Case("matmul", op, expr, ins, dtype, scale=sc)


@budget(ci=70, long=2)
@given(case=matmul_cases())
def test_fuzz_matmul(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# softmax / log_softmax / layer_norm rows

@st.composite
def row_shape(draw, cap: int):
    L = draw(st.one_of(st.sampled_from(BOUNDARIES), st.integers(1, 700)))
    L = min(L, cap)
    lead = draw(shapes(min_rank=0, max_rank=3, cap=max(1, cap // L), zero=False))
    return lead + (L,)


@st.composite
def norm_cases(draw, backward: bool = False):
    op = draw(st.sampled_from(["softmax", "log_softmax", "layer_norm"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    cap = draw(element_cap(big=(1 << 18) if backward else (1 << 20)))
    shape = draw(row_shape(cap))
    rank = len(shape)
    x = draw(tensor_input("x", shape, dtype, extra_values=("wide", "offset"),
                          allow_expand=not backward))
    x.requires_grad = backward
    ins = [x]
    t = {torch.float32: (1e-4, 1e-8), torch.bfloat16: (3e-2, 1e-6),
         torch.float16: (5e-3, 1e-6)}[dtype]
    if op in ("softmax", "log_softmax"):
        d = -1 if draw(st.integers(0, 2)) else draw(st.integers(0, rank - 1))
        expr = f"torch.{op}(x, dim={d})"
        rtol, atol = t
        if op == "log_softmax":
            atol = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 5e-3}[dtype]
    else:
        k = draw(st.integers(1, min(2, rank)))
        ns = tuple(shape[rank - k:])
        affine = draw(st.sampled_from(["none", "w", "wb"]))
        args = "None, None"
        if affine != "none":
            ins.append(Input("w", ns, dtype, "randn", draw(st.integers(0, 999)),
                             requires_grad=backward))
            args = "w, None"
        if affine == "wb":
            ins.append(Input("b", ns, dtype, "randn", draw(st.integers(0, 999)),
                             requires_grad=backward))
            args = "w, b"
        expr = f"F.layer_norm(x, {ns!r}, {args}, eps=1e-5)"
        rtol = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 5e-3}[dtype]
        atol = {torch.float32: 1e-4, torch.bfloat16: 4e-2, torch.float16: 1e-2}[dtype]
    if backward:
        return Case("norm-bw", op, expr, ins, dtype, compare="maxrel", backward=True)
    return Case("norm", op, expr, ins, dtype, rtol=rtol, atol=atol)


@budget(ci=60, long=2)
@given(case=norm_cases())
def test_fuzz_norm_rows(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# gather / index_select / embedding / indexing

@st.composite
def gather_cases(draw, backward: bool = False):
    op = draw(st.sampled_from(["index_select", "gather", "embedding", "index"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES if backward else ALL_DTYPES))
    cap = draw(element_cap(big=1 << 20))
    seed = draw(st.integers(0, 2**16))
    if op == "embedding":
        num = draw(dim_size(min(cap, 1 << 17), zero=False))
        width = draw(dim_size(max(1, cap // num), zero=False))
        w = draw(tensor_input("w", (num, width), dtype, view=("contig",)))
        ishape = draw(shapes(min_rank=1, max_rank=2, cap=min(cap, 1 << 16), zero=False))
        idx = Input("i", ishape, torch.int64, f"int:0:{num}", seed)
        w.requires_grad = backward
        return Case("gather-bw" if backward else "gather", op, "F.embedding(i, w)",
                    [i for i in (idx, w)], dtype, compare="maxrel" if backward else "exact",
                    backward=backward)
    shape = draw(shapes(min_rank=1, max_rank=4, cap=cap, zero=False))
    rank = len(shape)
    d = draw(st.integers(0, rank - 1)) if op != "index" else 0
    x = draw(tensor_input("x", shape, dtype, allow_expand=not backward))
    x.requires_grad = backward
    n = shape[d]
    if op in ("index_select", "index"):
        L = draw(dim_size(max(1, cap // max(1, math.prod(shape) // n)), zero=False))
        L = min(L, 1 << 17)
        idx = Input("i", (L,), torch.int64, f"int:0:{n}", seed)
        expr = f"torch.index_select(x, {d}, i)" if op == "index_select" else "x[i]"
    else:
        ishape = tuple(draw(st.integers(1, s)) if k != d else draw(dim_size(max(1, s * 2),
                                                                            zero=False))
                       for k, s in enumerate(shape))
        idx = Input("i", ishape, torch.int64, f"int:0:{n}", seed)
        expr = f"torch.gather(x, {d}, i)"
    return Case("gather-bw" if backward else "gather", op, expr, [x, idx], dtype,
                compare="maxrel" if backward else "exact", backward=backward)


@budget(ci=50, long=2)
@given(case=gather_cases())
def test_fuzz_gather(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# cat / stack / slice / pad

@st.composite
def movement_cases(draw, backward: bool = False):
    op = draw(st.sampled_from(["cat", "stack", "slice", "pad"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES if backward else ALL_DTYPES))
    cap = draw(element_cap(big=1 << 20))
    shape = draw(shapes(min_rank=1, max_rank=4, cap=max(1, cap // 3)))
    rank = len(shape)

    def inp(name, shp):
        i = draw(tensor_input(name, shp, dtype, allow_expand=not backward))
        i.requires_grad = backward
        return i

    if op in ("cat", "stack"):
        d = draw(st.integers(0, rank - 1 if op == "cat" else rank))
        nin = draw(st.integers(2, 3))
        ins = []
        for k in range(nin):
            shp = list(shape)
            if op == "cat":
                shp[d] = draw(dim_size(max(1, shape[d] if shape[d] else 129)))
            ins.append(inp("abc"[k], tuple(shp)))
        names = ", ".join(i.name for i in ins)
        expr = f"torch.{op}([{names}], dim={d})"
    elif op == "slice":
        x = inp("x", shape)
        ins = [x]
        d = draw(st.integers(0, rank - 1))
        n = shape[d]
        start = draw(st.integers(-n - 2, n + 2)) if n else 0
        stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2))) if n else None
        step = draw(st.sampled_from([1, 1, 2, 3, 127, 128]))
        sl = f"{start}:{'' if stop is None else stop}:{step}"
        idx = ", ".join([":"] * d + [sl])
        expr = f"torch.clone(x[{idx}], memory_format=torch.contiguous_format)"
    else:
        x = inp("x", shape)
        ins = [x]
        k = draw(st.integers(1, min(3, rank)))
        pads = []
        for j in range(k):
            s = shape[rank - 1 - j]
            lo = draw(st.sampled_from([0, 1, 2, 127, 128, 129, -1]))
            hi = draw(st.sampled_from([0, 1, 3, 128, -1]))
            if s + lo + hi < 1 or (lo < 0 and -lo > s) or (hi < 0 and -hi > s):
                lo, hi = 1, 0
            pads += [lo, hi]
        v = draw(st.sampled_from([0.0, 1.5, -2.0])) if dtype.is_floating_point else 0
        if dtype == torch.bool:
            v = "True" if v else "False"
        expr = f"F.pad(x, {pads!r}, value={v})"
    return Case("movement-bw" if backward else "movement", op, expr, ins, dtype,
                compare="maxrel" if backward else "exact", backward=backward)


@budget(ci=50, long=2)
@given(case=movement_cases())
def test_fuzz_cat_slice_pad(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# conv and pool

@st.composite
def conv_cases(draw, backward: bool = False):
    op = draw(st.sampled_from(["conv2d", "conv1d", "max_pool2d", "avg_pool2d",
                               "adaptive_avg_pool2d"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    N = draw(st.sampled_from([1, 1, 2, 3]))
    C = draw(st.sampled_from([1, 3, 4, 16, 127, 128, 129, 257]))
    H = draw(st.sampled_from([1, 2, 5, 7, 16, 31, 64, 127, 128, 129]))
    W = draw(st.sampled_from([1, 2, 5, 8, 17, 64, 127, 128, 129, 513]))
    while N * C * H * W > (1 << 18):
        if C >= max(H, W):
            C = max(1, C // 2)
        elif H >= W:
            H = max(1, H // 2)
        else:
            W = max(1, W // 2)
    k = draw(st.integers(1, 5))
    stride = draw(st.integers(1, 3))
    pad = draw(st.integers(0, 2))
    dil = draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    vkind = draw(st.sampled_from(["randn", "ints"]))
    if op == "conv1d":
        shape = (N, C, W)
    else:
        shape = (N, C, H, W)
    x = draw(tensor_input("x", shape, dtype, values=vkind, allow_expand=not backward))
    x.requires_grad = backward
    if op.startswith("conv"):
        groups = draw(st.sampled_from([g for g in (1, 2, 4, C) if C % g == 0]))
        O = draw(st.sampled_from([1, 4, 8, 64, 128, 129]))
        O = max(groups, O // groups * groups)
        ks = (k,) if op == "conv1d" else (k, draw(st.integers(1, 5)))
        while O * (C // groups) * math.prod(ks) > (1 << 16):
            O = max(groups, O // 2 // groups * groups)
        wsh = (O, C // groups) + ks
        w = Input("w", wsh, dtype, vkind, seed + 1, requires_grad=backward)
        bias = draw(st.booleans())
        ins = [x, w]
        bexpr = "None"
        if bias:
            ins.append(Input("b", (O,), dtype, vkind, seed + 2, requires_grad=backward))
            bexpr = "b"
        f = f"F.{op}"
        expr = f"{f}(x, w, {bexpr}, stride={stride}, padding={pad}, dilation={dil}, groups={groups})"
        absb = "b.double().abs()" if bias else "None"
        sc = (f"{f}(x.double().abs(), w.double().abs(), {absb}, stride={stride}, "
              f"padding={pad}, dilation={dil}, groups={groups})")
        compare = "close"
    elif op == "max_pool2d":
        pad = min(pad, k // 2)
        ceil = draw(st.booleans())
        expr = (f"F.max_pool2d(x, {k}, stride={stride}, padding={pad}, dilation={dil}, "
                f"ceil_mode={ceil})")
        ins, sc, compare = [x], None, "exact"
    elif op == "avg_pool2d":
        pad = min(pad, k // 2)
        ceil = draw(st.booleans())
        cip = draw(st.booleans())
        expr = (f"F.avg_pool2d(x, {k}, stride={stride}, padding={pad}, ceil_mode={ceil}, "
                f"count_include_pad={cip})")
        sc = (f"F.avg_pool2d(x.double().abs(), {k}, stride={stride}, padding={pad}, "
              f"ceil_mode={ceil}, count_include_pad={cip})")
        ins, compare = [x], "close"
    else:
        out = (draw(st.integers(1, max(1, H))), draw(st.integers(1, max(1, W))))
        expr = f"F.adaptive_avg_pool2d(x, {out!r})"
        sc = f"F.adaptive_avg_pool2d(x.double().abs(), {out!r})"
        ins, compare = [x], "close"
    if backward:
        return Case("conv-bw", op, expr, ins, dtype, compare="maxrel", backward=True)
    return Case("conv", op, expr, ins, dtype, compare=compare, scale=sc)


@budget(ci=50, long=2)
@given(case=conv_cases())
def test_fuzz_conv_pool(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# short elementwise chains with broadcasting

UNARY_F = ["torch.tanh({})", "torch.sigmoid({})", "torch.relu({})", "torch.abs({})", "(-{})",
           "torch.exp(torch.clamp({}, max=4.0))", "torch.log1p(torch.abs({}))",
           "torch.sqrt(torch.abs({}))", "torch.sin({})", "F.gelu({})", "F.silu({})",
           "({} * 0.5 + 1.0)", "torch.clamp({}, -1.0, 1.0)", "torch.floor({})",
           # casts: explicit roundings that a fused chain must keep, type promotion
           "{}.float()", "{}.to(torch.bfloat16)", "{}.half()"]
BINARY_F = ["({} + {})", "({} - {})", "({} * {})", "({} / (1.0 + torch.abs({})))",
            "torch.maximum({}, {})", "torch.minimum({}, {})", "torch.where({0} > {1}, {0}, {1})"]
UNARY_I = ["torch.abs({})", "(-{})", "torch.relu({})", "torch.clamp({}, -7, 7)", "({} + 3)",
           "({}.float() * 0.5)"]
BINARY_I = ["({} + {})", "({} - {})", "torch.maximum({}, {})", "torch.minimum({}, {})",
            "torch.where({0} > {1}, {0}, {1})", "({} * {})"]
UNARY_B = ["(~{})", "torch.logical_not({})"]
BINARY_B = ["({} & {})", "({} | {})", "({} ^ {})", "torch.logical_and({}, {})",
            "torch.where({0}, {1}, {0})"]


@st.composite
def chain_cases(draw):
    dtype = draw(st.sampled_from(ALL_DTYPES + (torch.float32,)))
    cap = draw(element_cap(big=1 << 20))
    out = draw(shapes(min_rank=0, max_rank=5, cap=cap))
    nin = draw(st.integers(1, 3))
    ins = []
    for k in range(nin):
        # broadcast: a suffix of the output shape, some dims 1
        r = draw(st.integers(0, len(out)))
        shp = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in out[len(out) - r:])
        if k == 0:
            shp = out
        ins.append(draw(tensor_input("xyz"[k], shp, dtype, extra_values=("wide",))))
    if dtype == torch.bool:
        un, bi = UNARY_B, BINARY_B
    elif dtype.is_floating_point:
        un, bi = UNARY_F, BINARY_F
    else:
        un, bi = UNARY_I, BINARY_I
    names = [i.name for i in ins]
    expr = names[0]
    depth = draw(st.integers(1, 4))
    for _ in range(depth):
        if draw(st.booleans()):
            expr = draw(st.sampled_from(un)).format(expr)
        else:
            other = draw(st.sampled_from(names))
            a, b = (expr, other) if draw(st.booleans()) else (other, expr)
            expr = draw(st.sampled_from(bi)).format(a, b)
    for nm in names[1:]:             # every input takes part
        if nm not in expr:
            expr = draw(st.sampled_from(bi)).format(expr, nm)
    tdt = _loosest(dtype, expr)
    t = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (3e-2, 3e-2),
         torch.float16: (4e-3, 4e-3)}.get(tdt, (0, 0))
    return Case("elementwise", f"chain/{depth}", expr, ins, tdt, compare="maxrel",
                rtol=t[0], red=t[1], alt_fp32=True)


def _loosest(dtype, expr):
    """The dtype whose tolerance applies: a cast to bf16/fp16 inside a chain rounds
    there, and a value one fp32 ulp from a rounding tie may round either way."""
    if "torch.bfloat16" in expr:
        return torch.bfloat16
    if ".half()" in expr and dtype != torch.bfloat16:
        return torch.float16
    return dtype


@budget(ci=120, long=3)
@given(case=chain_cases())
def test_fuzz_elementwise_chains(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# backward: gradients through trnc's backward graphs (loss = mean(f(x) * r), r random)

@st.composite
def backward_cases(draw):
    fam = draw(st.sampled_from(["reduction", "reduction", "norm", "matmul", "conv",
                                "gather", "movement"]))
    return draw({"reduction": reduction_cases, "norm": norm_cases, "matmul": matmul_cases,
                 "conv": conv_cases, "gather": gather_cases,
                 "movement": movement_cases}[fam](backward=True))


# fuzz-findings F2: the backward of a sum over >= 16384 elements must compile
_SUM_BW = Case("reduction-bw", "sum", "torch.sum(x, 0)",
               [Input("x", (16385, 3), torch.float32, "randn", 2, requires_grad=True)],
               torch.float32, compare="maxrel", backward=True)


@budget(ci=60, long=2)
@given(case=backward_cases())
def test_fuzz_backward(case):
    run_case(case)


# --------------------------------------------------------------------------- #
# regressions: one fixed case per bug the fuzzer found (/work/fuzz-findings.md
# entry in the id), outside the families so an open bug does not stop a
# family's random examples

_LN_BW_4096 = Case("norm-bw", "layer_norm", "F.layer_norm(x, (4096,))",
                   [Input("x", (2, 4096), torch.float32, "randn", 5, requires_grad=True)],
                   torch.float32, compare="maxrel", backward=True)

_AMAX_BW_ALL_DIMS = Case("reduction-bw", "amax", "torch.amax(x, dim=(0, 1))",
                         [Input("x", (4, 3), torch.float32, "randn", 6, requires_grad=True)],
                         torch.float32, compare="maxrel", backward=True)

FOUND = {
    "F1-var-empty-dim": _VAR_EMPTY,
    "F2-sum-backward-16385": _SUM_BW,
    "F3-layer-norm-backward-4096": _LN_BW_4096,
    "F4-amax-backward-all-dims-list": _AMAX_BW_ALL_DIMS,
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_fuzz_found(name):
    run_case(FOUND[name])


# --------------------------------------------------------------------------- #
# fusion: elementwise prologues into reductions and row kernels, matmul
# epilogues, several outputs of one kernel

@st.composite
def _float_chain(draw, names, depth):
    expr = names[0]
    for _ in range(depth):
        if draw(st.booleans()):
            expr = draw(st.sampled_from(UNARY_F)).format(expr)
        else:
            other = draw(st.sampled_from(names))
            a, b = (expr, other) if draw(st.booleans()) else (other, expr)
            expr = draw(st.sampled_from(BINARY_F)).format(a, b)
    for nm in names[1:]:
        if nm not in expr:
            expr = draw(st.sampled_from(BINARY_F[:3])).format(expr, nm)
    return expr


@st.composite
def fused_cases(draw):
    kind = draw(st.sampled_from(["reduce", "reduce", "rows", "epilogue", "multi"]))
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    t = tol_of(dtype)
    if kind == "epilogue":
        M, N, K = (draw(mm_size(False)) for _ in range(3))
        while M * N * K > (1 << 27):
            M, N = max(1, M // 2), max(1, N // 2)
        ins = [Input("a", (M, K), dtype, "randn", draw(st.integers(0, 999)),
                     draw(st.sampled_from([("contig",), ("transpose", 0, 1)]))),
               Input("b", (K, N), dtype, "randn", draw(st.integers(0, 999)),
                     draw(st.sampled_from([("contig",), ("transpose", 0, 1)]))),
               Input("c", draw(st.sampled_from([(N,), (M, 1), (1, N), (M, N)])), dtype, "randn",
                     draw(st.integers(0, 999)))]
        ep = draw(st.sampled_from(["torch.relu({})", "torch.tanh({})", "F.gelu({})",
                                   "({} * 0.5)", "torch.sigmoid({})", "({})"]))
        expr = ep.format("a @ b + c")
        # the epilogues are 1-Lipschitz (or less): the matmul's error bound carries over
        sc = "a.double().abs() @ b.double().abs() + c.double().abs()"
        return Case("fused", "matmul+" + ep.format("_"), expr, ins, dtype, scale=sc,
                    alt_fp32=True)
    cap = draw(element_cap(big=1 << 20))
    shape = draw(shapes(min_rank=1, max_rank=4, cap=cap, zero=False))
    rank = len(shape)
    nin = draw(st.integers(1, 2))
    ins = [draw(tensor_input("x", shape, dtype))]
    if nin == 2:
        r = draw(st.integers(0, rank))
        shp = tuple(1 if draw(st.integers(0, 2)) == 0 else s for s in shape[rank - r:])
        ins.append(draw(tensor_input("y", shp, dtype)))
    names = [i.name for i in ins]
    chain = draw(_float_chain(names, draw(st.integers(1, 3))))
    dtype = _loosest(dtype, chain)
    t = tol_of(dtype)
    dbl = f"(lambda {', '.join(names)}: {{}})({', '.join(n + '.double()' for n in names)})"
    keepdim = draw(st.booleans())
    if kind == "reduce":
        dims = draw(reduce_dims(rank))
        red = draw(st.sampled_from(["sum", "mean", "amax", "amin"]))
        ax = "" if dims is None else f", {dims!r}, keepdim={keepdim}"
        if red in ("amax", "amin"):
            ax = "" if dims is None else f", dim={dims!r}, keepdim={keepdim}"
        expr = f"torch.{red}({chain}{ax})"
        sc = dbl.format(f"torch.{'mean' if red == 'mean' else 'sum' if red == 'sum' else 'amax'}"
                        f"(torch.abs({chain}){ax})")
        return Case("fused", f"{red}(chain)", expr, ins, dtype, scale=sc, alt_fp32=True)
    if kind == "rows":
        op = draw(st.sampled_from(["softmax", "log_softmax", "layer_norm"]))
        if op == "layer_norm":
            expr = f"F.layer_norm({chain}, ({shape[-1]},))"
            rtol, atol = t.rtol, {torch.float32: 1e-4}.get(dtype, 4 * t.atol)
        else:
            expr = f"torch.{op}({chain}, dim=-1)"
            rtol, atol = t.rtol, (1e-8 if op == "softmax" else t.red)
        return Case("fused", f"{op}(chain)", expr, ins, dtype, rtol=rtol, atol=atol,
                    alt_fp32=True)
    d1 = draw(st.integers(0, rank - 1))
    expr = (f"(torch.sum({chain}, {d1}, keepdim={keepdim}), "
            f"torch.amax({chain}, dim=-1), ({chain}) * 2.0)")
    # the elementwise output as the chains family: relative to its largest
    # magnitude (a chain can cancel, x + tanh(x) + 1 near 0, where an ulp of
    # tanh between implementations is a large relative error)
    sc = dbl.format(f"(torch.abs({chain}).sum({d1}, keepdim={keepdim}), "
                    f"torch.abs({chain}).amax(dim=-1), 2.0 * torch.abs({chain}).amax())")
    return Case("fused", "multi-output", expr, ins, dtype, scale=sc, alt_fp32=True)


def tol_of(dtype):
    from shape_fuzz import tol_for  # noqa: PLC0415

    return tol_for(dtype)


@budget(ci=60, long=3)
@given(case=fused_cases())
def test_fuzz_fusion(case):
    run_case(case)
