"""trnc's own decompositions of aten ops that torch's table leaves whole
(no torch._decomp / torch._refs entry) into ops the C table lowers.

Each is the op's eager semantics written with torch ops, traced by
aot_autograd like torch's own decompositions (backend.decompositions() adds
``TABLE``); a mode it does not cover raises UnsupportedOperatorError naming
the mode rather than computing something else; under ``fallback="cpu"``
(``keep_unsupported``) such a node stays whole instead, so that the fallback
runs it with torch. Shapes are static here, so Python-level loops and
checks over sizes are trace-time only.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import string
from typing import Any, Callable, Iterator

import torch

from . import errors

aten = torch.ops.aten

TABLE: dict[Any, Callable[..., Any]] = {}

_KEEP_UNSUPPORTED = contextvars.ContextVar("trnc_keep_unsupported", default=False)


@contextlib.contextmanager
def keep_unsupported(on: bool) -> Iterator[None]:
    """While active with on=True, a decomposition of TABLE that meets a mode
    it does not cover leaves the node whole (returns NotImplemented) rather
    than raising UnsupportedOperatorError: trnc then refuses the node like
    any op it does not lower, and fallback="cpu" runs it with torch."""
    token = _KEEP_UNSUPPORTED.set(on)
    try:
        yield
    finally:
        _KEEP_UNSUPPORTED.reset(token)


class _Unsupported(Exception):
    def __init__(self, target: str, message: str) -> None:
        super().__init__(f"{target}: {message}")
        self.target, self.message = target, message


def _register(*ops):
    """Puts fn in TABLE for ops (wrapped: a _refuse becomes the error or,
    under keep_unsupported, NotImplemented); returns fn itself, so that
    decompositions can call each other."""
    def wrap(fn):
        @functools.wraps(fn)
        def entry(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except _Unsupported as e:
                if _KEEP_UNSUPPORTED.get():
                    return NotImplemented
                raise errors.UnsupportedOperatorError(
                    f"trnc cannot lower {e.target}: {e.message}",
                    [{"severity": "error", "target": e.target, "message": e.message}]) from None
        for op in ops:
            TABLE[op] = entry
        return fn
    return wrap


def _refuse(target: str, message: str):
    raise _Unsupported(target, message)


# --------------------------------------------------------------------------- #
# _trilinear (nn.functional.bilinear)


@_register(aten._trilinear.default)
def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """aten._trilinear: i1, i2, i3 unsqueezed at their expand dims to one
    rank D, multiplied (broadcast) and summed over sumdim, the summed dims
    dropped; as an einsum (bmm's), so nothing of the full product is formed.
    unroll_dim only orders eager's loop. A kept dim that no input has is
    size 0, as eager makes it."""
    total = i1.dim() + len(expand1)
    if total > len(string.ascii_letters):
        _refuse("aten._trilinear.default", f"more than {len(string.ascii_letters)} dims")
    letters = string.ascii_letters[:total]
    exp = [set(d % total for d in e) for e in (expand1, expand2, expand3)]
    summed = set(d % total for d in sumdim)
    subs = ["".join(letters[d] for d in range(total) if d not in e) for e in exp]
    everywhere = [d for d in range(total) if all(d in e for e in exp)]
    out = "".join(letters[d] for d in range(total) if d not in summed and d not in everywhere)
    res = torch.einsum(f"{subs[0]},{subs[1]},{subs[2]}->{out}", i1, i2, i3)
    kept = [d for d in range(total) if d not in summed]
    if any(d in everywhere for d in kept):
        # eager gives a kept dim that no input has size 0 (and a summed one
        # drops out like any summed dim)
        shape = [0 if d in everywhere else res.shape[out.index(letters[d])] for d in kept]
        return res.new_zeros(shape)
    return res


# --------------------------------------------------------------------------- #
# segment_reduce and its backward


_SEGMENT_REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def _segments(target, data, lengths, indices, offsets, axis):
    """(member [S, L] bool: row j of data along dim 0 is in segment s,
    count [S] int64) from 1-D lengths or offsets (the rows eager's kernel
    reduces: [start_s, end_s))."""
    if indices is not None:
        _refuse(target, "indices (eager does not support them either)")
    seg = lengths if lengths is not None else offsets
    if seg is None:
        _refuse(target, "neither lengths nor offsets")
    if seg.dim() != 1:
        _refuse(target, f"{seg.dim()}-D {'lengths' if lengths is not None else 'offsets'} "
                        "(only 1-D, segments along data's dim 0)")
    if axis % max(data.dim(), 1) != 0:
        _refuse(target, f"axis {axis} with 1-D lengths/offsets (eager reduces along dim 0)")
    if lengths is not None:
        # clamped to [0, L]: changes no lengths eager accepts (it rejects a
        # negative one, and a sum other than L unless unsafe, when rows past
        # the sum are in no segment, as here), and bounds the prefix sum for
        # trnc's exact-integer range check
        lengths = lengths.clamp(0, data.shape[0])
        ends = torch.cumsum(lengths, 0)
        starts = ends - lengths
        count = lengths
    else:
        starts, ends = offsets[:-1], offsets[1:]
        count = ends - starts
    rows = torch.arange(data.shape[0], device=data.device)
    member = (starts.unsqueeze(1) <= rows) & (rows < ends.unsqueeze(1))
    return member, count


def _segment_ids(member):
    """Each row's segment, S for a row in none ([L] int64)."""
    nseg = member.shape[0]
    ids = torch.arange(nseg, device=member.device).unsqueeze(1)
    return (member.long() * ids).sum(0) + nseg * (~member.any(0)).long()


def _initial(reduce, initial, dtype):
    if initial is not None:
        return float(initial)
    return {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": float("-inf"),
            "min": float("inf")}[reduce]


@_register(aten.segment_reduce.default)
def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                    unsafe=False, initial=None):
    """aten.segment_reduce with 1-D lengths or offsets (data's dim 0): eager's
    CPU kernel per segment and column: start at initial (else sum/mean 0,
    prod 1, max -inf, min +inf), fold the segment's rows (max/min propagate
    NaN), mean divides by the length (an empty segment: initial, or NaN
    without one). Over a membership matrix [S, L]: max/min/prod a masked
    reduction over [S, L, ...], sum and mean an index_add of the rows by
    segment (so a NaN stays in its segment). unsafe only skips eager's
    checks of the lengths."""
    target = "aten.segment_reduce.default"
    if reduce not in _SEGMENT_REDUCTIONS:
        _refuse(target, f"reduce={reduce!r}")
    member, count = _segments(target, data, lengths, indices, offsets, axis)
    init = _initial(reduce, initial, data.dtype)
    rest = data.shape[1:]
    flat = data.reshape(data.shape[0], -1)                              # [L, R]
    if reduce in ("sum", "mean"):
        ids = _segment_ids(member)
        acc = flat.new_zeros((member.shape[0] + 1, flat.shape[1])).index_add(0, ids, flat)
        acc = acc[:-1] + init                                           # [S, R]
        if reduce == "mean":
            n = count.to(data.dtype).unsqueeze(1)
            div = torch.where(torch.isnan(acc), acc, acc / n)
            empty = torch.full_like(acc, init if initial is not None else float("nan"))
            acc = torch.where(n > 0, div, empty)
    else:
        m = member.unsqueeze(2)                                         # [S, L, 1]
        x = flat.unsqueeze(0)                                           # [1, L, R]
        if reduce == "prod":
            acc = torch.where(m, x, torch.ones_like(x)).prod(1) * init
        else:
            fill = float("-inf") if reduce == "max" else float("inf")
            masked = torch.where(m, x, torch.full_like(x, fill))
            ext = masked.amax(1) if reduce == "max" else masked.amin(1)  # NaN propagates
            both = torch.maximum if reduce == "max" else torch.minimum
            acc = both(torch.full_like(ext, init), ext)
    return acc.reshape((member.shape[0],) + tuple(rest))


