"""The lint gate: a config is linted in this live process before anything
is patched or written.

:func:`admit` lints the config with the same engine as ``probe lint``, in
the live context of this process (:func:`live_facts`: MindSpore's mode,
jit_level, version and device, the world size, this process's rank folder;
filesystem checks on, and ``runtime`` on so PL205 refuses what
probe_runtime cannot run) with the project's ``[tool.probe-lint]``
selection, as ``probe lint`` and ``probe run`` use it (the rules of
``msprobe_lint.lint.selection.RUNTIME_ESSENTIAL``, without which the
debugger cannot run, or not safely, are enforced whatever it says),
creates dump_path as msprobe does, and raises
:class:`~probe_runtime.errors.ConfigLintError` listing every error;
warnings are logged once on the ``probe_runtime`` logger and do not block.
Where each fact comes from: ``docs/runtime-design.md``.

Example::

    config = admit("config.json", {"level": "L0"}, live_rank_source())
    config["dump_path"]          # the checked folder, now created (0o750)
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Optional

from msprobe_lint.lint.context import Context, Fact, build_context, environment_facts, normalise
from msprobe_lint.lint.diagnostic import Diagnostic, Severity
from msprobe_lint.lint.engine import lint_file
from msprobe_lint.lint.selection import RUNTIME_ESSENTIAL

from .errors import ConfigLintError, format_diagnostic
from .state import live_rank_source, rank_dir_name

LOGGER = logging.getLogger("probe_runtime")
#: the path diagnostics name when the config is the keyword arguments alone
ARGUMENTS_PATH = "<PrecisionDebugger arguments>"
#: the refusal of a debugger given no config at all (no file, no task or dump_path)
NO_CONFIG = ("probe_runtime refuses to start: no config was given (PrecisionDebugger() got no config_path and "
             "the PROBE_CONFIG environment variable is not set). Give one: "
             "PrecisionDebugger(config_path=\"/abs/config.json\"), PROBE_CONFIG=/abs/config.json python train.py, "
             "or probe run config.json -- python train.py (it sets PROBE_CONFIG); or pass "
             "task=\"overflow_check\" and dump_path=\"/abs/dump\" to PrecisionDebugger")


def admit(config_path: Optional[str], overrides: dict[str, Any], rank: tuple[Optional[int], str]) -> dict:
    """The config the debugger runs with: the file's values (none when
    ``config_path`` is None) updated with ``overrides``, once the gate let
    it through. Warnings are logged; dump_path exists when it returns.

    Args:
        config_path: msprobe config.json, or None.
        overrides: values given as keyword arguments (``task``,
            ``dump_path``, ``level``, ``step``).
        rank: (this process's rank, where it came from), as
            :func:`probe_runtime.state.live_rank_source` gives it.

    Raises:
        ConfigLintError: the lint found errors in this live context, or
            dump_path cannot be created; with no config at all (no file,
            neither ``task`` nor ``dump_path``) the message says that alone
            and how to give one. Nothing was patched or written.
    """
    refusal = layer_refusal(config_path, overrides)
    diagnostics = lint_live(config_path, overrides, rank, extra=(refusal,) if refusal is not None else ())
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    if errors and config_path is None and not ({"task", "dump_path"} & set(overrides)):
        raise ConfigLintError(errors, NO_CONFIG)
    if refusal is not None and not any(d.code == refusal.code and d.message == refusal.message for d in errors):
        # the project's settings turned PL205 off or down: a layer the runtime
        # cannot check is refused all the same (never a false all-clear)
        raise ConfigLintError(errors, f"probe_runtime refuses to start: {refusal.message} (hint: {refusal.hint})")
    if not errors:
        errors = dump_path_errors(config_path, overrides, rank)
    if errors:
        raise ConfigLintError(errors)
    for d in diagnostics:
        if d.severity is Severity.WARNING:
            LOGGER.warning("probe_runtime: %s", format_diagnostic(d))
    config = file_values(config_path, overrides, rank)
    config.update(overrides)
    return config


def file_values(config_path: Optional[str], overrides: dict[str, Any], rank: tuple) -> dict:
    """The values of the config file (a fresh dict; {} for none), read as
    the lint read it (``msprobe_lint.project.files.read_bytes``: never a
    named pipe, a device or over 10 MiB), once the lint let it through.

    Raises:
        ConfigLintError: it can no longer be read, or is no longer a JSON
            object (replaced since the lint): the lint's errors now, else
            PL006 saying why.
    """
    from msprobe_lint.project.files import read_bytes

    if config_path is None:
        return {}
    raw, reason = read_bytes(config_path)
    try:
        config = json.loads(raw.decode("utf-8-sig")) if raw is not None else None
    except (ValueError, RecursionError):
        config = None
    if isinstance(config, dict):
        return config
    errors = [d for d in lint_live(config_path, overrides, rank) if d.severity is Severity.ERROR]
    if not errors:
        from msprobe_lint.lint.diagnostic import Finding

        finding = Finding("PL006", f"config {reason or 'is no longer a JSON object: it changed since it was linted'}")
        errors = [d for d in lint_live(config_path, overrides, rank, extra=(finding,))
                  if d.severity is Severity.ERROR]
    raise ConfigLintError(errors, None if errors else f"probe_runtime refuses to start: {config_path}: "
                          f"{reason or 'is no longer a JSON object: it changed since it was linted'}")


def layer_refusal(config_path: Optional[str], overrides: dict[str, Any]) -> Optional[Any]:
    """The PL205 finding (``msprobe_lint`` ``Finding``) that refuses a
    torch-on-MindSpore layer probe_runtime cannot check at the config's
    level (:mod:`probe_runtime.scenario`), or None. The level is the
    override, else the file's ``level``, else msprobe's default L1; a file
    that cannot be read leaves it to the lint."""
    from msprobe_lint.lint.diagnostic import Finding

    from .scenario import INSTEAD, detect

    scenario = detect()
    if scenario.framework == "mindspore":
        return None
    level = overrides.get("level")
    if level is None and config_path is not None:
        from msprobe_lint.project.files import read_bytes

        raw, _ = read_bytes(config_path)  # never a pipe or a device; unreadable: the lint says why
        try:
            data = json.loads(raw.decode("utf-8-sig")) if raw is not None else None
        except (ValueError, RecursionError):
            data = None
        level = data.get("level") if isinstance(data, dict) else None
    problem = scenario.problem(level if isinstance(level, str) else "L1")
    if problem is None:
        return None
    return Finding("PL205", problem, pointer="/level" if level is not None else "", hint=INSTEAD)


def live_facts() -> dict[str, Fact]:
    """Context facts read from the running MindSpore (each with its source;
    the list: ``docs/runtime-design.md``). The framework is ``msadapter``
    when PyTorch code runs on MindSpore in this process
    (:func:`probe_runtime.scenario.detect`, as msprobe decides it), else
    ``mindspore``.

    Values that cannot be read are left out (unknown), never guessed.
    """
    from .scenario import detect

    scenario = detect()
    framework = (Fact("msadapter", f"probe_runtime: torch is {scenario.layer} ({scenario.how})")
                 if scenario.framework == "msadapter" else Fact("mindspore", "probe_runtime"))
    facts: dict[str, Fact] = {"framework": framework}
    try:
        import mindspore as ms
    except Exception:  # pragma: no cover - the runtime extra is missing
        return facts
    readers = {
        "mode": lambda: ms.get_context("mode"),
        "device": lambda: ms.get_context("device_target"),
        "mindspore_version": lambda: ms.__version__,
    }
    sources = {"mode": "mindspore.get_context('mode')", "device": "mindspore.get_context('device_target')",
               "mindspore_version": "mindspore.__version__"}
    for name, read in readers.items():
        try:
            facts[name] = normalise(name, read(), sources[name])
        except Exception:
            pass
    try:
        jit = (ms.get_context("jit_config") or {}).get("jit_level")
        if jit:
            facts["jit_level"] = normalise("jit_level", jit, "mindspore.get_context('jit_config')")
    except Exception:
        pass
    try:
        from mindspore.communication.management import GlobalComm, get_group_size

        if GlobalComm.INITED:
            facts["world_size"] = normalise("world_size", get_group_size(), "mindspore.communication")
    except Exception:
        pass
    return facts


def lint_live(config_path: Optional[str], overrides: dict[str, Any],
              rank: Optional[tuple[Optional[int], str]] = None, extra: tuple = ()) -> list[Diagnostic]:
    """Lint ``config_path`` (or, when None, just ``overrides``) in the live
    context; returns every diagnostic.

    ``rank``: (this process's rank, where it came from), as
    :func:`probe_runtime.state.live_rank_source` gives it (read when None).
    It gives the fact ``rank_dir``, the rank folder this process writes
    (``rank`` or ``rank<R>``): PL411 refuses a dump_path whose
    ``step*/<rank_dir>`` already holds an earlier run's dump. ``extra``:
    findings (``msprobe_lint.diagnostic.Finding``) made outside the rules,
    graded and placed with the rest.
    """
    selection = project_selection(config_path)
    number, source = rank if rank is not None else live_rank_source()
    single = {"world_size": Fact(1, "single process (no launcher environment, communication not initialised)"),
              "rank_dir": Fact(rank_dir_name(number), source)}
    context: Context = build_context([live_facts(), environment_facts(), single], check_fs=True,
                                     cwd=Path.cwd(), runtime=True)
    if config_path is None:
        result = lint_file(ARGUMENTS_PATH, context, selection=selection, overrides=overrides, raw=b"{}",
                           extra_findings=extra)
    else:
        result = lint_file(config_path, context, selection=selection, overrides=overrides, extra_findings=extra)
    return result.diagnostics


def project_selection(config_path: Optional[str]) -> Any:
    """The rule selection ``probe lint`` and ``probe run`` use for
    ``config_path``: the ``[tool.probe-lint]`` settings of the nearest
    pyproject.toml at or above it (above the current folder when there is
    no file), with their per-file ignores; the default selection when
    there are none; the rules of ``RUNTIME_ESSENTIAL`` are always errors
    (``Selection.always``), as in ``probe run``. Under ``probe run`` given
    ``--select``/``--ignore``/``--extend-select``/``--config-file``/``--isolated``,
    those, which it hands on in ``PROBE_LINT_SELECTION``
    (:func:`handed_selection`), so the job lints as ``probe run`` did. A
    malformed table or handed selection is logged and the default used
    (the gate is then stricter, never looser, than the project asked)."""
    from msprobe_lint.lint import settings
    from msprobe_lint.lint.options import selection_of

    handed = handed_selection()
    parsed: dict = {}
    try:
        if handed is not None:
            from msprobe_lint.lint.selection import parse_codes

            parsed = {field: parse_codes(handed[field]) if handed.get(field) else ()
                      for field in ("select", "ignore", "extend_select")}
        if handed is not None and handed.get("isolated") and not handed.get("config_file"):
            project = None
        else:
            project = settings.find_and_load(handed.get("config_file") if handed else None,
                                             start=config_path or os.getcwd())
    except Exception as err:  # settings.SettingsError, a code the handed selection should not hold
        LOGGER.warning("probe_runtime: %s; every rule applies as by default", err)
        project, parsed = None, {}
    selection = selection_of(project, **parsed)._replace(always=RUNTIME_ESSENTIAL)
    if project is not None and config_path is not None:
        selection = project.selection_for(config_path, selection)
    return selection


def handed_selection() -> Optional[dict]:
    """The rule selection ``probe run`` handed on in the environment
    variable ``PROBE_LINT_SELECTION`` (``msprobe_lint.run.environment``), or
    None when it is not set; one that is not the JSON object ``probe run``
    writes is logged and left out."""
    from msprobe_lint.run.environment import SELECTION

    raw = os.environ.get(SELECTION)
    if not raw:
        return None
    try:
        handed = json.loads(raw)
    except ValueError:
        handed = None
    if not isinstance(handed, dict) or not all(
            isinstance(handed.get(field, []), list) for field in ("select", "ignore", "extend_select")):
        LOGGER.warning("probe_runtime: %s is not the selection probe run writes (%.80r); left out", SELECTION, raw)
        return None
    return handed


def dump_path_errors(config_path: Optional[str], overrides: dict, rank: tuple) -> list[Diagnostic]:
    """Create dump_path (0o750, never through a soft link) as msprobe
    does when its debugger is built, so a run without overflow leaves
    an empty dump_path (``probe report`` then says nothing was found).
    When that fails (a folder the lint could not judge, such as one
    under /proc for root, whom every permission check lets through),
    the error diagnostics to refuse with: PL407 at dump_path. Else []."""
    from msprobe_lint.lint.diagnostic import Finding

    from .dump.writer import ensure_dir

    config = file_values(config_path, overrides, rank)
    config.update(overrides)
    path = os.path.abspath(config["dump_path"])
    try:
        ensure_dir(path)
        return []
    except OSError as err:
        finding = Finding("PL407", f"dump_path {path} cannot be created: {err.strerror or err}",
                          pointer="/dump_path", hint="choose a folder you can write")
    return [d for d in lint_live(config_path, overrides, rank, extra=(finding,)) if d.severity is Severity.ERROR]


def claim_dump_path(config_path: Optional[str], overrides: dict, rank: tuple, config: dict) -> Any:
    """Mark this process as the writer of its rank folder in dump_path
    (``msprobe_lint.live_writers``: a marker file held locked while the
    process runs), once :func:`admit` let ``config`` through. Returns the
    claim; the debugger keeps it (the lock goes when it is collected or
    the process ends).

    Raises:
        ConfigLintError: another running process writes this rank folder
            of dump_path (another job started with the same dump_path, or
            the same job launched again while the first still runs), or a
            process of another job writes another rank folder of it: PL411
            at dump_path, naming that process (pid, host, start, command),
            whatever the project's settings or ``probe run``'s selection
            say (PL411 is in ``RUNTIME_ESSENTIAL``). Nothing was patched or
            written.
    """
    from msprobe_lint.lint.diagnostic import Finding
    from msprobe_lint.live_writers import WriterBusy, claim

    path = os.path.abspath(config["dump_path"])
    try:
        return claim(path, rank_dir_name(rank[0]))
    except WriterBusy as busy:
        finding = Finding("PL411", str(busy), pointer="/dump_path", severity=Severity.ERROR,
                          hint="give each run its own dump_path, or wait until the other one ends")
    # PL411 is runtime-essential: no project setting or handed selection turns this refusal off
    errors = [d for d in lint_live(config_path, overrides, rank, extra=(finding,)) if d.severity is Severity.ERROR]
    raise ConfigLintError(errors)


#: the execution mode each level checks: level L2 static graph, L0 and L1 PyNative
GRAPH_LEVELS = ("L2",)
#: why a level sees nothing in the other mode
WHY_UNSEEN = {"L1": "a compiled graph makes no API call it could intercept",
              "L0": "its Cell hooks do not compile into a static graph",
              "L2": "it checks compiled static-graph steps only"}


def live_graph_mode() -> Optional[bool]:
    """True when MindSpore runs in GRAPH_MODE now, False in PyNative mode,
    None when the mode cannot be read (``mindspore.get_context("mode")``,
    about 20 us)."""
    try:
        import mindspore

        return bool(mindspore.get_context("mode") == mindspore.GRAPH_MODE)
    except Exception:
        return None


def mode_name(graph: Optional[bool]) -> str:
    """``"GRAPH_MODE"``, ``"PYNATIVE_MODE"``, or ``"an unknown mode"`` for None."""
    return "an unknown mode" if graph is None else "GRAPH_MODE" if graph else "PYNATIVE_MODE"


class ModeWatch:
    """The gate's mode check, again at every ``start()``: the gate judged
    the level against the execution mode when the debugger was built, and a
    script may call ``set_context(mode=...)`` after that. In a mode the
    level does not see (L0/L1 in GRAPH_MODE: nothing is intercepted, and
    L0's Cell hooks fail to compile; L2 in PyNative mode: no compiled step)
    nothing is installed: one error says why and what to do, and each such
    step the config selects is told to the all-clear as not checked
    (``Summary.not_seen``), never counted as checked.

    Args:
        level: the config's level.
        summary: the all-clear's counter (``windows.summary.Summary``).

    Example::

        watch = ModeWatch("L1", summary)     # built in PyNative mode
        mindspore.set_context(mode=mindspore.GRAPH_MODE)
        watch.fits(state)                    # False: error logged once, state.step said not checked
    """

    def __init__(self, level: str, summary: Any) -> None:
        self.level = level
        self.summary = summary
        self.built = live_graph_mode()
        self.said = False

    def fits(self, state: Any) -> bool:
        """True when the live execution mode is the one the level checks
        (or cannot be read). Else logs the error (once), tells the summary
        that ``state.step`` was not checked when the config selects it
        (``state.selected()``), and returns False: nothing may be installed."""
        graph = live_graph_mode()
        if graph is None or graph == (self.level in GRAPH_LEVELS):
            return True
        now, then = mode_name(graph), mode_name(self.built)
        fits = "L2" if graph else "L1 or L0"
        if state.selected():
            self.summary.not_seen(state.step, f"started in {now} and were NOT checked (step {{steps}}): level "
                                              f"{self.level} sees nothing in {now}, and the debugger was created "
                                              f"in {then}; create PrecisionDebugger after set_context(mode=...), "
                                              f"with level {fits} in {now}")
        if not self.said:
            self.said = True
            LOGGER.error("probe_runtime: error: the execution mode is %s at start() of step %s, but the debugger "
                         "was created in %s: level %s sees nothing in %s (%s), so nothing is checked in any step "
                         "started in %s (training goes on unchecked, and the summary at exit names those steps). "
                         "Create PrecisionDebugger after mindspore.set_context(mode=...), so that its check sees "
                         "the mode the training runs in, with the level that fits it: L2 in GRAPH_MODE, L1 or "
                         "L0 in PYNATIVE_MODE", now, state.step, then, self.level, now, WHY_UNSEEN[self.level], now)
        return False
