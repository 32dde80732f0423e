"""Static analysis of the training script given with ``--script``.

The script is parsed with :mod:`ast`; it is never run or imported. The
analysis gives two things:

* context facts (:class:`~msprobe_lint.lint.context.Fact`, each with a
  source such as ``"train.py:4"``): the execution ``mode`` and
  ``jit_level`` from ``set_context``, and the ``framework`` from the
  imports;
* what the PL5xx rules (``rules/script.py``) judge: the PrecisionDebugger
  objects and the start()/stop()/step() calls on them, function names
  imported from intercepted namespaces, ``mindspore.jit`` code, and
  ``Model.train`` calls.

It reports only what it is sure of: a value it cannot read
(``mode=args.mode``) leaves that fact unknown rather than guessed, and a
debugger object whose every use cannot be seen is marked ``escapes`` (the
rules that need every call then stay silent). The decisions behind each
part are in docs/lint-design.md and docs/context.md.

One module per part: ``names`` (the index of the parsed script and what
its imports bind), ``context_flow`` (mode and jit_level), ``debuggers``,
``framework`` (jit, Model.train, the framework), with the results in
``model`` and the known namespaces as data in ``namespaces``.

Example::

    >>> from msprobe_lint.lint.script import analyse_source
    >>> analysis = analyse_source("import mindspore as ms; ms.set_context(mode=ms.GRAPH_MODE)")
    >>> analysis.facts["mode"].describe("mode")
    'mode=graph from train.py:1'
"""
from __future__ import annotations

import ast
import sys

from .context_flow import resolve_context
from .debuggers import collect_debuggers
from .framework import collect_jit, infer_framework, model_train_line
from .model import UNKNOWN, Debugger, DebuggerCall, DirectImport, JitUse, ScriptAnalysis, ScriptError
from .names import Index
from .namespaces import INTERCEPTED, MINDSPORE_NAMESPACES, NOT_FUNCTIONS, TORCH_NAMESPACES, is_function_name

__all__ = ["analyse_script", "analyse_source", "read_source", "parse", "ScriptAnalysis", "ScriptError", "Debugger",
           "DebuggerCall", "DirectImport", "JitUse", "UNKNOWN", "INTERCEPTED", "MINDSPORE_NAMESPACES",
           "TORCH_NAMESPACES", "NOT_FUNCTIONS", "is_function_name"]


def read_source(path: str) -> str:
    """The script's text, decoded as Python decodes it: UTF-8 (a BOM
    allowed) unless a PEP 263 coding line in its first two lines names
    another encoding (``# -*- coding: latin-1 -*-``), which Python, and so
    the job, honours (``tokenize.detect_encoding``).

    Read as a config is (``project.files.read_bytes``): a named pipe or a
    device is refused unopened (it would block, or never end), and so is
    a file over 10 MiB.

    Raises:
        ScriptError: missing, unreadable, a folder, not a regular file,
            over 10 MiB, a coding line naming an encoding Python does not
            know, or bytes that are not in the script's encoding.
    """
    import io
    import tokenize

    from ...project.files import read_bytes

    raw, reason = read_bytes(path, "a training script")
    if raw is None:
        if reason == "file not found":
            reason = "no such file"
        elif reason == "is a directory, not a file":
            reason = "is a directory, not a Python file"
        raise ScriptError(f"--script {path}: {reason}")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as err:  # Python refuses to run it as well
        encoding = "utf-8-sig"
        try:  # bytes that are not UTF-8 in the first lines: said below, with the line
            raw.decode(encoding)
        except UnicodeDecodeError:
            pass
        else:  # an encoding Python does not know, or a BOM with a coding line naming another one
            raise ScriptError(f"{path}: {err.msg}: Python cannot run it; fix its coding line") from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        declared = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
        fix = "save the script as UTF-8" if declared == "UTF-8" else f"save it as {declared} or change its coding line"
        raise ScriptError(f"{path}:{line}: not {declared} (byte 0x{raw[err.start]:02x}); {fix}") from None


def parse(source: str, path: str) -> ast.Module:
    """Parse ``source``.

    Raises:
        ScriptError: ``"train.py:3:5: syntax error: ..."``.
    """
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as err:
        where = f"{path}:{err.lineno or 1}" + (f":{err.offset}" if err.offset else "")
        raise ScriptError(f"{where}: syntax error in the training script: {err.msg}") from None
    except (ValueError, RecursionError, MemoryError) as err:  # null bytes, absurd nesting
        raise ScriptError(f"{path}: cannot be parsed: {err}") from None


def analyse_script(path: str) -> ScriptAnalysis:
    """Analyse the training script at ``path`` (never run or imported).

    Raises:
        ScriptError: see :func:`read_source` and :func:`parse`.
    """
    return analyse_source(read_source(path), path)


def analyse_source(source: str, path: str = "train.py") -> ScriptAnalysis:
    """Analyse script text; ``path`` is used in sources and findings.

    Raises:
        ScriptError: when ``source`` is not valid Python.
    """
    tree = parse(source, path)
    try:
        index = Index(tree, path)
        result = ScriptAnalysis(path, direct_imports=index.direct_imports)
        set_context_seen = resolve_context(index, result)
        result.debuggers = collect_debuggers(index)
        result.jit_uses = collect_jit(index)
        result.model_train = model_train_line(index)
        framework = infer_framework(index, set_context_seen)
    except RecursionError:  # the walks are loops; a last guard for what ast's own helpers recurse into
        raise ScriptError(f"{path}: cannot be analysed: it nests deeper than the analysis follows (Python's "
                          f"recursion limit, {sys.getrecursionlimit()}); give the mode and jit_level with --mode and "
                          "--jit-level instead") from None
    if framework is not None:
        result.facts["framework"] = framework
    return result