@_register(aten._segment_reduce_backward.default)
def _segment_reduce_backward(grad, output, data, reduce, *, lengths=None, offsets=None,
                             axis=0, initial=None):
    """aten._segment_reduce_backward, as eager's CPU kernel: sum the
    segment's grad on each of its rows, mean grad / length, prod
    grad * output / x (x zero or NaN: grad times initial times the product
    of the segment's other rows), max/min grad on the rows equal to the
    output (or NaN), divided by their number when there are several and the
    grad is positive (eager's rule). Rows in no segment get 0."""
    target = "aten._segment_reduce_backward.default"
    if reduce not in _SEGMENT_REDUCTIONS:
        _refuse(target, f"reduce={reduce!r}")
    member, count = _segments(target, data, lengths, None, offsets, axis)
    flat = data.reshape(data.shape[0], -1)                              # [L, R]
    g = grad.reshape(grad.shape[0], -1)                                 # [S, R]
    out = output.reshape(output.shape[0], -1)
    ids = _segment_ids(member)
    inside = member.any(0).unsqueeze(1)                                 # [L, 1]

    def per_row(v):  # [S, R] -> [L, R]: each row's segment's value, 0 in none
        return torch.cat([v, v.new_zeros((1, v.shape[1]))]).index_select(0, ids)

    if reduce == "sum":
        res = per_row(g)
    elif reduce == "mean":
        n = count.to(data.dtype).unsqueeze(1)
        res = per_row(torch.where(n > 0, g / n.clamp(min=1), torch.zeros_like(g)))
    elif reduce == "prod":
        init = _initial(reduce, initial, data.dtype)
        gj = per_row(g)
        same = (ids.unsqueeze(1) == ids.unsqueeze(0)) & inside          # [L, L]: one segment
        others = same & ~torch.eye(flat.shape[0], dtype=torch.bool, device=data.device)
        x = flat.unsqueeze(0)                                           # [1, L(k), R]
        excl = torch.where(others.unsqueeze(2), x, torch.ones_like(x)).prod(1) * init
        special = torch.isnan(flat) | (flat == 0)
        res = torch.where(special, gj * excl, per_row(g * out) / flat)
        res = torch.where(inside, res, torch.zeros_like(res))
    else:
        m = member.unsqueeze(2)                                         # [S, L, 1]
        x = flat.unsqueeze(0)                                           # [1, L, R]
        hit = m & (torch.isnan(x) | (x == out.unsqueeze(1)))            # [S, L, R]
        counter = hit.sum(1, keepdim=True)                              # [S, 1, R]
        gs = g.unsqueeze(1)                                             # [S, 1, R]
        share = torch.where((counter >= 2) & (gs > 0), gs / counter.to(data.dtype), gs)
        res = torch.where(hit, share, torch.zeros_like(share)).sum(0)  # [L, R]
    return res.reshape(data.shape)


