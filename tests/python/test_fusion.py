"""Kernel fusion across graph nodes (codegen/lower.c groups, kernel IR):
free reshapes of a matmul's contiguous operand, elementwise producers
computed in a broadcast consumer's kernel, and the kernel counts of the GPT
decoder in `make demo`. Every case checks values against eager too."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import trnc
from trnc import examples

from conftest import has_extension
from helpers import compile_run

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


_run = compile_run


@pytest.mark.parametrize("t, heads, d", [(37, 4, 24), (129, 2, 64)])
def test_unsafe_view_of_a_contiguous_clone_is_free(t, heads, d):
    # attention's head split: transpose, contiguous clone, _unsafe_view to 3-D
    # for bmm; the view needs no copy kernel of its own
    def f(x):
        y = x.view(2, t, heads, d).transpose(1, 2)
        return torch.bmm(y.reshape(2 * heads, t, d), y.reshape(2 * heads, t, d).transpose(1, 2))

    x = torch.randn(2, t, heads * d)
    got, rep = _run(f, x)
    assert rep["kernels"] == 2, rep          # the clone and the bmm
    torch.testing.assert_close(got, f(x.double()).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("t", [37, 127, 128, 129])
def test_broadcast_mask_producer_joins_the_softmax_kernel(t):
    def f(s, keep):
        return s.masked_fill(~keep, float("-inf")).softmax(-1)

    s = torch.randn(2, 3, t, t)
    keep = torch.ones(t, t, dtype=torch.bool).tril()
    got, rep = _run(f, s, keep)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, f(s, keep))


def test_broadcast_producer_needed_later_keeps_its_own_kernel():
    def f(s, keep):
        inv = ~keep
        return s.masked_fill(inv, 0.0) * 2, inv

    s = torch.randn(2, 3, 5, 5)
    keep = torch.rand(5, 5) > 0.5
    (y, inv), rep = _run(f, s, keep)
    assert rep["kernels"] == 2, rep
    assert torch.equal(inv, ~keep)
    torch.testing.assert_close(y, s.masked_fill(~keep, 0.0) * 2)


def test_broadcast_producer_of_a_scalar_and_a_row():
    def f(x, a, b):
        return torch.exp(a * 2) * x + torch.sigmoid(b)

    x, a, b = torch.randn(130, 257), torch.randn(()), torch.randn(257)
    got, rep = _run(f, x, a, b)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, f(x, a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [127, 128, 129])
def test_residual_add_joins_the_projection_epilogue(rows, dtype):
    # attention's output projection + residual: the add (residual as the
    # first operand, through the [B, T, D] reshape) is applied to each output
    # tile, one kernel; bf16 rounds the projection then the sum, as eager
    def f(x, w, b, res):
        return res + F.linear(x, w, b).view(res.shape)

    torch.manual_seed(rows)
    x = torch.randn(rows, 96).to(dtype)
    w, b = torch.randn(80, 96).to(dtype), torch.randn(80).to(dtype)
    res = torch.randn(rows, 1, 80).to(dtype)
    got, rep = _run(f, x, w, b, res)
    assert rep["kernels"] == 1, rep
    if dtype == torch.float32:
        torch.testing.assert_close(got, f(x.double(), w.double(), b.double(), res.double()).float(),
                                   rtol=1e-5, atol=1e-4)
    else:
        torch.testing.assert_close(got, f(x, w, b, res))


@pytest.mark.parametrize("rows", [127, 129])
def test_matmul_epilogue_with_broadcast_operands(rows):
    # a chain after the activation: a row-broadcast scale, a scalar, a bmm's
    # per-head operand broadcast over the batch
    def f(x, w, s):
        return F.gelu(x @ w.t()) * s - 1

    def g(a, bt, c):
        return torch.bmm(a, bt) * 0.5 + c

    x, w, s = torch.randn(rows, 96), torch.randn(80, 96), torch.randn(80)
    got, rep = _run(f, x, w, s)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, f(x.double(), w.double(), s.double()).float(), rtol=1e-5, atol=1e-4)
    a, bt, c = torch.randn(3, rows, 24), torch.randn(3, 24, 37), torch.randn(rows, 37)
    got, rep = _run(g, a, bt, c)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, g(a.double(), bt.double(), c.double()).float(), rtol=1e-5, atol=1e-4)


def test_matmul_epilogue_operand_that_is_not_an_access_map():
    # [T, D] positions broadcast over the batch of a [B*T, D] projection do
    # not walk its rows with one stride: the add keeps its own kernel
    def f(x, w, pos):
        return (x @ w.t()).view(2, 37, 80) + pos

    x, w, pos = torch.randn(74, 96), torch.randn(80, 96), torch.randn(37, 80)
    got, rep = _run(f, x, w, pos)
    assert rep["kernels"] == 2, rep
    torch.testing.assert_close(got, f(x.double(), w.double(), pos.double()).float(), rtol=1e-5, atol=1e-4)


def test_gpt_decoder_inference_kernels():
    torch.manual_seed(0)
    model, _ = examples.gpt_decoder_example(batch=2, seq=37, d_model=96)
    model.eval()
    idx = torch.randint(0, 256, (2, 37))
    got, rep = _run(model, idx)
    with torch.no_grad():
        want = model(idx)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert trnc.stats()["inference"] >= 1
    assert rep["kernels"] <= 15, rep


def test_outputs_that_view_inputs_need_no_kernel(tmp_path, monkeypatch):
    # a training forward saves transposed weights and slices of its inputs:
    # the runtime copies them from the inputs' memory, no device kernel
    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path))

    def f(x, w):
        return x @ w.t(), w.t(), x[1:3, 2:], x.view(-1)[5:20], w.unsqueeze(0).expand(3, -1, -1)

    x = torch.randn(4, 6)
    w = torch.randn(5, 6)[:, :]
    got, rep = _run(f, x, w)
    assert rep["kernels"] == 1, rep                       # the matmul alone
    for g, e in zip(got, f(x, w)):
        assert g.shape == e.shape and g.stride() == e.stride()
        torch.testing.assert_close(g, e)
    # the same through the artifact cache
    got2, _ = _run(f, x * 2, w)
    assert trnc.stats()["hits"] >= 1
    for g, e in zip(got2, f(x * 2, w)):
        torch.testing.assert_close(g, e)


def test_output_reshape_of_a_transposed_input_is_a_copy():
    # eager's reshape of a non-contiguous tensor copies: not a view of x
    f = lambda x: (x.t().reshape(-1), x.t().contiguous().view(2, -1))  # noqa: E731
    x = torch.randn(3, 4)
    got, _ = _run(f, x)
    for g, e in zip(got, f(x)):
        torch.testing.assert_close(g, e)


def test_output_view_of_an_input_slice_with_storage_offset():
    base = torch.randn(10, 8)
    x = base[2:6, 1:7]                                    # storage offset 17, row stride 8
    f = lambda x: (x[1:, ::2], x.t()[2:4], x.sum())  # noqa: E731
    got, _ = _run(f, x)
    for g, e in zip(got, f(x)):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize("rows, cols", [(74, 96), (1, 5), (127, 513), (128, 512), (129, 1025),
                                        (300, 7), (16385, 3)])
def test_column_sums_run_on_tensor_engine(rows, cols):
    # a bias gradient: the column sums of dY [rows, cols], computed in the
    # kernel that produces dY; rows go on partitions (whole-row DMAs) and a
    # ones-column matmul sums them in PSUM
    def f(x, y):
        dy = x * y + 1
        return dy, dy.sum(0, keepdim=True)

    x, y = torch.randn(rows, cols), torch.randn(cols)
    got, rep = _run(f, x, y)
    assert rep["kernels"] == 1, rep
    assert rep["engine_instructions"]["tensor"] >= (rows > 1), rep   # one row: a copy
    want = f(x.double(), y.double())
    torch.testing.assert_close(got[0], want[0].float())
    torch.testing.assert_close(got[1], want[1].float(), rtol=1e-5, atol=1e-5 * rows ** 0.5)



@pytest.mark.parametrize("rows, cols", [(65537, 3), (131073, 2)])
def test_column_sums_over_many_blocks_are_as_accurate_as_eager(rows, cols):
    # 513-1025 partition blocks: one PSUM chain over all of them had a
    # relative error of 3.6e-6 (eager 7e-8), above float32's rtol; blocks
    # now sum in groups of about sqrt(blocks), then the groups
    torch.manual_seed(0)
    f = lambda x: (x * 2 + 1).sum(0)  # noqa: E731
    x = torch.rand(rows, cols)
    got, rep = _run(f, x)
    assert rep["kernels"] == 1 and rep["engine_instructions"]["tensor"] > 0, rep
    want = f(x.double())
    rel = ((got.double() - want).abs().max() / want.abs().max()).item()
    eager = ((f(x).double() - want).abs().max() / want.abs().max()).item()
    assert rel < 5e-7, (rel, eager)

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_column_reductions_over_outer_dims(dtype):
    # sum and mean over the leading dims of [B, T, D] (a layer norm's weight
    # gradient over batch and sequence), NaN and inf carried as eager does
    x = torch.randn(2, 37, 96).to(dtype)
    x[1, 3, 5] = float("nan")
    x[0, 0, 7] = float("inf")
    f = lambda x: (x.sum((0, 1)), x.mean(0), x.sum(0, dtype=torch.float32))  # noqa: E731
    got, rep = _run(f, x)
    assert rep["engine_instructions"]["tensor"] >= 3, rep
    for g, e in zip(got, f(x)):
        torch.testing.assert_close(g, e, equal_nan=True, rtol=1e-2 if dtype == torch.bfloat16 else 1e-5,
                                   atol=1e-2 if dtype == torch.bfloat16 else 1e-5)


def _attention(x, heads):
    # GPT-2 style: qkv projection, head split by view + transpose, bmm
    # through contiguous copies, head merge by transpose + view
    b, t, d = x.shape
    q, k, v = (x * 0.5, x + 1, x.tanh())
    q = q.view(b, t, heads, d // heads).transpose(1, 2)
    k = k.view(b, t, heads, d // heads).transpose(1, 2)
    v = v.view(b, t, heads, d // heads).transpose(1, 2)
    s = (q @ k.transpose(-2, -1)).softmax(-1)
    return (s @ v).transpose(1, 2).reshape(b, t, d)


@pytest.mark.parametrize("t, heads, d", [(37, 4, 96), (127, 2, 64), (128, 2, 64), (129, 3, 48), (1, 4, 32)])
def test_attention_head_split_and_merge_need_no_copies(t, heads, d):
    # bmm reads the [B, H, T, D] views of q, k^T and v in place and writes
    # its result straight into the merged [B, T, H*D] layout: no clone
    # kernels are left (the elementwise q/k/v, the two bmms, the softmax)
    x = torch.randn(2, t, d)
    got, rep = _run(lambda x: _attention(x, heads), x)
    torch.testing.assert_close(got, _attention(x.double(), heads).float(), rtol=1e-5, atol=1e-5)
    assert rep["kernels"] <= 6, rep


def test_head_split_read_twice_and_saved_copy():
    # a split head read by two bmms keeps no copy; one that is also returned
    # (saved for backward) is copied, as its layout is the caller's
    def f(x):
        q = x.view(2, 5, 2, 4).transpose(1, 2).contiguous().view(4, 5, 4)
        return q @ q.transpose(1, 2), q.transpose(1, 2) @ q
    def g(x):
        q = x.view(2, 5, 2, 4).transpose(1, 2).contiguous().view(4, 5, 4)
        return q @ q.transpose(1, 2), q
    x = torch.randn(2, 5, 8)
    for fn in (f, g):
        got, _ = _run(fn, x)
        for a, e in zip(got, fn(x)):
            assert a.shape == e.shape and a.stride() == e.stride()
            torch.testing.assert_close(a, e)


@pytest.mark.parametrize("heads, t", [(4, 37), (5, 37), (3, 64), (3, 65), (7, 1), (2, 20)])
def test_short_rows_share_the_partitions(heads, t):
    # a masked softmax per head over [B, H, T, T]: the rows of several heads
    # share one partition block (one DMA per head), with the mask broadcast
    # over the heads; the last block may hold fewer heads
    def f(s, keep):
        return s.masked_fill(~keep, float("-inf")).softmax(-1), s.amax(-1), s.sum(-1, keepdim=True)

    s = torch.randn(2, heads, t, t)
    keep = torch.ones(t, t, dtype=torch.bool).tril()
    got, rep = _run(f, s, keep)
    assert rep["kernels"] <= 3, rep
    for g, e in zip(got, f(s.double(), keep)):
        torch.testing.assert_close(g, e.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("t", [5, 37, 129])
def test_bmm_results_written_into_their_cat_slices(t):
    # attention's backward concatenates dq, dk, dv: a head merge through a
    # copy (reshape of a transpose), one through a view (permute whose dims
    # merge) and a plain input; the bmms write into the cat's slices and the
    # cat copies only the plain input
    def f(p, q, r, w):
        dq = torch.bmm(p, q).view(2, 4, t, 6).transpose(1, 2).reshape(2, t, 24)
        dk = torch.bmm(r, p).view(2, 4, 6, t).permute(0, 3, 1, 2).reshape(2, t, 24)
        return torch.cat([dq, dk, w * 2], dim=2)

    p, q, r, w = torch.randn(8, t, t), torch.randn(8, t, 6), torch.randn(8, 6, t), torch.randn(2, t, 5)
    got, rep = _run(f, p, q, r, w)
    torch.testing.assert_close(got, f(p.double(), q.double(), r.double(), w.double()).float(),
                               rtol=1e-5, atol=1e-4)
    assert rep["kernels"] <= 4, rep   # two bmms, w * 2 and its copy into the cat


def test_attention_backward_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(2, 37, 96, requires_grad=True)
    got_x = x.detach().clone().requires_grad_()
    fn = lambda x: _attention(x, 4).square().sum()  # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn, backend="neuron", dynamic=False)(got_x).backward()
    fn(x).backward()
    assert trnc.stats()["backward"] >= 1
    torch.testing.assert_close(got_x.grad, x.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 4, 37, 24), (1, 2, 129, 130), (3, 128, 127), (2, 1, 5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transposing_copy_flips_blocks_on_tensor_engine(shape, dtype):
    # k^T made contiguous (saved for the backward): rows are read whole and
    # each <= 128 x 128 block is flipped on TensorE; values are bit-exact
    f = lambda x: x.transpose(-2, -1).clone(memory_format=torch.contiguous_format)  # noqa: E731
    x = torch.randn(*shape).to(dtype)
    got, rep = _run(f, x)
    assert rep["kernels"] == 1, rep
    assert got.stride() == f(x).stride()
    torch.testing.assert_close(got, f(x), rtol=0, atol=0)


@pytest.mark.parametrize("rows, k, n", [(74, 96, 288), (1, 5, 3), (127, 128, 513), (128, 129, 64),
                                        (129, 257, 1000), (300, 512, 7), (16, 384, 96)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_feeds_its_projection_in_one_kernel(rows, k, n, bias):
    # a residual add and layer norm, then the Linear that reads the normed
    # rows: one kernel, the rows never go to HBM (K blocks transposed on
    # TensorE, the bias accumulated as one more K row of ones)
    torch.manual_seed(rows + k + n)
    ln = torch.nn.LayerNorm(k)
    lin = torch.nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)

    def f(x, r):
        h = x + r
        return h, lin(ln(h).view(-1, k))

    x, r = torch.randn(rows, k), torch.randn(rows, k)
    got, rep = _run(f, x, r)
    assert rep["kernels"] == 1, rep
    assert rep["engine_instructions"]["tensor"] >= 2, rep
    with torch.no_grad():
        hd = x.double() + r.double()
        want = (hd, copy.deepcopy(lin).double()(copy.deepcopy(ln).double()(hd)))
    torch.testing.assert_close(got[0], want[0].float())
    torch.testing.assert_close(got[1], want[1].float(), rtol=1e-4, atol=1e-4 * k ** 0.5)


@pytest.mark.parametrize("act", ["gelu", "relu", "tanh"])
def test_mlp_activation_through_views_is_the_evacuation(act):
    # GPT's MLP: addmm -> view [B, T, 4D] -> gelu -> view back; layer norm
    # and the first Linear and its activation are one kernel
    torch.manual_seed(1)
    fn = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "tanh": torch.tanh}[act]
    ln, fc = torch.nn.LayerNorm(96), torch.nn.Linear(96, 384)

    def f(x):
        y = fc(ln(x))
        return fn(y) * 2

    x = torch.randn(2, 37, 96)
    got, rep = _run(f, x)
    with torch.no_grad():
        want = f(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert rep["kernels"] <= 2, rep


def test_addmm_scales_with_a_fused_layer_norm():
    # addmm's beta and alpha: alpha * (rows . W) + beta * bias
    torch.manual_seed(2)
    w, b = torch.randn(64, 40), torch.randn(40)

    def f(x):
        y = torch.nn.functional.layer_norm(x, (64,))
        return torch.addmm(b, y, w, beta=0.5, alpha=2.0)

    x = torch.randn(50, 64)
    got, rep = _run(f, x)
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-5)


def test_layer_norm_into_matmul_in_bf16():
    torch.manual_seed(3)
    ln, lin = torch.nn.LayerNorm(128).bfloat16(), torch.nn.Linear(128, 200).bfloat16()
    f = lambda x: lin(ln(x))  # noqa: E731
    x = torch.randn(3, 41, 128).bfloat16()
    got, rep = _run(f, x)
    with torch.no_grad():
        want = f(x)                     # eager bf16, op by op
    assert rep["kernels"] == 1, rep
    torch.testing.assert_close(got.float(), want.float(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("rows, cols", [(300, 1000), (1, 9), (127, 129), (128, 4096), (129, 5)])
def test_row_statistic_operands_load_one_element_per_partition(rows, cols):
    # x * s, x - s and where(m, x, 0) with s, m [rows, 1]: the operand is
    # constant along the free dims, so its DMA moves one element per
    # partition and the compute instructions read it through a stride-0
    # free dim (element-granular DMAs cost 5-10x the whole kernel before)
    torch.manual_seed(rows)
    x, s = torch.randn(rows, cols), torch.randn(rows, 1)
    s[0, 0] = float("nan") if rows > 1 else s[0, 0]
    f = lambda x, s: (x * s, (x - s).exp(), torch.where(s > 0, x, 0.0), torch.softmax(x - s, -1))  # noqa: E731
    got, rep = _run(f, x, s)
    for g, e in zip(got, f(x, s)):
        torch.testing.assert_close(g, e, equal_nan=True, rtol=1e-5, atol=1e-6)


def test_rms_norm_scale_is_a_narrow_operand():
    torch.manual_seed(4)
    x, w = torch.randn(4, 52, 256), torch.randn(256)
    f = lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w  # noqa: E731
    got, rep = _run(f, x)
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-5)
    assert rep["est_time_s"] < 20e-6, rep["est_time_s"]   # 28 us with element-wise DMAs


def test_broadcast_of_a_column_that_is_stored_stays_whole():
    s = torch.randn(300, 1)
    f = lambda s: s.expand(300, 7).contiguous() + 0  # noqa: E731
    got, _ = _run(f, s)
    torch.testing.assert_close(got, f(s))


@pytest.mark.parametrize("shape", [(127, 129), (2, 128, 257)])
def test_later_cast_of_a_group_value_joins_its_kernel(shape):
    # RMSNorm's output and, after the weight's cast, its bf16 copy (autocast's
    # order): the activations' cast is the norm kernel's, its fp32 value is
    # never stored
    import torch.nn.functional as F

    torch.manual_seed(7)
    x, g, w = torch.randn(*shape), torch.randn(shape[-1]), torch.randn(65, shape[-1])

    def f(x, g, w):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g
        wb = w.to(torch.bfloat16)
        return F.linear(y.to(torch.bfloat16), wb)

    got, rep = _run(f, x, g, w)
    assert rep["kernels"] == 4, rep  # sum of squares, the norm with its cast, the weight's cast, mm
    x64 = x.double()
    y64 = (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * g.double()).bfloat16()
    want = y64.double() @ w.bfloat16().double().t()
    torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2 * shape[-1] ** 0.5)
