"""msprobe-lint: a pre-flight checker for msprobe (mindstudio-probe)
config.json files.

Library API::

    from msprobe_lint import lint_file, Context
    result = lint_file("config.json", Context())
    for d in result.diagnostics:
        print(d.path, d.line, d.column, d.code, d.severity.value, d.message)

This package never imports MindSpore.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .context import Context, Fact
from .diagnostic import Diagnostic, Severity
from .engine import Result, Selection, exit_status, lint_file

__all__ = ["Context", "Fact", "Diagnostic", "Severity", "Result", "Selection", "exit_status", "lint_file", "__version__"]
