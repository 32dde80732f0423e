"""The errors ``probe_runtime`` raises to the user.

Each message says what to change:

* :class:`ConfigLintError` (a ``ValueError``): ``PrecisionDebugger(...)``
  refused to start, the config does not pass the lint in this live
  environment;
* :class:`UsageError` (a ``ValueError``): the debugger was called in a way
  that cannot work (``start()`` without a model at level L0);
* :class:`Unavailable` (a ``UsageError``): what the config asks for cannot
  run in this process (``L2Unavailable``: level L2 in a rank of a
  distributed job on the CPU backend);
* :class:`RuntimeMissing` (an ``ImportError``): numpy or MindSpore, the
  ``runtime`` extra, is not installed (``pip install .`` installs the
  linter alone).

Example::

    try:
        debugger = PrecisionDebugger(config_path="config.json")
    except ConfigLintError as err:
        for d in err.diagnostics:
            print(d.code, d.message)        # e.g. PL401 ...
"""
from __future__ import annotations

from typing import Any, Optional


class UsageError(ValueError):
    """The debugger was called in a way that cannot work (e.g. ``start()``
    without a model at level L0). The message says how to call it."""


class Unavailable(UsageError):
    """What the config asks for cannot run in this process (level L2 on
    the CPU backend in a rank of a distributed job, a MindSpore release
    without a private function it needs). The message says why and what
    to do instead; left uncaught it prints that message alone, without a
    traceback (as :class:`ConfigLintError`): in an ``msrun`` worker's log
    too."""


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
    ``path:line:col: CODE severity: message`` with the hint after it, or,
    given, ``message`` says what is wrong instead (no config at all).
    Left uncaught, it prints that message alone, without a traceback
    (probe_runtime sets ``sys.excepthook`` for this class only).
    """

    def __init__(self, diagnostics: list, message: Optional[str] = None) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__(message or "probe_runtime refuses to start; the config has errors:\n"
                         + "\n".join(format_diagnostic(d) for d in self.diagnostics))


#: how to install what the debugger needs
RUNTIME_EXTRA = "pip install 'msprobe-lint[runtime]'"


class RuntimeMissing(ImportError):
    """``PrecisionDebugger`` needs numpy and MindSpore (the ``runtime``
    extra), and one of them cannot be imported. The message names it and
    says ``install the runtime extra: pip install 'msprobe-lint[runtime]'``;
    left uncaught it prints that message alone, without a traceback (as
    :class:`ConfigLintError`).

    Attributes:
        name: the module that is missing (``numpy``, ``mindspore``).
    """

    def __init__(self, module: str, reason: str) -> None:
        super().__init__(f"probe_runtime needs {module}, which cannot be imported ({reason}); install the runtime "
                         f"extra: {RUNTIME_EXTRA}", name=module)
