"""The guarded launch behind ``probe run CONFIG -- CMD ARGS...``.

Pure Python (MindSpore is never imported). Four parts, each usable alone:

* :func:`parse_command` reads CMD: which launcher it is (``python``,
  ``msrun``, ``torchrun``, ``mpirun``, ``env``), the Python script it runs
  (``python -u train.py``, ``python -m pkg.mod`` resolved to a file under the
  working folder, ``msrun ... train.py``, ``torchrun ... train.py``,
  ``mpirun -n 2 python train.py``) and the world size the launcher's
  arguments give (``msrun --worker_num``, ``torchrun --nproc_per_node x
  --nnodes``, ``mpirun -n``), as a context Fact for the rank rules
  (PL303/PL304).
* :func:`child_environment` builds the child's environment: ``PROBE_CONFIG``
  (absolute path of the config) and the running interpreter's bin folder
  first on ``PATH`` (msrun starts a bare ``python``; this makes it the
  virtual environment's).
* :func:`run_command` starts CMD, forwards SIGINT/SIGTERM/SIGHUP to it and
  returns its exit status (128+N when it died of signal N).
* :func:`guarded_run` ties them to the lint: lint CONFIG (filesystem checks
  on, probe_runtime's view, the script when CMD runs one); on errors print
  the diagnostics and return without starting CMD; otherwise run it.

Everything probe itself prints goes to stderr, so CMD's stdout stays the
job's own.

Signals. When probe is not the foreground job of a terminal (CI, nohup,
batch schedulers, ``timeout``), CMD runs in a process group of its own and
SIGINT/SIGTERM/SIGHUP received by probe are sent to that whole group once.
In an interactive terminal CMD stays in probe's process group, so Ctrl+C,
Ctrl+Z and reading the terminal (pdb) work as usual: the terminal already
delivers SIGINT to CMD, so probe does not repeat it, while SIGTERM and SIGHUP
are forwarded to CMD. msrun starts every worker in a session of its own and
cleans them up only on SIGINT (a SIGTERM kills msrun and orphans the
workers), so a SIGTERM or SIGHUP for an msrun job is delivered to msrun as
SIGINT, and msrun's exit status 0 after such an interruption is reported as
128+N.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, TextIO

from ..lint.context import Fact
from ..exit import ExitStatus


FORWARDED_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None),
                                      getattr(signal, "SIGHUP", None)) if s is not None)

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?w?$")


class CommandError(ValueError):
    """CMD cannot be run or its script cannot be found (exit status 2)."""


@dataclass
class LaunchPlan:
    """What :func:`parse_command` learnt from CMD.

    Attributes:
        argv: CMD as given.
        launcher: ``"python"``, ``"msrun"``, ``"torchrun"``, ``"mpirun"`` or
            None (any other program).
        script: the Python file CMD runs (as written, or resolved from
            ``-m``), or None.
        module: the module of ``python -m`` / ``torchrun -m``, if any.
        world_size: a Fact with the launcher's world size and where it came
            from (``"msrun --worker_num"``), or None.
        notes: why a script or world size could not be determined.
    """

    argv: list[str]
    launcher: Optional[str] = None
    script: Optional[str] = None
    module: Optional[str] = None
    world_size: Optional[Fact] = None
    notes: list[str] = field(default_factory=list)


def is_python(token: str) -> bool:
    """True for ``python``, ``python3``, ``python3.11``, ``/venv/bin/python``."""
    return bool(_PYTHON_NAME.match(os.path.basename(token)))


def resolve_module(module: str, cwd: Optional[str] = None) -> Optional[str]:
    """``pkg.mod`` to ``pkg/mod.py`` or ``pkg/mod/__main__.py`` under
    ``cwd`` (what ``python -m`` runs from there), or None when the module is
    not a file there (an installed module)."""
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return None
    base = Path(cwd or ".").joinpath(*module.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__main__.py"):
        if candidate.is_file():
            return str(candidate if cwd else candidate.relative_to("."))
    return None


def _python(plan: LaunchPlan, args: Sequence[str], cwd: Optional[str]) -> None:
    """Interpreter options, then the script (``args`` excludes the interpreter)."""
    i = 0
    while i < len(args):
        token = args[i]
        if token == "-" or not token.startswith("-"):
            break
        if token.startswith("--"):
            if token == "--check-hash-based-pycs":
                i += 2
                continue
            if token == "--":
                i += 1
                break
            plan.notes.append(f"python {token} runs no script")
            return
        for at, char in enumerate(token[1:], start=1):
            rest = token[at + 1:]
            if char in "cm":
                value = rest or (args[i + 1] if i + 1 < len(args) else "")
                if char == "c":
                    plan.notes.append("python -c runs no script file")
                    return
                _module(plan, value, args[i + (1 if rest else 2):], cwd)
                return
            if char in "XW":
                if not rest:
                    i += 1
                break
        i += 1
    if i >= len(args) or args[i] == "-":
        plan.notes.append("python reads its program from stdin")
        return
    plan.script = args[i]


def _module(plan: LaunchPlan, module: str, rest: Sequence[str], cwd: Optional[str]) -> None:
    """``python -m module rest...``: launchers run as modules, else a file."""
    plan.module = module
    if module in ("torch.distributed.run", "torch.distributed.launch"):
        plan.launcher = "torchrun"
        _torchrun(plan, rest, cwd, name=f"python -m {module}")
        return
    if module == "mindspore.parallel.cluster.run":
        plan.launcher = "msrun"
        _msrun(plan, rest, cwd, name="msrun")
        return
    path = resolve_module(module, cwd)
    if path is None:
        plan.notes.append(f"module {module} is not a file under {cwd or 'the working folder'}; its script is not checked")
    plan.script = path


# msrun's options (all take a value; argparse accepts unique prefixes).
_MSRUN_OPTIONS = ("--worker_num", "--local_worker_num", "--master_addr", "--master_port", "--node_rank",
                  "--log_dir", "--join", "--cluster_time_out", "--bind_core", "--bind_numa", "--sim_level",
                  "--sim_rank_id", "--rank_table_file", "--worker_log_name", "--tail_worker_log")


def _long_option(token: str, known: Sequence[str]) -> tuple[Optional[str], Optional[str]]:
    """(full option name, attached value) for ``--opt`` / ``--opt=value``,
    matching a unique prefix as argparse does; (None, value) if unknown."""
    name, _, attached = token.partition("=")
    value = attached if "=" in token else None
    if name in known:
        return name, value
    matches = [k for k in known if k.startswith(name)]
    return (matches[0] if len(matches) == 1 else None), value


def _msrun(plan: LaunchPlan, args: Sequence[str], cwd: Optional[str], *, name: str = "msrun") -> None:
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token in ("-h", "--help"):
            plan.notes.append("msrun --help runs nothing")
            return
        if not token.startswith("-"):
            break
        option, value = _long_option(token, _MSRUN_OPTIONS)
        if value is None:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        if option:
            values[option] = value
        i += 1
    worker_num = values.get("--worker_num")
    if worker_num is None:
        plan.world_size = Fact(8, f"{name} default --worker_num 8")
    elif worker_num.isdigit() and int(worker_num) >= 1:
        plan.world_size = Fact(int(worker_num), f"{name} --worker_num")
    else:
        plan.notes.append(f"{name} --worker_num {worker_num!r} is not a number of workers")
    if i >= len(args):
        plan.notes.append(f"{name} has no task script")
        return
    task = args[i]
    if task in ("python", "python3"):  # msrun runs `python ARGS...` as given
        _python(plan, args[i + 1:], cwd)
    elif task == "pytest":
        plan.notes.append("msrun pytest runs no single script")
    else:
        plan.script = task


_TORCHRUN_FLAGS = {"--standalone", "--module", "-m", "--no-python", "--no_python", "--run-path", "--run_path",
                   "--no-python", "-h", "--help"}


def _torchrun(plan: LaunchPlan, args: Sequence[str], cwd: Optional[str], *, name: str = "torchrun") -> None:
    values: dict[str, str] = {}
    flags: set[str] = set()
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("-"):
            break
        option, _, attached = token.partition("=")
        option = option.replace("_", "-") if option.startswith("--") else option
        if token in _TORCHRUN_FLAGS:
            flags.add(option)
        else:
            if "=" not in token:
                attached = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            values[option] = attached
        i += 1
    if "-h" in flags or "--help" in flags:
        plan.notes.append(f"{name} --help runs nothing")
        return
    plan.world_size = _torch_world(values, plan, name)
    if i >= len(args):
        plan.notes.append(f"{name} has no training script")
        return
    if "--no-python" in flags:
        plan.notes.append(f"{name} --no-python runs a program, not a Python script")
    elif "-m" in flags or "--module" in flags:
        plan.module = args[i]
        plan.script = resolve_module(args[i], cwd)
        if plan.script is None:
            plan.notes.append(f"module {args[i]} is not a file under the working folder; its script is not checked")
    else:
        plan.script = args[i]


def _torch_world(values: Mapping[str, str], plan: LaunchPlan, name: str) -> Optional[Fact]:
    nproc = values.get("--nproc-per-node", "1")
    nnodes = values.get("--nnodes", "1")
    low, _, high = nnodes.partition(":")
    if high and high != low:
        plan.notes.append(f"{name} --nnodes {nnodes} is elastic; the world size is not known before the run")
        return None
    if not (nproc.isdigit() and low.isdigit()) or int(nproc) < 1 or int(low) < 1:
        plan.notes.append(f"{name} --nproc_per_node {nproc} --nnodes {nnodes}: world size not known before the run")
        return None
    given = [o.lstrip("-").replace("-", "_") for o in ("--nproc-per-node", "--nnodes") if o in values]
    source = f"{name} " + " ".join("--" + g for g in given) if given else f"{name} defaults (1 process)"
    return Fact(int(nproc) * int(low), source)


_MPIRUN_COUNT = ("-n", "-np", "--np", "--n", "-c")


def _mpirun(plan: LaunchPlan, args: Sequence[str], cwd: Optional[str], *, name: str) -> None:
    for i, token in enumerate(args):
        option, _, attached = token.partition("=")
        if option in _MPIRUN_COUNT:
            value = attached if "=" in token else (args[i + 1] if i + 1 < len(args) else "")
            if value.isdigit() and int(value) >= 1:
                plan.world_size = Fact(int(value), f"{name} {option}")
            break
    for i, token in enumerate(args):  # the program: the first python or .py token
        if is_python(token):
            _python(plan, args[i + 1:], cwd)
            return
        if token.endswith(".py") and not token.startswith("-"):
            plan.script = token
            return
    plan.notes.append(f"{name} runs no Python script that probe can see")


def parse_command(argv: Sequence[str], cwd: Optional[str] = None) -> LaunchPlan:
    """Read CMD (see the module docstring). Never raises; what cannot be
    determined is left None with a note."""
    plan = LaunchPlan(list(argv))
    args = list(argv)
    while args and os.path.basename(args[0]) == "env":  # env [-i] [VAR=value...] CMD
        args = args[1:]
        while args and (args[0].startswith("-") or ("=" in args[0] and not args[0].startswith("="))):
            args = args[1:]
    if not args:
        return plan
    program, rest = args[0], args[1:]
    base = os.path.basename(program)
    if is_python(program):
        plan.launcher = "python"
        _python(plan, rest, cwd)
    elif base == "msrun":
        plan.launcher = "msrun"
        _msrun(plan, rest, cwd)
    elif base in ("torchrun", "torch-run"):
        plan.launcher = "torchrun"
        _torchrun(plan, rest, cwd)
    elif base in ("mpirun", "mpiexec", "orterun"):
        plan.launcher = "mpirun"
        _mpirun(plan, rest, cwd, name=base)
    elif program.endswith(".py"):
        plan.script = program
    return plan


def child_environment(config: str, environ: Optional[Mapping[str, str]] = None, *,
                      executable: Optional[str] = None, prefix: Optional[str] = None,
                      base_prefix: Optional[str] = None) -> dict[str, str]:
    """The environment CMD runs with: ``environ`` (default os.environ) plus
    ``PROBE_CONFIG`` = the config's absolute path, the running interpreter's
    bin folder first on ``PATH`` (not resolved through symlinks: a venv's
    ``bin/python`` is a link to the base interpreter) and, in a virtual
    environment, ``VIRTUAL_ENV``."""
    env = dict(os.environ if environ is None else environ)
    env["PROBE_CONFIG"] = os.path.abspath(config)
    executable = executable if executable is not None else sys.executable
    if executable:
        bindir = os.path.dirname(os.path.abspath(executable))
        parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.normpath(p) != bindir]
        env["PATH"] = os.pathsep.join([bindir] + parts)
    prefix = sys.prefix if prefix is None else prefix
    base_prefix = getattr(sys, "base_prefix", sys.prefix) if base_prefix is None else base_prefix
    if prefix != base_prefix:
        env["VIRTUAL_ENV"] = prefix
    return env


def exit_status(returncode: int) -> int:
    """A child's return code as a shell would report it: 128+N for death by
    signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _interactive() -> bool:
    """True when probe is the foreground job of a terminal."""
    try:
        fd = sys.stdin.fileno()
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def run_command(argv: Sequence[str], env: Optional[Mapping[str, str]] = None, *, cwd: Optional[str] = None,
                launcher: Optional[str] = None, interactive: Optional[bool] = None) -> int:
    """Run CMD, forward SIGINT/SIGTERM/SIGHUP to it (see the module
    docstring), wait, and return its exit status.

    Raises:
        CommandError: CMD is empty. A program that cannot be found or run
            returns 127 or 126 after a message on stderr.
    """
    if not argv:
        raise CommandError("no command given after --")
    interactive = _interactive() if interactive is None else interactive
    own_group = os.name == "posix" and not interactive
    child: Optional[subprocess.Popen] = None
    pending: list[int] = []
    forwarded: list[int] = []

    def forward(signum: int) -> None:
        if interactive and signum == signal.SIGINT:
            return  # the terminal delivered it to CMD already
        sent = signal.SIGINT if launcher == "msrun" and signum != signal.SIGINT else signum
        forwarded.append(signum)
        assert child is not None  # forward() is only called once the child runs
        try:
            if own_group:
                os.killpg(child.pid, sent)
            else:
                child.send_signal(sent)
        except (ProcessLookupError, PermissionError):
            pass

    def handler(signum, frame):  # noqa: ARG001
        if child is None:
            pending.append(signum)
        else:
            forward(signum)

    previous = {}
    for signum in FORWARDED_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        kwargs: dict = {}
        if own_group:
            if sys.version_info >= (3, 11):
                kwargs["process_group"] = 0
            else:  # pragma: no cover
                kwargs["preexec_fn"] = os.setpgrp
        try:
            child = subprocess.Popen(list(argv), env=dict(env) if env is not None else None, cwd=cwd, **kwargs)
        except FileNotFoundError:
            sys.stderr.write(f"probe: error: command not found: {argv[0]}\n")
            return ExitStatus.NOT_FOUND
        except PermissionError:
            sys.stderr.write(f"probe: error: permission denied: {argv[0]}\n")
            return ExitStatus.NOT_EXECUTABLE
        except OSError as err:
            sys.stderr.write(f"probe: error: cannot run {argv[0]}: {err.strerror or err}\n")
            return ExitStatus.NOT_EXECUTABLE
        for signum in pending:
            forward(signum)
        returncode = child.wait()
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    if returncode == 0 and forwarded and launcher == "msrun":
        return 128 + forwarded[0]  # msrun exits 0 after cleaning up on SIGINT
    return exit_status(returncode)


