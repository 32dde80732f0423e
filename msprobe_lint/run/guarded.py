"""``probe run CONFIG -- CMD ARGS...``: lint CONFIG (filesystem checks on,
probe_runtime's view, CMD's script when it runs one) and start CMD only
when the lint passed. Everything probe itself prints goes to stderr, so
CMD's stdout stays the job's own. The lint is imported when it runs.

Example::

    from msprobe_lint.run import guarded_run
    status = guarded_run("config.json", ["python", "train.py"])
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TextIO

from ..exit import ExitStatus
from .environment import child_environment
from .launchers import parse_command
from .process import CommandError, run_command

if TYPE_CHECKING:
    from ..lint.options import LintOptions


def _python_app(path: str) -> Optional[str]:
    """What ``python PATH`` runs when PATH is not a script: a folder's
    ``__main__.py`` (its path), or "" for a zip file (a zipapp, whose
    ``__main__.py`` is inside the archive); None otherwise (a script, or
    nothing Python would run)."""
    import zipfile

    try:
        if os.path.isdir(path):
            main = os.path.join(path, "__main__.py")
            return main if os.path.isfile(main) else None
        return "" if os.path.isfile(path) and zipfile.is_zipfile(path) else None
    except OSError:
        return None


def _script_analysis_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("msprobe_lint.lint.script") is not None
    except (ImportError, ValueError):
        return False


def _single_process(plan):
    """World size 1 for a plain ``python`` CMD (no launcher: one process,
    as probe_runtime's gate will see it) unless the environment already
    carries a launcher's world size (``probe run`` started once per rank by
    an outer launcher); else None."""
    from ..lint.context import WORLD_SIZE_VARIABLES, Fact

    if plan.launcher != "python" or any(os.environ.get(name) for name in WORLD_SIZE_VARIABLES):
        return None
    return Fact(1, f"{os.path.basename(plan.argv[0])} without a launcher: one process")


def _lint_flags(options: LintOptions) -> str:
    """The `probe lint` flags that give it the context `probe run` linted
    in (``" --mode graph"``), as the fix summary's command needs them
    (``--check-fs``, ``--world-size`` and ``--script`` are added there
    when a finding needs them)."""
    flags = []
    for name in ("framework", "mode", "jit_level", "mindspore_version", "msprobe_version", "world_size", "cwd",
                 "config_file"):
        value = getattr(options, name)
        if value is not None:
            flags += ["--" + name.replace("_", "-"), str(value)]
    if options.isolated:
        flags.append("--isolated")
    return "".join(" " + shlex.quote(flag) for flag in flags)


def _selection_options(options: LintOptions) -> Optional[dict]:
    """The rule selection options ``probe run`` was given, for the gate
    in CMD (``environment.SELECTION``); None when none was given (the gate
    then finds the project's settings itself, as ``probe run`` did)."""
    if not (options.select or options.ignore or options.extend_select or options.config_file or options.isolated):
        return None
    return {"select": list(options.select), "ignore": list(options.ignore),
            "extend_select": list(options.extend_select),
            "config_file": os.path.abspath(options.config_file) if options.config_file else None,
            "isolated": bool(options.isolated)}


def _configs_read_instead(script: str, config: str, stream: TextIO) -> list[str]:
    """The configs the script's debuggers read instead of ``config``: a
    string literal ``PrecisionDebugger(config_path="other.json")`` (the
    debugger reads it, not PROBE_CONFIG), resolved where CMD runs. Each is
    said once on ``stream`` as a warning; a script that cannot be analysed
    gives [] (the lint said why)."""
    from ..lint.script import analyse_script
    from ..lint.script.model import ScriptError

    try:
        debuggers = analyse_script(script).debuggers
    except ScriptError:
        return []
    found: list[str] = []
    for debugger in debuggers:
        if debugger.config_path_expression:
            stream.write(f"probe: warning: {script}:{debugger.line}: PrecisionDebugger(config_path="
                         f"{debugger.config_path_expression}) may ignore {config} (PROBE_CONFIG): probe run cannot "
                         "tell which config that expression names, and it is not linted before the start\n")
        path = debugger.config_path
        if not path or (os.path.exists(path) and os.path.exists(config) and os.path.samefile(path, config)) \
                or os.path.abspath(path) == os.path.abspath(config) or path in found:
            continue
        stream.write(f"probe: warning: {script}:{debugger.line}: PrecisionDebugger(config_path={path!r}) ignores "
                     f"{config} (PROBE_CONFIG): the job reads {path}; linting it too\n")
        found.append(path)
    return found


def _config_values(config: str) -> Any:
    """The JSON value of the config file ``config``, read as the lint
    reads it (``project.files.read_bytes``: a named pipe, a device or a
    file over 10 MiB is never read); None when it cannot be read or is
    not JSON (the lint says what is wrong: PL006, PL001 for a config
    nested deeper than json.loads reads...)."""
    import json

    from ..project.files import read_bytes

    raw, _ = read_bytes(config)
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return None


def _dump_path(config: str) -> Optional[str]:
    """The config's ``dump_path`` when it names one (absolute: the lint
    refused a relative one), else None (also for a config that cannot be
    read, or one nested deeper than ``json.loads`` reads: PL001), read by
    :func:`_config_values` (never a named pipe or a device)."""
    data = _config_values(config)
    dump_path = data.get("dump_path") if isinstance(data, dict) else None
    return dump_path if isinstance(dump_path, str) and dump_path else None


def _writers_before(dump_paths: Sequence[str]) -> dict[str, set]:
    """Who wrote each dump_path's markers before CMD starts (an earlier
    run's stale markers), to tell them from CMD's own afterwards."""
    from ..live_writers import read_writers

    return {path: {(w.rank_dir, w.pid, w.host, w.started) for w in read_writers(path)} for path in dump_paths}


def _say_turned_off(before: dict[str, set], status: int, stream: TextIO) -> None:
    """After CMD: warn, naming the rank folder, step and reason, when a
    debugger of CMD turned detection off (its dump_path marker's
    ``turned_off``: a dump it could not write, such as a full disk), so the
    dump lacks what it found from then on. A tester's finding: the job's
    log said "detection turned off" mid-run and ``probe run`` ended as if
    all was well. The exit status stays CMD's (docs/guarded-launch.md)."""
    from ..live_writers import read_writers

    for path, seen in before.items():
        off = [w for w in read_writers(path)
               if w.turned_off and (w.rank_dir, w.pid, w.host, w.started) not in seen]
        if not off:
            continue
        for writer in off[:8]:
            stream.write(f"probe: warning: {writer.turned_off_text()}\n")
        if len(off) > 8:
            stream.write(f"probe: warning: ... and {len(off) - 8} more rank folder(s) turned detection off\n")
        stream.write(f"probe: warning: the dump in {path} lacks what the job found from then on and is no "
                     f"all-clear: `probe report {shlex.quote(path)}` says what it holds; the exit status is the "
                     f"job's own ({status})\n")


def _live_writers(config: str) -> Optional[str]:
    """Why CMD must not start because another running process writes the
    config's dump_path (``msprobe_lint.live_writers``: its markers, held
    locked while their process runs), or None."""
    from ..live_writers import read_writers

    dump_path = _dump_path(config)  # None for a config that cannot be read: the lint says what is wrong
    if dump_path is None or not os.path.isdir(dump_path):
        return None
    live = [w for w in read_writers(dump_path) if w.live]
    if not live:
        return None
    folders = ", ".join(w.rank_dir for w in live)
    return (f"dump_path {dump_path} is being written by another running job ({folders}: {live[0].describe()}); "
            "the two would overwrite and mix each other's step*/rank* files: give this run its own dump_path, "
            "or wait until that one ends")


def _ascend_present() -> bool:
    """True when this machine has an Ascend device (its driver's device
    files, which an Ascend container is given too)."""
    import glob

    return os.path.exists("/dev/davinci_manager") or bool(glob.glob("/dev/davinci[0-9]*"))


def _l2_distributed(configs: Sequence[str], world: Optional[int]) -> Optional[str]:
    """Why CMD must not start: a config at level L2 (overflow_check) in a
    job of ``world`` processes on a machine with no Ascend device, where
    probe_runtime's L2 runs on the CPU backend, which it refuses in every
    rank of a distributed job (PL205 in each worker's gate); else None."""
    from ..lint.rules.levels import RUNTIME_L2_DISTRIBUTED, RUNTIME_L2_INSTEAD

    if world is None or world <= 1 or _ascend_present():
        return None
    for path in configs:
        data = _config_values(path)
        if isinstance(data, dict) and data.get("task") == "overflow_check" and data.get("level") == "L2":
            return (f"{path} asks for level L2 (kernel) in a distributed job of {world} processes on a machine "
                    f"with no Ascend device (no /dev/davinci*), so the workers would run level L2 on the CPU "
                    f"backend, which probe_runtime runs in a single process only: "
                    f"{RUNTIME_L2_DISTRIBUTED}; each worker would refuse to start (PL205). Instead, "
                    f"{RUNTIME_L2_INSTEAD}")
    return None


def guarded_run(config: str, command: Sequence[str], options=None, *, stream: Optional[TextIO] = None,
                color: bool = False, runner: Optional[Callable[..., int]] = None) -> int:
    """Lint ``config`` (and CMD's script) and run CMD only when no error
    (nor, with ``options.strict``, warning) was found.

    Args:
        config: the msprobe config.json.
        command: CMD ARGS...
        options: :class:`msprobe_lint.lint.api.LintOptions` (``check_fs`` and
            ``runtime`` are forced on; ``script`` defaults to CMD's script;
            the launcher's world size fills ``world_size`` unless given, 1
            for a plain ``python`` CMD outside a launcher's environment).
        stream: where probe's own output goes (default stderr).
    Returns:
        CMD's exit status; 1 when the lint found errors, 2 for a usage
        error (``PROBE_CHECKS`` not ``exact``, ``auto`` or ``sentinel``, or
        ``PROBE_SYNC`` not ``0``, ``1`` or ``auto``, included), an unreadable config or a missing script; 1 too when
        another running process writes the config's dump_path, or when a level L2 config would run in a job of
        several processes on a machine with no Ascend device (:func:`_l2_distributed`); 126/127 when CMD
        cannot be started. When a debugger of CMD turned detection off (:func:`_say_turned_off`) a warning
        says so at the end and the status is still CMD's: the job itself ran as it would have without the
        tool, and a job runner or `probe run ... || exit 1` before `probe report` must not take a finished
        training run for a failed one (nor skip the report that explains the incomplete dump).
    """
    from ..lint.api import LintOptions, UsageError, lint_paths
    from ..lint.engine import exit_status, once_per_run
    from ..lint.reporters import get

    stream = stream if stream is not None else sys.stderr
    options = options or LintOptions()
    if not command:
        stream.write("probe: error: no command given; usage: probe run CONFIG [options] -- CMD ARGS...\n")
        return ExitStatus.USAGE
    if not config.endswith(".json"):
        # msprobe's PrecisionDebugger refuses a config_path whose name does not
        # end in ".json", case included (FileChecker with the .json file type,
        # 8.1.2 to 26.0: docs/profiles-research.md); this is also what
        # `probe run -- python train.py` (CONFIG forgotten) looks like.
        from ..lint.rules.paths import json_name

        rename = f" (rename it, e.g. to {json_name(config)})" if os.path.isfile(config) else ""
        stream.write(f"probe: error: CONFIG must be the msprobe config, given before `--`, and its name must end in "
                     f"'.json', in lower case (msprobe's PrecisionDebugger refuses any other name: PL410); got "
                     f"{config!r}{rename}; usage: probe run CONFIG [options] -- CMD ARGS...\n")
        return ExitStatus.USAGE
    checks = os.environ.get("PROBE_CHECKS")
    # probe_runtime.PrecisionDebugger would refuse it (case and white space do not matter)
    if checks and checks.strip().lower() not in ("exact", "auto", "sentinel", ""):
        stream.write(f"probe: error: PROBE_CHECKS must be 'exact', 'auto' or 'sentinel', not {checks!r}; not starting "
                     f"`{shlex.join(command)}`\n")
        return ExitStatus.USAGE
    sync = os.environ.get("PROBE_SYNC", "auto")
    if sync.strip().lower() not in ("0", "off", "false", "no", "1", "on", "true", "yes", "auto", ""):
        # probe_runtime.execution.check_sync_mode would refuse it
        stream.write(f"probe: error: PROBE_SYNC must be '0', '1' or 'auto' (or off/on, false/true, no/yes), not "
                     f"{sync!r}; not starting `{shlex.join(command)}`\n")
        return ExitStatus.USAGE
    plan = parse_command(command)  # CMD runs here, so its script is relative to here (not --cwd)
    script = options.script
    app = _python_app(plan.script) if script is None and plan.script is not None else None
    if app is not None:  # a folder or zip file Python runs (its __main__.py): a tester's finding, refused
        if app:
            plan.script = app
        else:
            stream.write(f"probe: note: {plan.script} is a zip application; its script is not checked\n")
            plan.script = None
    if script is None and plan.script is not None:
        from ..project.files import not_regular

        script_path = Path(plan.script)
        refused = not_regular(plan.script)
        if refused:
            what = "no such file" if refused == "file not found" else refused
            stream.write(f"probe: error: {plan.script}: {what}; `{shlex.join(command)}` would fail\n")
            return ExitStatus.USAGE
        script = str(script_path)
    if script is not None and not _script_analysis_available():
        stream.write(f"probe: note: script analysis is not installed; {script} is not checked\n")
        script = None
    extra = dict(options.extra_facts)
    world = plan.world_size if plan.world_size is not None else _single_process(plan)
    if world is not None and options.world_size is None:
        extra.setdefault("world_size", world)
    options = options._replace(script=script, check_fs=True, runtime=True, extra_facts=extra)
    instead = _configs_read_instead(script, config, stream) if script is not None else []
    # A job still writing the dump_path first: the lint would see its step folders as an earlier run's dump
    # and advise moving them away, under the running job (a fresh user's try)
    for checked in [config] + instead:
        busy = _live_writers(checked)
        if busy:
            stream.write(f"probe: not starting `{shlex.join(command)}`: {busy}\n")
            return ExitStatus.PROBLEMS
    # what probe run knew and `probe lint` cannot (the world size from CMD, the script, the flags, the
    # filesystem checks): its --fix is told it, else the fix finds nothing to do (a fresh user's finding)
    told = f" --world-size {getattr(world, 'value', world)}" if world is not None and options.world_size is None else ""
    flags = _lint_flags(options)
    worst = ExitStatus.OK
    said: set = set()  # the script's findings, said with the first config only
    for checked in [config] + instead:  # every config, so all their problems are said in one go
        try:
            run = lint_paths([checked], options, walk=False)  # one config file, never a folder walk
        except UsageError as err:
            stream.write(f"probe: error: {err}\n")
            return ExitStatus.USAGE
        once_per_run(run.results, said)
        run = run._replace(status=exit_status(run.results, strict=options.strict))
        has_findings = any(result.diagnostics for result in run.results)
        if has_findings or run.status:
            # `probe run` has no --fix: the fix summary names the command that has it
            found = [d for result in run.results for d in result.diagnostics]
            codes = {d.code for d in found}
            cited = script is not None and any(os.path.basename(script) in d.message for d in found)
            needs = (told if codes & {"PL303", "PL304"} else "") + flags + (
                f" --script {shlex.quote(script)}" if cited and script else "") + (
                " --check-fs" if codes & {"PL406", "PL407", "PL408", "PL411"} else "")
            fix = f"with `probe lint --fix {shlex.quote(checked)}{needs}`"
            stream.write(get("text")(run.results, color=color).replace("with --fix --unsafe-fixes",
                                                                        fix[:-1] + " --unsafe-fixes`")
                         .replace("with --fix", fix))
        worst = max(worst, run.status)
    if worst:
        stream.write(f"probe: not starting `{shlex.join(command)}`: fix the problems above"
                     + (" (--strict: warnings count)" if options.strict and worst == 1 else "") + "\n")
        return worst
    size = options.world_size if options.world_size is not None else getattr(world, "value", world)
    if size is None:  # probe run started once per rank by an outer launcher: what it exported
        from ..lint.context import WORLD_SIZE_VARIABLES

        size = next((int(v) for v in (os.environ.get(n, "").strip() for n in WORLD_SIZE_VARIABLES)
                     if v.isdigit()), None)
    refusal = _l2_distributed([config] + instead, size if isinstance(size, int) else None)
    if refusal:
        stream.write(f"probe: not starting `{shlex.join(command)}`: {refusal}\n")
        return ExitStatus.PROBLEMS
    also = f" ({', '.join(instead)}, which {script} reads instead, passed too)" if instead else ""
    stream.write(f"probe: {config} passed{also}; starting: {shlex.join(command)}\n")
    stream.flush()
    env = child_environment(config, selection=_selection_options(options))
    runner = runner or run_command
    dump_paths = list(dict.fromkeys(p for p in map(_dump_path, [config] + instead) if p))
    before = _writers_before(dump_paths)
    try:
        status = runner(list(command), env, launcher=plan.launcher)
    except CommandError as err:
        stream.write(f"probe: error: {err}\n")
        return ExitStatus.USAGE
    _say_turned_off(before, status, stream)
    return status
