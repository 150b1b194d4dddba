"""nn ops that trnc decomposes in python/trnc/decomp.py, compiled with trnc
against eager PyTorch, values and input gradients at 127/128/129 rows and on
non-contiguous inputs: bilinear (aten._trilinear), segment_reduce and its
backward, embedding_bag (sum, mean, max; per_sample_weights, padding_idx,
include_last_offset) and its backward, _upsample_bilinear2d_aa
(interpolate with antialias=True) and its backward, linear_cross_entropy's
chunked custom ops, grid_sampler_3d and its backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _grads(fn, args, cot_seed=0, rtol=1e-4, atol=1e-4, nograd=()):
    """Compiles fn fresh (fullgraph), checks its values and the gradients of
    every floating input (but those at positions nograd) under a random
    cotangent against eager."""
    torch._dynamo.reset()
    before = trnc.stats()

    def run(f):
        ins = [a.detach().clone().requires_grad_(True)
               if a.is_floating_point() and k not in nograd else a
               for k, a in enumerate(args)]
        out = f(*ins)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(cot_seed))
        diff = [a for a in ins if a.requires_grad]
        return out.detach(), torch.autograd.grad((out * g).sum(), diff)

    got = run(torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True))
    assert trnc.stats()["backward"] > before["backward"]
    want = run(fn)
    torch.testing.assert_close(got[0], want[0], rtol=rtol, atol=atol, equal_nan=True)
    for u, v in zip(got[1], want[1]):
        torch.testing.assert_close(u, v, rtol=rtol, atol=atol, equal_nan=True)


# --------------------------------------------------------------------------- #
# bilinear


@pytest.mark.parametrize("n", [127, 128, 129])
def test_bilinear(n):
    g = torch.Generator().manual_seed(n)
    a, b = torch.randn(n, 7, generator=g), torch.randn(n, 9, generator=g)
    w, bias = torch.randn(5, 7, 9, generator=g), torch.randn(5, generator=g)
    torch.testing.assert_close(run_counted(F.bilinear, a, b, w, bias), F.bilinear(a, b, w, bias),
                               rtol=1e-4, atol=1e-4)
    _grads(F.bilinear, [a, b, w, bias])


def test_bilinear_noncontiguous_batched():
    g = torch.Generator().manual_seed(3)
    a = torch.randn(7, 3, 128, generator=g).transpose(0, 2)     # [128, 3, 7]
    b = torch.randn(129, 3, 6, generator=g)[1:]                  # [128, 3, 6]
    w = torch.randn(4, 6, 7, generator=g).transpose(1, 2)       # [4, 7, 6]
    _grads(lambda x, y, z: F.bilinear(x, y, z), [a, b, w])


def test_trilinear_general():
    """_trilinear with a summed dim and a dim no input has."""
    g = torch.Generator().manual_seed(5)
    a, b, c = torch.randn(3, 4, generator=g), torch.randn(5, 4, 6, generator=g), \
        torch.randn(3, 6, generator=g)
    for sumdim in ([2, 3], [2], [], [3]):
        fn = lambda x, y, z, s=sumdim: torch.ops.aten._trilinear(  # noqa: E731
            x, y, z, [1, 3], [0], [1, 2], s)
        _grads(fn, [a, b, c])
    for sumdim in ([2, 3], [2, 3, 4]):  # dim 4: no input has it (eager: size 0 unless summed)
        fn = lambda x, y, z, s=sumdim: torch.ops.aten._trilinear(  # noqa: E731
            x, y, z, [1, 3, 4], [0, 4], [1, 2, 4], s)
        torch.testing.assert_close(run_counted(fn, a, b, c), fn(a, b, c), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- #
# segment_reduce


def _lengths(rows, seed):
    """Segment lengths summing to rows, with empty segments among them."""
    g = torch.Generator().manual_seed(seed)
    cuts = torch.sort(torch.randint(0, rows + 1, (6,), generator=g)).values
    cuts = torch.cat([torch.tensor([0, 0]), cuts, torch.tensor([rows, rows])])
    return cuts.diff()


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 1.5])
@pytest.mark.parametrize("rows", [127, 128, 129])
def test_segment_reduce(reduce, initial, rows):
    g = torch.Generator().manual_seed(rows)
    data = torch.randn(3, rows, generator=g).t()            # [rows, 3], non-contiguous
    if reduce == "prod":
        data = data.abs() * 0.2 + 0.9                       # keeps the products finite
    lengths = _lengths(rows, rows + 1)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    fl = lambda d, ln: torch.segment_reduce(d, reduce, lengths=ln, initial=initial)  # noqa: E731
    fo = lambda d, of: torch.segment_reduce(d, reduce, offsets=of, initial=initial)  # noqa: E731
    _grads(fl, [data, lengths])
    _grads(fo, [data, offsets])


def test_segment_reduce_ties_zeros_nan():
    """max/min ties (eager splits positive grads only), prod with a zero
    and with two zeros in a segment, NaN propagation."""
    data = torch.tensor([[1., 2.], [3., 2.], [3., -1.], [0., 5.], [2., 0.], [0., 0.], [4., 1.]])
    lengths = torch.tensor([3, 0, 2, 2])
    for reduce in ("max", "min", "prod"):
        fn = lambda d, ln, r=reduce: torch.segment_reduce(d, r, lengths=ln)  # noqa: E731
        _grads(fn, [data, lengths], cot_seed=1)
        _grads(fn, [data, lengths], cot_seed=2)
    nan = data.clone()
    nan[1, 0] = float("nan")
    for reduce in ("max", "min", "sum", "mean"):
        fn = lambda d, ln, r=reduce: torch.segment_reduce(d, r, lengths=ln)  # noqa: E731
        torch.testing.assert_close(run_counted(fn, nan, lengths), fn(nan, lengths),
                                   equal_nan=True)


def test_segment_reduce_2d_lengths_refused():
    data, lengths = torch.randn(2, 4), torch.tensor([[1, 3], [2, 2]])
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(lambda d, ln: torch.segment_reduce(d, "sum", lengths=ln, axis=1),
                      backend="neuron", dynamic=False, fullgraph=True)(data, lengths)
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "2-D lengths" in str(err)


# --------------------------------------------------------------------------- #
# embedding_bag


def _bags(n, nbags, seed, last=False):
    """offsets of nbags bags over n indices, the first two bags empty."""
    g = torch.Generator().manual_seed(seed)
    cuts = torch.sort(torch.randint(0, n + 1, (nbags - 2,), generator=g)).values
    off = torch.cat([torch.zeros(2, dtype=torch.long), cuts])
    return torch.cat([off, torch.tensor([n])]) if last else off


@pytest.mark.parametrize("n", [127, 128, 129])
@pytest.mark.parametrize("mode,variant", [(m, v) for m in ("sum", "mean", "max")
                                          for v in ("plain", "padding", "last")]
                         + [("sum", "psw")])  # per_sample_weights: mode sum only
def test_embedding_bag(mode, n, variant):
    g = torch.Generator().manual_seed(n)
    weight = torch.randn(7, 40, generator=g).t()                 # [40, 7], non-contiguous
    idx = torch.randint(0, 40, (n,), generator=g)
    last = variant == "last"
    off = _bags(n, 9, n + 1, last)
    kw = dict(mode=mode, include_last_offset=last)
    if variant == "padding":
        idx[::5] = 3
        kw["padding_idx"] = 3
    if variant == "psw":
        psw = torch.rand(n, generator=g)
        fn = lambda w, i, o, p: F.embedding_bag(i, w, o, per_sample_weights=p, **kw)  # noqa: E731
        _grads(fn, [weight, idx, off, psw])
    else:
        fn = lambda w, i, o: F.embedding_bag(i, w, o, **kw)  # noqa: E731
        _grads(fn, [weight, idx, off])
        _grads(fn, [weight.contiguous(), idx, off])


def test_embedding_bag_2d_input_and_ties():
    """2-D input (fixed-size bags); max with ties (the first index wins the grad)."""
    w = torch.tensor([[1., 2.], [1., 0.], [3., 2.], [0., 0.]])
    idx = torch.tensor([[0, 1, 2], [1, 0, 3], [3, 3, 1]])
    for mode in ("sum", "mean", "max"):
        _grads(lambda a, i, m=mode: F.embedding_bag(i, a, mode=m), [w, idx])


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 4])
def test_embedding_bag_aux_outputs(mode, padding_idx):
    """offset2bag, bag_size and max_indices as eager's CPU kernel."""
    g = torch.Generator().manual_seed(mode)
    w = torch.randn(10, 3, generator=g)
    idx = torch.tensor([5, 1, 4, 5, 6, 2, 0, 4, 9])
    off = torch.tensor([0, 3, 3, 5, 9])
    fn = lambda a, i, o: torch.ops.aten._embedding_bag(  # noqa: E731
        a, i, o, False, mode, False, None, False, padding_idx)
    got = run_counted(fn, w, idx, off)
    for u, v in zip(got, fn(w, idx, off)):
        torch.testing.assert_close(u, v)