def _script_analysis_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("msprobe_lint.lint.script") is not None
    except (ImportError, ValueError):
        return False


def guarded_run(config: str, command: Sequence[str], options=None, *, stream: Optional[TextIO] = None,
                color: bool = False, runner: Optional[Callable[..., int]] = None) -> int:
    """Lint ``config`` (and CMD's script) and run CMD only when no error
    (nor, with ``options.strict``, warning) was found.

    Args:
        config: the msprobe config.json.
        command: CMD ARGS...
        options: :class:`msprobe_lint.lint.api.LintOptions` (``check_fs`` and
            ``runtime`` are forced on; ``script`` defaults to CMD's script;
            the launcher's world size fills ``world_size`` unless given).
        stream: where probe's own output goes (default stderr).
    Returns:
        CMD's exit status; 1 when the lint found errors, 2 for a usage
        error (``PROBE_CHECKS`` neither ``exact`` nor ``sentinel``
        included), an unreadable config or a missing script; 126/127 when CMD
        cannot be started.
    """
    from dataclasses import replace

    from ..lint.api import LintOptions, UsageError, lint_paths
    from ..lint.reporters import get

    stream = stream if stream is not None else sys.stderr
    options = options or LintOptions()
    if not command:
        stream.write("probe: error: no command given; usage: probe run CONFIG [options] -- CMD ARGS...\n")
        return ExitStatus.USAGE
    if not config.endswith(".json"):
        # msprobe accepts only a .json config_path; this is also what
        # `probe run -- python train.py` (CONFIG forgotten) looks like.
        stream.write(f"probe: error: CONFIG must be the msprobe config (a .json file), given before `--`; "
                     f"got {config!r}; usage: probe run CONFIG [options] -- CMD ARGS...\n")
        return ExitStatus.USAGE
    checks = os.environ.get("PROBE_CHECKS")
    if checks and checks not in ("exact", "sentinel"):  # probe_runtime.PrecisionDebugger would refuse it in CMD
        stream.write(f"probe: error: PROBE_CHECKS must be 'exact' or 'sentinel', not {checks!r}; not starting "
                     f"`{shlex.join(command)}`\n")
        return ExitStatus.USAGE
    plan = parse_command(command)  # CMD runs here, so its script is relative to here (not --cwd)
    script = options.script
    if script is None and plan.script is not None:
        script_path = Path(plan.script)
        if not script_path.is_file():
            stream.write(f"probe: error: {plan.script}: no such file; `{shlex.join(command)}` would fail\n")
            return ExitStatus.USAGE
        script = str(script_path)
    if script is not None and not _script_analysis_available():
        stream.write(f"probe: note: script analysis is not installed; {script} is not checked\n")
        script = None
    extra = dict(options.extra_facts)
    if plan.world_size is not None and options.world_size is None:
        extra.setdefault("world_size", plan.world_size)
    options = replace(options, script=script, check_fs=True, runtime=True, extra_facts=extra)
    try:
        run = lint_paths([config], options, walk=False)  # one config file, never a folder walk
    except UsageError as err:
        stream.write(f"probe: error: {err}\n")
        return ExitStatus.USAGE
    has_findings = any(result.diagnostics for result in run.results)
    if has_findings or run.status:
        stream.write(get("text")(run.results, color=color))
    if run.status:
        stream.write(f"probe: not starting `{shlex.join(command)}`: fix the problems above"
                     + (" (--strict: warnings count)" if options.strict and run.status == 1 else "") + "\n")
        return run.status
    stream.write(f"probe: {config} passed; starting: {shlex.join(command)}\n")
    stream.flush()
    env = child_environment(config)
    runner = runner or run_command
    try:
        return runner(list(command), env, launcher=plan.launcher)
    except CommandError as err:
        stream.write(f"probe: error: {err}\n")
        return ExitStatus.USAGE
