"""The remote artifact cache on Redis, behind the local directory cache.

``TRNC_REMOTE_CACHE=redis://host:port/db`` (also ``rediss://`` for TLS and
``unix:///path/redis.sock?db=N``) makes every local miss ask Redis before
compiling, and every fresh compile go to Redis as well, so a fleet of
machines compiles each program once. The local cache
(:mod:`trnc.cache`) stays in front: a remote hit is verified, stored locally
and never fetched again by this machine.

Trust model: whoever can write to the Redis server must not be able to feed
a process a program. Every value is therefore signed with HMAC-SHA256 under
a key only the fleet holds, and verified before the entry reaches the C
loader (which checks it again: checksums, key, deserialization, hardware
verification)::

    value = b"TRNCRMT1" || HMAC-SHA256(secret, b"trnc-remote-v1" || cache key || entry) || entry

where *entry* is the local entry file's bytes (header with the cache key,
then the serialized artifact). The cache key is inside the MAC, so a signed
entry cannot be replayed under another key. Unsigned, truncated or
mis-signed values are misses, logged as warnings on the ``trnc.cache``
logger; the program this process then compiles replaces them. Otherwise a
store writes only missing keys (``SET NX``): the first signed entry stays.

The secret: ``TRNC_CACHE_SIGNING_KEY`` (the secret itself, at least 32
bytes; e.g. ``openssl rand -hex 32``), or ``TRNC_CACHE_SIGNING_KEY_FILE``,
a regular file of this user with mode 0600 or 0400 holding it (trailing
whitespace is stripped). A key file that group or others can read or write,
that belongs to another user or that is a symlink is refused. With a remote
cache configured and no usable key the remote cache is **not used at all**
(neither read nor written) and one ``UserWarning`` says why; the local cache
works as before.

An unreachable or failing server is never an error: the lookup is a miss
(one warning), the compile goes on, and the server is not asked again for
``RETRY_AFTER_S`` seconds. ``TRNC_REMOTE_CACHE_TIMEOUT`` (seconds, default
2) bounds every request.

Client: redis-py (the client TorchInductor's own remote cache uses), in
Python beside the local cache's Python driver. No torch import here.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
import threading
import time
import urllib.parse
import warnings

__all__ = ["RemoteCache", "get_remote", "sign", "unsign", "counters", "reset_counters",
           "SigningKeyError", "MAGIC", "RETRY_AFTER_S", "MIN_KEY_BYTES"]

log = logging.getLogger("trnc.cache")

MAGIC = b"TRNCRMT1"
_DOMAIN = b"trnc-remote-v1"
_MAC_BYTES = 32
MIN_KEY_BYTES = 32
RETRY_AFTER_S = 30.0
_PREFIX = "trnc:v1:"

_lock = threading.Lock()
_remotes: dict[tuple[str, ...], "RemoteCache | None"] = {}
_counts = {"remote_hits": 0, "remote_misses": 0, "remote_rejected": 0, "remote_errors": 0,
           "remote_stores": 0}


class SigningKeyError(ValueError):
    """The signing key is missing, too short, or its file is unsafe."""


def counters() -> dict[str, int]:
    """This process's remote lookups: ``remote_hits``, ``remote_misses``,
    ``remote_rejected`` (unsigned, mis-signed or corrupt values),
    ``remote_errors`` (server unreachable or failing) and ``remote_stores``."""
    with _lock:
        return dict(_counts)


def reset_counters() -> None:
    with _lock:
        for k in _counts:
            _counts[k] = 0


def _count(what: str) -> None:
    with _lock:
        _counts[what] += 1


def _read_key_file(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise SigningKeyError(f"cannot open the signing key file {path} ({e.strerror}"
                              f"{'; a symlink is refused' if os.path.islink(path) else ''})")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SigningKeyError(f"the signing key file {path} is not a regular file")
        if st.st_uid != os.getuid():
            raise SigningKeyError(f"the signing key file {path} belongs to uid {st.st_uid}, not "
                                  f"to this user (uid {os.getuid()})")
        if st.st_mode & 0o077:
            raise SigningKeyError(
                f"the signing key file {path} has mode {stat.S_IMODE(st.st_mode):04o}: group "
                f"or others can use it, so the key is not secret. Fix: chmod 600 {path} (and "
                "replace the key if others may have read it)")
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    return data.rstrip()


def signing_key(environ: dict[str, str] | None = None) -> bytes:
    """The HMAC secret from ``TRNC_CACHE_SIGNING_KEY`` or, when that is unset,
    ``TRNC_CACHE_SIGNING_KEY_FILE``. Raises :class:`SigningKeyError` when
    neither is set, the key is shorter than ``MIN_KEY_BYTES``, or the file is
    unsafe (not a regular file of this user, a symlink, or any group/other
    permission bit set)."""
    env = os.environ if environ is None else environ
    raw = env.get("TRNC_CACHE_SIGNING_KEY", "")
    where = "TRNC_CACHE_SIGNING_KEY"
    if raw:
        key = raw.encode()
    elif env.get("TRNC_CACHE_SIGNING_KEY_FILE"):
        where = env["TRNC_CACHE_SIGNING_KEY_FILE"]
        key = _read_key_file(where)
    else:
        raise SigningKeyError("no signing key: set TRNC_CACHE_SIGNING_KEY to a secret of at least "
                              f"{MIN_KEY_BYTES} bytes (e.g. `openssl rand -hex 32`) or "
                              "TRNC_CACHE_SIGNING_KEY_FILE to a 0600 file holding it")
    if len(key) < MIN_KEY_BYTES:
        raise SigningKeyError(f"the signing key in {where} has {len(key)} bytes; at least "
                              f"{MIN_KEY_BYTES} are needed (e.g. `openssl rand -hex 32`)")
    return key


def _mac(secret: bytes, key: bytes, entry: bytes) -> bytes:
    m = hmac.new(secret, _DOMAIN, hashlib.sha256)
    m.update(key)
    m.update(entry)
    return m.digest()


def sign(secret: bytes, key: bytes, entry: bytes) -> bytes:
    """The remote value of ``entry`` (local entry bytes) under cache ``key``."""
    return MAGIC + _mac(secret, key, entry) + entry


def unsign(secret: bytes, key: bytes, value: bytes) -> tuple[bytes | None, str]:
    """``(entry, "")`` when ``value`` is a value :func:`sign` made for ``key``
    with ``secret``; otherwise ``(None, reason)``."""
    head = len(MAGIC) + _MAC_BYTES
    if not value.startswith(MAGIC):
        return None, "not a signed trnc entry (no TRNCRMT1 prefix)"
    if len(value) <= head:
        return None, f"truncated ({len(value)} bytes)"
    from ._trnc import ENTRY_MAX_BYTES  # noqa: PLC0415

    if len(value) > head + ENTRY_MAX_BYTES:
        return None, f"too large ({len(value)} bytes)"
    entry = value[head:]
    if not hmac.compare_digest(value[len(MAGIC):head], _mac(secret, key, entry)):
        return None, "the HMAC-SHA256 signature does not match (another key, or altered)"
    return entry, ""


def redact(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``."""
    u = urllib.parse.urlsplit(url)
    if u.password is None:
        return url
    host = u.netloc.rpartition("@")[2]
    user = u.username or ""
    return urllib.parse.urlunsplit(u._replace(netloc=f"{user}:***@{host}"))