# --------------------------------------------------------------------------- #
# embedding_bag (modes 0 sum, 1 mean, 2 max) and its backward


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _bag_of(offsets, n, nbags):
    """Each index's bag ([n] int64): the last bag whose offset is at most
    its position, clamped to the last bag (eager's offset2bag: with
    include_last_offset the indices past the last offset join the last bag)."""
    pos = torch.arange(n, device=offsets.device)
    count = (offsets.unsqueeze(0) <= pos.unsqueeze(1)).long().sum(1)
    return (count - 1).clamp(0, max(nbags - 1, 0))


def _check_bag(target, weight, indices, mode, scale_grad_by_freq):
    if mode not in _BAG_MODES:
        _refuse(target, f"mode={mode}")
    if scale_grad_by_freq:
        _refuse(target, "scale_grad_by_freq=True")
    if indices.dim() != 1:
        _refuse(target, f"{indices.dim()}-D indices (eager takes 1-D indices with offsets)")
    if weight.dim() != 2:
        _refuse(target, f"{weight.dim()}-D weight")


def _embedding_bag_impl(forward_only, weight, indices, offsets, scale_grad_by_freq=False,
                        mode=0, sparse=False, per_sample_weights=None,
                        include_last_offset=False, padding_idx=-1):
    target = ("aten._embedding_bag_forward_only.default" if forward_only
              else "aten._embedding_bag.default")
    _check_bag(target, weight, indices, mode, scale_grad_by_freq)
    if sparse and not forward_only:
        _refuse(target, "sparse=True (a sparse weight gradient)")
    n, dim = indices.shape[0], weight.shape[1]
    nbags = offsets.shape[0] - (1 if include_last_offset else 0)
    bag = _bag_of(offsets, n, nbags)
    rows = weight.index_select(0, indices)                                  # [n, D]
    keep = indices != padding_idx if padding_idx >= 0 else None
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    if keep is not None:
        rows = torch.where(keep.unsqueeze(1), rows, torch.zeros_like(rows))
        kept = keep.long()
    else:
        kept = torch.ones_like(indices, dtype=torch.long)
    # counted in float32 (exact below 2^24 indices): trnc accumulates index_add in fp32
    counts = torch.zeros(nbags, dtype=torch.float32, device=weight.device).index_add(
        0, bag, kept.to(torch.float32)).long()
    zeros = weight.new_zeros((nbags, dim))
    if mode == 2:
        src = rows if keep is None else torch.where(
            keep.unsqueeze(1), rows, torch.full_like(rows, float("-inf")))
        idx2 = bag.unsqueeze(1).expand(n, dim)
        out = zeros.scatter_reduce(0, idx2, src, "amax", include_self=False)
        out = torch.where(counts.unsqueeze(1) > 0, out, zeros)
        # the first index (in order) that reaches the bag's max, as eager's strict >
        hit = (src == out.index_select(0, bag))
        if keep is not None:
            hit = hit & keep.unsqueeze(1)
        # positions in float32 (exact below 2^24): trnc's scatter_reduce is floating
        pos = torch.arange(n, device=weight.device, dtype=torch.float32).unsqueeze(1).expand(n, dim)
        first = torch.full((nbags, dim), float(n), device=weight.device).scatter_reduce(
            0, idx2, torch.where(hit, pos, torch.full_like(pos, n)), "amin", include_self=True)
        first = first.long()
        ext = torch.cat([indices, indices.new_zeros(1)])                    # n: no hit -> 0
        max_indices = ext.index_select(0, first.reshape(-1)).reshape(nbags, dim).to(offsets.dtype)
    else:
        out = zeros.index_add(0, bag, rows)
        if mode == 1:
            c = counts.unsqueeze(1).to(out.dtype)
            out = torch.where(c > 0, out / c.clamp(min=1), zeros)
    # the other outputs as eager's CPU kernel gives them (shapes as its meta function)
    fast_sum = (mode == 0 and weight.dtype in (torch.float32, torch.float16)
                and weight.stride(1) == 1 and padding_idx < 0
                and (per_sample_weights is None or per_sample_weights.stride(0) == 1))
    offset2bag = offsets.new_zeros(0) if fast_sum else bag.to(offsets.dtype)
    bag_size = counts.to(offsets.dtype) if mode != 0 else offsets.new_zeros(nbags)
    if forward_only and include_last_offset:
        bag_size = torch.cat([bag_size, offsets.new_zeros(1)])
    if mode != 2:
        max_indices = bag_size.clone()
    return out, offset2bag, bag_size, max_indices


