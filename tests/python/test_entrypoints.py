"""Both backend names resolve through the installed entry points, without
`import trnc` (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)


def test_lookup_without_import():
    p = _run("""
        import sys
        import torch, torch._dynamo
        assert "trnc" not in sys.modules, "trnc imported too early"
        fn = torch._dynamo.lookup_backend("neuron")
        fn2 = torch._dynamo.lookup_backend("trnc")
        assert fn.__module__ == "trnc.backend" and fn.__name__ == "neuron", fn
        assert fn2 is fn
        assert "neuron" in torch._dynamo.list_backends() and "trnc" in torch._dynamo.list_backends()
        print("OK")
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("OK")


def test_compile_by_name_without_import():
    p = _run("""
        import sys
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        # front-end only (options={"execute": False}): this test is about registration
        out = torch.compile(model, backend="neuron", dynamic=False,
                            options={"execute": False})(torch.randn(3, 4))
        out.sum().backward()
        import trnc
        s = trnc.stats()
        assert s["forward"] == 1 and s["backward"] == 1, s
        print("OK", s)
    """)
    assert p.returncode == 0, p.stderr
    assert "OK" in p.stdout


def test_import_trnc_then_lookup_does_not_fight_entry_point():
    p = _run("""
        import torch, torch._dynamo
        import trnc
        assert torch._dynamo.lookup_backend("neuron") is torch._dynamo.lookup_backend("trnc")
        print("OK")
    """)
    assert p.returncode == 0, p.stderr
