"""The remote artifact cache on Redis (issue 15): signed entries, sharing
between processes with separate local caches, a server that goes away,
tampered values, the signing key's rules.

The tests start their own ``redis-server`` (Debian package ``redis-server``,
installed by the Makefile) on 127.0.0.1 at a free port with a temporary
directory, and stop it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import trnc
from trnc import cache as tcache
from trnc import remote

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="C extension not built")

redis = pytest.importorskip("redis", reason="redis-py not installed (make install installs it)")
REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
needs_server = pytest.mark.skipif(
    REDIS_SERVER is None, reason="redis-server not installed (the Makefile's APT_PACKAGES has it)")

SECRET = "0123456789abcdef0123456789abcdef-test-key"
TESTS = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A private redis-server on 127.0.0.1 (no persistence)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {self.port}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def client(self):
        return redis.Redis.from_url(self.url, socket_timeout=2)


@pytest.fixture
def server(tmp_path):
    s = RedisServer(tmp_path / "redis")
    s.start()
    yield s
    s.stop()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fresh local cache directory, no remote, no key."""
    for k in ("TRNC_CACHE", "TRNC_REMOTE_CACHE", "TRNC_CACHE_SIGNING_KEY",
              "TRNC_CACHE_SIGNING_KEY_FILE", "TRNC_REMOTE_CACHE_TIMEOUT", "TRNC_TARGET"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path / "local0"))
    remote._clear()
    yield monkeypatch
    remote._clear()


def use_remote(monkeypatch, url: str, local: Path) -> None:
    monkeypatch.setenv("TRNC_REMOTE_CACHE", url)
    monkeypatch.setenv("TRNC_CACHE_SIGNING_KEY", SECRET)
    monkeypatch.setenv("TRNC_CACHE_DIR", str(local))


class Net(torch.nn.Module):
    def __init__(self, width: int = 16):
        super().__init__()
        self.fc = torch.nn.Linear(8, width)
        self.proj = torch.nn.Linear(width, 4)

    def forward(self, x):
        return self.proj(torch.relu(self.fc(x))) * 2.0


def run_compiled(model, x):
    torch._dynamo.reset()
    with torch.no_grad():
        return torch.compile(model, backend="neuron", dynamic=False)(x)


# --------------------------------------------------------------------------- #
# signing


def test_sign_and_unsign():
    secret, key, entry = SECRET.encode(), bytes(range(16)), b"trncache" + os.urandom(200)
    value = remote.sign(secret, key, entry)
    assert value.startswith(remote.MAGIC) and value.endswith(entry)
    assert remote.unsign(secret, key, value) == (entry, "")
    flipped = bytearray(value)
    flipped[-1] ^= 1
    bad = {
        "altered entry": bytes(flipped),
        "another key": remote.sign(b"x" * 40, key, entry),
        "replayed under another cache key": remote.sign(secret, bytes(16), entry),
        "unsigned": entry,
        "truncated": value[:30],
        "empty": b"",
    }
    for what, v in bad.items():
        got, why = remote.unsign(secret, key, v)
        assert got is None and why, what
    assert "signature" in remote.unsign(secret, key, bytes(flipped))[1]
    assert "not a signed" in remote.unsign(secret, key, entry)[1]


def test_signing_key_rules(tmp_path):
    with pytest.raises(remote.SigningKeyError, match="no signing key"):
        remote.signing_key({})
    with pytest.raises(remote.SigningKeyError, match="at least 32"):
        remote.signing_key({"TRNC_CACHE_SIGNING_KEY": "short"})
    assert remote.signing_key({"TRNC_CACHE_SIGNING_KEY": SECRET}) == SECRET.encode()

    f = tmp_path / "key"
    f.write_text(SECRET + "\n")
    for mode in (0o644, 0o640, 0o604, 0o660):
        f.chmod(mode)
        with pytest.raises(remote.SigningKeyError, match=f"mode {mode:04o}.*chmod 600"):
            remote.signing_key({"TRNC_CACHE_SIGNING_KEY_FILE": str(f)})
    for mode in (0o600, 0o400):
        f.chmod(mode)
        assert remote.signing_key({"TRNC_CACHE_SIGNING_KEY_FILE": str(f)}) == SECRET.encode()
    link = tmp_path / "link"
    link.symlink_to(f)
    with pytest.raises(remote.SigningKeyError, match="symlink"):
        remote.signing_key({"TRNC_CACHE_SIGNING_KEY_FILE": str(link)})
    with pytest.raises(remote.SigningKeyError, match="not a regular file"):
        remote.signing_key({"TRNC_CACHE_SIGNING_KEY_FILE": str(tmp_path)})
    # the variable wins over the file
    assert remote.signing_key({"TRNC_CACHE_SIGNING_KEY": "k" * 32,
                               "TRNC_CACHE_SIGNING_KEY_FILE": str(link)}) == b"k" * 32