@_register(aten._embedding_bag.default)
def _embedding_bag(*args, **kwargs):
    """aten._embedding_bag (weight [V, D], 1-D indices, offsets): each bag's
    rows of weight (times per_sample_weights, mode sum only), the
    padding_idx rows left out, summed (an index_add by bag), averaged over
    the kept rows (mean; an empty bag is 0) or their column-wise max
    (scatter_reduce amax; an empty bag 0, max_indices the first index
    reaching it). offset2bag, bag_size and max_indices as eager's CPU
    kernel (offset2bag empty on its sum fast path). scale_grad_by_freq and
    sparse are refused."""
    return _embedding_bag_impl(False, *args, **kwargs)


@_register(aten._embedding_bag_forward_only.default)
def _embedding_bag_forward_only(*args, **kwargs):
    """aten._embedding_bag_forward_only: as _embedding_bag (bag_size of
    offsets' length)."""
    return _embedding_bag_impl(True, *args, **kwargs)


@_register(aten._embedding_bag_dense_backward.default)
def _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
                                  num_weights, scale_grad_by_freq, mode,
                                  per_sample_weights, padding_idx=-1):
    """aten._embedding_bag_dense_backward: weight's gradient [num_weights, D].
    sum/mean: each kept index's bag grad (times its per-sample weight,
    over the bag's size for mean) added to its row; max: each non-empty
    bag's grad added to the row that gave its max, column by column. Rows
    of padding_idx get 0."""
    target = "aten._embedding_bag_dense_backward.default"
    _check_bag(target, grad, indices, mode, scale_grad_by_freq)
    n, dim = indices.shape[0], grad.shape[1]
    gw = grad.new_zeros((num_weights, dim))
    if mode == 2:
        valid = (bag_size > 0).unsqueeze(1)
        src = torch.where(valid, grad, torch.zeros_like(grad))
        return gw.scatter_add(0, maximum_indices.long(), src)
    if n and offset2bag.shape[0] != n:
        _refuse(target, "an offset2bag without one bag per index")
    g = grad.index_select(0, offset2bag.long())                             # [n, D]
    if mode == 1:
        g = g / bag_size.index_select(0, offset2bag.long()).clamp(min=1).unsqueeze(1).to(g.dtype)
    if per_sample_weights is not None:
        g = g * per_sample_weights.unsqueeze(1).to(g.dtype)
    if padding_idx >= 0:
        g = torch.where((indices != padding_idx).unsqueeze(1), g, torch.zeros_like(g))
    return gw.index_add(0, indices, g)


