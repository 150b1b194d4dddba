"""trnc under torch.distributed: 2 ranks, gloo, one machine (issue 15).

``torch.compile(DDP(model), backend="neuron")`` compiles through DDPOptimizer's
bucket-boundary split (one trnc graph per bucket, forward and backward) and
FSDP2 (``fully_shard``) trains a compiled model; both match eager on every
rank within fp32 tolerance. The per-rank bodies are in distributed_workers.py.
"""

from __future__ import annotations

import json
import socket

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

import distributed_workers as workers

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(fn, tmp_path, steps: int) -> list[dict]:
    mp.spawn(fn, args=(WORLD, _free_port(), str(tmp_path), steps), nprocs=WORLD, join=True)
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]


def _check_graphs(ranks: list[dict], graphs: int) -> None:
    """Every rank compiled `graphs` forward and `graphs` backward graphs with
    trnc (recompiling nothing after step 1) and none failed."""
    for r, rec in enumerate(ranks):
        s = rec["stats"]
        assert s["forward"] == graphs and s["backward"] == graphs, (r, rec)
        assert s["errors"] == 0, (r, rec)
        # each rank's graphs carry its rank (names, dump and trace files)
        assert rec["graphs"] and all(g.endswith(f"(rank {r})") for g in rec["graphs"]), rec


def test_compiled_ddp_matches_eager_ddp(tmp_path):
    # 3.1 MiB of weights in 1 MiB buckets: DDPOptimizer's three subgraphs,
    # each compiled by trnc
    _check_graphs(_spawn(workers.ddp, tmp_path, steps=2), graphs=3)


def test_fsdp2_compiled_matches_eager(tmp_path):
    # one graph per block (the FSDP2 hooks run eagerly between them)
    _check_graphs(_spawn(workers.fsdp2, tmp_path, steps=3), graphs=2)
