"""The artifact cache (``cache/`` in C, ``include/trnc/cache.h``) from Python.

The backend asks :func:`compile_program` for each graph: it derives the key
(XXH3-128 of the canonical IR hash, every input's dtype/shape/strides/storage
offset and aliasing, the compile options, the trnc version and compiler build
id, the artifact format version), returns a verified artifact on a hit, and
otherwise compiles and stores the result. Failed compiles are never stored.

Environment:
    TRNC_CACHE=0            disable the cache (compile every graph)
    TRNC_CACHE_DIR          cache directory (default $XDG_CACHE_HOME/trnc or ~/.cache/trnc)
    TRNC_CACHE_MAX_BYTES    size bound, LRU eviction (default 10 GiB; K/M/G/T suffixes)
    TRNC_REMOTE_CACHE       redis://host:port/db: a shared remote cache behind this one,
                            signed entries (see trnc.remote)

Every entry this process compiles or loads is also offered to the entry
listeners (:func:`add_entry_listener`): trnc.megacache records them for
``torch.compiler.save_cache_artifacts()``.

Also the ``trnc cache`` command (``stats``, ``ls``, ``verify``, ``prune``,
``clear``, ``export``, ``import``, ``push``). No torch import here.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import hashlib
import logging
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable, Sequence

from . import pipeline
from . import remote as _remote

__all__ = ["enabled", "get_cache", "compile_program", "load_program", "key_of", "discard",
           "store_host_code", "entry_now",
           "counters", "reset_counters", "alias_groups", "add_entry_listener", "dumps_requested",
           "dump_hit", "add_subparser"]

log = logging.getLogger("trnc.cache")

_lock = threading.Lock()
_caches: dict[tuple[str, ...], Any] = {}   # environment -> trnc._trnc.Cache | None
_counts: collections.Counter[str] = collections.Counter()
_keys: dict[int, tuple[Any, bytes, Any]] = {}  # id(compiled) -> (cache, key, compiled)
_listeners: list[Callable[[bytes, bytes], None]] = []
_shared: dict[bytes, bytes] = {}  # key -> sha256 of the entry bytes last stored remotely or announced


def _lib():
    from . import _trnc

    return _trnc


def enabled() -> bool:
    """False when ``TRNC_CACHE`` is 0/false/no/off."""
    return os.environ.get("TRNC_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def _env_key() -> tuple[str, ...]:
    return tuple(os.environ.get(k, "") for k in
                 ("TRNC_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "TRNC_CACHE_MAX_BYTES"))


def _messages(diags: list[dict[str, Any]]) -> str:
    return "; ".join(d.get("message", "") for d in diags) or "unknown error"


def _log_diags(diags: list[dict[str, Any]]) -> None:
    for d in diags:
        log.warning("%s", d.get("message", ""))


def get_cache(warn: bool = True) -> Any:
    """The process's open cache for the current environment, or None (disabled,
    or the directory was refused: a ``UserWarning`` says why, once)."""
    if not enabled():
        return None
    env = _env_key()
    with _lock:
        if env in _caches:
            return _caches[env]
        cache, status, diags = _lib().open_cache()
        if cache is None and warn:
            warnings.warn(f"trnc: {_messages(diags)}", UserWarning, stacklevel=2)
        _caches[env] = cache
        return cache


def store_host_code() -> int:
    """Rewrites the cache entries whose programs the simulator's JIT compiled
    to host code in this process, so that the next process on this kind of
    host loads the machine code instead of compiling it (docs/simulator.md),
    and shares each rewritten entry where its first version went: the remote
    cache (``TRNC_REMOTE_CACHE``: the entry with host code replaces it) and
    the entry listeners (the MegaCache records the new bytes). A process on
    another CPU that loads such an entry finds host code for a different
    host key and compiles its own (a miss for the host code, never a crash).
    Runs at interpreter exit, and before torch's MegaCache serializes
    trnc's entries; returns the entries rewritten."""
    n = 0
    for cache in list(_caches.values()):
        if cache is not None:
            stored, status, diags = cache.store_host_code()
            n += stored
            if status != pipeline.OK and pipeline.log_at_least("warning"):
                print(f"trnc: {_messages(diags)}", file=sys.stderr, flush=True)
    if n:
        _share_rewritten()
    return n


