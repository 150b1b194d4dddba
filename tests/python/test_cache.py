"""The artifact cache (issue 6): keys, hits across processes, faults, concurrency,
permissions, the ``trnc cache`` command.

Every test points TRNC_CACHE_DIR at its own temporary directory.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import trnc
from trnc import cache as tcache
from trnc.cli import main as cli_main

from conftest import REPO, has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="C extension not built")

GOLDEN = REPO / "tests" / "golden" / "mlp_forward.pb"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("TRNC_CACHE_DIR", str(d))
    monkeypatch.delenv("TRNC_CACHE", raising=False)
    monkeypatch.delenv("TRNC_CACHE_MAX_BYTES", raising=False)
    monkeypatch.delenv("TRNC_CACHE_TEST_PAUSE_MS", raising=False)
    monkeypatch.delenv("TRNC_TARGET", raising=False)
    return d


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("??/??/*.trnc"))


def temps(d: Path) -> list[Path]:
    return sorted(d.glob("??/??/.tmp-*"))


class Net(torch.nn.Module):
    def __init__(self, names=("fc", "proj")):
        super().__init__()
        self.names = names
        setattr(self, names[0], torch.nn.Linear(8, 16))
        setattr(self, names[1], torch.nn.Linear(16, 4))

    def forward(self, x):
        a, b = (getattr(self, n) for n in self.names)
        return b(torch.relu(a(x))) * 2.0


def compile_and_run(model, x, **options):
    torch._dynamo.reset()
    with torch.no_grad():
        return torch.compile(model, backend="neuron", dynamic=False,
                             options=options or None)(x)


def counts():
    s = trnc.stats()
    return s["hits"], s["misses"], s["compiles"]


# --------------------------------------------------------------------------- #
# keys: what hits and what misses


def test_hits_and_misses(cache_dir):
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(3, 8)
    y0 = compile_and_run(m, x)
    assert counts() == (0, 1, 1)
    assert len(entries(cache_dir)) == 1
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert trnc.last_report()["cache"] == "miss"

    y1 = compile_and_run(m, x)  # same graph again: a hit, nothing compiled
    assert counts() == (1, 1, 1)
    assert trnc.last_report()["cache"] == "hit"
    torch.testing.assert_close(y0, y1, rtol=0, atol=0)

    # renamed modules: different FX node names, same math -> hit
    r = Net(names=("encoder_layer", "head"))
    r.load_state_dict({k.replace("fc.", "encoder_layer.").replace("proj.", "head."): v
                       for k, v in m.state_dict().items()})
    y2 = compile_and_run(r, x)
    assert counts() == (2, 1, 1)
    torch.testing.assert_close(y0, y2, rtol=0, atol=0)

    # each of these is a different artifact: a miss and a compile
    misses = [
        ("no_fusion", lambda: compile_and_run(m, x, no_fusion=True)),
        ("autocast_bf16", lambda: compile_and_run(m, x, autocast_bf16=True)),
        ("target", lambda: compile_and_run(m, x, target="trn3")),
        ("input dim", lambda: compile_and_run(m, torch.randn(5, 8))),
        ("input strides", lambda: compile_and_run(m, torch.randn(8, 3).t())),
    ]
    for i, (what, fn) in enumerate(misses):
        fn()
        assert counts() == (2, 2 + i, 2 + i), what
    assert len(entries(cache_dir)) == 1 + len(misses)
    # and each of those now hits
    compile_and_run(m, torch.randn(8, 3).t())
    assert counts() == (3, 1 + len(misses), 1 + len(misses))


def test_disabled(cache_dir, monkeypatch):
    monkeypatch.setenv("TRNC_CACHE", "0")
    m, x = Net(), torch.randn(2, 8)
    compile_and_run(m, x)
    compile_and_run(m, x)
    assert counts() == (0, 0, 2)
    assert not cache_dir.exists()
    assert trnc.last_report()["cache"] == "off"


def test_failed_compile_not_cached(cache_dir):
    class Bad(torch.nn.Module):
        def forward(self, x):
            return torch.geqrf(x)[0]  # no lowering

    with pytest.raises(Exception, match="cannot lower"):
        compile_and_run(Bad(), torch.randn(4, 4))
    assert entries(cache_dir) == []
    assert counts()[2] == 0


# --------------------------------------------------------------------------- #
# a new process compiles nothing


PROGRAM = textwrap.dedent("""
    import json, sys, torch, trnc
    sys.path.insert(0, {tests!r})
    from test_cache import Net
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(3, 8)
    with torch.no_grad():
        y = torch.compile(m, backend="neuron", dynamic=False)(x)
    print(json.dumps({{"stats": trnc.stats(), "y": y.flatten().tolist()}}))
