"""trnc's programs in torch's MegaCache (``torch.compiler.save_cache_artifacts``).

torch collects the artifacts of its caches (Inductor, AOTAutograd, autotune,
PGO, ...) in ``torch.compiler._cache.CacheArtifactManager``;
``save_cache_artifacts()`` serializes them into one blob and
``load_cache_artifacts(blob)`` writes each back into its cache through the
artifact type's ``populate_cache``. trnc registers the type ``"trnc"``: every
entry a process compiles or loads from trnc's cache (local or remote) is
recorded, keyed by its cache key (hex), with the entry's bytes as content.
Loading stores each one in the local cache after the same full check an
entry on disk gets (checksums, key, deserialization, hardware verification);
a rejected one is logged and skipped, the others still load.

torch's loader must know every type in a blob before it reads any of it (an
unknown type drops the whole blob, Inductor's artifacts included, with the
warning "Failed to un-pickle cache artifacts"): ``import trnc`` in a process
that has imported torch registers the type, and so does loading trnc's
backend.
"""

from __future__ import annotations

import logging

from torch.compiler._cache import CacheArtifact, CacheArtifactFactory, CacheArtifactManager

from . import cache

__all__ = ["TrncCacheArtifact"]

log = logging.getLogger("trnc.cache")


@CacheArtifactFactory.register
class TrncCacheArtifact(CacheArtifact):
    """One trnc cache entry: ``key`` its cache key in hex, ``content`` the
    entry's bytes (header and serialized artifact).

    An entry this process recorded is read again when torch serializes it
    (``save_cache_artifacts``): by then the simulator's JIT may have compiled
    its program to host code, which ``cache.entry_now`` stores first, so the
    blob carries the machine code and a process on the same kind of CPU that
    loads it compiles nothing (on another CPU the host code is a miss, and the
    program is compiled there)."""

    @property  # type: ignore[override]
    def content(self) -> bytes:
        if getattr(self, "_recorded", False):
            now = cache.entry_now(bytes.fromhex(self.key))
            if now is not None:
                object.__setattr__(self, "_content", now)
        return self._content

    @content.setter
    def content(self, value: bytes) -> None:
        object.__setattr__(self, "_content", value)

    def populate_cache(self) -> None:
        c = cache.get_cache()
        if c is None:
            log.warning("trnc: not loading MegaCache entry %s: the artifact cache is disabled "
                        "(TRNC_CACHE=0) or its directory was refused", self.key)
            return
        try:
            key = bytes.fromhex(self.key)
        except ValueError:
            key = b""
        if len(key) != 16:
            log.warning("trnc: rejected MegaCache entry %r: not a trnc cache key", self.key)
            return
        compiled, got, status, diags = c.put_entry(self.content, key=key, load=False)
        if got is None:
            log.warning("trnc: rejected MegaCache entry %s: %s", self.key,
                        "; ".join(d.get("message", "") for d in diags) or status)
        else:
            for d in diags:
                log.warning("%s", d.get("message", ""))

    @staticmethod
    def type() -> str:
        return "trnc"


def _record(key: bytes, entry: bytes) -> None:
    """Records an entry, once while it waits to be serialized: a later
    version of it (with host code) is what ``TrncCacheArtifact.content``
    reads when torch serializes."""
    kind, hexkey = TrncCacheArtifact.type(), key.hex()
    if any(a.key == hexkey for a in CacheArtifactManager._new_cache_artifacts.get(kind, ())):
        return
    CacheArtifactManager.record_artifact(kind, hexkey, entry)
    for a in CacheArtifactManager._new_cache_artifacts.get(kind, ()):
        if a.key == hexkey:
            object.__setattr__(a, "_recorded", True)


cache.add_entry_listener(_record)