def _digest(entry: bytes) -> bytes:
    return hashlib.sha256(entry).digest()


def _share_rewritten() -> None:
    """The entries of this process's artifacts whose bytes changed since they
    were compiled or loaded (host code added): to the remote cache, replacing
    the entry there, and to the entry listeners."""
    with _lock:
        recs = [(c, k) for c, k, _ in _keys.values()]
    remote = _remote.get_remote()
    for cache, key in recs:
        entry = _entry(cache, key)
        with _lock:
            same = entry is None or _shared.get(key) == _digest(entry)
        if same:
            continue
        if remote is not None:
            remote.put(key, entry, replace=True)
        _announce(key, entry)


def entry_now(key: bytes) -> bytes | None:
    """The current bytes of key's entry in this process's cache, with the
    host code its program gained so far (``store_host_code``), or None."""
    store_host_code()
    cache = get_cache(warn=False)
    return _entry(cache, key) if cache is not None else None


@atexit.register
def _flush_at_exit() -> None:
    """Stores new host code and persists every open cache's counters (for
    ``trnc cache stats``)."""
    try:
        store_host_code()
    except Exception:  # noqa: BLE001  (never fail interpreter exit)
        pass
    for cache in list(_caches.values()):
        if cache is not None:
            try:
                cache.flush_stats()
            except Exception:  # noqa: BLE001  (never fail interpreter exit)
                pass


def counters() -> dict[str, int]:
    """This process's cache lookups: ``hits`` (local or remote), ``misses``
    (lookups that compiled) and ``compiles`` (trnc_compile calls, with or
    without a cache), plus the remote cache's counters
    (:func:`trnc.remote.counters`)."""
    with _lock:
        out = {k: _counts.get(k, 0) for k in ("hits", "misses", "compiles")}
    out.update(_remote.counters())
    return out


def reset_counters() -> None:
    with _lock:
        _counts.clear()
    _remote.reset_counters()


def add_entry_listener(fn: Callable[[bytes, bytes], None]) -> None:
    """Calls ``fn(key, entry_bytes)`` for every entry this process compiles
    or loads from a cache from now on (entry bytes: header and artifact, as
    ``Cache.put_entry`` accepts them). Exceptions from ``fn`` are logged."""
    with _lock:
        if fn not in _listeners:
            _listeners.append(fn)


def _announce(key: bytes, entry: bytes | None) -> None:
    with _lock:
        fns = list(_listeners)
        if entry is not None:
            _shared[key] = _digest(entry)
    for fn in fns if entry is not None else ():
        try:
            fn(key, entry)
        except Exception:  # noqa: BLE001  (a listener never fails a compile)
            log.warning("trnc cache: entry listener %r failed", fn, exc_info=True)


def _entry(cache: Any, key: bytes) -> bytes | None:
    """The stored bytes of key's entry, or None (logged)."""
    data, diags = cache.entry_bytes(key)
    _log_diags(diags)
    return data


def _from_remote(cache: Any, remote: _remote.RemoteCache, key: bytes) -> Any:
    """key's artifact from the remote cache (verified, then stored locally),
    or None."""
    entry = remote.get(key)
    if entry is None:
        return None
    compiled, got, status, diags = cache.put_entry(entry, key=key)
    if compiled is None:
        remote.rejected(key, _messages(diags))
        return None
    remote.loaded(key)
    _log_diags(diags)  # a failed local write: the artifact is still good
    _announce(key, entry)
    return compiled


def _count(what: str) -> None:
    with _lock:
        _counts[what] += 1


def alias_groups(example_inputs: Sequence[Any]) -> list[int] | None:
    """One group id per input: inputs that share storage get the same id.
    None when storage identity cannot be determined."""
    groups: list[int] = []
    seen: dict[Any, int] = {}
    for i, t in enumerate(example_inputs):
        ident: Any = ("unique", i)
        storage = getattr(t, "untyped_storage", None)
        if storage is not None:
            try:
                ident = ("storage", storage()._cdata)
            except Exception:  # noqa: BLE001
                return None
        groups.append(seen.setdefault(ident, i))
    return groups


