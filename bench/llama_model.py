"""A Llama-style decoder block (the layout of Hugging Face's LlamaDecoderLayer),
for bench/llama.py and tests/python/test_llama.py.

x -> x + o(attention(rope(q(rms(x))), rope(k(rms(x))), v(rms(x)))) -> h
h -> h + down(silu(gate(rms(h))) * up(rms(h)))

RMSNorm in fp32 (as LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), cast back, times
the weight), rotary embeddings with the rotate-half convention on cos/sin
tables precomputed in fp32 (base 10000), causal
``F.scaled_dot_product_attention``, SwiGLU MLP, no biases. Parameters are
fp32 (master weights); bf16 comes from ``torch.autocast`` around the forward,
as in mixed-precision training. ``step_loss`` is the scalar a training step
differentiates: ``out.float().pow(2).mean()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class LlamaConfig:
    d_model: int = 2048
    n_heads: int = 16
    d_ff: int = 5632
    seq: int = 2048
    batch: int = 1
    eps: float = 1e-5
    rope_base: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# realistic size (issue 13) and the scaled-down one the test runs on the simulator
FULL = LlamaConfig()
SMALL = LlamaConfig(d_model=256, n_heads=2, d_ff=704, seq=128)


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        d, f = cfg.d_model, cfg.d_ff
        self.cfg = cfg
        self.attn_norm = RMSNorm(d, cfg.eps)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp_norm = RMSNorm(d, cfg.eps)
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)
        hd = cfg.head_dim
        inv_freq = 1.0 / cfg.rope_base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        ang = torch.outer(torch.arange(cfg.seq, dtype=torch.float32), inv_freq)
        ang = torch.cat((ang, ang), dim=-1)                       # [seq, head_dim]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def _rope(self, x: torch.Tensor) -> torch.Tensor:
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        return x * cos + _rotate_half(x) * sin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        nh, hd = self.cfg.n_heads, self.cfg.head_dim
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, nh, hd).transpose(1, 2)
        k = self.k(h).view(b, t, nh, hd).transpose(1, 2)
        v = self.v(h).view(b, t, nh, hd).transpose(1, 2)
        q, k = self._rope(q), self._rope(k)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def build(cfg: LlamaConfig, seed: int = 0) -> tuple[LlamaBlock, torch.Tensor]:
    """The block (fp32 parameters, seeded) and its input x [batch, seq, d_model]
    (fp32, requires grad: a block inside a stack passes dx on)."""
    torch.manual_seed(seed)
    model = LlamaBlock(cfg)
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model).requires_grad_(True)
    return model, x


def step_loss(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()


def train_step(fn, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Forward under bf16 autocast, then backward of step_loss; gradients of
    the parameters and of x cleared first. Returns the loss."""
    for p in model.parameters():
        p.grad = None
    x.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fn(x)
    loss = step_loss(out)
    loss.backward()
    return loss.detach()


def model_flops(cfg: LlamaConfig) -> dict[str, float]:
    """Model FLOPs of one training step (the PaLM / Megatron convention):
    forward = 2 * N_matmul * tokens (N_matmul = 4 d^2 + 3 d f, the weights
    of the seven projections) + 4 * T^2 * d * batch (q k^T and p v over the
    full T x T: the causal mask's zero half is counted, as in PaLM's MFU);
    backward = 2 x forward; step = 3 x forward. Elementwise work (norms,
    rotary, softmax, SiLU) is not counted."""
    d, f, t, b = cfg.d_model, cfg.d_ff, cfg.seq, cfg.batch
    n_matmul = 4 * d * d + 3 * d * f
    fwd_proj = 2.0 * n_matmul * t * b
    fwd_attn = 4.0 * t * t * d * b
    fwd = fwd_proj + fwd_attn
    return {"params_matmul": n_matmul, "forward_projections": fwd_proj,
            "forward_attention": fwd_attn, "forward": fwd, "backward": 2 * fwd,
            "step": 3 * fwd}
