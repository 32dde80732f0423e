"""The errors ``probe_runtime`` raises to the user.

:class:`UsageError` (a ``ValueError``): the debugger was called in a way
that cannot work; its message says how to call it.

Example::

    debugger.start()     # level L0: UsageError("level L0 checks the Cells of a model: ...")
"""
from __future__ import annotations


class UsageError(ValueError):
    """The debugger was called in a way that cannot work (e.g. ``start()``
    without a model at level L0). The message says how to call it."""
