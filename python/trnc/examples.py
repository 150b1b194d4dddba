"""Small models used by the demo, the tests and tests/golden/generate.py.

Sizes are tiny on purpose: graphs stay small and deterministic, and no
parameter ever becomes an embedded constant (parameters and buffers are graph
inputs after aot_autograd).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in: int = 16, d_hidden: int = 32, d_out: int = 8) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x))
        return self.fc2(h)


class SmallCNN(nn.Module):
    """conv -> batch norm -> relu -> max pool -> conv -> avg pool -> linear."""

    def __init__(self, c_in: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.n_heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.n_heads, hd).transpose(1, 2)
        k = k.view(b, t, self.n_heads, hd).transpose(1, 2)
        v = v.view(b, t, self.n_heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class GPTBlock(nn.Module):
    """Token + position embedding, one pre-norm decoder block (causal attention,
    GELU MLP), final layer norm, LM head, cross-entropy loss."""

    def __init__(self, vocab: int = 64, d_model: int = 32, n_heads: int = 2,
                 max_len: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(self.positions[:t])
        x = x + self.attn(self.ln1(x))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def mlp_example(batch: int = 4, d_in: int = 16, seed: int = 0):
    torch.manual_seed(seed)
    return MLP(d_in=d_in), (torch.randn(batch, d_in),)


def cnn_example(batch: int = 2, size: int = 8, seed: int = 0):
    torch.manual_seed(seed)
    return SmallCNN(), (torch.randn(batch, 3, size, size),)


def gpt_example(batch: int = 2, seq: int = 8, vocab: int = 64, seed: int = 0):
    torch.manual_seed(seed)
    model = GPTBlock(vocab=vocab)
    idx = torch.randint(0, vocab, (batch, seq))
    targets = torch.randint(0, vocab, (batch, seq))
    return model, (idx, targets)


class GPTDecoder(nn.Module):
    """A GPT-style language model over bytes: token + position embedding,
    ``n_layers`` pre-norm decoder blocks (causal self-attention with softmax,
    GELU MLP), final layer norm and an LM head tied to the token embedding.
    Returns logits [batch, seq, vocab]."""

    def __init__(self, vocab: int = 256, d_model: int = 96, n_heads: int = 4,
                 n_layers: int = 2, max_len: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln1": nn.LayerNorm(d_model),
                           "attn": CausalSelfAttention(d_model, n_heads, max_len),
                           "ln2": nn.LayerNorm(d_model),
                           "fc": nn.Linear(d_model, 4 * d_model),
                           "out": nn.Linear(4 * d_model, d_model)})
            for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)
        # GPT-2's initialization: small embeddings, so the tied head starts
        # near the uniform next-byte distribution
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(self.positions[:t]))
        for b in self.blocks:
            x = x + self.drop(b["attn"](b["ln1"](x)))
            x = x + self.drop(b["out"](F.gelu(b["fc"](b["ln2"](x)))))
        return self.ln_f(x) @ self.tok.weight.t()


def gpt_decoder_example(batch: int = 2, seq: int = 37, d_model: int = 96, seed: int = 0):
    """The GPT-style decoder at batch 2, sequence 37, width 96: sizes that are
    not multiples of 128 on purpose."""
    torch.manual_seed(seed)
    model = GPTDecoder(d_model=d_model)
    idx = torch.randint(0, 256, (batch, seq))
    return model, (idx,)


EXAMPLES = {"mlp": mlp_example, "cnn": cnn_example, "gpt": gpt_example,
            "gpt_decoder": gpt_decoder_example}


def gpt_buckets(vocab: int = 64, d_model: int = 32, n_heads: int = 2, max_len: int = 128):
    """A ``trnc precompile`` factory: the GPT-style block with its token ids and
    targets bucketed along batch {1, 4} and sequence {32, 64, 128}::

        trnc precompile trnc.examples:gpt_buckets --train
    """
    from .buckets import BucketSpec, Input

    torch.manual_seed(0)
    model = GPTBlock(vocab=vocab, d_model=d_model, n_heads=n_heads, max_len=max_len)
    spec = BucketSpec(
        inputs=[Input("idx", ("batch", "seq"), torch.int64),
                Input("targets", ("batch", "seq"), torch.int64)],
        buckets={"batch": [1, 4], "seq": [32, 64, 128]})
    return model, spec