@_register(aten._embedding_bag_per_sample_weights_backward.default)
def _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag,
                                               mode, padding_idx=-1):
    """aten._embedding_bag_per_sample_weights_backward (mode sum): each
    index's bag grad dotted with its weight row, 0 for padding_idx; the bags
    from offsets (offset2bag is empty on eager's sum fast path)."""
    target = "aten._embedding_bag_per_sample_weights_backward.default"
    if mode != 0:
        _refuse(target, f"mode={mode} (per_sample_weights are mode sum only)")
    n = indices.shape[0]
    bag = _bag_of(offsets, n, grad.shape[0])
    res = (grad.index_select(0, bag) * weight.index_select(0, indices)).sum(1)
    if padding_idx >= 0:
        res = torch.where(indices != padding_idx, res, torch.zeros_like(res))
    return res


@_register(aten._embedding_bag_backward.default)
def _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
                            num_weights, scale_grad_by_freq, mode, sparse,
                            per_sample_weights, padding_idx=-1):
    """aten._embedding_bag_backward (dense): offset2bag rebuilt from offsets
    when eager's sum fast path left it empty, then the dense backward."""
    if sparse:
        _refuse("aten._embedding_bag_backward.default", "sparse=True (a sparse weight gradient)")
    if indices.shape[0] and offset2bag.shape[0] == 0:
        offset2bag = _bag_of(offsets, indices.shape[0], grad.shape[0])
    return _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
                                         num_weights, scale_grad_by_freq, mode,
                                         per_sample_weights, padding_idx)


# --------------------------------------------------------------------------- #
# _upsample_bilinear2d_aa and its backward


def _aa_weights(like, in_size, out_size, align_corners, scale_opt):
    """The [out_size, in_size] matrix of eager's antialiased linear (triangle
    filter) weights along one dim (UpSampleKernel.cpp,
    _compute_indices_min_size_weights_aa, float32 as its float path):
    scale = in/out (1/scale given, (in-1)/(out-1) with align_corners),
    support = max(scale, 1), output i reads the rows k in [xmin, xmin+xsize)
    around center = scale * (i + 0.5) with weight 1 - |(k - center + 0.5) /
    max(scale, 1)|, normalized to sum 1. Built from iotas (traced ops, the
    same float32 steps as eager's loop)."""
    import math

    import numpy as np

    f32 = np.float32
    if align_corners:
        scale = f32((in_size - 1) / (out_size - 1)) if out_size > 1 else f32(0)
    elif scale_opt is not None and scale_opt > 0:
        scale = f32(1.0 / scale_opt)
    else:
        scale = f32(in_size / out_size)
    support = float(scale if scale >= 1 else f32(1))
    invscale = float(f32(1) / scale if scale >= 1 else f32(1))
    max_interp = int(math.ceil(support)) * 2 + 1
    kw = dict(dtype=torch.float32, device=like.device)
    center = (torch.arange(out_size, **kw) + 0.5) * float(scale)            # [O]
    xmin = (center - support + 0.5).trunc().clamp(min=0)
    xmax = (center + support + 0.5).trunc().clamp(max=in_size)
    xend = xmin + (xmax - xmin).clamp(0, max_interp)
    k = torch.arange(in_size, **kw).unsqueeze(0)                            # [1, I]
    c, lo, hi = center.unsqueeze(1), xmin.unsqueeze(1), xend.unsqueeze(1)
    w = 1 - ((k - c + 0.5) * invscale).abs()
    w = torch.where((k >= lo) & (k < hi) & (w > 0), w, torch.zeros_like(w))
    total = w.sum(1, keepdim=True)
    w = torch.where(total != 0, w / torch.where(total != 0, total, torch.ones_like(total)), w)
    return w.to(like.dtype)


