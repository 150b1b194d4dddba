"""Collectives inside compiled graphs, on 2 ranks (gloo on 127.0.0.1,
torch.multiprocessing spawn): a DTensor tensor-parallel MLP (ColwiseParallel /
RowwiseParallel) forward and backward against eager, a SimpleFSDP-style
sharded weight (all_gather forward, reduce_scatter backward), and every
_c10d_functional collective in one compiled function against values computed
by hand from each rank's input. Each rank asserts; mp.spawn re-raises."""

from __future__ import annotations

import copy
import os
import socket

import pytest
import torch

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="trnc C extension not built")

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init(rank: int, port: int, cache_dir: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      TRNC_CACHE_DIR=os.path.join(cache_dir, f"rank{rank}"),
                      TRNC_DUMP_DIR=os.path.join(cache_dir, f"dump{rank}"))
    os.makedirs(os.environ["TRNC_DUMP_DIR"], exist_ok=True)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def _simple_fsdp(mesh) -> None:
    """SimpleFSDP-style: a weight sharded on dim 0 is all-gathered for the
    forward (Shard -> Replicate) and its gradient reduce-scattered back
    (Partial -> Shard) in the backward graph; loss and shard gradient equal
    eager."""
    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor

    import trnc

    trnc.reset()
    torch._dynamo.reset()
    w = torch.nn.Parameter(distribute_tensor(torch.randn(8, 6), mesh, [Shard(0)]))

    def step(x: torch.Tensor) -> torch.Tensor:
        full = w.redistribute(mesh, [Replicate()]).to_local(grad_placements=[Partial()])
        return torch.tanh(x @ full.t()).sum()

    x = torch.randn(4, 6) + mesh.get_rank()  # each rank its own batch
    loss = torch.compile(step, backend="neuron", dynamic=False)(x)
    loss.backward()
    grad, w.grad = w.grad.to_local().clone(), None
    loss_e = step(x)
    loss_e.backward()
    torch.testing.assert_close(loss, loss_e, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, w.grad.to_local(), rtol=1e-5, atol=1e-5)
    texts = {r.kind: r.text for r in trnc.last_graphs()}
    assert "all_gather(" in texts["forward"] and "reduce_scatter(" in texts["backward"], texts
    assert trnc.stats()["collectives"] == 2, trnc.stats()


