"""msprobe-lint: a pre-flight checker for msprobe (mindstudio-probe)
config.json files.

Library API::

    from msprobe_lint import lint_file, Context
    result = lint_file("config.json", Context())
    for d in result.diagnostics:
        print(d.path, d.line, d.column, d.code, d.severity.value, d.message)

    # a config held in memory, with the project's [tool.probe-lint] settings,
    # and its safe fixes applied to the text (d.fix: the edits, safe or not)
    from msprobe_lint import apply_fixes, lint_text
    text = open("config.json", encoding="utf-8").read()
    fixed, applied = apply_fixes(text, lint_text(text, "config.json").diagnostics)

This package never imports MindSpore.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .context import Context, Fact
from .diagnostic import Diagnostic, Severity
from .engine import Result, Selection, exit_status, lint_file
from .api import lint_text
from .fixes import apply_fixes


__all__ = ["Context", "Fact", "Diagnostic", "Severity", "Result", "Selection", "exit_status", "lint_file",
           "lint_text", "apply_fixes", "__version__"]
