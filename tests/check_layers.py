#!/usr/bin/env python3
"""Checks that data flows one way through trnc's layers (run by ctest).

Layers, low to high, and the lower layers each may use (include a header of,
or call a function defined in). Every layer lists only layers above it in
this table, so neither includes nor calls can form a cycle between folders:

  ir                  the IR, its table, verifier, printer, hash, diagnostics
  frontend            fx.proto -> IR                   uses ir (beside it: ir never uses frontend)
  passes              graph passes                     uses ir
  codegen/neuroncore  the NeuronCore contract: ISA, program, verifier,
                      schedule, cost model, the compiled artifact
                                                       uses ir
  codegen             the emitter (IR -> program) and the driver
                      (trnc_pipeline_run)              uses ir, frontend, passes, contract
  runtime             runs artifacts (simulator), LLVM uses ir, contract
  cache               artifact bytes on disk           uses ir, contract
  python/             the extension                    the public API (include/trnc) only

Public headers (include/trnc/*.h) include only each other and the C
library: no protobuf-c or LLVM-C types. LLVM-C is included only by the host
backend and the JIT wrapper (LLVM_FILES), directly or through a header.
No file includes itself through a chain of headers (an include cycle).

Includes are read from the sources; calls from the objects of libtrnc
(nm: a symbol one object leaves undefined and another defines). On success
it prints how many calls cross from one layer into another, per pair.
Every error names the offending file.
Usage: check_layers.py SOURCE_DIR OBJECT_DIR [NM]
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

LAYERS = {
    "ir": (),
    "frontend": ("ir",),
    "passes": ("ir",),
    "codegen/neuroncore": ("ir",),
    "codegen": ("ir", "frontend", "passes", "codegen/neuroncore"),
    "runtime": ("ir", "codegen/neuroncore"),
    "cache": ("ir", "codegen/neuroncore"),
    "python": (),
}
# The host backend (program -> LLVM IR) and the JIT wrapper (ORC LLJIT), and
# the header between them: the only files that may see LLVM-C.
LLVM_FILES = ("runtime/host_llvm.c", "runtime/host_llvm.h", "runtime/llvm.c")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(path: str) -> str | None:
    """The layer of a source path relative to the tree (or to the object
    directory, where generated sources sit under gen/); None outside them."""
    path = path[4:] if path.startswith("gen/") else path
    best = None
    for name in LAYERS:
        if path.startswith(name + "/") and (best is None or len(name) > len(best)):
            best = name
    return best


def uses(layer: str) -> str:
    """What a layer may use, in words."""
    return ", ".join(LAYERS[layer]) or "the public API (include/trnc)"


def check_order() -> list[str]:
    seen: list[str] = []
    errors = []
    for name, uses in LAYERS.items():
        errors += [f"layer table: {name} uses {u}, which is not below it" for u in uses
                   if u not in seen]
        seen.append(name)
    return errors


def read_sources(src: str) -> dict[str, str]:
    """The text of every C source, header and .def file of the layers and the
    public headers, by path relative to src."""
    texts = {}
    for top in ["include/trnc"] + list(LAYERS):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            rel_dir = os.path.relpath(dirpath, src)
            for f in sorted(files):
                if f.endswith((".c", ".h", ".def")):
                    with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                        texts[os.path.join(rel_dir, f)] = fh.read()
    return texts


def check_includes(src: str) -> list[str]:
    texts = read_sources(src)
    errors = []
    for rel, text in sorted(texts.items()):
        errors += include_errors(rel, text)
    graph = include_graph(texts)
    return errors + llvm_errors(texts, graph) + cycle_errors(graph)


def include_errors(rel: str, text: str) -> list[str]:
    public = rel.startswith("include/trnc/")
    layer = layer_of(rel)
    errors = []
    for kind, inc in INCLUDE.findall(text):
        if kind == "<":
            if inc.startswith("protobuf-c/") and public:
                errors.append(f"{rel}: a public header includes <{inc}>")
            continue
        if inc.startswith("trnc/") or "/" not in inc:
            continue  # the public API, or a file beside this one
        if public:
            errors.append(f'{rel}: a public header includes "{inc}"')
            continue
        target = layer_of(inc)
        if target is None or target == layer:
            continue
        if target not in LAYERS[layer]:
            errors.append(f'{rel} ({layer}) includes "{inc}" ({target}): '
                          f"{layer} may use only {uses(layer)}")
    return errors


def include_graph(texts: dict[str, str]) -> dict[str, list[str]]:
    """For every file, the files of the tree it includes ("<llvm-c>" stands
    for any LLVM-C header). A quoted name is looked up beside the includer,
    then from the tree's root, then under include/."""
    graph: dict[str, list[str]] = {}
    for rel, text in texts.items():
        out = graph.setdefault(rel, [])
        for kind, inc in INCLUDE.findall(text):
            if kind == "<":
                if inc.startswith("llvm-c/"):
                    out.append("<llvm-c>")
                continue
            for cand in (os.path.normpath(os.path.join(os.path.dirname(rel), inc)), inc,
                         os.path.join("include", inc)):
                if cand in texts:
                    out.append(cand)
                    break
    return graph


