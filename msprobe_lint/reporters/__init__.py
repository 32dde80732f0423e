"""Output formats, one module each, chosen by name from REPORTERS.

Each module has ``render(results, *, color=False) -> str``; modules are
imported only when their format is asked for.
"""
from __future__ import annotations

import importlib
from typing import Callable

REPORTERS = {"text": "text", "json": "json_format", "sarif": "sarif", "github": "github"}


def get(name: str) -> Callable[..., str]:
    """The render function of format ``name``.

    Raises:
        KeyError: for an unknown format.
    """
    module = importlib.import_module(f"{__name__}.{REPORTERS[name]}")
    return module.render
