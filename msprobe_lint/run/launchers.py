"""What ``probe run``'s CMD is: which launcher (``python``, ``python -m``,
``msrun``, ``torchrun``, ``mpirun``, through ``env``), the Python script it
runs, and the world size the launcher's arguments give, as a context Fact
for the rank rules (PL303/PL304). One grammar per launcher; pure Python,
never raises.

Example::

    >>> plan = parse_command(["msrun", "--worker_num=4", "--local_worker_num=4", "train.py"])
    >>> plan.launcher, plan.script, plan.world_size.value
    ('msrun', 'train.py', 4)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..lint.context import Fact

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?w?$")


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
        plan.notes.append(f"module {module} is not a file under {cwd or 'the working folder'}; "
                          "its script is not checked")
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
    """Read CMD (``argv``; ``cwd`` is where ``python -m`` modules are
    looked for). Never raises; what cannot be determined is left None with
    a note."""
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
