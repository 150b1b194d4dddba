#!/usr/bin/env python3
"""Writes the golden graphs the C tests read.

For each small model (MLP, CNN, GPT block) it captures the forward and
backward graphs exactly as backend="neuron" sees them (same aot_autograd
wiring and decompositions) and writes

    tests/golden/<model>_<kind>.pb    serialized trnc.fx.Graph (frontend/fx.proto)
    tests/golden/<model>_<kind>.txt   the IR text after import, check_lowerable,
                                      legalize and verify (trnc_graph_print)

Fixed seeds and sizes; deterministic bytes. Each .pb stays well under 200 KB
(parameters are graph inputs, never embedded constants).

    .venv/bin/python tests/golden/generate.py [--check]

--check compares instead of writing and exits non-zero on any difference.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from trnc import errors, examples, fx_pb2, pipeline
from trnc.backend import make_aot_backend
from trnc.serialize import serialize

HERE = Path(__file__).resolve().parent
MAX_BYTES = 200 * 1024

MODELS = {
    "mlp": lambda: examples.mlp_example(batch=4, d_in=16, seed=0),
    "cnn": lambda: examples.cnn_example(batch=2, size=8, seed=0),
    "gpt": lambda: examples.gpt_example(batch=2, seq=8, seed=0),
}


def portable(data: bytes) -> bytes:
    """Source locations as 'trnc/examples.py' instead of this machine's absolute
    path, so that the goldens are byte-identical wherever they are generated."""
    g = fx_pb2.Graph()
    g.ParseFromString(data)
    for node in g.nodes:
        if node.loc.file:
            parts = Path(node.loc.file).parts
            node.loc.file = "/".join(parts[parts.index("trnc"):]) if "trnc" in parts \
                else Path(node.loc.file).name
    return g.SerializeToString(deterministic=True)


def capture(name: str) -> dict[str, bytes]:
    """{kind: fx.proto bytes} for one model's forward and backward graphs."""
    from functorch.compile import make_boxed_func

    out: dict[str, bytes] = {}

    def graph_compiler(kind, gm, example_inputs):
        out[kind] = portable(serialize(gm, kind, f"{name} {kind}"))
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    model, args = MODELS[name]()
    loss = torch.compile(model, backend=make_aot_backend(graph_compiler), dynamic=False)(*args)
    loss.sum().backward()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true", help="compare, do not write")
    p.add_argument("--no-text", action="store_true", help="write .pb only (no C printer)")
    args = p.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    failed = 0
    for name in MODELS:
        for kind, data in capture(name).items():
            stem = f"{name}_{kind}"
            if len(data) > MAX_BYTES:
                print(f"{stem}.pb is {len(data)} bytes (> {MAX_BYTES})", file=sys.stderr)
                failed += 1
            files = {HERE / f"{stem}.pb": data}
            if not args.no_text:
                try:
                    text = pipeline.lower(data, stem, kind, warn=False).text()
                except errors.TrncError as e:
                    # still write the .pb: the C tests must see the graph it rejects
                    print(f"{stem}: the C library rejects this graph, no .txt written:\n"
                          f"{type(e).__name__}: {e}", file=sys.stderr)
                    failed += 1
                else:
                    files[HERE / f"{stem}.txt"] = (
                        text if text.endswith("\n") else text + "\n").encode()
            for path, content in files.items():
                if args.check:
                    if not path.exists() or path.read_bytes() != content:
                        print(f"differs: {path.relative_to(HERE.parent.parent)}",
                              file=sys.stderr)
                        failed += 1
                else:
                    path.write_bytes(content)
                    print(f"wrote {path.relative_to(HERE.parent.parent)} "
                          f"({len(content)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