def test_remote_without_key_is_refused_with_a_warning(env, tmp_path):
    env.setenv("TRNC_REMOTE_CACHE", "redis://127.0.0.1:1/0")
    with pytest.warns(UserWarning, match="TRNC_REMOTE_CACHE is set but no signing key.*not used"):
        assert remote.get_remote() is None
    remote._clear()
    f = tmp_path / "loose"
    f.write_text(SECRET)
    f.chmod(0o644)
    env.setenv("TRNC_CACHE_SIGNING_KEY_FILE", str(f))
    with pytest.warns(UserWarning, match="mode 0644"):
        assert remote.get_remote() is None
    # the local cache still works: the model compiles and runs
    torch.manual_seed(0)
    m, x = Net(), torch.randn(3, 8)
    torch.testing.assert_close(run_compiled(m, x), m(x))
    assert trnc.stats()["compiles"] == 1 and trnc.stats()["remote_misses"] == 0


def test_password_is_not_in_messages():
    assert remote.redact("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert remote.redact("rediss://bob:s3cret@h:1/2") == "rediss://bob:***@h:1/2"
    assert remote.redact("redis://host:6379/0") == "redis://host:6379/0"
    r = remote.RemoteCache("redis://:s3cret@127.0.0.1:1/0", SECRET.encode(), timeout_s=0.2)
    assert "s3cret" not in r.url


def test_bad_remote_url_is_refused(env):
    env.setenv("TRNC_REMOTE_CACHE", "http://127.0.0.1:6379")
    env.setenv("TRNC_CACHE_SIGNING_KEY", SECRET)
    with pytest.warns(UserWarning, match="not a Redis URL"):
        assert remote.get_remote() is None


# --------------------------------------------------------------------------- #
# a real server

PROGRAM = textwrap.dedent("""
    import json, sys, torch, trnc
    sys.path.insert(0, {tests!r})
    from test_remote_cache import Net
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(3, 8)
    opt = torch.compile(m, backend="neuron", dynamic=False)
    y = opt(x)                       # forward and backward graphs
    y.sum().backward()
    y_eager = m(x)
    print(json.dumps({{"stats": trnc.stats(), "y": y.detach().flatten().tolist(),
                      "y_eager": y_eager.detach().flatten().tolist(),
                      "grad": m.fc.weight.grad.flatten().tolist()}}))
""")


def run_program(local: Path, url: str, secret: str = SECRET) -> dict:
    env = dict(os.environ, TRNC_CACHE_DIR=str(local), TRNC_REMOTE_CACHE=url,
               TRNC_CACHE_SIGNING_KEY=secret)
    env.pop("TRNC_CACHE_SIGNING_KEY_FILE", None)
    p = subprocess.run([sys.executable, "-c", PROGRAM.format(tests=str(TESTS))], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["stderr"] = p.stderr
    return out


@needs_server
def test_two_processes_share_through_redis(server, tmp_path):
    first = run_program(tmp_path / "a", server.url)
    s1 = first["stats"]
    assert s1["compiles"] == 2 and s1["remote_misses"] == 2 and s1["remote_stores"] == 2
    keys = server.client().keys("trnc:v1:*")
    assert len(keys) == 2
    # another machine: an empty local cache, the same Redis
    second = run_program(tmp_path / "b", server.url)
    s2 = second["stats"]
    assert s2["compiles"] == 0 and s2["remote_hits"] == 2 and s2["hits"] == 2
    assert s2["remote_rejected"] == 0 and s2["forward"] == 1 and s2["backward"] == 1
    assert second["y"] == first["y"] and second["grad"] == first["grad"]
    torch.testing.assert_close(torch.tensor(second["y"]), torch.tensor(second["y_eager"]))
    # the remote hits were stored locally: a third run there never asks Redis
    server.stop()
    third = run_program(tmp_path / "b", server.url)
    s3 = third["stats"]
    assert s3["compiles"] == 0 and s3["hits"] == 2 and s3["remote_hits"] == 0
    assert s3["remote_errors"] == 0 and third["y"] == first["y"]


@needs_server
def test_another_signing_key_is_rejected_and_logged(server, tmp_path):
    run_program(tmp_path / "a", server.url)
    other = run_program(tmp_path / "b", server.url, secret="z" * 40)
    s = other["stats"]
    assert s["compiles"] == 2 and s["remote_hits"] == 0 and s["remote_rejected"] == 2
    assert other["stderr"].count("signature does not match") == 2
    torch.testing.assert_close(torch.tensor(other["y"]), torch.tensor(other["y_eager"]))


@needs_server
def test_server_stopped_mid_run(server, env, tmp_path, caplog):
    use_remote(env, server.url, tmp_path / "local")
    torch.manual_seed(0)
    m, x = Net(), torch.randn(3, 8)
    torch.testing.assert_close(run_compiled(m, x), m(x))
    assert trnc.stats()["remote_stores"] == 1
    server.stop()
    m2, x2 = Net(width=24), torch.randn(5, 8)
    with caplog.at_level(logging.WARNING, logger="trnc.cache"):
        torch.testing.assert_close(run_compiled(m2, x2), m2(x2))  # no error
        m3 = Net(width=32)
        torch.testing.assert_close(run_compiled(m3, x2), m3(x2))
    s = trnc.stats()
    assert s["compiles"] == 3 and s["remote_errors"] == 1 and s["remote_misses"] == 3
    warned = [r.getMessage() for r in caplog.records
              if r.name == "trnc.cache" and "remote cache" in r.getMessage()]
    assert len(warned) == 1 and "GET from" in warned[0] and "compiling locally" in warned[0]


@needs_server
def test_tampered_values_are_rejected_and_logged(server, env, tmp_path, caplog):
    use_remote(env, server.url, tmp_path / "local-a")
    torch.manual_seed(0)
    m, x = Net(), torch.randn(3, 8)
    want = m(x)
    run_compiled(m, x)
    client = server.client()
    (rkey,) = client.keys("trnc:v1:*")
    good = client.get(rkey)
    key = bytes.fromhex(rkey.decode().removeprefix("trnc:v1:"))
    head = len(remote.MAGIC) + 32
    entry = good[head:]
    corrupt_entry = entry[:100] + bytes([entry[100] ^ 0x40]) + entry[101:]
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    variants = {
        "altered after signing": (flipped, "signature does not match"),
        "unsigned entry": (entry, "not a signed trnc entry"),
        "signed with another key": (remote.sign(b"q" * 40, key, entry), "signature does not match"),
        "garbage": (os.urandom(300), "not a signed trnc entry"),
        "truncated": (good[:head], "truncated"),
        # a holder of the key that signed a corrupt entry: the loader refuses it
        "signed corrupt entry": (remote.sign(SECRET.encode(), key, corrupt_entry), "signed, but"),
        "signed entry of another key": (remote.sign(SECRET.encode(), key,
                                                    entry[:16] + bytes(16) + entry[32:]),
                                        "signed, but"),
    }
    for i, (what, (value, reason)) in enumerate(variants.items()):
        client.set(rkey, value)
        env.setenv("TRNC_CACHE_DIR", str(tmp_path / f"local-{i}"))
        trnc.reset()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="trnc.cache"):
            torch.testing.assert_close(run_compiled(m, x), want)
        s = trnc.stats()
        assert s["compiles"] == 1 and s["remote_rejected"] == 1 and s["remote_hits"] == 0, what
        msgs = [r.getMessage() for r in caplog.records if r.name == "trnc.cache"]
        assert any("rejected" in t and reason in t for t in msgs), (what, msgs)
        # the fresh compile replaced the rejected value with a good one
        assert remote.unsign(SECRET.encode(), key, client.get(rkey))[0] is not None, what
    # and a good value is a hit again
    env.setenv("TRNC_CACHE_DIR", str(tmp_path / "local-final"))
    trnc.reset()
    torch.testing.assert_close(run_compiled(m, x), want)
    assert trnc.stats()["remote_hits"] == 1 and trnc.stats()["compiles"] == 0


def test_put_entry_checks(env, tmp_path):
    """Cache.put_entry (the C loader behind remote and MegaCache entries)."""
    from trnc import _trnc, pipeline

    from test_cache import GOLDEN

    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    key, _, _ = _trnc.cache_key(lowered.graph)
    a, _, _ = _trnc.open_cache(dir=str(tmp_path / "a"))
    assert a.entry_bytes(key) == (None, [])
    assert a.put(key, pipeline.compile_program(lowered))[0] == "TRNC_OK"
    entry, diags = a.entry_bytes(key)
    assert entry is not None and diags == [] and entry[:8] == b"trncache"
    b, _, _ = _trnc.open_cache(dir=str(tmp_path / "b"))
    compiled, got, status, diags = b.put_entry(entry, key=bytes(16))
    assert compiled is None and got is None and status == "TRNC_ERR_MALFORMED"
    assert "key" in diags[0]["message"]
    compiled, got, status, diags = b.put_entry(entry[:-1])
    assert compiled is None and got is None and "rejected" in diags[0]["message"]
    compiled, got, status, diags = b.put_entry(entry, key=key)
    assert status == "TRNC_OK" and got == key and compiled is not None and diags == []
    assert len(list((tmp_path / "b").glob("??/??/*.trnc"))) == 1
    c, _, _ = _trnc.open_cache(dir=str(tmp_path / "b"))
    assert c.get(key)[0] is not None


@needs_server
def test_push_uploads_local_entries(server, env, tmp_path, capsys):
    from trnc.cli import main as cli_main

    torch.manual_seed(0)
    m, x = Net(), torch.randn(3, 8)
    run_compiled(m, x)  # local only: no remote configured yet
    assert server.client().keys("trnc:v1:*") == []
    assert cli_main(["cache", "push"]) == 2
    assert "no remote cache" in capsys.readouterr().err
    use_remote(env, server.url, tmp_path / "local0")
    assert cli_main(["cache", "push"]) == 0
    assert "pushed 1 entries" in capsys.readouterr().out
    assert len(server.client().keys("trnc:v1:*")) == 1
    assert cli_main(["cache", "push"]) == 0
    out = capsys.readouterr().out
    assert "pushed 0 entries" in out and "1 already there" in out
    env.setenv("TRNC_CACHE_DIR", str(tmp_path / "elsewhere"))
    trnc.reset()
    torch.testing.assert_close(run_compiled(m, x), m(x))
    assert trnc.stats()["remote_hits"] == 1 and trnc.stats()["compiles"] == 0


@needs_server
def test_discard_removes_the_remote_entry_too(server, env, tmp_path):
    from trnc import pipeline

    from test_cache import GOLDEN

    use_remote(env, server.url, tmp_path / "local")
    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    compiled, outcome = tcache.compile_program(lowered, {})
    assert outcome == "miss" and len(server.client().keys("trnc:v1:*")) == 1
    assert tcache.discard(compiled)
    assert server.client().keys("trnc:v1:*") == []
    assert not list((tmp_path / "local").glob("??/??/*.trnc"))


HOST_PROGRAM = textwrap.dedent("""
    import json, torch, trnc
    f = torch.compile(lambda x: torch.tanh(x) * 3 + 1, backend="neuron", dynamic=False)
    x = torch.arange(160, dtype=torch.float32).reshape(4, 40) / 40 - 2
    y = f(x)
    s = trnc.stats()
    print(json.dumps({"bits": y.view(torch.int32).tolist(), "jit_compiles": s["jit_compiles"],
                      "compiles": s["compiles"], "remote_hits": s["remote_hits"],
                      "jit_s": trnc.last_report()["jit_s"]}))
""")


@needs_server
def test_host_code_reaches_redis(server, tmp_path):
    """A process whose program ran on the JIT replaces its Redis entry at
    exit with the one carrying the machine code; a process on this host with
    an empty local cache then loads that code instead of compiling it."""
    def run(local: Path, **extra: str) -> dict:
        env = dict(os.environ, TRNC_CACHE_DIR=str(local), TRNC_REMOTE_CACHE=server.url,
                   TRNC_CACHE_SIGNING_KEY=SECRET, **extra)
        for k in ("TRNC_CACHE_SIGNING_KEY_FILE", "TRNC_JIT_AFTER_MS", *(
                () if "TRNC_SIM" in extra else ("TRNC_SIM",))):
            env.pop(k, None)
        p = subprocess.run([sys.executable, "-c", HOST_PROGRAM], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run(tmp_path / "a", TRNC_SIM="jit")
    assert first["compiles"] == 1 and first["jit_compiles"] >= 1
    second = run(tmp_path / "b")
    assert second["compiles"] == 0 and second["remote_hits"] == 1, second
    assert second["jit_compiles"] == 0 and second["jit_s"] > 0, second  # loaded, not compiled
    assert second["bits"] == first["bits"]
