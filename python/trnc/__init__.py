"""trnc — a torch.compile backend for AWS Trainium NeuronCores, written in C.

    torch.compile(model, backend="neuron", dynamic=False)   # or backend="trnc"

No ``import trnc`` is needed: the package registers both names through the
``torch_dynamo_backends`` entry points. This release validates and lowers the
forward and backward graphs to NeuronCore programs and runs them on trnc's
NeuronCore simulator; ``trnc.last_report()`` describes the latest program.
"""

from __future__ import annotations

import sys

from .errors import (
    CompilerError,
    DynamicShapeError,
    ExecutionError,
    GraphImportError,
    InputMismatchError,
    InvalidOptionError,
    TrncError,
    UnsupportedOperatorError,
)

__version__ = "0.1.0"

BACKEND_NAMES = ("neuron", "trnc")

__all__ = [
    "__version__",
    "TrncError",
    "UnsupportedOperatorError",
    "DynamicShapeError",
    "GraphImportError",
    "InvalidOptionError",
    "CompilerError",
    "InputMismatchError",
    "ExecutionError",
    "neuron",
    "last_graphs",
    "last_report",
    "stats",
    "reset",
    "fallback_ops",
    "set_default",
    "BACKEND_NAMES",
]

_LAZY = {"neuron", "last_graphs", "last_report", "stats", "reset", "decompositions",
         "GraphRecord", "fallback_ops"}
# submodules that import torch, loaded on first use: `trnc.buckets.pad(...)`
# works after a plain `import trnc`
_LAZY_MODULES = {"buckets", "examples", "precompile", "cache", "fallback", "remote", "megacache"}


def __getattr__(name: str):
    # torch is imported only when the backend is used (keeps `trnc ops` fast)
    if name in _LAZY:
        from . import backend

        return getattr(backend, name)
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'trnc' has no attribute {name!r}")


def _entry_points_installed() -> bool:
    try:
        from importlib.metadata import entry_points

        names = set(entry_points(group="torch_dynamo_backends").names)
    except Exception:  # noqa: BLE001
        return False
    return all(n in names for n in BACKEND_NAMES)


def register() -> None:
    """Registers "neuron" and "trnc" with dynamo unless the installed entry points
    already provide them (registering over an entry point would make dynamo's
    lookup fail with "duplicate name")."""
    if _entry_points_installed():
        return
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    from .backend import neuron

    for n in BACKEND_NAMES:
        if n not in _COMPILER_FNS:
            register_backend(neuron, name=n)


def set_default() -> None:
    """Makes trnc the default torch.compile backend
    (``torch.compiler.set_default_backend("neuron")``)."""
    import torch

    if not hasattr(torch.compiler, "set_default_backend"):
        raise TrncError(f"torch {torch.__version__} has no torch.compiler.set_default_backend; "
                        "pass backend=\"neuron\" to torch.compile instead")
    register()
    torch.compiler.set_default_backend("neuron")


if "torch" in sys.modules:  # register only when torch is already in use (see register())
    try:
        register()
        from . import megacache  # noqa: F401  (torch's "trnc" MegaCache artifact type)
    except Exception:  # noqa: BLE001  (never break `import trnc`)
        pass
