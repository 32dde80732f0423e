"""Versions of installed distributions, read without importing them.

:func:`version` gives the answer ``importlib.metadata.version`` gives, but
for the usual case (a ``*.dist-info`` folder on ``sys.path``) it reads the
``Version:`` header of its ``METADATA`` file directly, since importing
``importlib.metadata`` (and the ``email`` package it parses with) costs more
than a whole ``probe lint`` of a small config. Anything less usual (another
distribution finder, a zip or egg on ``sys.path``, an ``.egg-info``, a
``METADATA`` without a version) is handed to ``importlib.metadata`` itself,
so the answer never differs; ``tests/lint/test_installed.py`` compares the
two for every installed distribution.

Example::

    >>> from msprobe_lint.installed import version
    >>> version("no-such-distribution") is None
    True
"""
from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional

_SEPARATORS = re.compile(r"[-_.]+")
_DEFER = object()  # "ask importlib.metadata"


def normalise(name: str) -> str:
    """A distribution name as importlib.metadata compares them (PEP 503,
    with ``_`` for ``-``): ``MindStudio-Probe`` -> ``mindstudio_probe``."""
    return _SEPARATORS.sub("_", name).lower()


def version(distribution: str) -> Optional[str]:
    """The version of the installed ``distribution`` (its metadata's
    ``Version``), or None when it is not installed or its metadata cannot
    be read. The distribution is never imported."""
    found = _scan(normalise(distribution))
    if found is not _DEFER:
        return found  # type: ignore[return-value]
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # a broken dist-info must not break the caller
        return None


def _scan(wanted: str) -> object:
    """The version found by walking ``sys.path`` as importlib.metadata's
    path finder does (first entry that has the distribution wins); None
    when no entry has it; _DEFER when importlib.metadata must decide."""
    from importlib.machinery import PathFinder

    if any(f is not PathFinder and getattr(f, "find_distributions", None) for f in sys.meta_path):
        return _DEFER
    index, defer_from = _index()
    found = index.get(wanted)
    if defer_from is not None and (found is None or found[0] > defer_from):
        return _DEFER  # an entry before it (or any, when absent) is not a plain folder
    if found is None:
        return None
    _, folder, name = found
    if not name.lower().endswith(".dist-info"):
        return _DEFER
    return _metadata_version(os.path.join(folder, name, "METADATA"))


_INDEX: dict[tuple[str, ...], tuple[dict[str, tuple[int, str, str]], Optional[int]]] = {}


def _index() -> tuple[dict[str, tuple[int, str, str]], Optional[int]]:
    """For the current ``sys.path``: normalised distribution name ->
    (position of the entry, the entry, the ``*.dist-info``/``*.egg-info``
    name) of its first occurrence, and the position of the first entry
    that is not a folder that can be listed (None when there is none).
    Listed once per process (and per ``sys.path``)."""
    key = tuple(sys.path)
    if key not in _INDEX:
        index: dict[str, tuple[int, str, str]] = {}
        defer_from: Optional[int] = None
        for position, entry in enumerate(key):
            if entry.lower().endswith(".egg"):
                defer_from = position
                break
            try:
                names = os.listdir(entry or ".")
            except FileNotFoundError:
                continue
            except OSError:  # a zip file on sys.path, or a folder we may not list
                defer_from = position
                break
            for name in names:
                low = name.lower()
                if low.endswith((".dist-info", ".egg-info")):
                    index.setdefault(normalise(low.rpartition(".")[0].partition("-")[0]),
                                     (position, entry or ".", name))
        _INDEX[key] = (index, defer_from)
    return _INDEX[key]


def _metadata_version(path: str) -> object:
    """The ``Version:`` header of a METADATA file; _DEFER when the file or
    the header is missing or odd."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line in ("\n", "\r\n"):
                    break  # the headers end at the first blank line
                key, colon, value = line.partition(":")
                if colon and key.strip().lower() == "version":
                    value = value.strip()
                    return value or _DEFER
    except (OSError, UnicodeDecodeError):
        pass
    return _DEFER
