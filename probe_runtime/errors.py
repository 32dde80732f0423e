"""The errors ``probe_runtime`` raises to the user.

Both are ``ValueError``s whose message says what to change:

* :class:`ConfigLintError`: ``PrecisionDebugger(...)`` refused to start,
  the config does not pass the lint in this live environment;
* :class:`UsageError`: the debugger was called in a way that cannot work
  (``start()`` without a model at level L0).

Example::

    try:
        debugger = PrecisionDebugger(config_path="config.json")
    except ConfigLintError as err:
        for d in err.diagnostics:
            print(d.code, d.message)        # e.g. PL401 ...
"""
from __future__ import annotations

from typing import Any


class UsageError(ValueError):
    """The debugger was called in a way that cannot work (e.g. ``start()``
    without a model at level L0). The message says how to call it."""


def format_diagnostic(d: Any) -> str:
    """One lint diagnostic (``msprobe_lint`` ``Diagnostic``) as one line:
    ``path:line:col: CODE severity: message (hint: ...)``."""
    text = f"{d.path}:{d.line}:{d.column}: {d.code} {d.severity.value}: {d.message}"
    return text + (f" (hint: {d.hint})" if d.hint else "")


class ConfigLintError(ValueError):
    """The config does not pass the lint in this live environment.

    Attributes:
        diagnostics: every error diagnostic (``msprobe_lint.Diagnostic``).

    The message lists them, one per line, as
    ``path:line:col: CODE severity: message`` with the hint after it.
    Left uncaught, it prints that message alone, without a traceback
    (probe_runtime sets ``sys.excepthook`` for this class only).
    """

    def __init__(self, diagnostics: list) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("probe_runtime refuses to start; the config has errors:\n"
                         + "\n".join(format_diagnostic(d) for d in self.diagnostics))