def _aa_matrices(like, in_hw, out_hw, align_corners, scales_h, scales_w):
    return (_aa_weights(like, in_hw[0], out_hw[0], align_corners, scales_h),
            _aa_weights(like, in_hw[1], out_hw[1], align_corners, scales_w))


@_register(aten._upsample_bilinear2d_aa.default)
def _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h=None, scales_w=None):
    """aten._upsample_bilinear2d_aa (x [N, C, H, W]): eager's separable
    antialiased weights as two constant matrices, out = Mh x Mw^T (matmuls)."""
    if x.dim() != 4:
        _refuse("aten._upsample_bilinear2d_aa.default", f"{x.dim()}-D input")
    mh, mw = _aa_matrices(x, x.shape[2:], output_size, align_corners, scales_h, scales_w)
    return torch.einsum("oh,nchw,pw->ncop", mh, x, mw).contiguous(
        memory_format=torch.channels_last if x.is_contiguous(memory_format=torch.channels_last)
        and not x.is_contiguous() else torch.contiguous_format)


@_register(aten._upsample_bilinear2d_aa_backward.default)
def _upsample_bilinear2d_aa_backward(grad, output_size, input_size, align_corners,
                                     scales_h=None, scales_w=None):
    """aten._upsample_bilinear2d_aa_backward: grad_in = Mh^T grad Mw."""
    mh, mw = _aa_matrices(grad, input_size[2:], output_size, align_corners, scales_h, scales_w)
    return torch.einsum("oh,ncop,pw->nchw", mh, grad, mw).contiguous()


# --------------------------------------------------------------------------- #
# linear_cross_entropy's chunked custom ops (torch.nn.modules.linear_cross_entropy)
#
# Both are torch.library custom ops whose eager implementation is in-place
# chunked Python (not traceable as a functional graph); functional.py routes
# only label_smoothing == 0, int64 class targets and 2-D input to them. The
# chunking (batch_chunk_size) and the accumulation policy only bound eager's
# memory; the values are those of the whole-batch formula below.


def _lce_logits(target_name, input, linear_weight, target, linear_bias):
    if input.dim() != 2 or target.dim() != 1 or target.dtype != torch.int64:
        _refuse(target_name, "input other than [N, in] with int64 class targets [N]")
    logits = input.to(linear_weight.dtype) @ linear_weight.t()
    if linear_bias is not None:
        logits = logits + linear_bias
    return logits


def _lce_no_reduction(input, linear_weight, target, linear_bias, weight, ignore_index,
                      batch_chunk_size, acc_policy, acc_dtype):
    """torch_nn::_linear_cross_entropy_batch_chunked_no_reduction: the
    per-sample cross_entropy(input @ W^T + b, target, weight,
    ignore_index, reduction='none') (its backward is eager's Python,
    traced by aot_autograd)."""
    name = "torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default"
    logits = _lce_logits(name, input, linear_weight, target, linear_bias)
    loss = torch.nn.functional.cross_entropy(logits, target, weight, ignore_index=ignore_index,
                                             reduction="none")
    return loss.to(input.dtype)


