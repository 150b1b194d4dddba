"""Warm starts without aot_autograd: trnc's graphs in torch's AOTAutogradCache.

On a cold compile, aot_autograd traces the joint graph, partitions it into a
forward and a backward and wraps the compiled pair in runtime wrappers
(input mutations, output aliases, detaching, saved tensors). torch's
``AOTAutogradCache`` (torch/_functorch/_aot_autograd/autograd_cache.py) stores
all of that — the runtime metadata (``ViewAndMutationMeta``), the wrappers,
the number of forward outputs saved for the backward — next to the compiled
forward and backward, and on a hit rebuilds the callable without tracing or
partitioning. It does so for any backend whose graph compilers are
``SerializableAOTDispatchCompiler``\\ s returning an ``OutputCode``, with
``bundled_autograd_cache`` on, so the ``OutputCode`` is pickled into the entry
(``BundledAOTAutogradResult``) instead of being looked up in inductor's FX
graph cache. trnc plugs in that way (``backend.make_aot_backend``):

* :class:`TrncOutputCode` is what trnc's forward, backward and inference
  compilers return: the boxed callable, plus what rebuilds it in another
  process — the fx.proto bytes, the artifact's key in trnc's own cache, the
  graph's placeholder names and what its ``GraphRecord``
  shows. ``prepare_for_serialization`` drops the callable; ``post_compile``
  (run by the cache on a hit) loads the artifact by key (verified, as every
  cache load), or, when trnc's cache lost it, compiles the stored bytes again
  (no aot_autograd either way).
* The entry's key is torch's (the dynamo graph, its inputs' metadata, the
  torch version and the autograd/inductor configs, grad mode and autocast)
  plus :func:`key_tag` through ``torch.compiler.config.cache_key_tag``: the
  trnc version, the compiler build id, a hash of trnc's Python sources and
  every compile option. So a changed graph, torch, trnc or option misses.
  inductor's codegen backends are kept out of it (``_skip_inductor_backends``:
  registering them costs a warm start about a second and means nothing here).
* The entry lives where torch keeps it (``$TORCHINDUCTOR_CACHE_DIR/aotautograd``),
  the artifact in trnc's cache; ``TRNC_CACHE=0`` (or torch's own
  ``TORCHINDUCTOR_AUTOGRAD_CACHE=0``) turns this off. Graphs whose inputs share
  storage always trace (torch's key does not see aliasing between inputs).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from typing import Any, Callable, Sequence

import torch
from torch._inductor.output_code import OutputCode

__all__ = ["TrncOutputCode", "FailedBackward", "enabled", "key_tag", "stored_options",
           "config_patches"]


@dataclasses.dataclass
class TrncOutputCode(OutputCode):
    """One compiled trnc graph as torch's AOTAutogradCache stores it.

    Calling it runs the program (boxed: one list of tensors). Pickled without
    the callable; ``post_compile`` rebuilds it (``backend.load_graph``)."""

    kind: str                         # "forward" | "backward" | "inference"
    opts: dict[str, Any]              # the backend options the graph compiled with
    data: bytes                       # the fx.proto bytes trnc imported
    key: bytes | None                 # the artifact's key in trnc's cache
    names: list[str]                  # placeholder names (error messages)
    opaque: list[tuple[int, int]]     # backend._opaque_outputs: (output, input) passed through
    record: dict[str, Any]            # text, hash, summary, warnings of the GraphRecord
    mutated: tuple[int, ...] | None   # inference: inputs it writes to (None: unknown)
    plain: bool                       # inference: aliasing.plain_inference (called directly)
    run: Callable[[list[Any]], Any] | None = None
    checks: tuple[tuple[str, bool], ...] = ()  # effects.split_checks: info outputs to check
    training: Any = None              # forward: training.TrainingPlan (trnc's autograd Function)

    def __post_init__(self) -> None:
        # aot_autograd passes one list; an instance attribute, so that the
        # wrappers it puts around a backward (functools.wraps) carry it too
        self._boxed_call = True

    def __call__(self, inputs: Sequence[Any]) -> Any:
        if self.run is None:  # pragma: no cover  (post_compile always runs first)
            raise RuntimeError("trnc: a cached graph was called before it was loaded")
        return self.run(inputs)  # type: ignore[arg-type]

    def prepare_for_serialization(self) -> None:
        self.run = None

    def post_compile(self, example_inputs: Sequence[Any], constants: Any,
                     graph_kwargs: Any) -> None:
        from . import backend

        self.run = backend.load_graph(self)

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        pass


@dataclasses.dataclass
class FailedBackward(OutputCode):
    """A backward that did not compile: calling it (the first ``.backward()``)
    raises the compile error; the entry is not stored (a cache bypass)."""

    error: BaseException

    def __post_init__(self) -> None:
        self._boxed_call = True

    def __call__(self, inputs: Sequence[Any]) -> Any:
        raise self.error

    def prepare_for_serialization(self) -> None:
        from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

        raise BypassAOTAutogradCache(f"trnc: the backward did not compile ({self.error})")

    def post_compile(self, example_inputs: Sequence[Any], constants: Any,
                     graph_kwargs: Any) -> None:  # pragma: no cover  (never stored)
        pass

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        pass


def enabled(opts: dict[str, Any], example_inputs: Sequence[Any]) -> bool:
    """Whether this compile goes through the AOTAutogradCache: trnc's cache
    and torch's autograd cache on, a graph that compiles to a program (not
    ``execute=False``), without ``fallback="cpu"`` (a partitioned graph
    runs torch ops, not one stored program), and no two inputs sharing
    storage. ``compile_only`` (``trnc precompile``) stores entries too, under
    the key of the same compile without it (``key_tag``), so a deployed
    process skips aot_autograd as well."""
    from torch._functorch._aot_autograd.autograd_cache import should_use_local_autograd_cache

    from . import cache

    if not (cache.enabled() and should_use_local_autograd_cache()):
        return False
    if not opts.get("execute", True) or opts.get("fallback"):
        return False
    groups = cache.alias_groups(example_inputs)
    return groups is not None and groups == list(range(len(groups)))


@functools.lru_cache(maxsize=1)
def _sources_hash() -> str:
    """Hash of trnc's Python sources (the serializer writes the stored bytes)."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for f in sorted(os.listdir(here)):
        if f.endswith(".py"):
            with open(os.path.join(here, f), "rb") as fh:
                h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()[:16]


