"""What the script analysis finds: the debugger objects and their calls,
direct imports of intercepted functions, ``mindspore.jit`` code, and the
context facts, as plain data for the PL5xx rules (rules/script.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..context import Fact


class ScriptError(ValueError):
    """The script cannot be analysed: unreadable, not UTF-8, or not valid
    Python. The message names the file (and the line when known)."""


class _Unknown:
    """A value the analysis saw being set but could not read."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class DebuggerCall:
    """``debugger.start(model)`` and friends.

    Attributes:
        method: ``start``, ``stop`` or ``step``.
        line, column: 1-based position of the call.
        has_model: for start(): True when a model is passed, False when
            none is (or ``None`` literally), None when it cannot be told
            (``*args``).
        loops: the loops (their ``(line, column)``) enclosing the call in its
            function, outermost first.
        order: position in source order, for comparing calls.
    """

    method: str
    line: int
    column: int
    has_model: Optional[bool]
    loops: tuple[tuple[int, int], ...]
    order: tuple[int, int]


@dataclass
class Debugger:
    """One PrecisionDebugger construction.

    Attributes:
        line, column: 1-based position of the constructor call.
        name: the variable it is bound to, or None.
        loop: ``(line, column)`` of the innermost loop around the
            construction, or None.
        calls: start/stop/step calls on it (including calls on the class,
            as msprobe's PrecisionDebugger is a singleton).
        escapes: why not every use of it can be seen (passed to a function,
            stored in an attribute, used in a helper function...), or None.
        level, step: literal ``level=``/``step=`` keyword values given to
            the constructor (they override the config), else UNSET; UNKNOWN
            when given but not a literal.
        dump_path_given: True when the constructor surely receives a
            dump_path (``dump_path=`` with anything but a literal None, or
            a third positional argument), which overrides the config's:
            verl passes a folder per step this way.
        origin: the module it was imported from (``probe_runtime``,
            ``msprobe.mindspore``...).
        config_path: the string literal the constructor gets as its
            config_path (``config_path=`` or the first positional
            argument), which the debugger reads instead of PROBE_CONFIG;
            None when it gets none, or something that is not a literal.
        config_path_expression: the source of the config_path given when
            it is an expression the analysis cannot read (``os.path.join(
            ...)``; not one naming ``PROBE_CONFIG``, which reads the
            config ``probe run`` gives), else None.
    """

    line: int
    column: int
    name: Optional[str]
    loop: Optional[tuple[int, int]]
    origin: str
    calls: list[DebuggerCall] = field(default_factory=list)
    escapes: Optional[str] = None
    level: Any = None
    step: Any = None
    level_given: bool = False
    step_given: bool = False
    dump_path_given: bool = False
    config_path: Optional[str] = None
    config_path_expression: Optional[str] = None

    def called(self, method: str) -> list[DebuggerCall]:
        """The calls of ``method``, in source order."""
        return sorted((c for c in self.calls if c.method == method), key=lambda c: c.order)


@dataclass(frozen=True)
class DirectImport:
    """A function name bound from an intercepted namespace (PL501).

    ``name`` is ``*`` for a star import; ``bound`` is the local name."""

    module: str
    name: str
    bound: str
    line: int
    column: int
    first_use: Optional[int] = None


@dataclass(frozen=True)
class JitUse:
    """Code compiled by ``mindspore.jit`` (decorator or call)."""

    line: int
    column: int
    target: str
    jit_level: Optional[str] = None


@dataclass
class ScriptAnalysis:
    """What the analysis found in one script.

    Attributes:
        path: the script's path as given.
        facts: context facts (mode, jit_level, framework), each with a
            source ``"<path>:<line>"``.
        debuggers: every PrecisionDebugger construction.
        direct_imports: intercepted function names imported directly.
        jit_uses: ``mindspore.jit`` decorators and calls.
        model_train: line of a ``Model.train`` style call (``x.train(epoch,
            dataset, ...)``), or None.
        notes: things the analysis saw but could not resolve (for tests and
            debugging; not reported).
    """

    path: str
    facts: dict[str, Fact] = field(default_factory=dict)
    debuggers: list[Debugger] = field(default_factory=list)
    direct_imports: list[DirectImport] = field(default_factory=list)
    jit_uses: list[JitUse] = field(default_factory=list)
    model_train: Optional[int] = None
    notes: list[str] = field(default_factory=list)

    @property
    def passes_dump_path(self) -> bool:
        """True when the script constructs a PrecisionDebugger and every
        construction passes a dump_path (the config then needs none)."""
        return bool(self.debuggers) and all(d.dump_path_given for d in self.debuggers)

    def where(self, line: int) -> str:
        """``"train.py:4"`` for this script."""
        return f"{self.path}:{line}"