""")


def run_program(env: dict[str, str], timeout: float = 120) -> dict:
    import json

    code = PROGRAM.format(tests=str(Path(__file__).parent))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_new_process_only_hits(cache_dir):
    env = dict(os.environ)
    first = run_program(env)
    assert first["stats"]["compiles"] >= 1 and first["stats"]["hits"] == 0
    second = run_program(env)
    s = second["stats"]
    assert s["compiles"] == 0 and s["misses"] == 0 and s["hits"] == first["stats"]["compiles"]
    assert second["y"] == first["y"]
    # the persisted counters of both processes add up (`trnc cache stats`)
    total = tcache.get_cache().stats(with_disk=True)
    assert total["total_hits"] == s["hits"] and total["total_misses"] == first["stats"]["misses"]
    assert total["entries"] == first["stats"]["compiles"]


# --------------------------------------------------------------------------- #
# faults


def stored_key(cache_dir: Path) -> tuple[bytes, Path, bytes]:
    """Compiles the golden MLP into the cache; its key, path and bytes."""
    from trnc import _trnc, pipeline

    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    key, status, _ = _trnc.cache_key(lowered.graph)
    cache, status, diags = _trnc.open_cache()
    assert status == "TRNC_OK", diags
    compiled = pipeline.compile_program(lowered)
    assert cache.put(key, compiled)[0] == "TRNC_OK"
    path = cache_dir / key.hex()[:2] / key.hex()[2:4] / f"{key.hex()}.trnc"
    return key, path, path.read_bytes()


def fresh_get(key: bytes):
    from trnc import _trnc

    cache, _, _ = _trnc.open_cache()
    return cache.get(key)


def test_corrupt_entries_are_misses_and_removed(cache_dir):
    key, path, good = stored_key(cache_dir)
    compiled, diags = fresh_get(key)
    assert compiled is not None and diags == []
    n = len(good)
    variants = [good[:k] for k in (0, 7, 32, 63, 64, 65, n // 2, n - 1)]
    variants += [good[:i] + bytes([good[i] ^ 0x20]) + good[i + 1:] for i in (5, 20, 44, 60)]
    variants += [good[:i] + bytes([good[i] ^ 0x01]) + good[i + 1:] for i in (64, n // 2, n - 1)]
    variants.append(os.urandom(n))
    for i, bad in enumerate(variants):
        path.write_bytes(bad)
        compiled, diags = fresh_get(key)
        assert compiled is None, i
        assert any("removed a corrupt entry" in d["message"] for d in diags), (i, diags)
        assert not path.exists(), i
    path.write_bytes(good)
    assert fresh_get(key)[0] is not None


LIGHT = textwrap.dedent("""
    from trnc import _trnc, pipeline
    lowered = pipeline.lower(open({golden!r}, "rb").read(), "mlp")
    key, _, _ = _trnc.cache_key(lowered.graph)
    cache, status, diags = _trnc.open_cache()
    assert cache is not None, diags
    compiled, diags = cache.get(key)
    assert not diags, diags
    if compiled is None:
        status, diags = cache.put(key, pipeline.compile_program(lowered))
        assert status == "TRNC_OK", diags
    print("hit" if compiled is not None else "compiled")
""")


def test_sigkill_mid_write_leaves_no_entry(cache_dir):
    """A writer killed between writing its temporary file and the rename (the
    TRNC_CACHE_TEST_PAUSE_MS hook) leaves no entry; its debris breaks nothing."""
    code = LIGHT.format(golden=str(GOLDEN))
    env = dict(os.environ, TRNC_CACHE_TEST_PAUSE_MS="60000")
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while not temps(cache_dir) and time.time() < deadline and p.poll() is None:
            time.sleep(0.02)
        assert temps(cache_dir), "the writer never reached the paused write"
        assert temps(cache_dir)[0].stat().st_size > 64  # written and fsync'd, not renamed
        assert entries(cache_dir) == []
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert entries(cache_dir) == []
    assert len(temps(cache_dir)) == 1  # the debris of the killed write
    # later runs are unaffected: the next compiles and stores, the one after hits
    env.pop("TRNC_CACHE_TEST_PAUSE_MS")
    for want in ("compiled", "hit"):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == want, r.stderr
    r = subprocess.run([sys.executable, "-m", "trnc.cli", "cache", "verify"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "1 entries ok, 0 bad" in r.stdout, r.stdout + r.stderr
    # the next store removed the debris: its writer's pid is dead, on this host
    assert temps(cache_dir) == []


KILLED = textwrap.dedent("""
    import os, signal
    from trnc import _trnc
    cache, status, diags = _trnc.open_cache()
    assert cache is not None, diags
    for i in range(10):
        compiled, diags = cache.get(bytes([i]) * 16)
        assert compiled is None
    os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no destroy: no final flush
