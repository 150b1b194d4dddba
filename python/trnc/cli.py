"""The ``trnc`` command.

    trnc dump GRAPH.pb     import, check, legalize, verify and print the IR
    trnc ops [--markdown]  the operator table (docs/operators.md with --markdown)
    trnc version           trnc, LLVM and (if installed) torch versions
    trnc cache ...         the artifact cache: stats, ls, verify, prune, clear, export, import
    trnc precompile M:F    compile every shape bucket of a model into the cache
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Sequence

from . import cache, errors, pipeline, precompile


# a serialized graph larger than this is not one trnc wrote (nor is a stream
# that never ends, such as /dev/zero)
MAX_GRAPH_BYTES = 1 << 30


def _cmd_dump(args: argparse.Namespace) -> int:
    try:
        with open(args.graph, "rb") as f:
            data = f.read(MAX_GRAPH_BYTES + 1)
        if len(data) > MAX_GRAPH_BYTES:
            print(f"trnc: {args.graph} is larger than {MAX_GRAPH_BYTES} bytes: not a serialized "
                  "trnc graph", file=sys.stderr)
            return 1
    except OSError as e:
        print(f"trnc: cannot read {args.graph}: {e.strerror}", file=sys.stderr)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lowered = pipeline.lower(data, args.graph)
        except errors.GraphImportError as e:
            # a file the user handed us, not a graph trnc just serialized
            print(f"trnc: {type(e).__name__}: {not_a_graph_message(args.graph, data, e)}",
                  file=sys.stderr)
            return 1
        except errors.TrncError as e:
            print(f"trnc: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if args.summary:
        s = lowered.summary()
        print(" ".join(f"{k}={v}" for k, v in s.items()) + f" hash={lowered.hash()}")
    else:
        text = lowered.text()
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def not_a_graph_message(path: str, data: bytes, e: errors.TrncError) -> str:
    """What ``trnc dump`` says when a file does not import: the file is not a
    trnc graph, is truncated or corrupt, or comes from another trnc release."""
    first = next((d for d in e.diagnostics if d.get("severity") == "error"), {})
    code = first.get("code", "")
    detail = f"{code}: {first.get('message', '')}" if code else "no diagnostics"
    if not data:
        return f"{path} is empty: it is not a trnc graph (fx.proto bytes written by trnc)"
    if code == "TRNC_ERR_VERSION":
        import re  # noqa: PLC0415

        m = re.search(r"schema version (\d+)", first.get("message", ""))
        if m and m.group(1) != "0":
            return (f"{path} was written by a different trnc release (fx schema version "
                    f"{m.group(1)}), which this trnc cannot read; re-create it with this trnc")
    return (f"{path} is not a trnc graph (fx.proto bytes written by trnc), or it is truncated "
            f"or corrupt ({detail})")


def _cmd_ops(args: argparse.Namespace) -> int:
    from . import _trnc

    if args.markdown:
        sys.stdout.write(_trnc.ops_markdown())
        return 0
    ops = _trnc.ops()
    rows = [("op", "aten target", "category", "dtypes", "rank", "limits")]
    rows += [(o["name"], o["fx_target"], o["category"], o["dtypes"], str(o["max_rank"]),
              o["limits"]) for o in ops]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5])
    print(f"\n{len(ops)} operators")
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    from . import __version__, _trnc

    print(f"trnc {__version__} (libtrnc {_trnc.version()}, LLVM {_trnc.llvm_version()})")
    try:
        from importlib.metadata import version

        print(f"torch {version('torch')}")
    except Exception:  # noqa: BLE001
        print("torch not installed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="trnc", description="trnc: torch.compile backend for "
                                "AWS Trainium NeuronCores")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="print the IR of a serialized graph (fx.proto bytes)")
    d.add_argument("graph", help="GRAPH.pb written by trnc (e.g. tests/golden/*.pb)")
    d.add_argument("--summary", action="store_true", help="print counts and hash only")
    d.set_defaults(fn=_cmd_dump)
    o = sub.add_parser("ops", help="the operator table")
    o.add_argument("--markdown", action="store_true", help="as docs/operators.md")
    o.set_defaults(fn=_cmd_ops)
    v = sub.add_parser("version", help="versions")
    v.set_defaults(fn=_cmd_version)
    cache.add_subparser(sub)
    precompile.add_subparser(sub)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