def compile_program(lowered: pipeline.LoweredGraph, opts: dict[str, Any],
                    example_inputs: Sequence[Any] | None = None, *,
                    key: bytes | None = None, lookup: bool = True) -> tuple[Any, str]:
    """``pipeline.compile_program`` behind the cache. Returns ``(compiled,
    outcome)`` with outcome ``"hit"``, ``"miss"`` (compiled and stored) or
    ``"remote-hit"`` (verified from ``TRNC_REMOTE_CACHE``, now stored locally)
    or ``"off"`` (no cache). Compile errors propagate and nothing is stored.
    A fresh compile also goes to the remote cache. ``key``: the key this
    graph had when it was compiled before (a cached aot_autograd entry names
    it: aot_cache.py) instead of deriving one; ``lookup=False`` when the
    caller has just missed it (``load_program``)."""
    cache = get_cache()
    if cache is not None and key is None:
        groups = None
        if example_inputs is not None:
            n = lowered.summary().get("inputs", -1)
            groups = alias_groups(example_inputs)
            if groups is not None and len(groups) != n:
                groups = None
        key, status, diags = _lib().cache_key(
            lowered.graph, target=opts.get("target"), autocast_bf16=opts.get("autocast_bf16", False),
            no_fusion=opts.get("no_fusion", False), alias_groups=groups)
        if key is None:
            log.warning("trnc cache: no key for %s (%s); compiling without the cache",
                        lowered.name, _messages(diags))
    remote = None
    if cache is not None and key is not None:
        if lookup:
            compiled, outcome = load_program(key)
            if compiled is not None:
                dump_hit(lowered, compiled)
                return compiled, outcome
        remote = _remote.get_remote()
    compiled = pipeline.compile_program(lowered, target=opts.get("target"),
                                        autocast_bf16=opts.get("autocast_bf16", False),
                                        no_fusion=opts.get("no_fusion", False))
    _count("compiles")
    if cache is None or key is None:
        return compiled, "off"
    status, diags = cache.put(key, compiled)
    _log_diags(diags)
    _remember(cache, key, compiled)
    entry = None
    if status == pipeline.OK:
        entry = _entry(cache, key)
    if entry is not None and remote is not None:
        remote.put(key, entry)
    _announce(key, entry)
    return compiled, "miss"


def load_program(key: bytes) -> tuple[Any, str | None]:
    """The artifact stored under ``key`` and where it came from: ``"hit"``
    (the local cache) or ``"remote-hit"`` (verified from ``TRNC_REMOTE_CACHE``,
    now stored locally), counted as a hit; ``(None, None)`` when the cache is
    off (not counted) or neither has a valid entry (counted as a miss)."""
    cache = get_cache()
    if cache is None:
        return None, None
    compiled, diags = cache.get(key)
    _log_diags(diags)
    outcome = "hit"
    if compiled is None:
        remote = _remote.get_remote()
        compiled = _from_remote(cache, remote, key) if remote is not None else None
        outcome = "remote-hit"
    elif _listeners:
        _announce(key, _entry(cache, key))
    if compiled is None:
        _count("misses")
        return None, None
    _count("hits")
    _remember(cache, key, compiled)
    return compiled, outcome


def key_of(compiled: Any) -> bytes | None:
    """The cache key ``compiled`` was loaded from or stored under, or None."""
    with _lock:
        rec = _keys.get(id(compiled))
    return rec[1] if rec is not None and rec[2] is compiled else None


def dumps_requested() -> bool:
    """Whether TRNC_DUMP_DIR or TRNC_PROFILE asks for each program's files."""
    return bool(os.environ.get("TRNC_DUMP_DIR") or os.environ.get("TRNC_PROFILE"))


def dump_hit(lowered: pipeline.LoweredGraph, compiled: Any) -> None:
    """TRNC_DUMP_DIR / TRNC_PROFILE for a program from the cache: the files
    ``trnc_compile`` writes for a compiled one (``trnc_compiled_dump``); a
    file that cannot be written is a ``UserWarning``, not an error."""
    if not dumps_requested():
        return
    status, diags = lowered.graph.dump_program(compiled)
    if status != pipeline.OK or diags:
        warnings.warn(f"trnc ({lowered.name}): {_messages(diags)}", UserWarning,
                      stacklevel=pipeline.user_stacklevel())


def _remember(cache: Any, key: bytes, compiled: Any) -> None:
    with _lock:
        _keys[id(compiled)] = (cache, key, compiled)  # kept alive: the id stays unique


