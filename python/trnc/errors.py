"""Exceptions raised by trnc.

Every error carries ``.diagnostics``: the list of diagnostic dicts that the C
library produced (keys: severity, code, node, target, file, line, source,
detail, message). The exception message is written for the user and is what
they see first, also when dynamo wraps it in
``torch._dynamo.exc.BackendCompilerFailed`` (``.inner_exception`` is ours).
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = [
    "TrncError",
    "UnsupportedOperatorError",
    "DynamicShapeError",
    "GraphImportError",
    "InvalidOptionError",
    "CompilerError",
    "InputMismatchError",
    "ExecutionError",
]

OPERATORS_DOC = "docs/operators.md"


class TrncError(RuntimeError):
    """Base class of every trnc error. ``.diagnostics`` holds the C diagnostics."""

    def __init__(self, message: str, diagnostics: Iterable[dict[str, Any]] = (),
                 graph: str = "") -> None:
        super().__init__(message)
        self.diagnostics: list[dict[str, Any]] = list(diagnostics)
        self.graph = graph


class UnsupportedOperatorError(TrncError):
    """The graph uses operators (or dtypes/attributes) that trnc cannot lower.

    ``.operators`` maps each distinct aten overload to its number of uses.
    """

    def __init__(self, message: str, diagnostics: Iterable[dict[str, Any]] = (),
                 graph: str = "", operators: dict[str, int] | None = None) -> None:
        super().__init__(message, diagnostics, graph)
        self.operators: dict[str, int] = dict(operators or {})


class DynamicShapeError(TrncError):
    """A symbolic (SymInt) dim reached trnc, which compiles static shapes only."""


class GraphImportError(TrncError):
    """The serialized graph was malformed or inconsistent: a trnc bug or a torch
    version mismatch, never a problem in the user's model."""


class InvalidOptionError(TrncError, ValueError):
    """An unknown or ill-typed entry in ``torch.compile(..., options=...)``."""


class CompilerError(TrncError):
    """trnc failed while emitting the NeuronCore program for a graph it had
    accepted (TRNC_ERR_INTERNAL): a trnc bug, never a problem in the model."""


class InputMismatchError(TrncError, ValueError):
    """A compiled graph was called with an input whose dtype, shape, strides or
    device differ from what it was compiled for (trnc compiles static shapes)."""


class ExecutionError(TrncError):
    """Running the program failed: e.g. an int64 input outside the range trnc
    runs int64 in (TRNC_ERR_LIMIT), or an index out of range in a gather."""


# --------------------------------------------------------------------------- #
# Message formatting from C diagnostics


def _where(d: dict[str, Any]) -> str:
    """``file:line``; a pseudo-file without a line (``<nn.LeakyReLU module>``,
    for nodes without a stack trace) as is."""
    if d.get("file"):
        line = d.get("line") or 0
        return f"{d['file']}:{line}" if line > 0 else str(d["file"])
    return "<unknown location>"


def _src(d: dict[str, Any]) -> str:
    code = (d.get("source") or "").strip()
    return f"  `{code}`" if code else ""


def format_diagnostics(diags: Iterable[dict[str, Any]]) -> str:
    lines = []
    for d in diags:
        head = f"{d.get('severity', 'error')}: "
        if d.get("file"):
            head += f"{_where(d)}: "
        extra = []
        if d.get("node"):
            extra.append(f"node {d['node']}")
        if d.get("target"):
            extra.append(d["target"])
        if d.get("detail"):
            extra.append(d["detail"])
        tail = f" [{', '.join(extra)}]" if extra else ""
        lines.append(f"{head}{d.get('message', '')}{tail}{_src(d)}")
    return "\n".join(lines)


def describe_input(info: dict[str, Any]) -> str:
    """``input 2 ('y')``: a graph input by position and, when known, by the
    user's name for it (else by what it is: a gradient, a saved value)."""
    head = f"input {info.get('index', '?')}"
    if info.get("user_name"):
        return f"{head} ('{info['user_name']}')"
    role = info.get("role")
    if role == "tangent":
        return f"{head} (the gradient of a forward output)"
    if role == "saved":
        return f"{head} (a value saved by the forward graph)"
    return head