def key_tag(opts: dict[str, Any]) -> str:
    """What trnc adds to torch's cache key: version, compiler build id, Python
    sources and every option (``user_inputs`` only names inputs;
    ``compile_only`` only skips the runs of the same programs)."""
    from . import _trnc

    shown = sorted((k, repr(v)) for k, v in stored_options(opts).items())
    return (f"trnc {_trnc.version()} build {_trnc.build_id()} py {_sources_hash()} "
            f"opts {shown}")


def stored_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The options a cached graph keeps and is keyed by: all but
    ``user_inputs`` (names) and ``compile_only`` (a loaded graph runs)."""
    return {k: v for k, v in opts.items() if k not in ("user_inputs", "compile_only")}


def config_patches(opts: dict[str, Any]) -> list[Any]:
    """The config patches under which trnc's aot_autograd call stores and loads
    entries (context managers, entered in order)."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config as inductor_config

    user_tag = torch.compiler.config.cache_key_tag
    tag = key_tag(opts) + (f" | {user_tag}" if user_tag else "")
    # the entry is saved when the backward is compiled: under these patches,
    # so the backward compiles with the forward (not at the first .backward())
    return [functorch_config.patch(bundled_autograd_cache=True,
                                   force_non_lazy_backward_lowering=True),
            # checked by check_cacheable, although no inductor graph is cached
            inductor_config.patch(fx_graph_cache=True),
            torch.compiler.config.patch(cache_key_tag=tag)] + _graph_details_for_trnc() + \
        _skip_inductor_backends()


def _torch_version_key() -> str:
    """Which torch this is: its version, the commit it was built from and
    where it is installed (what ``torch_key``, a hash of every inductor source
    file, stands for, in a string that costs nothing)."""
    v = getattr(torch, "version", None)
    return (f"torch {torch.__version__} git {getattr(v, 'git_version', '?')} "
            f"debug {getattr(v, 'debug', '?')} at {os.path.dirname(torch.__file__)}")