def discard(compiled: Any) -> bool:
    """Removes the cache entry that ``compiled`` came from or went to, locally
    and in the remote cache (call it when a run fails with an internal error,
    so the next process recompiles instead of loading the same bad artifact).
    False if it has no entry."""
    with _lock:
        rec = _keys.pop(id(compiled), None)
    if rec is None:
        return False
    status, diags = rec[0].remove(rec[1])
    _log_diags(diags)
    remote = _remote.get_remote()
    if remote is not None:
        remote.remove(rec[1])
    log.warning("trnc cache: removed the entry of an artifact that failed to run")
    return status == pipeline.OK


# --------------------------------------------------------------------------- #
# trnc cache ...


def _human(n: int) -> str:
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{int(v)} B" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


def _parse_size(s: str) -> int:
    """'1000', '64K', '512M', '10G', '1T' (powers of 1024) -> bytes."""
    t = s.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    if mult > 1:
        t = t[:-1]
    try:
        v = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {s!r} (bytes, or a number with K/M/G/T)")
    if v < 0:
        raise argparse.ArgumentTypeError(f"negative size: {s!r}")
    return v * mult


def _open_for_cli(args: argparse.Namespace) -> Any:
    cache, status, diags = _lib().open_cache(dir=args.dir) if args.dir else _lib().open_cache()
    if cache is None:
        print(f"trnc cache: {_messages(diags)}", file=sys.stderr)
    return cache


def _print_diags(diags: list[dict[str, Any]]) -> None:
    for d in diags:
        print(f"{d.get('severity', 'warning')}: {d.get('message', '')}", file=sys.stderr)


def _cmd_stats(cache: Any, args: argparse.Namespace) -> int:
    s = cache.stats(with_disk=True)
    rows = [("directory", cache.dir()),
            ("entries", str(s["entries"])),
            ("bytes", f"{s['bytes']} ({_human(s['bytes'])})"),
            ("max bytes", f"{cache.max_bytes()} ({_human(cache.max_bytes())})"),
            ("hits", str(s["total_hits"])),
            ("misses", str(s["total_misses"])),
            ("stores", str(s["total_stores"])),
            ("evictions", str(s["total_evictions"])),
            ("corrupt removed", str(s["total_corrupt"])),
            ("temp files", str(s["temp_files"]))]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")
    return 0


def _cmd_ls(cache: Any, args: argparse.Namespace) -> int:
    entries, status, diags = cache.list()
    _print_diags(diags)
    for key, size, mtime_ns in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime_ns / 1e9))
        print(f"{key}  {size:>10}  {when}")
    total = sum(e[1] for e in entries)
    print(f"{len(entries)} entries, {_human(total)} (least recently used first)")
    return 0 if status == pipeline.OK else 1


def _cmd_verify(cache: Any, args: argparse.Namespace) -> int:
    good, bad, status, diags = cache.verify(remove_bad=args.remove)
    _print_diags(diags)
    print(f"{good} entries ok, {bad} bad" + (" (removed)" if bad and args.remove else ""))
    return 0 if status == pipeline.OK and bad == 0 else 1


def _cmd_prune(cache: Any, args: argparse.Namespace) -> int:
    removed, freed, status, diags = cache.prune(args.max_bytes)
    _print_diags(diags)
    print(f"removed {removed} entries ({_human(freed)})")
    return 0 if status == pipeline.OK else 1


def _cmd_clear(cache: Any, args: argparse.Namespace) -> int:
    removed, status, diags = cache.clear()
    _print_diags(diags)
    print(f"removed {removed} entries")
    return 0 if status == pipeline.OK else 1


def _cmd_export(cache: Any, args: argparse.Namespace) -> int:
    count, status, diags = cache.export_bundle(args.file)
    _print_diags(diags)
    if status != pipeline.OK:
        return 1
    aot = 0
    if not args.artifacts_only:
        from . import aot_cache

        aot = aot_cache.export_entries(args.file)
    print(f"exported {count} entries to {args.file}"
          + (f" (and {aot} AOTAutogradCache entries from {_aot_dir()})" if aot else ""))
    return 0


def _aot_dir() -> str:
    from . import aot_cache

    return aot_cache.aot_dir()