""")


def test_killed_process_counters_persisted(cache_dir):
    """The persisted counters of a process that is killed right after its
    lookups stay within a few events of the truth (they used to be written at
    most once a second, so all 10 misses were lost)."""
    p = subprocess.run([sys.executable, "-c", KILLED], env=dict(os.environ),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    total = tcache.get_cache().stats(with_disk=True)
    assert total["total_misses"] >= 10 - 3, total


def test_stats_ignores_fifo(cache_dir):
    """A FIFO (or any non-regular file) in stats/ does not make ``trnc cache
    stats`` hang: stats files are opened non-blocking and must be regular."""
    (cache_dir / "stats").mkdir(parents=True, mode=0o700)
    os.chmod(cache_dir, 0o700)
    os.mkfifo(cache_dir / "stats" / "p.1.0000000000000000.host")
    os.symlink("/dev/zero", cache_dir / "stats" / "p.2.0000000000000000.host")
    r = subprocess.run([sys.executable, "-m", "trnc.cli", "cache", "stats"], env=dict(os.environ),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "entries" in r.stdout, r.stdout + r.stderr


def test_planted_entry_in_foreign_shard_is_a_miss(cache_dir):
    """A valid entry planted in a shard directory owned by another user (or
    one that is a symlink) is not loaded: it would have returned the
    planter's numbers. A miss with one warning; the entry is left alone."""
    key, path, good = stored_key(cache_dir)
    assert fresh_get(key)[0] is not None
    shard = path.parent
    checks = []
    if os.geteuid() == 0:  # CI runs as root: chown to another uid works
        checks.append(("owned by another user", lambda: os.chown(shard, 12345, 12345),
                       lambda: os.chown(shard, 0, 0)))
        checks.append(("owned by another user", lambda: os.chown(path, 12345, 12345),
                       lambda: os.chown(path, 0, 0)))
    checks.append(("writable by group or others", lambda: os.chmod(shard, 0o777),
                   lambda: os.chmod(shard, 0o700)))
    elsewhere = cache_dir.parent / "elsewhere"
    checks.append(("symbolic link", lambda: (shard.rename(elsewhere), shard.symlink_to(elsewhere)),
                   lambda: (shard.unlink(), elsewhere.rename(shard))))
    for want, plant, undo in checks:
        plant()
        compiled, diags = fresh_get(key)
        assert compiled is None, want
        assert len(diags) == 1 and want in diags[0]["message"], (want, diags)
        undo()
        assert path.read_bytes() == good
    assert fresh_get(key)[0] is not None


def test_discard_removes_the_entry(cache_dir):
    """An artifact that fails to run is discarded: its entry goes, so the next
    process recompiles instead of failing the same way."""
    from trnc import pipeline

    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    compiled, outcome = tcache.compile_program(lowered, {})
    assert outcome == "miss" and len(entries(cache_dir)) == 1
    assert tcache.discard(compiled)
    assert entries(cache_dir) == []
    assert not tcache.discard(compiled)
    assert tcache.compile_program(lowered, {})[1] == "miss"


WORKER = textwrap.dedent("""
    import os, sys, time
    from trnc import _trnc, pipeline
    go, wid = sys.argv[1], int(sys.argv[2])
    lowered = pipeline.lower(open({golden!r}, "rb").read(), "mlp")
    base, _, _ = _trnc.cache_key(lowered.graph)
    cache, status, diags = _trnc.open_cache()
    assert cache is not None, diags
    arts = [pipeline.compile_program(lowered) for _ in range(55)]
    while not os.path.exists(go):
        time.sleep(0.01)
    for i, c in enumerate(arts):
        # 50 keys of its own, then 5 keys every worker stores
        key = bytes([wid, i]) + base[2:] if i < 50 else bytes([255, i]) + base[2:]
        status, diags = cache.put(key, c)
        assert status == "TRNC_OK", diags
""")