def _graph_details_for_trnc() -> list[Any]:
    """torch's key details (``AOTAutogradCacheDetails``) hash the autograd
    state and configs, grad mode, autocast and the aot_autograd config, and
    then, through ``FxGraphHashDetails``, the graph and example inputs with
    everything inductor's own FX graph cache needs: inductor's configs, the
    system's GPUs, and ``torch_key``, a hash of all of inductor's sources,
    after importing inductor's code generators (about 2 s of a warm start).
    For a trnc graph the second half is the graph, its inputs, the cache key
    tag (trnc's version, sources and options: ``key_tag``), torch's version
    (``_torch_version_key``), the default dtype and the deterministic
    settings; the rest is left out. Nothing is patched if this torch has no
    such method."""
    from unittest import mock

    from torch._functorch._aot_autograd import autograd_cache

    details = getattr(autograd_cache, "AOTAutogradCacheDetails", None)
    if details is None or not hasattr(details, "_init_fx_graph_hash_details"):
        return []

    def init(self: Any, gm: Any, example_inputs: Sequence[Any], fx_config: Any) -> None:
        self.gm = gm
        self.example_inputs = [_opaque_ordinal(x, i) for i, x in enumerate(example_inputs)]
        self.cache_key_tag = torch.compiler.config.cache_key_tag
        self.fx_kwargs = {k: sorted(v) if isinstance(v, (set, frozenset)) else v
                          for k, v in sorted(dict(fx_config).items())
                          if k not in ("graph_id", "compile_region_name")}
        self.torch_version = _torch_version_key()
        self.default_dtype = torch.get_default_dtype()
        self.deterministic_algorithms_settings = (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())

    return [mock.patch.object(details, "_init_fx_graph_hash_details", init)]


def _opaque_ordinal(x: Any, i: int) -> Any:
    """An example input as the key hashes it: an opaque reference (a
    DeviceMesh) by its kind and position, as torch's own details do."""
    try:
        from torch._library.opaque_object import is_opaque_reference_type
    except ImportError:  # pragma: no cover  (older torch: no opaque references)
        return x
    return f"opaque {type(x).__qualname__} {i}" if is_opaque_reference_type(type(x)) else x


def _skip_inductor_backends() -> list[Any]:
    """torch's key computation (``FxGraphHashDetails``) first registers every
    inductor codegen backend (``init_backend_registration``: imports the C++,
    CUDA, Triton, Halide, CUTLASS code generators, about a second) to hash
    their custom passes and configs, none of which touches a trnc graph: for
    trnc's key they are left out (empty), which also keeps the key the same
    whether or not the process used inductor before. Nothing is patched if
    this torch has no such names."""
    from unittest import mock

    from torch._inductor import codecache

    names = ("init_backend_registration", "custom_backend_passes",
             "custom_backend_codegen_configs")
    if not all(hasattr(codecache, n) for n in names):
        return []
    return [mock.patch.multiple(codecache, init_backend_registration=lambda: None,
                                custom_backend_passes={}, custom_backend_codegen_configs={})]


# --------------------------------------------------------------------------- #
# trnc cache export / import: the AOTAutogradCache entries of trnc's graphs

# A trailer after the artifact bundle (cache/store.c: "TRNCBNDL", count,
# records; its reader stops after the last record, so a bundle with a trailer
# still imports into a trnc without this code): "TRNCAOTA", u32 LE version,
# u32 LE zero, u64 LE count, then per entry a u32 LE length and the entry's
# path under torch's ``aotautograd`` directory (``<key>/<name>``, UTF-8),
# a u64 LE length and the entry's bytes; last, a u64 LE offset of "TRNCAOTA"
# and "TRNCAOTE".
_AOT_MAGIC, _AOT_END, _AOT_VERSION = b"TRNCAOTA", b"TRNCAOTE", 1
_AOT_MAX_ENTRY = 1 << 30
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def aot_dir() -> str:
    """torch's AOTAutogradCache directory (``$TORCHINDUCTOR_CACHE_DIR/aotautograd``)."""
    from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache

    return AOTAutogradCache._get_tmp_dir()


def _safe_part(s: str) -> bool:
    return 0 < len(s) <= 255 and s not in (".", "..") and set(s) <= _SAFE


def _is_trnc_entry(data: bytes) -> bool:
    """An entry whose pickle names trnc's output code (an inductor graph in the
    same directory is not trnc's to export)."""
    return b"trnc.aot_cache" in data and b"TrncOutputCode" in data