def _tp_worker(rank: int, port: int, cache_dir: str) -> None:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    import trnc

    _init(rank, port, cache_dir)
    try:
        mesh = init_device_mesh("cpu", (WORLD,))
        model = MLP()
        parallelize_module(model, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        eager = copy.deepcopy(model)
        compiled = torch.compile(model, backend="neuron", dynamic=False)
        x = torch.randn(8, 16)
        xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
        y, ye = compiled(xc), eager(xe)
        torch.testing.assert_close(y, ye, rtol=1e-5, atol=1e-5)
        g = torch.randn_like(ye)
        y.backward(g)
        ye.backward(g)
        torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-5, atol=1e-5)
        for (name, p), (_, pe) in zip(model.named_parameters(), eager.named_parameters()):
            torch.testing.assert_close(p.grad.to_local(), pe.grad.to_local(), rtol=1e-5,
                                       atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
        s = trnc.stats()
        assert s["forward"] >= 1 and s["backward"] >= 1, s
        # forward: the RowwiseParallel output all_reduce; backward: the input grad's
        assert s["collectives"] >= 2, s
        reports = [r.report for r in trnc.last_graphs() if r.report]
        assert all(r["collectives"] >= 1 for r in reports), reports
        assert all(r["est_collective_s"] > 0 for r in reports), reports
        dump = os.environ["TRNC_DUMP_DIR"]
        for kind in ("forward", "backward"):  # the programs as TRNC_DUMP_DIR wrote them
            names = sorted(f for f in os.listdir(dump) if f.startswith(f"{kind}-graph-")
                           and f.endswith("-program.s"))
            assert names, os.listdir(dump)
            text = open(os.path.join(dump, names[0])).read()
            assert ".collective all_reduce " in text and ".collective cc_wait " in text, text
        _simple_fsdp(mesh)
    finally:
        dist.destroy_process_group()


def _rank_input(r: int) -> torch.Tensor:
    return torch.arange(12, dtype=torch.float32).reshape(4, 3) * (r + 1) + r


def _many(x: torch.Tensor, group) -> torch.Tensor:
    """70 all_reduces all in flight before the first is used: more than a
    program holds in flight (64), so the oldest is waited for early."""
    import torch.distributed._functional_collectives as fc

    ars = [fc.all_reduce(x + i, "sum", group) for i in range(70)]
    acc = ars[0]
    for a in ars[1:]:
        acc = acc + a
    return acc


def _collectives_worker(rank: int, port: int, cache_dir: str) -> None:
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc

    import trnc

    _init(rank, port, cache_dir)
    try:
        group = dist.group.WORLD
        in_splits = [1, 3] if rank == 0 else [2, 2]
        out_splits = [1, 2] if rank == 0 else [3, 2]

        def f(x: torch.Tensor):
            s = fc.all_reduce(x, "sum", group)
            local = torch.sin(x) * 2  # independent compute the waits move past
            return (s + local,
                    fc.all_reduce(x, "avg", group),
                    fc.all_reduce(x, "max", group),
                    fc.all_gather_tensor(x * 2, 0, group),
                    fc.reduce_scatter_tensor(x, "sum", 0, group),
                    fc.all_to_all_single(x, None, None, group),
                    fc.all_to_all_single(x, out_splits, in_splits, group),
                    fc.broadcast(x, 1, group),
                    *fc.all_reduce_coalesced([x, x + 1], "sum", group),
                    *fc.all_gather_into_tensor_coalesced([x, x[:2]], group),
                    *fc.reduce_scatter_tensor_coalesced([x, x * 3], "sum", [0, 0], group),
                    fc.all_reduce(x.t(), "sum", group),  # a strided view: copied first
                    fc.all_reduce(x.clamp(-1000, 1000).long(), "max", group),  # int64 travels as int32
                    _many(x, group))

        x = _rank_input(rank)
        got = torch.compile(f, backend="neuron", dynamic=False)(x)
        x0, x1 = _rank_input(0), _rank_input(1)
        total = x0 + x1
        chunk = slice(2 * rank, 2 * rank + 2)
        want = (total + torch.sin(x) * 2,
                total / 2,
                torch.maximum(x0, x1),
                torch.cat([x0 * 2, x1 * 2]),
                total[chunk],
                torch.cat([x0[chunk], x1[chunk]]),
                torch.cat([x0[0:1], x1[0:2]]) if rank == 0 else torch.cat([x0[1:4], x1[2:4]]),
                x1,
                total, total + 2,
                torch.cat([x0, x1]), torch.cat([x0[:2], x1[:2]]),
                total[chunk], (total * 3)[chunk],
                total.t(),
                torch.maximum(x0, x1).long(),
                70 * total + 2 * sum(range(70)))
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-5, msg=lambda m, i=i: f"{i}: {m}")
        s = trnc.stats()
        assert s["inference"] == 1 and s["errors"] == 0, s
        assert s["collectives"] == 16 + 70, s  # one START per tensor (coalesced: per element)
        rec = trnc.last_graphs(1)[0]
        ir = rec.text
        # the overlap pass: the first wait comes after the independent sin
        assert ir.index("wait_tensor") > ir.index("sin("), ir
    finally:
        dist.destroy_process_group()


def _spawn(fn, tmp_path) -> None:
    import torch.multiprocessing as mp

    mp.spawn(fn, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)


def test_dtensor_tensor_parallel_mlp(tmp_path):
    """ColwiseParallel -> RowwiseParallel MLP: forward, input and parameter
    gradients equal eager DTensor on both ranks; both programs hold
    collectives. Then a SimpleFSDP-style all_gather / reduce_scatter step in
    the same processes."""
    _spawn(_tp_worker, tmp_path)


def test_functional_collectives(tmp_path):
    """all_reduce (sum/avg/max), all_gather_into_tensor, reduce_scatter_tensor,
    all_to_all_single (equal and uneven splits), broadcast and the coalesced
    forms, compiled in one graph, equal the hand-computed results."""
    _spawn(_collectives_worker, tmp_path)


def test_engine_needs_torch_distributed():
    """A program's collective step in a process without torch.distributed
    initialized raises an error that says what to do (the C extension turns
    it into the run's diagnostic)."""
    import torch.distributed as dist

    from trnc import collectives

    assert not dist.is_initialized()
    buf = torch.zeros(4)
    with pytest.raises(RuntimeError, match="torch.distributed is not initialized"):
        collectives.start("all_reduce", "sum", "0", 2, 0, "f32", buf.data_ptr(), 16,
                          buf.data_ptr(), 16, None, None)