def _cmd_import(cache: Any, args: argparse.Namespace) -> int:
    imported, rejected, status, diags = cache.import_bundle(args.file)
    _print_diags(diags)
    aot = aot_rejected = 0
    if status == pipeline.OK and not args.artifacts_only:
        from . import aot_cache

        aot, aot_rejected, msgs = aot_cache.import_entries(args.file)
        for m in msgs:
            print(m, file=sys.stderr)
    print(f"imported {imported} entries, rejected {rejected}"
          + (f"; AOTAutogradCache entries: imported {aot} into {_aot_dir()}, rejected "
             f"{aot_rejected}" if aot or aot_rejected else ""))
    return 0 if status == pipeline.OK and rejected == 0 and aot_rejected == 0 else 1


def _cmd_push(cache: Any, args: argparse.Namespace) -> int:
    remote = _remote.get_remote()
    if remote is None:
        print("trnc cache push: no remote cache (set TRNC_REMOTE_CACHE=redis://host:port/db and "
              "TRNC_CACHE_SIGNING_KEY or TRNC_CACHE_SIGNING_KEY_FILE)", file=sys.stderr)
        return 2
    entries, status, diags = cache.list()
    _print_diags(diags)
    stored = present = failed = 0
    for hexkey, _size, _mtime in entries:
        key = bytes.fromhex(hexkey)
        data, diags = cache.entry_bytes(key)
        _print_diags(diags)
        got = remote.put(key, data) if data is not None else None
        if got is None:
            failed += 1
        elif got:
            stored += 1
        else:
            present += 1
    print(f"pushed {stored} entries to {remote.url} ({present} already there, {failed} failed)")
    return 0 if status == pipeline.OK and failed == 0 else 1


def _run(args: argparse.Namespace) -> int:
    cache = _open_for_cli(args)
    if cache is None:
        return 2
    return args.cache_fn(cache, args)


def add_subparser(sub: Any) -> None:
    """Registers ``trnc cache ...`` on the CLI's subparsers."""
    p = sub.add_parser("cache", help="the compiled-artifact cache (stats, ls, verify, prune, "
                       "clear, export, import, push)")
    p.add_argument("--dir", default=None,
                   help="cache directory (default: $TRNC_CACHE_DIR, $XDG_CACHE_HOME/trnc, "
                        "~/.cache/trnc)")
    cs = p.add_subparsers(dest="cache_cmd", required=True)
    cs.add_parser("stats", help="entries, bytes, hits, misses, evictions").set_defaults(
        cache_fn=_cmd_stats)
    cs.add_parser("ls", help="every entry, least recently used first").set_defaults(
        cache_fn=_cmd_ls)
    v = cs.add_parser("verify", help="check every entry; exit status 1 if any is bad")
    v.add_argument("--remove", action="store_true", help="also remove the bad entries")
    v.set_defaults(cache_fn=_cmd_verify)
    pr = cs.add_parser("prune", help="evict least recently used entries down to a size")
    pr.add_argument("--max-bytes", type=_parse_size, required=True,
                    help="size to keep (bytes, or with K/M/G/T)")
    pr.set_defaults(cache_fn=_cmd_prune)
    cs.add_parser("clear", help="remove every entry").set_defaults(cache_fn=_cmd_clear)
    e = cs.add_parser("export", help="write every valid entry into one bundle file, with "
                      "the AOTAutogradCache entries of trnc's graphs (a warm start without "
                      "aot_autograd where the bundle is imported)")
    e.add_argument("file")
    e.add_argument("--artifacts-only", action="store_true",
                   help="leave out the AOTAutogradCache entries")
    e.set_defaults(cache_fn=_cmd_export)
    i = cs.add_parser("import", help="store the entries of a bundle (each verified), and its "
                      "AOTAutogradCache entries in $TORCHINDUCTOR_CACHE_DIR/aotautograd "
                      "(pickles torch loads: import bundles you trust)")
    i.add_argument("file")
    i.add_argument("--artifacts-only", action="store_true",
                   help="leave out the AOTAutogradCache entries")
    i.set_defaults(cache_fn=_cmd_import)
    cs.add_parser("push", help="sign and upload every entry to TRNC_REMOTE_CACHE (entries "
                  "already there stay)").set_defaults(cache_fn=_cmd_push)
    p.set_defaults(fn=_run)