def _name_inputs(text: str, inputs: dict[str, dict[str, Any]] | None) -> str:
    """Replaces the C library's ``input 'arg2_1'`` (an FX placeholder name) in a
    message with ``input 2 ('y')``."""
    import re  # noqa: PLC0415

    if not inputs:
        return text

    def repl(m: re.Match[str]) -> str:
        info = inputs.get(m.group(1))
        return describe_input(info) if info is not None else m.group(0)

    return re.sub(r"\binput '([^']*)'", repl, text)


def _input_of(d: dict[str, Any], inputs: dict[str, dict[str, Any]] | None
              ) -> dict[str, Any] | None:
    """The placeholder a diagnostic is about, if it is about a graph input."""
    if not inputs or d.get("target") or not d.get("node"):
        return None
    return inputs.get(d["node"])


def _input_problem(d: dict[str, Any], info: dict[str, Any],
                   inputs: dict[str, dict[str, Any]]) -> str:
    msg = d.get("message") or ""
    if "has dtype" in msg and info.get("torch_dtype"):
        return f"{describe_input(info)} has dtype {info['torch_dtype']}, which trnc does not lower"
    return _name_inputs(msg, inputs)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def unsupported_message(diags: list[dict[str, Any]], graph: str,
                        inputs: dict[str, dict[str, Any]] | None = None
                        ) -> tuple[str, dict[str, int]]:
    """Problems with graph inputs first (``input 0 ('x') has dtype
    torch.uint16, ...``, named by position and the user's name from
    ``inputs``), then one block per distinct aten overload: count, operand
    shapes/dtypes and every distinct user source line that uses it. Returns the
    message and the operator counts (inputs are not operators)."""
    errors = [d for d in diags if d.get("severity") == "error"]
    input_errs = [(d, info) for d in errors if (info := _input_of(d, inputs)) is not None]
    op_errs = [d for d in errors if _input_of(d, inputs) is None]
    by_target: dict[str, list[dict[str, Any]]] = {}
    for d in op_errs:
        by_target.setdefault(d.get("target") or d.get("node") or "<unknown>", []).append(d)
    counts = {t: len(v) for t, v in by_target.items()}
    n = len(by_target)
    what = []
    if input_errs:
        what.append(_plural(len({info["index"] for _, info in input_errs}), "input"))
    if by_target or not input_errs:
        what.append(f"{_plural(n, 'operator')} ({_plural(len(op_errs), 'use')})")
    out = [f"trnc cannot lower {' and '.join(what)} in {graph or 'the graph'}:"]
    seen_inputs: set[str] = set()
    for d, info in input_errs:
        line = f"  {_input_problem(d, info, inputs or {})}"
        if line in seen_inputs:
            continue
        seen_inputs.add(line)
        out.append(line)
        if d.get("file"):
            out.append(f"    first used at {_where(d)}{_src(d)}")
    for target, ds in by_target.items():
        out.append(f"  {target}  ({_plural(len(ds), 'use')})")
        seen: set[tuple[str, str, str]] = set()
        for d in ds:
            key = (_where(d), d.get("detail", ""), d.get("message", ""))
            if key in seen:
                continue
            seen.add(key)
            detail = d.get("detail") or ""
            msg = _name_inputs(d.get("message") or "", inputs)
            out.append(f"    at {_where(d)}{_src(d)}")
            if detail:
                out.append(f"       operands {detail}")
            if msg and not msg.startswith("no lowering for"):
                out.append(f"       {msg}")
    out.append(f"Supported operators and their limits are listed in {OPERATORS_DOC} "
               "(also `trnc ops`).")
    return "\n".join(out), counts


# the advice the C library appends to each dynamic-shape diagnostic (frontend/import.c)
_C_DYN_ADVICE = (": trnc compiles static shapes: pass dynamic=False to torch.compile, "
                 "or pad inputs to shape buckets (trnc.buckets)")