def llvm_errors(texts: dict[str, str], graph: dict[str, list[str]]) -> list[str]:
    """Files outside LLVM_FILES that include LLVM-C, directly or through
    headers of the tree (the chain is named)."""
    errors = []
    for rel in sorted(texts):
        if rel in LLVM_FILES:
            continue
        chain = path_to(graph, rel, "<llvm-c>")
        if chain:
            how = "" if len(chain) == 2 else " through " + " -> ".join(chain[1:-1])
            errors.append(f"{rel}: includes LLVM-C{how}: LLVM-C belongs to "
                          f"{', '.join(LLVM_FILES)} only")
    return errors


def path_to(graph: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """A chain of includes from start to goal (both ends included), or None."""
    seen = {start}
    stack = [(start, [start])]
    while stack:
        node, chain = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == goal:
                return chain + [nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, chain + [nxt]))
    return None


def cycle_errors(graph: dict[str, list[str]]) -> list[str]:
    """One error per include cycle (found by depth-first search), naming
    every file on it."""
    errors = []
    state: dict[str, int] = {}  # 1: on the search path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cyc = path[path.index(nxt):] + [nxt]
                errors.append(f"{nxt}: include cycle " + " -> ".join(cyc))
            elif nxt in graph and not state.get(nxt):
                visit(nxt, path)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if not state.get(node):
            visit(node, [])
    return errors


def symbols(nm: str, obj: str) -> tuple[set[str], set[str]]:
    """(defined, undefined) global symbols of an object file."""
    out = subprocess.run([nm, "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w"):
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def has_source(src: str, rel: str) -> bool:
    """Whether the object for rel (a source path, or gen/<x>.pb-c.c generated
    from <x>.proto) still has its source in the tree: a build directory keeps
    the objects of files since moved or deleted."""
    if rel.startswith("gen/") and rel.endswith(".pb-c.c"):
        rel = rel[4:-len(".pb-c.c")] + ".proto"
    return os.path.isfile(os.path.join(src, rel))


def check_calls(objdir: str, nm: str, crossings: dict[tuple[str, str], int] | None = None,
                src: str | None = None) -> list[str]:
    """Errors for calls from an object of libtrnc into a layer its own may not
    use. crossings (if given) receives, per (caller layer, callee layer), how
    many distinct (object, function) references cross between the two. src:
    the source tree, to skip stale objects whose source is gone."""
    objs = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".o"):
                rel = os.path.relpath(os.path.join(dirpath, f), objdir)[:-2]
                if layer_of(rel) and (src is None or has_source(src, rel)):
                    objs[rel] = symbols(nm, os.path.join(dirpath, f))
    if not objs:
        return [f"no objects of libtrnc under {objdir}"]
    owner = {s: rel for rel, (defined, _) in objs.items() for s in defined}
    errors = []
    for rel, (_, undefined) in sorted(objs.items()):
        layer = layer_of(rel)
        for s in sorted(undefined):
            target = layer_of(owner[s]) if s in owner else None
            if not target or target == layer:
                continue
            if crossings is not None:
                crossings[(layer, target)] = crossings.get((layer, target), 0) + 1
            if target not in LAYERS[layer]:
                errors.append(f"{rel} ({layer}) calls {s} from {owner[s]} ({target}): "
                              f"{layer} may use only {uses(layer)}")
    return errors


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    src, objdir = argv[1], argv[2]
    nm = argv[3] if len(argv) == 4 else "nm"
    crossings: dict[tuple[str, str], int] = {}
    errors = check_order() + check_includes(src) + check_calls(objdir, nm, crossings, src)
    for e in errors:
        print(f"check_layers: {e}", file=sys.stderr)
    if not errors:
        print("check_layers: ir -> passes -> codegen/neuroncore -> codegen -> runtime, cache; "
              "no upward include or call, no include cycle")
        print(f"check_layers: {sum(crossings.values())} calls cross layers: " +
              ", ".join(f"{a} -> {b} {n}" for (a, b), n in sorted(crossings.items())))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
