"""Where the lint's knowledge of the target scenario comes from.

The level and mode rules (SPEC 2.3) need to know the framework, the
execution mode, the jit_level, the MindSpore version and the world size.
Each value comes, first source wins, from: command-line flags,
``[tool.probe-lint]`` in pyproject.toml, the training script given with
``--script`` (read with ``ast``, never run), the live environment (installed
package versions from their metadata, world size exported by a launcher),
else it stays unknown. Every value remembers where it came from so messages
can say "mode=graph from train.py:4". MindSpore's own defaults (PyNative
mode since 2.3, jit_level O0/O1) are never assumed.
"""
from __future__ import annotations

import os
from collections import namedtuple
from types import MappingProxyType

from ..installed import version as installed_version

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Optional

FRAMEWORKS = ("mindspore", "msadapter", "pytorch")
MODES = ("pynative", "graph")
JIT_LEVELS = ("O0", "O1", "O2")
CONTEXT_KEYS = ("framework", "mode", "jit_level", "mindspore_version", "world_size", "msprobe_version")
WORLD_SIZE_VARIABLES = ("RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM")


class Fact(namedtuple("Fact", "value source")):
    """A context value and the place it came from (``"--mode"``,
    ``"pyproject.toml"``, ``"train.py:4"``, ``"installed package"``,
    ``"environment WORLD_SIZE"``)."""

    __slots__ = ()

    def describe(self, name: str) -> str:
        """``"mode=graph from train.py:4"``."""
        return f"{name}={self.value} from {self.source}"


class Context(namedtuple("Context", "facts check_fs cwd runtime script cwd_label",
                         defaults=(MappingProxyType({}), False, None, False, None, None))):
    """What is known about the scenario a config will run in.

    Attributes:
        facts: context name (one of CONTEXT_KEYS, plus ``device`` in the
            runtime) to Fact. Absent means unknown.
        check_fs: run the filesystem rules PL406-PL408.
        cwd: folder (a str or Path) that relative paths are resolved
            against for them (and for PL401's fix; None: the current folder).
        cwd_label: how fixes name ``cwd`` (None: ``--cwd``); probe server
            says which folder it chose, e.g. ``the workspace folder /p``.
        runtime: True inside probe_runtime's gate, where PL205 also reports
            what probe_runtime itself cannot run.
        script: the static analysis of the training script
            (``msprobe_lint.lint.script.ScriptAnalysis``) given with --script,
            read by the PL5xx rules; None without --script.

    Example::

        >>> Context({"mode": Fact("graph", "--mode")}).framework
        'mindspore'
    """

    __slots__ = ()

    def fact(self, name: str) -> Optional[Fact]:
        """The Fact for ``name``, or None when unknown."""
        return self.facts.get(name)

    def value(self, name: str) -> Any:
        """The value for ``name``, or None when unknown."""
        known = self.facts.get(name)
        return None if known is None else known.value

    @property
    def framework(self) -> Optional[str]:
        """The framework; a graph mode implies MindSpore."""
        framework = self.value("framework")
        if framework is None and self.value("mode") == "graph":
            return "mindspore"
        return framework

    @property
    def mode(self) -> Optional[str]:
        """``"pynative"``, ``"graph"`` or None."""
        return self.value("mode")

    def describe(self, *names: str) -> str:
        """Provenance of the named known values, e.g.
        ``"mode=graph from train.py:4, jit_level=O2 from --jit-level"``."""
        parts = [self.facts[n].describe(n) for n in names if n in self.facts]
        return ", ".join(parts)

    def with_facts(self, extra: Mapping[str, Fact]) -> "Context":
        """A copy where ``extra`` fills only the names still unknown."""
        merged = dict(extra)
        merged.update(self.facts)
        return self._replace(facts=merged)


def normalise(name: str, raw: Any, source: str) -> Fact:
    """Check and normalise one context value given by a user.

    Raises:
        ValueError: with a message naming the allowed values when ``raw``
            is not valid for ``name``.
    """
    value: Any
    if name == "framework":
        value = str(raw).lower()
        if value not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {raw!r}")
    elif name == "mode":
        value = str(raw).lower()
        value = {"pynative_mode": "pynative", "graph_mode": "graph", "1": "pynative", "0": "graph"}.get(value, value)
        if value not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {raw!r}")
    elif name == "jit_level":
        value = str(raw).upper()
        if value not in JIT_LEVELS:
            raise ValueError(f"jit_level must be one of {', '.join(JIT_LEVELS)}, not {raw!r}")
    elif name in ("mindspore_version", "msprobe_version"):
        from packaging.version import InvalidVersion, Version

        example = "2.6.0" if name == "mindspore_version" else "8.3"
        try:
            value = Version(str(raw))
        except InvalidVersion:
            raise ValueError(f"{name} must be a version such as {example}, not {raw!r}") from None
        if name == "msprobe_version":
            from .profiles import no_release_line

            wrong = no_release_line(value)
            if wrong:
                raise ValueError(wrong.replace(str(value), str(raw), 1))
    elif name == "world_size":
        if isinstance(raw, bool):
            raise ValueError(f"world_size must be an integer >= 1, not {raw!r}")
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise ValueError(f"world_size must be an integer >= 1, not {raw!r}") from None
        if value < 1:
            raise ValueError(f"world_size must be an integer >= 1, not {raw!r}")
    elif name == "device":
        value = str(raw)
    else:
        raise ValueError(f"unknown context value {name!r}; known: {', '.join(CONTEXT_KEYS)}")
    return Fact(value, source)


def environment_facts(environ: Optional[Mapping[str, str]] = None) -> dict[str, Fact]:
    """Facts the live environment gives: installed MindSpore and
    mindstudio-probe versions and the world size a launcher exported.
    Never the mode or the jit_level. Unparseable values are ignored."""
    environ = os.environ if environ is None else environ
    facts: dict[str, Fact] = {}
    for name, dist in (("mindspore_version", "mindspore"), ("msprobe_version", "mindstudio-probe")):
        version = installed_version(dist)
        if version:
            try:
                facts[name] = normalise(name, version, f"installed {dist} {version}")
            except ValueError:
                pass
    for variable in WORLD_SIZE_VARIABLES:
        if environ.get(variable):
            try:
                facts["world_size"] = normalise("world_size", environ[variable], f"environment {variable}")
                break
            except ValueError:
                continue
    return facts


def build_context(layers: Iterable[Mapping[str, Fact]], *, check_fs: bool = False,
                  cwd: Any = None, runtime: bool = False, script: Any = None,
                  cwd_label: Optional[str] = None) -> Context:
    """Merge fact layers, first layer wins (flags, pyproject, script,
    environment)."""
    merged: dict[str, Fact] = {}
    for layer in layers:
        for name, fact in layer.items():
            merged.setdefault(name, fact)
    return Context(facts=merged, check_fs=check_fs, cwd=cwd, runtime=runtime, script=script, cwd_label=cwd_label)