def dynamic_shape_message(diags: list[dict[str, Any]], graph: str,
                          inputs: dict[str, dict[str, Any]] | None = None) -> str:
    """Each symbolic input by position and the user's name (``inputs``), with
    where it is first used; then the advice, once."""
    errors = [d for d in diags if d.get("severity") == "error"] or list(diags)
    out = [f"trnc compiles static shapes only, but {graph or 'the graph'} has symbolic dims:"]
    for d in errors:
        msg = (d.get("message") or "").replace(_C_DYN_ADVICE, "")
        info = _input_of(d, inputs)
        out.append(f"  {_name_inputs(msg, inputs)}")
        if d.get("file"):
            first = "first used at" if info is not None else "at"
            out.append(f"    {first} {_where(d)}{_src(d)}")
    out.append("Compile with torch.compile(model, backend=\"neuron\", dynamic=False): trnc "
               "compiles one program per input shape; to bound recompiles, pad inputs to a "
               "fixed set of shape buckets (trnc.buckets; `trnc precompile` compiles them "
               "ahead of time, see docs/deploying.md).")
    return "\n".join(out)


def import_error_message(status: str, diags: list[dict[str, Any]], graph: str) -> str:
    import torch  # noqa: PLC0415 (only for the version in the message)

    from . import __version__  # noqa: PLC0415
    nodes = sorted({d["node"] for d in diags if d.get("node")})
    where = f" at node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}" if nodes else ""
    body = format_diagnostics(diags) or "(no diagnostics)"
    return (f"trnc could not import {graph or 'the graph'} ({status}){where}.\n"
            f"This is a trnc bug or a torch version mismatch (trnc {__version__} is built "
            f"for torch 2.13.0; this is torch {torch.__version__}), not a problem in your model. "
            f"Please report it with TRNC_DUMP_IR=1 output.\n{body}")


def operand_dtype_message(diags: list[dict[str, Any]], graph: str) -> str | None:
    """The message for a graph whose only errors are matmul operands of
    different dtypes (``mm: operand dtypes differ (bf16 vs f32)``): a mistake
    in the model that eager also raises on (``mat1 and mat2 must have the
    same dtype``), e.g. a float32 ``nn.Linear`` called on a bfloat16 input
    without autocast. None when other errors are present."""
    import re  # noqa: PLC0415

    errs = [d for d in diags if d.get("severity", "error") == "error"]
    if not errs or not all(re.search(r"operand dtypes differ", d.get("message", ""))
                           for d in errs):
        return None
    body = format_diagnostics(errs)
    return (f"trnc cannot compile {graph or 'the graph'}: the operands of a matrix multiply "
            f"have different dtypes, which eager PyTorch rejects too (RuntimeError: mat1 and "
            f"mat2 must have the same dtype). Cast the input to the module's dtype (or the "
            f"module with .to(dtype)), or run it under torch.autocast.\n{body}")


def compiler_error_message(status: str, diags: list[dict[str, Any]], graph: str) -> str:
    """Message of a ``CompilerError``: what failed, that it is a trnc bug, and
    how to report it (TRNC_DUMP_DIR)."""
    from . import __version__  # noqa: PLC0415
    nodes = sorted({d["node"] for d in diags if d.get("node")})
    where = f" at node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}" if nodes else ""
    body = format_diagnostics(diags) or "(no diagnostics)"
    return (f"trnc failed to compile {graph or 'the graph'} to a NeuronCore program "
            f"({status}){where}.\n"
            f"This is a bug in trnc {__version__}, not a problem in your model. Please report "
            "it at the trnc issue tracker with the files written when you rerun with "
            "TRNC_DUMP_DIR=<dir> (the graph and every pass's IR) and this message.\n"
            f"{body}")


def execution_error_message(status: str, diags: list[dict[str, Any]], graph: str,
                            input_names: list[str] | None = None) -> str:
    """Message of an ``ExecutionError``; ``input N`` in the diagnostics is also
    named by its graph placeholder."""
    import re  # noqa: PLC0415

    names = input_names or []

    def name_input(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f"input {i} ({names[i]})" if i < len(names) else m.group(0)

    lines = [re.sub(r"\binput (\d+)\b", name_input, line)
             for line in (format_diagnostics(diags) or "(no diagnostics)").splitlines()]
    what = {"TRNC_ERR_LIMIT": "an input value is outside what the program supports",
            "TRNC_ERR_INVALID_ARGUMENT": "a required tensor was missing",
            "TRNC_ERR_NOMEM": "out of memory",
            "TRNC_ERR_INTERNAL": "the compiled program is inconsistent (a trnc bug: please "
                                 "report it with TRNC_DUMP_DIR output)"}.get(status, status)
    return (f"trnc could not run {graph or 'the graph'} on the NeuronCore simulator "
            f"({status}: {what}):\n" + "\n".join(lines))
