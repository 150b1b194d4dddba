"""trnc's random stream on the device (passes/decomp_random.c, docs/training.md).

Random ops (native_dropout, rand, bernoulli, bernoulli.p) are decomposed in
C into Philox4x32-10 in exact int32 GpSimd arithmetic; the graph gets one
extra input, the call's 64-bit seed (int32 [2]) that the backend draws from
torch.default_generator. These tests check the device's bits against a
reference Philox4x32-10 written here (and Random123's known-answer vectors),
the stream layout (per-op block offsets), the statistics of dropout and the
deterministic properties of training with dropout.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import trnc
from trnc import backend

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(c0, c1, c2, c3, k0, k1):
    """Reference Philox4x32-10 (Salmon et al., SC'11) on uint64 numpy arrays."""
    c = [np.asarray(v, dtype=np.uint64) for v in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    m, s32 = np.uint64(MASK), np.uint64(32)
    for r in range(10):
        p0, p1 = c[0] * np.uint64(M0), c[2] * np.uint64(M1)
        c = [(p1 >> s32) ^ c[1] ^ k0, p1 & m, (p0 >> s32) ^ c[3] ^ k1, p0 & m]
        k0, k1 = (k0 + np.uint64(W0)) & m, (k1 + np.uint64(W1)) & m
    return c


def uniforms(seed: int, first_block: int, n: int) -> torch.Tensor:
    """n uniforms of seed's stream from block first_block: (w >> 8) * 2^-24."""
    nb = (n + 3) // 4
    blocks = np.arange(first_block, first_block + nb, dtype=np.uint64)
    z = np.zeros(nb, dtype=np.uint64)
    w = np.stack(philox(blocks & np.uint64(MASK), blocks >> np.uint64(32), z, z,
                        seed & MASK, seed >> 32), axis=1).reshape(-1)[:n]
    return torch.from_numpy((w >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24))


def drawn_seed(s: int) -> int:
    """The seed the backend draws right after torch.manual_seed(s)."""
    torch.manual_seed(s)
    return int(torch.randint(0, 2 ** 63 - 1, (1,), dtype=torch.int64).item())


def compile_(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def test_reference_known_answers():
    # Random123 kat_vectors, philox4x32_10
    def one(ctr, key):
        return [int(w[0]) for w in philox(*[[v] for v in ctr], *key)]

    assert one([0, 0, 0, 0], [0, 0]) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    assert one([MASK] * 4, [MASK] * 2) == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    assert one([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]) == \
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]


def test_device_known_answer_zero_key(monkeypatch):
    # counter (0, 0, 0, 0), key (0, 0): the first block of seed 0
    monkeypatch.setattr(backend, "_draw_seed", lambda: torch.zeros(2, dtype=torch.int32))
    u = compile_(lambda x: torch.rand(4) + x)(torch.zeros(4))
    want = [(w >> 8) * 2.0 ** -24 for w in (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)]
    assert u.tolist() == want


@pytest.mark.parametrize("n", [1, 7, 4099])
def test_device_bits_equal_reference(n):
    fn = compile_(lambda x: torch.rand(n) + x)
    seed = drawn_seed(3)
    torch.manual_seed(3)
    u = fn(torch.zeros(n))
    assert torch.equal(u, uniforms(seed, 0, n))
    s = trnc.stats()
    assert s["errors"] == 0 and s["inference"] >= 1


def test_seed_with_high_bits(monkeypatch):
    # every bit of both key words reaches the generator
    key = torch.tensor([-0x5BF6C7DE, 0x7FFFFFFF], dtype=torch.int32)   # 0xa4093822, 2^31 - 1
    monkeypatch.setattr(backend, "_draw_seed", lambda: key.clone())
    u = compile_(lambda x: torch.rand(3, 5) + x)(torch.zeros(3, 5))
    seed = (0x7FFFFFFF << 32) | 0xA4093822
    assert torch.equal(u.reshape(-1), uniforms(seed, 0, 15))


def test_graph_takes_a_seed_not_uniforms():
    torch.manual_seed(0)
    compile_(lambda x: F.dropout(x, 0.5, True))(torch.ones(64, 64))
    rec = backend.last_graphs(1)[0]
    ins = rec.compiled().inputs()
    # the graph's one input plus the int32 [2] seed: no host uniforms
    assert len(ins) == 2
    assert not ins[0]["rng_seed"]
    assert ins[1]["rng_seed"] and ins[1]["dtype"] == "i32" and ins[1]["shape"] == [2]
    assert "native_dropout" in rec.text


def test_two_dropouts_take_consecutive_blocks():
    n = 3 * 37  # not a multiple of 4: the second op starts at the next whole block
    fn = compile_(lambda x: (F.dropout(x, 0.5, True), F.dropout(x * 2, 0.5, True)))
    x = torch.ones(n)
    seed = drawn_seed(9)
    torch.manual_seed(9)
    a, b = fn(x)
    nb = (n + 3) // 4
    assert torch.equal(a != 0, uniforms(seed, 0, n) < 0.5)
    assert torch.equal(b != 0, uniforms(seed, nb, n) < 0.5)
    assert not torch.equal(a != 0, b != 0)


def test_dropout_keep_fraction_large():
    x = torch.ones(400, 300)          # 120,000 elements
    fn = compile_(lambda x: F.dropout(x, 0.3, True))
    torch.manual_seed(1)
    y = fn(x)
    kept = y != 0
    frac = kept.float().mean().item()
    assert abs(frac - 0.7) <= 5 * math.sqrt(0.7 * 0.3 / kept.numel()), frac
    assert torch.all(y[kept] == torch.tensor(1 / 0.7, dtype=torch.float32))
    # rows are not repeats of each other (the stream is not restarted per tile)
    assert not torch.equal(kept[0], kept[128])


def test_manual_seed_reproduces_and_calls_differ():
    fn = compile_(lambda x: torch.bernoulli(x))
    p = torch.full((8, 33), 0.5)
    torch.manual_seed(4)
    a, b = fn(p), fn(p)
    torch.manual_seed(4)
    c = fn(p)
    assert torch.equal(a, c) and not torch.equal(a, b)
    seed = drawn_seed(4)
    assert torch.equal(a.reshape(-1) == 1, uniforms(seed, 0, p.numel()) < 0.5)


def test_bernoulli_p_and_rand_dtype():
    fn = compile_(lambda x: (torch.bernoulli(x, 0.25), torch.rand(5, 7, dtype=torch.bfloat16)))
    x = torch.zeros(50, 40)
    seed = drawn_seed(2)
    torch.manual_seed(2)
    b, u = fn(x)
    assert b.dtype == torch.float32 and u.dtype == torch.bfloat16
    assert torch.equal(b.reshape(-1) == 1, uniforms(seed, 0, 2000) < 0.25)
    assert torch.equal(u.reshape(-1), uniforms(seed, 500, 35).to(torch.bfloat16))


def test_backward_uses_forward_mask():
    x = torch.randn(37, 96, requires_grad=True)
    fn = compile_(lambda x: F.dropout(x, 0.2, True) * 3)
    torch.manual_seed(6)
    y = fn(x)
    g = torch.randn(37, 96)
    y.backward(g)
    keep = y != 0
    torch.testing.assert_close(x.grad, torch.where(keep, g * 3 / 0.8, 0.0), rtol=1e-6, atol=0)
    s = trnc.stats()
    assert s["forward"] >= 1 and s["backward"] >= 1 and s["errors"] == 0


def test_too_many_random_elements_is_a_clear_error():
    fn = compile_(lambda x: torch.rand(2 ** 17, 2 ** 17) + x)
    with pytest.raises(Exception, match=r"128-bit Philox blocks per call"):
        fn(torch.zeros(()))