def export_entries(path: str) -> int:
    """Appends the trailer with every AOTAutogradCache entry of a trnc graph
    to the bundle at ``path`` (just written by ``trnc cache export``).
    Returns how many entries it holds (0: no trailer written)."""
    import struct

    root = aot_dir()
    found: list[tuple[str, bytes]] = []
    if os.path.isdir(root):
        for key in sorted(os.listdir(root)):
            sub = os.path.join(root, key)
            if not _safe_part(key) or not os.path.isdir(sub):
                continue
            for name in sorted(os.listdir(sub)):
                p = os.path.join(sub, name)
                if not _safe_part(name) or not os.path.isfile(p) or os.path.islink(p):
                    continue
                with open(p, "rb") as f:
                    data = f.read(_AOT_MAX_ENTRY + 1)
                if len(data) <= _AOT_MAX_ENTRY and _is_trnc_entry(data):
                    found.append((f"{key}/{name}", data))
    if not found:
        return 0
    with open(path, "ab") as f:
        start = f.tell()
        f.write(_AOT_MAGIC + struct.pack("<IIQ", _AOT_VERSION, 0, len(found)))
        for rel, data in found:
            r = rel.encode()
            f.write(struct.pack("<I", len(r)) + r + struct.pack("<Q", len(data)) + data)
        f.write(struct.pack("<Q", start) + _AOT_END)
    return len(found)


def import_entries(path: str) -> tuple[int, int, list[str]]:
    """Writes the AOTAutogradCache entries of the bundle's trailer (if any)
    into torch's directory (``aot_dir``). Returns (imported, rejected,
    messages). An entry is kept only when its name is torch's hash of its
    bytes and its pickle names trnc's output code; torch unpickles it on a
    cache hit, so import bundles from sources you trust (as for
    ``torch.compiler.load_cache_artifacts``)."""
    import struct

    from torch._inductor.codecache import sha256_hash, write_atomic

    msgs: list[str] = []
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size < 16 + 24:
            return 0, 0, msgs
        f.seek(size - 16)
        tail = f.read(16)
        if tail[8:] != _AOT_END:
            return 0, 0, msgs
        (start,) = struct.unpack("<Q", tail[:8])
        if start > size - 16 - 24:
            return 0, 0, [f"trnc cache import: {path}: bad AOTAutogradCache trailer offset"]
        f.seek(start)
        head = f.read(24)
        if head[:8] != _AOT_MAGIC:
            return 0, 0, [f"trnc cache import: {path}: bad AOTAutogradCache trailer"]
        version, _, count = struct.unpack("<IIQ", head[8:])
        if version != _AOT_VERSION:
            return 0, 0, [f"trnc cache import: {path}: AOTAutogradCache trailer version "
                          f"{version}, this trnc reads {_AOT_VERSION}"]
        root = aot_dir()
        imported = rejected = 0
        for i in range(count):
            raw = f.read(4)
            if len(raw) != 4:
                return imported, rejected + 1, msgs + [
                    f"trnc cache import: {path}: AOTAutogradCache entry {i} is truncated"]
            (n,) = struct.unpack("<I", raw)
            rel = f.read(n) if n <= 1024 else b""
            raw = f.read(8)
            if len(rel) != n or not rel or len(raw) != 8:
                return imported, rejected + 1, msgs + [
                    f"trnc cache import: {path}: AOTAutogradCache entry {i} is malformed"]
            (m,) = struct.unpack("<Q", raw)
            if m > _AOT_MAX_ENTRY or f.tell() + m > size - 16:
                return imported, rejected + 1, msgs + [
                    f"trnc cache import: {path}: AOTAutogradCache entry {i} has a bad length"]
            data = f.read(m)
            parts = rel.decode("utf-8", "replace").split("/")
            if len(parts) != 2 or not all(_safe_part(p) for p in parts) or \
                    parts[1] != sha256_hash(data) or not _is_trnc_entry(data):
                msgs.append(f"trnc cache import: rejected AOTAutogradCache entry {i} "
                            f"({rel[:80]!r}): its name is not the hash of a trnc entry")
                rejected += 1
                continue
            os.makedirs(os.path.join(root, parts[0]), exist_ok=True)
            write_atomic(os.path.join(root, parts[0], parts[1]), data)
            imported += 1
    return imported, rejected, msgs