def _lce_chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                 label_smoothing, batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph,
                 compute_input_grad, compute_linear_weight_grad, compute_linear_bias_grad):
    """torch_nn::_linear_cross_entropy_batch_chunked (reduction mean or sum):
    (loss, grad_input, grad_linear_weight, grad_linear_bias), the gradients
    of the loss that eager precomputes in forward (an empty [0, 0] / [0]
    where its compute_* flag is off): with logits z = x W^T + b and
    p = softmax(z), dloss/dz = w[t] (p - onehot(t)) / denom over the
    samples whose target is not ignore_index (denom: the sum of their
    w[t] for mean, 1 for sum)."""
    name = "torch_nn._linear_cross_entropy_batch_chunked.default"
    if reduction not in ("mean", "sum"):
        _refuse(name, f"reduction={reduction!r}")
    if label_smoothing != 0.0:
        _refuse(name, f"label_smoothing={label_smoothing}")
    logits = _lce_logits(name, input, linear_weight, target, linear_bias)
    loss = torch.nn.functional.cross_entropy(logits, target, weight, ignore_index=ignore_index,
                                             reduction=reduction).to(input.dtype)
    valid = target != ignore_index
    safe_t = torch.where(valid, target, torch.zeros_like(target))
    wt = weight.index_select(0, safe_t).to(logits.dtype) if weight is not None \
        else torch.ones_like(safe_t, dtype=logits.dtype)
    wt = torch.where(valid, wt, torch.zeros_like(wt))
    classes = torch.arange(logits.shape[1], device=logits.device)
    onehot = (classes == safe_t.unsqueeze(1)).to(logits.dtype)
    g = (torch.softmax(logits, 1) - onehot) * wt.unsqueeze(1)
    if reduction == "mean":
        g = g / wt.sum()
    gi = (g @ linear_weight).to(input.dtype) if compute_input_grad \
        else input.new_empty((0, 0))
    gw = (g.t() @ input.to(g.dtype)).to(input.dtype) if compute_linear_weight_grad \
        else input.new_empty((0, 0))
    gb = g.sum(0).to(input.dtype) if compute_linear_bias_grad else input.new_empty((0,))
    return loss, gi, gw, gb


def _register_lce():
    try:
        import torch.nn.modules.linear_cross_entropy  # noqa: F401  (defines the ops)
        ns = torch.ops.torch_nn
        _register(ns._linear_cross_entropy_batch_chunked.default)(_lce_chunked)
        _register(ns._linear_cross_entropy_batch_chunked_no_reduction.default)(_lce_no_reduction)
    except (ImportError, AttributeError):  # a torch without linear_cross_entropy
        pass


_register_lce()


# --------------------------------------------------------------------------- #
# grid_sampler_3d and its backward


