"""Core ATen coverage: the aten overloads torch tags ``torch.Tag.core`` (the
op set that torch.export's core-ATen decompositions produce; 189 in torch
2.13.0) against trnc's operator table (ir/ops.def, read through
``trnc._trnc.ops()``): lowered natively by the code generator, by trnc's own
decomposition (the table's decomp column, passes/decompose.c), or not at all.

    .venv/bin/python tests/python/core_aten.py      # counts and the missing list
    .venv/bin/python tests/python/core_aten.py --json

Run it in a fresh process: modules that torch imports later (dynamo's,
torch.testing's) tag two more overloads core (avg_pool1d, adaptive_avg_pool1d).
"""

from __future__ import annotations


def core_overloads() -> list[str]:
    """Every torch.Tag.core overload as FX names it ("aten.add.Tensor")."""
    import torch

    out = set()
    for name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, name)
            overloads = packet.overloads()
        except (AttributeError, RuntimeError):
            continue
        for ov in overloads:
            opo = getattr(packet, ov)
            if torch.Tag.core in opo.tags:
                out.add(f"aten.{name}.{ov}")
    return sorted(out)


def coverage() -> dict[str, list[str]]:
    """{"native": [...], "decomposed": [...], "missing": [...]} over core_overloads()."""
    from trnc import _trnc

    table = {op["fx_target"]: op for op in _trnc.ops() if op.get("fx_target")}
    res: dict[str, list[str]] = {"native": [], "decomposed": [], "missing": []}
    for target in core_overloads():
        op = table.get(target)
        kind = "missing" if op is None else "decomposed" if op["decomposition"] else "native"
        res[kind].append(target)
    return res


def main() -> None:
    import json
    import sys

    c = coverage()
    if "--json" in sys.argv[1:]:
        print(json.dumps(c))
        return
    total = sum(len(v) for v in c.values())
    print(f"core ATen overloads: {total}; lowered {len(c['native']) + len(c['decomposed'])} "
          f"(native {len(c['native'])}, by trnc's decomposition {len(c['decomposed'])}); "
          f"missing {len(c['missing'])}:")
    for t in c["missing"]:
        print("  " + t)


if __name__ == "__main__":
    main()
