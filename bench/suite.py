"""The fixed benchmark suite of bench/run.py: models, inputs and a training step.

Every entry is built deterministically (seeded) so that trnc, TorchInductor and
eager see the same parameters and inputs. A "training step" is forward +
backward (the gradients of every parameter and of floating inputs that require
grad); no optimizer update, which would run in eager for every peer anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from trnc import examples


class GPTDecoder(nn.Module):
    """A GPT-style decoder (nanoGPT layout): token + position embedding,
    ``n_layers`` pre-norm blocks (causal attention, GELU MLP), final layer
    norm, LM head, cross-entropy loss. The attention is trnc's example one
    (python/trnc/examples.py)."""

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int,
                 max_len: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_heads, max_len) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(self.positions[:t])
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class _Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = examples.CausalSelfAttention(d_model, n_heads, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Matmul(nn.Module):
    """y = x @ W (no bias): the large bf16 matmul entry."""

    def __init__(self, k: int, n: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n, dtype=dtype) / k ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


@dataclass
class Entry:
    name: str
    description: str
    build: Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]
    steps: int            # timed steady-state steps per backend (after warm-up)
    cold_reps: int        # fresh-process cold compiles per backend
    warm_reps: int        # fresh-process warm starts per backend
    dtype: str = "f32"    # dtype of the matmuls (selects the TensorE peak of the roofline)
    budget_s: float = 60.0  # steady state: stop early after this long (at least 2 rounds)


def _mlp():
    return examples.mlp_example()


def _cnn():
    return examples.cnn_example()


def _gpt_small():
    return examples.gpt_example()


GPT_L = dict(vocab=65, d_model=384, n_heads=6, n_layers=6, max_len=256)
GPT_L_BATCH = 1


def _gpt_large():
    torch.manual_seed(0)
    model = GPTDecoder(**GPT_L)
    idx = torch.randint(0, GPT_L["vocab"], (GPT_L_BATCH, GPT_L["max_len"]))
    targets = torch.randint(0, GPT_L["vocab"], (GPT_L_BATCH, GPT_L["max_len"]))
    return model, (idx, targets)


MM = dict(m=1024, k=2048, n=2048)


def _matmul():
    torch.manual_seed(0)
    model = Matmul(MM["k"], MM["n"], torch.bfloat16)
    x = torch.randn(MM["m"], MM["k"], dtype=torch.bfloat16).requires_grad_(True)
    return model, (x,)


SUITE: dict[str, Entry] = {e.name: e for e in [
    Entry("mlp", "MLP 16-32-8, batch 4 (examples.mlp_example)", _mlp, 200, 2, 2),
    Entry("cnn", "CNN conv-bn-relu-pool-conv-pool-linear, 2x3x8x8 (examples.cnn_example)",
          _cnn, 100, 2, 2),
    Entry("gpt-small", "GPT block d32, 2 heads, 1 layer, vocab 64, batch 2 x seq 8 "
          "(examples.gpt_example)", _gpt_small, 100, 2, 2),
    Entry("gpt-6l-384", f"GPT decoder 6 layers, d384, 6 heads, vocab 65, batch {GPT_L_BATCH} x "
          "seq 256", _gpt_large, 5, 1, 2, budget_s=40.0),
    Entry("matmul-bf16", f"x[{MM['m']}x{MM['k']}] @ W[{MM['k']}x{MM['n']}] bf16, grads of x and W",
          _matmul, 3, 2, 2, dtype="bf16", budget_s=40.0),
]}


def loss_of(out: torch.Tensor) -> torch.Tensor:
    """The scalar a training step differentiates (GPT returns its loss)."""
    return out if out.dim() == 0 else out.float().sum()


def step(fn: Callable[..., torch.Tensor], model: nn.Module, args: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """One training step: forward, backward; gradients cleared first."""
    for p in model.parameters():
        p.grad = None
    for a in args:
        if a.requires_grad:
            a.grad = None
    out = fn(*args)
    loss_of(out).backward()
    return out
