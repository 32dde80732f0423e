"""Output formats, one module each, named by the format.

:data:`NAMES` is the one list of format names: the command line's choices
(both parsers) come from it. Each module has ``render(results, *,
color=False) -> str`` and is imported only when its format is asked for.

Example::

    >>> from msprobe_lint.lint.reporters import NAMES, get
    >>> NAMES
    ('text', 'json', 'sarif', 'github')
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Callable


NAMES = ("text", "json", "sarif", "github")


def get(name: str) -> Callable[..., str]:
    """The render function of format ``name``.

    Raises:
        KeyError: for a name not in :data:`NAMES`.
    """
    if name not in NAMES:
        raise KeyError(name)
    from importlib import import_module

    return import_module(f"{__name__}.{name}").render