class RemoteCache:
    """One Redis server (``url``) holding signed entries. ``url`` (the
    attribute) is the address without its password, for messages."""

    def __init__(self, url: str, secret: bytes, timeout_s: float = 2.0) -> None:
        import redis  # noqa: PLC0415  (only a process with a remote cache needs it)

        self.url = redact(url)  # for messages: no password
        self._secret = secret
        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s,
                                            socket_connect_timeout=timeout_s)
        self._errors = (redis.RedisError, OSError)
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._bad: set[bytes] = set()  # keys whose value was rejected: a store replaces it

    @staticmethod
    def redis_key(key: bytes) -> str:
        return _PREFIX + key.hex()

    def _up(self) -> bool:
        with self._lock:
            return time.monotonic() >= self._down_until

    def _failed(self, what: str, e: BaseException) -> None:
        with self._lock:
            first = time.monotonic() >= self._down_until
            self._down_until = time.monotonic() + RETRY_AFTER_S
        _count("remote_errors")
        if first:
            log.warning("trnc remote cache: %s %s failed (%s: %s); compiling locally, next "
                        "attempt in %.0f s", what, self.url, type(e).__name__, e, RETRY_AFTER_S)

    def get(self, key: bytes) -> bytes | None:
        """The entry bytes of ``key`` with their signature verified, or None
        (a miss: absent, rejected, or the server failed; each logged except
        absent). The caller loads the entry and reports :meth:`loaded` or
        :meth:`rejected`."""
        if not self._up():
            _count("remote_misses")
            return None
        try:
            value = self._client.get(self.redis_key(key))
        except self._errors as e:
            self._failed("GET from", e)
            _count("remote_misses")
            return None
        if value is None:
            _count("remote_misses")
            return None
        entry, why = unsign(self._secret, key, bytes(value))
        if entry is None:
            _count("remote_misses")
            self._reject(key, why)
        return entry

    def _reject(self, key: bytes, why: str) -> None:
        with self._lock:
            self._bad.add(key)
        _count("remote_rejected")
        log.warning("trnc remote cache: rejected %s at %s: %s; compiling instead",
                    self.redis_key(key), self.url, why)

    def rejected(self, key: bytes, why: str) -> None:
        """Counts and logs a signed entry from :meth:`get` that the local
        loader refused (its store then replaces it)."""
        _count("remote_misses")
        self._reject(key, f"signed, but {why}")

    @staticmethod
    def loaded(key: bytes) -> None:
        """Counts an entry from :meth:`get` that the local loader accepted."""
        _count("remote_hits")

    def put(self, key: bytes, entry: bytes, replace: bool = False) -> bool | None:
        """Stores the signed entry unless the key holds one already (a value
        this process rejected is replaced, and so is any value with
        ``replace``: the same program's entry with the host code this process
        compiled for it, ``cache.store_host_code``). True: stored; False: an
        entry was there; None: the server failed (logged)."""
        if not self._up():
            return None
        with self._lock:
            replace = replace or key in self._bad
            self._bad.discard(key)
        try:
            stored = self._client.set(self.redis_key(key), sign(self._secret, key, entry),
                                      nx=not replace)
        except self._errors as e:
            self._failed("SET to", e)
            return None
        if stored:
            _count("remote_stores")
        return bool(stored)

    def remove(self, key: bytes) -> bool:
        """Deletes key's entry (an artifact that failed to run). False if the
        server failed (logged)."""
        if not self._up():
            return False
        try:
            self._client.delete(self.redis_key(key))
        except self._errors as e:
            self._failed("DEL at", e)
            return False
        return True


