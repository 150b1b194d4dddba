"""The layer check (tests/check_layers.py, the ctest check_layers): trnc's
own sources pass it, and each rule it enforces fails on a small tree that
breaks it, with a message naming the offending file."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_layers", ROOT / "tests" / "check_layers.py")
check_layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_layers)


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_trnc_sources_pass():
    assert check_layers.check_order() == []
    assert check_layers.check_includes(str(ROOT)) == []


def test_layer_table_names_only_lower_layers():
    # every layer's uses come before it, so no two folders can use each other
    seen: list[str] = []
    for name, uses in check_layers.LAYERS.items():
        assert all(u in seen for u in uses), name
        seen.append(name)
    assert "runtime" not in check_layers.LAYERS["codegen"]
    assert "codegen" not in check_layers.LAYERS["runtime"]
    assert "codegen" not in check_layers.LAYERS["cache"]


def test_upward_include_names_the_file(tmp_path):
    src = tree(tmp_path, {
        "codegen/lower.c": '#include "codegen/neuroncore/cost.h"\n#include "runtime/engine.h"\n',
        "codegen/neuroncore/cost.h": "",
        "runtime/engine.h": "",
        "ir/ir.h": '#include "passes/passes.h"\n',
        "passes/passes.h": '#include "ir/ir.h"\n',
    })
    errors = check_layers.check_includes(str(src))
    assert any(e.startswith('codegen/lower.c (codegen) includes "runtime/engine.h" (runtime)')
               for e in errors), errors
    assert any(e.startswith('ir/ir.h (ir) includes "passes/passes.h" (passes)') for e in errors)
    # the same pair is also a cycle, reported with both files on it
    assert any("include cycle" in e and "ir/ir.h" in e and "passes/passes.h" in e for e in errors)
    assert not any('"codegen/neuroncore/cost.h"' in e for e in errors)  # a lower layer: fine


def test_include_cycle_inside_a_folder(tmp_path):
    src = tree(tmp_path, {
        "codegen/a.h": '#include "b.h"\n',
        "codegen/b.h": '#include "codegen/c.h"\n',
        "codegen/c.h": '#include "a.h"\n',
        "codegen/ok.c": '#include "a.h"\n',
    })
    errors = check_layers.check_includes(str(src))
    assert len(errors) == 1, errors
    assert "include cycle" in errors[0]
    for f in ("codegen/a.h", "codegen/b.h", "codegen/c.h"):
        assert f in errors[0]


def test_llvm_only_in_the_host_backend_and_jit(tmp_path):
    src = tree(tmp_path, {
        "runtime/llvm.c": "#include <llvm-c/Core.h>\n#include \"runtime/host_llvm.h\"\n",
        "runtime/host_llvm.c": '#include "runtime/host_llvm.h"\n',
        "runtime/host_llvm.h": "#include <llvm-c/Core.h>\n",
        "runtime/exec.c": '#include "runtime/host_llvm.h"\n',
        "ir/print.c": "#include <llvm-c/Core.h>\n",
    })
    errors = check_layers.check_includes(str(src))
    assert len(errors) == 2, errors
    assert any(e.startswith("ir/print.c: includes LLVM-C: ") for e in errors)
    assert any(e.startswith("runtime/exec.c: includes LLVM-C through runtime/host_llvm.h")
               for e in errors)


def test_public_headers_stay_self_contained(tmp_path):
    src = tree(tmp_path, {
        "include/trnc/trnc.h": "#include <protobuf-c/protobuf-c.h>\n#include \"ir/ir.h\"\n",
        "ir/ir.h": "",
    })
    errors = check_layers.check_includes(str(src))
    assert sorted(errors) == [
        'include/trnc/trnc.h: a public header includes "ir/ir.h"',
        "include/trnc/trnc.h: a public header includes <protobuf-c/protobuf-c.h>",
    ]


@pytest.mark.skipif(not (shutil.which("cc") and shutil.which("nm")), reason="needs cc and nm")
def test_upward_call_names_the_object(tmp_path):
    objs = tmp_path / "objs"
    sources = {
        "codegen/lower.c": "double trnc_run_it(void); double trnc_cost(void);\n"
                           "double trnc_emit(void) { return trnc_run_it() + trnc_cost(); }\n",
        "codegen/neuroncore/cost.c": "double trnc_cost(void) { return 1.0; }\n",
        "runtime/exec.c": "double trnc_cost(void);\n"
                          "double trnc_run_it(void) { return trnc_cost(); }\n",
    }
    for rel, text in sources.items():
        c = tmp_path / "src" / rel
        c.parent.mkdir(parents=True, exist_ok=True)
        c.write_text(text)
        o = objs / (rel + ".o")
        o.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-c", str(c), "-o", str(o)], check=True)
    crossings: dict[tuple[str, str], int] = {}
    errors = check_layers.check_calls(str(objs), "nm", crossings)
    assert errors == ["codegen/lower.c (codegen) calls trnc_run_it from runtime/exec.c (runtime): "
                      "codegen may use only ir, frontend, passes, codegen/neuroncore"]
    assert crossings == {("codegen", "codegen/neuroncore"): 1, ("codegen", "runtime"): 1,
                         ("runtime", "codegen/neuroncore"): 1}
    # the object of a source since moved away stays in a build directory: with
    # the tree given, only objects whose source is there count
    (tmp_path / "src" / "codegen" / "lower.c").unlink()
    assert check_layers.check_calls(str(objs), "nm", None, str(tmp_path / "src")) == []
