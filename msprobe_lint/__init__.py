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

Importing the package loads none of it: each name is imported from its
module on first use (PEP 562), so ``probe report`` or ``probe run`` never
pay for the lint engine they do not use. This package never imports
MindSpore.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any

# public name -> module (relative to this package) that defines it
_EXPORTS = {
    "Context": "lint.context", "Fact": "lint.context",
    "Diagnostic": "lint.diagnostic", "Severity": "lint.diagnostic",
    "Result": "lint.engine", "exit_status": "lint.engine", "lint_file": "lint.engine",
    "Selection": "lint.selection",
    "lint_text": "lint.api",
    "apply_fixes": "lint.fixes.edits",
}

__all__ = ["Context", "Fact", "Diagnostic", "Severity", "Result", "Selection", "exit_status", "lint_file",
           "lint_text", "apply_fixes", "__version__"]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use; ``__version__`` is the
    installed distribution's version (its metadata, the one source)."""
    if name == "__version__":
        from .installed import version

        value: Any = version("msprobe-lint") or "unknown"
    elif name in _EXPORTS:
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
