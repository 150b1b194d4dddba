"""Per-rank bodies of the 2-rank torch.distributed tests (test_distributed.py).

Each worker runs in its own process (``torch.multiprocessing.spawn``), joins a
gloo process group on 127.0.0.1, trains an eager copy and a trnc-compiled copy
of the same model side by side on the same inputs (each rank its own batch),
asserts after every step that the compiled copy's gradients equal the eager
copy's within fp32 tolerance, and writes ``trnc.stats()`` and the compiled
graphs' names to ``<out>/rank<N>.json`` for the parent test to check.

Models are user-defined classes: dynamo starts tracing a frame only in user
code, so the module that DDP wraps (and the blocks FSDP2 shards) must have a
``forward`` of its own (docs/training.md, "Distributed training").
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn

GRAD_TOL = dict(rtol=1e-4, atol=1e-5)


class DeepMLP(nn.Module):
    """Four linear layers, 3.1 MiB of fp32 weights: with DDP's 1 MiB buckets,
    DDPOptimizer splits the graph into three subgraphs."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(32, 512)
        self.b = nn.Linear(512, 512)
        self.c = nn.Linear(512, 512)
        self.d = nn.Linear(512, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        x = torch.tanh(self.c(x))
        return self.d(x)


class Block(nn.Module):
    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


class BlockMLP(nn.Module):
    """Two blocks, each its own FSDP2 unit."""

    def __init__(self) -> None:
        super().__init__()
        self.a = Block(16, 32)
        self.b = Block(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def _init(rank: int, world: int, port: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)  # the same initial weights on every rank


def _batch(rank: int, step: int, features: int) -> torch.Tensor:
    return torch.randn(4, features, generator=torch.Generator().manual_seed(100 * rank + step))


def _finish(rank: int, out: str) -> None:
    import trnc

    rec = {"stats": trnc.stats(), "graphs": [g.name for g in trnc.last_graphs()]}
    Path(out, f"rank{rank}.json").write_text(json.dumps(rec))
    dist.destroy_process_group()


def ddp(rank: int, world: int, port: int, out: str, steps: int) -> None:
    """``torch.compile(DDP(model), backend="neuron")`` against eager DDP."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    _init(rank, world, port)
    model = DeepMLP()
    eager = DDP(model, bucket_cap_mb=1)
    compiled = torch.compile(DDP(copy.deepcopy(model), bucket_cap_mb=1), backend="neuron",
                             dynamic=False)
    for step in range(steps):
        x = _batch(rank, step, 32)
        eager(x).square().mean().backward()
        compiled(x).square().mean().backward()
        for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
            torch.testing.assert_close(q.grad, p.grad, **GRAD_TOL,
                                       msg=lambda m: f"rank {rank} step {step} {name}: {m}")
        with torch.no_grad():
            for p in list(eager.parameters()) + list(compiled.parameters()):
                p -= 0.05 * p.grad
                p.grad = None
    _finish(rank, out)


def fsdp2(rank: int, world: int, port: int, out: str, steps: int) -> None:
    """``fully_shard`` per block and on the root, the root compiled, against
    eager FSDP2: gradient shards every step, parameter shards at the end."""
    from torch.distributed.fsdp import fully_shard

    _init(rank, world, port)
    eager = BlockMLP()
    compiled_model = copy.deepcopy(eager)
    for m in (eager, compiled_model):
        fully_shard(m.a)
        fully_shard(m.b)
        fully_shard(m)
    compiled = torch.compile(compiled_model, backend="neuron", dynamic=False)
    opt_e = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    opt_c = torch.optim.AdamW(compiled_model.parameters(), lr=1e-2)
    for step in range(steps):
        x = _batch(rank, step, 16)
        eager(x).square().mean().backward()
        compiled(x).square().mean().backward()
        for (name, p), q in zip(eager.named_parameters(), compiled_model.parameters()):
            torch.testing.assert_close(q.grad.to_local(), p.grad.to_local(), **GRAD_TOL,
                                       msg=lambda m: f"rank {rank} step {step} {name}: {m}")
        for opt in (opt_e, opt_c):
            opt.step()
            opt.zero_grad()
    for (name, p), q in zip(eager.named_parameters(), compiled_model.parameters()):
        torch.testing.assert_close(q.to_local(), p.to_local(), **GRAD_TOL,
                                   msg=lambda m: f"rank {rank} {name} after {steps} steps: {m}")
    _finish(rank, out)