def _grid_taps(a, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_3d's taps, torch._decomp's grid_sampler_2d one dim up:
    [(weight, (xs, ys, zs), dweight/d(ix, iy, iz))] for trilinear (8 taps)
    or nearest (round half to even, as eager's nearbyint), and the
    coordinates' derivatives d(ix, iy, iz)/d(grid) of eager's
    *_set_grad helpers (unnormalize times the padding's clamp, whose bounds
    count as outside, and reflection's sign)."""
    target = "aten.grid_sampler_3d.default"
    if interpolation_mode not in (0, 1):
        _refuse(target, f"interpolation_mode={interpolation_mode} (only bilinear 0 and "
                        "nearest 1; eager has no bicubic for 3-D either)")
    if padding_mode not in (0, 1, 2):
        _refuse(target, f"padding_mode={padding_mode}")
    n, c = a.shape[:2]
    o_d, o_h, o_w = grid.shape[1:4]

    def clip(x, size):
        inside = (x > 0) & (x < size - 1)
        return x.clamp(0, size - 1), inside.to(x.dtype)

    def reflect(x, twice_low, twice_high):
        if twice_low == twice_high:
            return torch.zeros_like(x), torch.zeros_like(x)
        cmin, span = twice_low / 2, (twice_high - twice_low) / 2
        rel = x - cmin
        sign = torch.where(rel < 0, -torch.ones_like(x), torch.ones_like(x))
        c2 = rel.abs()
        extra = torch.fmod(c2, span)
        even = torch.fmod((c2 / span).floor(), 2) == 0
        return (torch.where(even, extra + cmin, span + cmin - extra),
                torch.where(even, sign, -sign))

    def source_index(coords, size):
        mul = (size * 0.5 - 0.5) if align_corners else (size * 0.5)
        x = coords * mul + (size * 0.5 - 0.5)
        d = torch.full_like(x, mul)
        if padding_mode == 1:
            x, dc = clip(x, size)
            d = d * dc
        elif padding_mode == 2:
            x, dr = reflect(x, 0, 2 * (size - 1)) if align_corners \
                else reflect(x, -1, 2 * size - 1)
            x, dc = clip(x, size)
            d = d * dr * dc
        return x, d

    g = grid.view(n, 1, o_d, o_h, o_w, 3).expand(n, c, o_d, o_h, o_w, 3)
    ix, dix = source_index(g[..., 0], a.shape[4])
    iy, diy = source_index(g[..., 1], a.shape[3])
    iz, diz = source_index(g[..., 2], a.shape[2])
    if interpolation_mode == 1:
        one = torch.ones_like(ix)
        zero = torch.zeros_like(ix)
        return [(one, (ix.round(), iy.round(), iz.round()), (zero, zero, zero))], (dix, diy, diz)
    x0, y0, z0 = ix.floor(), iy.floor(), iz.floor()
    fx, fy, fz = ix - x0, iy - y0, iz - z0
    taps = []
    for dz in (0, 1):
        wz, sz = (fz, 1) if dz else (1 - fz, -1)
        for dy in (0, 1):
            wy, sy = (fy, 1) if dy else (1 - fy, -1)
            for dx in (0, 1):
                wx, sx = (fx, 1) if dx else (1 - fx, -1)
                taps.append((wx * wy * wz, (x0 + dx, y0 + dy, z0 + dz),
                             (sx * wy * wz, sy * wx * wz, sz * wx * wy)))
    return taps, (dix, diy, diz)


def _tap_index(a, xyz):
    """(in-bounds mask, the index tuple of a's elements at the tap, in range)."""
    n, c, i_d, i_h, i_w = a.shape
    xs, ys, zs = xyz
    ok = (xs >= 0) & (xs < i_w) & (ys >= 0) & (ys < i_h) & (zs >= 0) & (zs < i_d)
    zero = torch.zeros_like(xs)
    xi, yi, zi = (torch.where(ok, t, zero).clamp(0, size - 1).long()
                  for t, size in ((xs, i_w), (ys, i_h), (zs, i_d)))
    n_idx = torch.arange(n, device=a.device).view(n, 1, 1, 1, 1)
    c_idx = torch.arange(c, device=a.device).view(1, c, 1, 1, 1)
    return ok, (n_idx, c_idx, zi, yi, xi)


@_register(aten.grid_sampler_3d.default)
def _grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """aten.grid_sampler_3d (input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3]):
    gathers of the taps (advanced indexing), weighted; taps outside the
    volume read 0."""
    taps, _ = _grid_taps(input, grid, interpolation_mode, padding_mode, align_corners)
    out = None
    for w, xyz, _ in taps:
        ok, idx = _tap_index(input, xyz)
        val = input[idx]
        t = torch.where(ok, val * w, torch.zeros_like(val))
        out = t if out is None else out + t
    return out


@_register(aten.grid_sampler_3d_backward.default)
def _grid_sampler_3d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
                              align_corners, output_mask):
    """aten.grid_sampler_3d_backward, as eager's kernel: grad_input is the
    weighted grad accumulated at each in-bounds tap (index_put), grad_grid
    the sum over channels of grad times each tap's value times its weight's
    derivative, times the coordinates' derivatives (0 for nearest)."""
    taps, (dix, diy, diz) = _grid_taps(input, grid, interpolation_mode, padding_mode,
                                       align_corners)
    gi = torch.zeros_like(input) if output_mask[0] else None
    gx = gy = gz = None
    for w, xyz, (dwx, dwy, dwz) in taps:
        ok, idx = _tap_index(input, xyz)
        if gi is not None:
            gi = gi.index_put(idx, torch.where(ok, grad_output * w, torch.zeros_like(w)),
                              accumulate=True)
        if interpolation_mode == 0:
            v = torch.where(ok, input[idx] * grad_output, torch.zeros_like(w))
            tx, ty, tz = v * dwx, v * dwy, v * dwz
            gx = tx if gx is None else gx + tx
            gy = ty if gy is None else gy + ty
            gz = tz if gz is None else gz + tz
    if interpolation_mode == 0:
        gg = torch.stack([(gx * dix).sum(1), (gy * diy).sum(1), (gz * diz).sum(1)], -1)
    else:
        gg = torch.zeros_like(grid)
    return gi, gg
