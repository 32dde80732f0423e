"""The golden lint corpus in tests/cases/: load a case, run ``probe lint``
on it, compare with (or write) its expected files.

A case is a folder ``tests/cases/NAME/`` holding ``case.toml`` (what to
run), its input files (a config, sometimes ``train.py``, ``pyproject.toml``
or other files) and the expected result that tools/regen_cases.py writes:

- ``expected.json``: ``{"exit": N, "stderr": "...", "diagnostics": [...]}``
  where each diagnostic is one string
  ``FILE:LINE:COLUMN: CODE SEVERITY "POINTER"`` (the pointer left out for
  script findings, which have none);
- for a case with ``format = ...``: ``expected.json`` without
  ``diagnostics``, and ``expected.stdout``, the whole report in that format.

``case.toml`` keys (see tests/cases/README.md): ``description``, ``args``
(what follows ``probe lint``), ``format``, ``env`` (extra environment
variables), ``pythonpath`` (case folders put first on PYTHONPATH, e.g. a
fake installed distribution), ``make`` (things git cannot store: symlinks,
folder modes, FIFOs, big files).

Every case runs in a fresh copy of its folder (the working folder of the
``probe`` process), with ``@CASE@`` in any input file, argument or
environment value replaced by that copy's absolute path, and with the
world-size variables a launcher exports removed from the environment, so
the result does not depend on the machine or on where the repository is.
In the output the copy's path (and its ``file://`` URI) is written back as
``@CASE@``, and the SARIF driver's version and rule descriptors (checked by
tests/lint/test_sarif.py against the rule catalogue) are reduced to what is stable.
"""
from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from conftest import probe_command

CASES_DIR = Path(__file__).resolve().parent / "cases"
PLACEHOLDER = "@CASE@"
EXPECTED_FILES = ("expected.json", "expected.stdout")
FORMATS = ("text", "json", "sarif", "github")
# Launchers export these; the lint reads them for the world size.
CLEARED_ENVIRONMENT = ("RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "NO_COLOR", "FORCE_COLOR", "_PROBE_COMPLETE")
KEYS = {"description", "args", "format", "env", "pythonpath", "make"}


class CaseError(ValueError):
    """A malformed case folder (bad case.toml)."""


@dataclass
class Case:
    """One folder of tests/cases (see the module docstring)."""

    name: str
    folder: Path
    description: str
    args: list[str]
    format: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)
    pythonpath: list[str] = field(default_factory=list)
    make: list[dict[str, Any]] = field(default_factory=list)

    @property
    def isolated(self) -> bool:
        return "--isolated" in self.args


@dataclass
class Outcome:
    """What one run gave, normalised: exit status, stderr, and either the
    diagnostics (one string each) or the whole report (``stdout``)."""

    exit: int
    stderr: str
    diagnostics: Optional[list[str]] = None
    stdout: Optional[str] = None

    def lines(self) -> list[str]:
        """The outcome as lines, for a side-by-side comparison."""
        out = [f"exit: {self.exit}"]
        out += [f"stderr: {line}" for line in self.stderr.splitlines()]
        if self.diagnostics is not None:
            out += self.diagnostics or ["(no diagnostics)"]
        if self.stdout is not None:
            out += self.stdout.splitlines()
        return out


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def load_case(folder: Path) -> Case:
    """Read ``folder/case.toml``.

    Raises:
        CaseError: a missing or malformed case.toml (unknown key, no args,
            an unknown format, a non-isolated case without its own
            pyproject.toml or --config-file, whose result would depend on
            the folders above it).
    """
    spec_path = folder / "case.toml"
    if not spec_path.is_file():
        raise CaseError(f"{folder.name}: no case.toml")
    spec = _toml(spec_path)
    unknown = set(spec) - KEYS
    if unknown:
        raise CaseError(f"{folder.name}: unknown case.toml key(s) {sorted(unknown)}; known: {sorted(KEYS)}")
    args = spec.get("args")
    if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
        raise CaseError(f"{folder.name}: args must be a non-empty list of strings")
    fmt = spec.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise CaseError(f"{folder.name}: format must be one of {FORMATS}")
    if fmt is None and any(a in ("--format", "-f") or a.startswith("--format=") for a in args):
        raise CaseError(f"{folder.name}: give the format with format = ..., not in args")
    case = Case(name=folder.name, folder=folder, description=str(spec.get("description", "")), args=args,
                format=fmt, env={k: str(v) for k, v in spec.get("env", {}).items()},
                pythonpath=list(spec.get("pythonpath", [])), make=list(spec.get("make", [])))
    if not case.isolated and not (folder / "pyproject.toml").is_file() and "--config-file" not in args:
        raise CaseError(f"{folder.name}: a case without --isolated needs its own pyproject.toml "
                        "(else the nearest one above the run folder would be read)")
    return case


