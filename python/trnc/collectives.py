"""The distributed engine of trnc programs: collective steps run through
torch.distributed.

A compiled graph with ``_c10d_functional`` collectives (from DTensor tensor
parallelism, SimpleFSDP-style graphs, or direct calls of
``torch.distributed._functional_collectives``) becomes a NeuronCore program
with collective steps. When the program runs, each START step calls
:func:`start` here (from the C extension, with the GIL) with the device
buffers' addresses; the returned handle's ``wait()`` is called at the matching
``cc_wait`` step. Between the two, the program's later kernels run while
torch.distributed moves the data (asynchronous work, ``async_op=True``).

The process group is the caller's: ``group`` is the name the graph recorded
(``group_name``), resolved with ``torch.distributed``'s group registry, so the
backend (gloo, or any other) is whatever the user initialized.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import torch
import torch.distributed as dist

_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
           "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
           "bool": torch.bool, "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}


def _reduce_op(name: str) -> Any:
    ops = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.SUM,  # avg: sum, then / size
           "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
    return ops[name]


def _tensor(ptr: int, nbytes: int, dtype: torch.dtype) -> torch.Tensor:
    """A 1-D tensor over nbytes of device memory at ptr (no copy)."""
    if nbytes == 0:
        return torch.empty(0, dtype=dtype)
    return torch.frombuffer((ctypes.c_char * nbytes).from_address(ptr), dtype=dtype)


class Pending:
    """One collective in flight: torch.distributed work plus what finishes it
    (the average's division, a chunk copy). Keeps its tensors alive."""

    def __init__(self, work: Any, tensors: tuple[torch.Tensor, ...],
                 finish: Callable[[], None] | None = None) -> None:
        self.work = work
        self.tensors = tensors
        self.finish = finish

    def wait(self) -> None:
        if self.work is not None:
            self.work.wait()
        if self.finish is not None:
            self.finish()
        self.tensors = ()


def _group(name: str, size: int) -> Any:
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            f"the program runs a collective over process group {name!r}, but torch.distributed "
            "is not initialized in this process (call torch.distributed.init_process_group "
            "before running the compiled model)")
    from torch.distributed.distributed_c10d import _resolve_process_group

    pg = _resolve_process_group(name)
    if pg.size() != size:
        raise RuntimeError(f"process group {name!r} has {pg.size()} ranks; the program was "
                           f"compiled for {size}: recompile for this group")
    return pg


def _all_reduce(pg: Any, reduce: str, size: int, dst: torch.Tensor) -> Pending:
    if reduce == "avg" and not dst.is_floating_point():
        raise ValueError(f"all_reduce 'avg' of {dst.dtype} tensors is not supported")
    work = dist.all_reduce(dst, op=_reduce_op(reduce), group=pg, async_op=True)
    finish = (lambda: dst.div_(size)) if reduce == "avg" else None
    return Pending(work, (dst,), finish)


def _reduce_scatter(pg: Any, reduce: str, size: int, src: torch.Tensor,
                    dst: torch.Tensor) -> Pending:
    if reduce == "avg" and not dst.is_floating_point():
        raise ValueError(f"reduce_scatter 'avg' of {dst.dtype} tensors is not supported")
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    work = scatter(dst, src, op=_reduce_op(reduce), group=pg, async_op=True)
    finish = (lambda: dst.div_(size)) if reduce == "avg" else None
    return Pending(work, (src, dst), finish)


def start(op: str, reduce: str, group: str, group_size: int, root: int, dtype: str,
          src_ptr: int, src_bytes: int, dst_ptr: int, dst_bytes: int,
          in_split: list[int] | None, out_split: list[int] | None) -> Pending:
    """Issues one collective step (see the module docstring). Addresses and
    byte counts are the program's contiguous device buffers; for all_reduce
    and broadcast src is dst (in place). Splits are bytes per peer
    (all_to_all), or None for equal splits. Raises on an unknown group, a
    group of another size, or a backend error."""
    pg = _group(group, group_size)
    dt = _DTYPES[dtype]
    src, dst = _tensor(src_ptr, src_bytes, dt), _tensor(dst_ptr, dst_bytes, dt)
    if op == "all_reduce":
        return _all_reduce(pg, reduce, group_size, dst)
    if op == "broadcast":
        work = dist.broadcast(dst, src=dist.get_global_rank(pg, root), group=pg, async_op=True)
        return Pending(work, (dst,))
    if op == "all_gather":
        work = dist.all_gather(list(dst.chunk(group_size)), src, group=pg, async_op=True)
        return Pending(work, (src, dst))
    if op == "reduce_scatter":
        return _reduce_scatter(pg, reduce, group_size, src, dst)
    if op == "all_to_all":
        es = dst.element_size()
        outs = [b // es for b in out_split] if out_split else None
        ins = [b // es for b in in_split] if in_split else None
        work = dist.all_to_all_single(dst, src, output_split_sizes=outs, input_split_sizes=ins,
                                      group=pg, async_op=True)
        return Pending(work, (src, dst))
    raise ValueError(f"unknown collective {op!r}")


__all__ = ["start", "Pending"]