def test_embedding_bag_sparse_refused():
    w, idx = torch.randn(6, 3, requires_grad=True), torch.tensor([[0, 1], [2, 3]])
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        out = torch.compile(lambda a, i: F.embedding_bag(i, a, sparse=True), backend="neuron",
                            dynamic=False, fullgraph=True)(w, idx)
        out.sum().backward()
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError), repr(err)
    assert "sparse=True" in str(err)


# --------------------------------------------------------------------------- #
# _upsample_bilinear2d_aa


@pytest.mark.parametrize("hw,out", [((10, 20), (3, 3)), ((127, 9), (128, 4)), ((129, 6), (40, 13)),
                                    ((128, 5), (129, 2)), ((7, 1), (1, 3))])
@pytest.mark.parametrize("align", [False, True])
def test_upsample_bilinear_aa(hw, out, align):
    g = torch.Generator().manual_seed(hw[0])
    x = torch.randn(2, 3, *hw, generator=g)
    fn = lambda a: F.interpolate(a, size=out, mode="bilinear", align_corners=align,  # noqa: E731
                                 antialias=True)
    _grads(fn, [x])


def test_upsample_bilinear_aa_scale_factor_noncontiguous():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 17, 3, 33, generator=g).permute(0, 2, 1, 3)   # [2, 3, 17, 33]
    for sf in (0.37, 2.5, (0.5, 1.7)):
        fn = lambda a, s=sf: F.interpolate(a, scale_factor=s, mode="bilinear",  # noqa: E731
                                           antialias=True)
        _grads(fn, [x])
    cl = torch.randn(1, 4, 9, 11, generator=g).contiguous(memory_format=torch.channels_last)
    fn = lambda a: F.interpolate(a, size=(5, 4), mode="bilinear", antialias=True)  # noqa: E731
    _grads(fn, [cl])