def discover(names: Optional[list[str]] = None) -> list[Case]:
    """Every case under tests/cases (or only ``names``), sorted by name.

    Raises:
        CaseError: an unknown name or a malformed case.
    """
    folders = sorted(p for p in CASES_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if names:
        known = {f.name: f for f in folders}
        missing = [n for n in names if n.rstrip("/").split("/")[-1] not in known]
        if missing:
            raise CaseError(f"no such case: {', '.join(missing)}")
        folders = [known[n.rstrip("/").split("/")[-1]] for n in names]
    return [load_case(f) for f in folders]


def _substitute(text: str, root: Path) -> str:
    return text.replace(PLACEHOLDER, str(root))


def _prepare(case: Case, workdir: Path) -> Path:
    """Copy the case's inputs into ``workdir/NAME`` and apply ``make``;
    returns the copy."""
    root = workdir / case.name
    shutil.copytree(case.folder, root, symlinks=True,
                    ignore=shutil.ignore_patterns("case.toml", *EXPECTED_FILES, "__pycache__"))
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            raw = path.read_bytes()
            if PLACEHOLDER.encode() in raw:
                path.write_bytes(raw.replace(PLACEHOLDER.encode(), str(root).encode()))
    for item in case.make:
        target = root / item["path"]
        kind = item["kind"]
        if kind == "symlink":
            os.symlink(item["target"], target)
        elif kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "big":
            with open(target, "wb") as handle:
                handle.write(b'{"task": "overflow_check", "pad": "')
                handle.truncate(int(item["bytes"]) - 2)
                handle.seek(0, os.SEEK_END)
                handle.write(b'"}')
        else:
            raise CaseError(f"{case.name}: unknown make kind {kind!r} (symlink, dir, fifo, big)")
        if "mode" in item:
            os.chmod(target, int(str(item["mode"]), 8))
    return root


def _environment(case: Case, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENVIRONMENT}
    env.update({k: _substitute(v, root) for k, v in case.env.items()})
    if case.pythonpath:
        first = [str(root / p) for p in case.pythonpath]
        env["PYTHONPATH"] = os.pathsep.join(first + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def _unplace(text: str, root: Path) -> str:
    """The run folder's path (and its URI) written back as @CASE@."""
    for form in {root.as_uri(), root.resolve().as_uri()}:
        text = text.replace(form, "file://" + PLACEHOLDER)
    for form in {str(root), str(root.resolve())}:
        text = text.replace(form, PLACEHOLDER)
    return text


def _sarif(stdout: str) -> str:
    """The SARIF log with the stable parts only: the driver's version and
    its rule descriptors' texts are left out (tests/lint/test_sarif.py checks
    them against the rule catalogue), so a rule's wording is no golden change."""
    try:
        log = json.loads(stdout)
    except ValueError:
        return stdout
    for run in log.get("runs", []):
        driver = run.get("tool", {}).get("driver", {})
        for key in ("version", "semanticVersion"):
            if key in driver:
                driver[key] = "@VERSION@"
        if isinstance(driver.get("rules"), list):
            driver["rules"] = [rule.get("id") for rule in driver["rules"]]
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _diagnostics(stdout: str) -> list[str]:
    report = json.loads(stdout)
    out = []
    for d in report["diagnostics"]:
        line = f"{d['path']}:{d['line']}:{d['column']}: {d['code']} {d['severity']}"
        if d.get("pointer") is not None:
            line += " " + json.dumps(d["pointer"], ensure_ascii=False)
        out.append(line)
    return out


def run(case: Case, workdir: Path, *, timeout: float = 120) -> Outcome:
    """Run ``probe lint`` on a fresh copy of ``case`` under ``workdir``."""
    root = _prepare(case, workdir)
    args = [_substitute(a, root) for a in case.args]
    args += ["--format", case.format or "json"]
    proc = subprocess.run(probe_command() + ["lint", *args], cwd=root, env=_environment(case, root),
                          capture_output=True, text=True, timeout=timeout)
    stdout, stderr = _unplace(proc.stdout, root), _unplace(proc.stderr, root)
    if case.format is None:
        diagnostics = _diagnostics(stdout) if stdout.strip() else []
        return Outcome(proc.returncode, stderr, diagnostics=diagnostics)
    if case.format == "sarif":
        stdout = _sarif(stdout)
    return Outcome(proc.returncode, stderr, stdout=stdout)


def load_expected(case: Case) -> Optional[Outcome]:
    """The case's expected files as an Outcome; None when never generated."""
    path = case.folder / "expected.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    stdout = None
    if case.format is not None:
        out = case.folder / "expected.stdout"
        stdout = out.read_text(encoding="utf-8") if out.is_file() else ""
    return Outcome(data["exit"], data.get("stderr", ""), diagnostics=data.get("diagnostics"), stdout=stdout)


def write_expected(case: Case, outcome: Outcome) -> bool:
    """Write ``outcome`` as the case's expected files; True when they
    changed."""
    body: dict[str, Any] = {"exit": outcome.exit, "stderr": outcome.stderr}
    if outcome.diagnostics is not None:
        body["diagnostics"] = outcome.diagnostics
    files = {"expected.json": json.dumps(body, indent=2, ensure_ascii=False) + "\n"}
    if outcome.stdout is not None:
        files["expected.stdout"] = outcome.stdout
    changed = False
    for name in EXPECTED_FILES:
        path = case.folder / name
        old = path.read_bytes() if path.is_file() else None
        new = files.get(name)
        if new is None:
            if old is not None:
                path.unlink()
                changed = True
            continue
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(new)
        changed |= old != new.encode("utf-8")
    return changed


def side_by_side(expected: Outcome, actual: Outcome, width: int = 64) -> str:
    """Expected and actual lines in two columns, aligned by difflib, with a
    marker between them: ``|`` same, ``*`` changed, ``<`` only expected,
    ``>`` only actual."""
    left, right = expected.lines(), actual.lines()

    def cell(text: str) -> str:
        return text if len(text) <= width else text[: width - 1] + "…"

    rows = [f"{'expected':<{width}}   actual", f"{'-' * width}   {'-' * width}"]
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [f"{cell(a):<{width}} | {cell(a)}" for a in left[i1:i2]]
            continue
        olds, news = left[i1:i2], right[j1:j2]
        for k in range(max(len(olds), len(news))):
            a = olds[k] if k < len(olds) else ""
            b = news[k] if k < len(news) else ""
            mark = "*" if a and b else ("<" if a else ">")
            rows.append(f"{cell(a):<{width}} {mark} {cell(b)}")
    return "\n".join(rows)