def test_concurrent_writers(cache_dir):
    go = cache_dir.parent / "go"
    env = dict(os.environ)
    code = WORKER.format(golden=str(GOLDEN))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(go), str(w)], env=env,
                              stderr=subprocess.PIPE) for w in range(8)]
    time.sleep(0.5)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    assert len(entries(cache_dir)) == 8 * 50 + 5
    assert temps(cache_dir) == []
    r = subprocess.run([sys.executable, "-m", "trnc.cli", "cache", "verify"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "405 entries ok, 0 bad" in r.stdout


# --------------------------------------------------------------------------- #
# permissions


def test_group_writable_dir_is_refused(cache_dir):
    cache_dir.mkdir(mode=0o700)
    os.chmod(cache_dir, 0o775)
    with pytest.warns(UserWarning, match="refusing to use .* writable by group or others"):
        compile_and_run(Net(), torch.randn(2, 8))
    assert counts() == (0, 0, 1)  # compiled without caching
    assert entries(cache_dir) == []


def test_fresh_dir_is_0700(cache_dir, monkeypatch):
    nested = cache_dir / "a" / "b"
    monkeypatch.setenv("TRNC_CACHE_DIR", str(nested))
    compile_and_run(Net(), torch.randn(2, 8))
    assert stat.S_IMODE(nested.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert len(entries(nested)) == 1


# --------------------------------------------------------------------------- #
# trnc cache ...


def test_cli(cache_dir, capsys, tmp_path):
    from trnc import _trnc, pipeline

    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    base, _, _ = _trnc.cache_key(lowered.graph)
    cache, _, _ = _trnc.open_cache()
    for i in range(3):
        cache.put(bytes([i]) + base[1:], pipeline.compile_program(lowered))
    assert cli_main(["cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "entries          3" in out and str(cache_dir) in out
    assert cli_main(["cache", "ls"]) == 0
    out = capsys.readouterr().out
    assert out.count(".trnc") == 0 and "3 entries" in out
    assert cli_main(["cache", "verify"]) == 0
    assert "3 entries ok, 0 bad" in capsys.readouterr().out
    bundle = tmp_path / "b.trncbundle"
    assert cli_main(["cache", "export", str(bundle)]) == 0
    assert "exported 3 entries" in capsys.readouterr().out
    # one bad entry: verify fails, verify --remove removes it
    bad = entries(cache_dir)[0]
    bad.write_bytes(b"junk")
    assert cli_main(["cache", "verify"]) == 1
    assert "2 entries ok, 1 bad" in capsys.readouterr().out
    assert cli_main(["cache", "verify", "--remove"]) == 1
    assert len(entries(cache_dir)) == 2
    assert cli_main(["cache", "prune", "--max-bytes", "1"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert entries(cache_dir) == []
    assert cli_main(["cache", "import", str(bundle)]) == 0
    assert "imported 3 entries, rejected 0" in capsys.readouterr().out
    assert cli_main(["cache", "clear"]) == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert entries(cache_dir) == []
    bundle.write_bytes(b"not a bundle")
    assert cli_main(["cache", "import", str(bundle)]) == 1
    # an unsafe directory: refused with a message, exit status 2
    os.chmod(cache_dir, 0o777)
    assert cli_main(["cache", "stats"]) == 2
    assert "writable by group or others" in capsys.readouterr().err
    os.chmod(cache_dir, 0o700)


def test_size_bound_from_env(cache_dir, monkeypatch):
    monkeypatch.setenv("TRNC_CACHE_MAX_BYTES", "1")  # every store evicts down to nothing
    compile_and_run(Net(), torch.randn(2, 8))
    assert entries(cache_dir) == []
    s = tcache.get_cache().stats()
    assert s["stores"] == 1 and s["evictions"] == 1


def test_export_refuses_a_target_that_is_not_a_regular_file(cache_dir, capsys, tmp_path):
    """The bundle is renamed onto its path: a symlink or FIFO there would be
    replaced (as root, `export /dev/stdout` replaced the system's symlink)."""
    import os

    from trnc import _trnc, pipeline

    lowered = pipeline.lower(GOLDEN.read_bytes(), "mlp")
    base, _, _ = _trnc.cache_key(lowered.graph)
    cache, _, _ = _trnc.open_cache()
    cache.put(base, pipeline.compile_program(lowered))
    real = tmp_path / "real.trnc"
    real.write_bytes(b"keep")
    link = tmp_path / "link"
    link.symlink_to(real)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (link, fifo):
        assert cli_main(["cache", "export", str(target)]) == 1
        assert "is not a regular file" in capsys.readouterr().err
    assert link.is_symlink() and real.read_bytes() == b"keep"
    assert fifo.exists() and not fifo.is_file()
