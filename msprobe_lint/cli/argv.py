"""Reading a command line as click would, without click: the shared part of
the typer-free readers of ``probe lint`` (:mod:`.lint_args`) and ``probe
report`` (:mod:`.report_args`).

:func:`read_argv` splits the arguments after the command's name into
paths and options the way click does (``--`` ends the options; ``-`` is a
path; ``--name=value`` or ``--name value``; a flag takes no value) and
declines (None) whatever click must decide itself: an unknown option,
``-x=value`` or ``-fjson`` bundling, a value that is missing, empty or
starts with ``-``, an argument with lone surrogates (bytes the file
system encoding could not decode), shell completion, Windows. What each
option's value means (a choice, a count, a repeated option) is the
caller's.

Example::

    >>> read_argv(["dump", "-f", "json", "--all"], {"-f": ("format", "str"), "--all": ("all", "flag")}.get)
    (['dump'], [('format', 'str', 'json'), ('all', 'flag', True)])
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Sequence


def read_argv(rest: "Sequence[str]", lookup: "Callable[[str], Optional[tuple[str, Any]]]"
              ) -> "Optional[tuple[list[str], list[tuple[str, Any, Any]]]]":
    """``(paths, [(key, kind, value)])`` of the arguments ``rest`` (those
    after the command's name), each option's ``(key, kind)`` from
    ``lookup(name)`` (None: not an option of the command) and its value
    (True for ``kind == "flag"``); None where click must decide."""
    if os.name == "nt" or os.environ.get("_PROBE_COMPLETE"):
        return None
    paths: list[str] = []
    options: list[tuple[str, Any, Any]] = []
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if not encodable(arg):
            return None
        if arg == "--":
            paths.extend(rest[index:])
            break
        if arg == "-" or not arg.startswith("-"):
            paths.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if equals and not name.startswith("--"):
            return None
        found = lookup(name)
        if found is None:
            return None
        key, kind = found
        if kind == "flag":
            if equals:
                return None
            options.append((key, kind, True))
            continue
        if not equals:
            if index >= len(rest):
                return None
            value = rest[index]
            index += 1
        if not value or value.startswith("-") or not encodable(value):
            return None
        options.append((key, kind, value))
    return paths, options


def encodable(arg: str) -> bool:
    """False for an argument holding lone surrogates (bytes the file
    system encoding could not decode), which click reports itself."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