# --------------------------------------------------------------------------- #
# linear_cross_entropy (the chunked torch_nn custom ops)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("n", [127, 128, 129])
@pytest.mark.parametrize("variant", ["plain", "weighted"])
def test_linear_cross_entropy_chunked(reduction, n, variant):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(24, n, generator=g).t()                      # [n, 24], non-contiguous
    w = torch.randn(10, 24, generator=g) * 0.3
    t = torch.randint(0, 10, (n,), generator=g)
    t[::7] = -100                                                # ignore_index
    opts = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=32, allow_retain_graph=True)
    if variant == "weighted":
        b, cw = torch.randn(10, generator=g), torch.rand(10, generator=g) + 0.5
        fn = lambda a, lw, tt, lb, c: F.linear_cross_entropy(  # noqa: E731
            a, lw, tt, linear_bias=lb, weight=c, reduction=reduction, ignore_index=-100,
            options=opts)
        _grads(fn, [x, w, t, b, cw], nograd=(4,))  # class weights: no gradient
    else:
        fn = lambda a, lw, tt: F.linear_cross_entropy(  # noqa: E731
            a, lw, tt, reduction=reduction, options=opts)
        _grads(fn, [x, w, t])


def test_linear_cross_entropy_chunked_partial_grads():
    """compute_input_grad off (input without grad): the op's empty slot."""
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(33, 8, generator=g), torch.randn(5, 8, generator=g)
    t = torch.randint(0, 5, (33,), generator=g)
    opts = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=16, allow_retain_graph=True)
    fn = lambda a, lw, tt: F.linear_cross_entropy(a, lw, tt, options=opts)  # noqa: E731
    _grads(fn, [x, w, t], nograd=(0,))


# --------------------------------------------------------------------------- #
# grid_sampler_3d


@pytest.mark.parametrize("mode,pad,align", [(m, p, a) for m in ("bilinear", "nearest")
                                            for p in ("zeros", "border", "reflection")
                                            for a in (False, True)])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5, 6, 3, 2, 4), (1, 1, 1, 1, 1, 2, 1, 3),
                                   (1, 2, 2, 3, 129, 2, 1, 5)])
def test_grid_sample_3d(mode, pad, align, shape):
    n, c, d, h, w, od, oh, ow = shape
    g = torch.Generator().manual_seed(d * 1000 + w)
    x = torch.randn(n, c, d, h, w, generator=g)
    grid = torch.rand(n, od, oh, ow, 3, generator=g) * 3 - 1.5
    fn = lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=pad,  # noqa: E731
                                    align_corners=align)
    _grads(fn, [x, grid])


def test_grid_sample_3d_noncontiguous():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 5, 4, 3, 6, generator=g).transpose(1, 2)      # [2, 4, 5, 3, 6]
    grid = (torch.rand(2, 4, 2, 3, 4, generator=g) * 2.4 - 1.2).transpose(1, 3)[..., :3]
    fn = lambda a, b: F.grid_sample(a, b, align_corners=False)  # noqa: E731
    _grads(fn, [x, grid])