def _env_key() -> tuple[str, ...]:
    return tuple(os.environ.get(k, "") for k in
                 ("TRNC_REMOTE_CACHE", "TRNC_CACHE_SIGNING_KEY", "TRNC_CACHE_SIGNING_KEY_FILE",
                  "TRNC_REMOTE_CACHE_TIMEOUT"))


def _timeout() -> float:
    raw = os.environ.get("TRNC_REMOTE_CACHE_TIMEOUT", "").strip()
    if not raw:
        return 2.0
    try:
        t = float(raw)
    except ValueError:
        t = -1.0
    if not t > 0:
        raise ValueError(f"TRNC_REMOTE_CACHE_TIMEOUT={raw!r} is not a positive number of seconds")
    return t


def _open() -> RemoteCache | None:
    url = os.environ.get("TRNC_REMOTE_CACHE", "").strip()
    if not url:
        return None
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"TRNC_REMOTE_CACHE={redact(url)!r} is not a Redis URL "
                         "(redis://host:port/db, rediss://... or unix:///path?db=N)")
    try:
        secret = signing_key()
    except SigningKeyError as e:
        raise SigningKeyError(f"TRNC_REMOTE_CACHE is set but {e}; without it a shared store could "
                              "hand this process a program, so the remote cache is not used "
                              "(the local cache still is)") from None
    try:
        import redis  # noqa: F401, PLC0415
    except ImportError:
        raise ImportError("TRNC_REMOTE_CACHE is set but the redis package is not installed "
                          "(pip install 'trnc[remote]'); the remote cache is not used") from None
    return RemoteCache(url, secret, _timeout())


def get_remote() -> RemoteCache | None:
    """The process's remote cache for the current environment, or None (not
    configured, or refused: one ``UserWarning`` says why)."""
    env = _env_key()
    with _lock:
        if env in _remotes:
            return _remotes[env]
    try:
        r = _open()
    except (ValueError, ImportError) as e:
        msg = str(e)
        if not msg.startswith("TRNC_"):
            msg = f"TRNC_REMOTE_CACHE: {msg}"
        warnings.warn(f"trnc: {msg}", UserWarning, stacklevel=3)
        r = None
    with _lock:
        return _remotes.setdefault(env, r)


def _clear() -> None:
    """Forgets the opened remotes (tests change the environment)."""
    with _lock:
        _remotes.clear()
