"""``probe lint --fix`` and ``--diff`` over files: re-read, fix (the
edits of ``edits.py``), check nobody changed the file meanwhile, write
atomically.

Example::

    from msprobe_lint.lint.fixing import fix_paths
    run, outcomes = fix_paths(["config.json"], write=False)  # --diff
    print("".join(o.diff() for o in outcomes))
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..exit import ExitStatus
from .diagnostic import Diagnostic
from .engine import LintRun, Result, exit_status, lint_file, once_per_run
from .inputs import Input, check_paths, lint_input, read_inputs, settings_start
from .options import LintOptions, prepare
from .selection import Selection

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional


@dataclass
class FixOutcome:
    """What ``--fix``/``--diff`` did to one file.

    Attributes:
        path: the config.
        before, after: its text before and after the fixes (equal when
            nothing was fixed).
        applied: the diagnostics whose fix was applied, in order.
        skipped: why the file was not fixed (a soft link, unreadable,
            not UTF-8, does not parse), or which fixes due could not be
            applied (their findings are then reported without a fix), or
            None.
        written: True when the file on disk was rewritten.
        failed: True when fixes were due but the file could not be
            rewritten (an I/O error: the run's exit status is 2).
        stdin: True for standard input (never written; ``probe lint
            --fix -`` prints ``after`` on stdout).
    """

    path: str
    before: str = ""
    after: str = ""
    applied: list[Diagnostic] = field(default_factory=list)
    skipped: Optional[str] = None
    written: bool = False
    failed: bool = False
    stdin: bool = False

    def diff(self) -> str:
        """Unified diff of the fixes ("" when nothing changes)."""
        from .fixes.edits import unified_diff

        return unified_diff(self.before, self.after, self.path, f"{self.path} (fixed)")


def fix_paths(paths: list[str], options: Optional[LintOptions] = None, *, unsafe: bool = False,
              write: bool = True) -> tuple[LintRun, list[FixOutcome]]:
    """Apply the fixes to every path (``probe lint --fix``; ``write=False``
    is ``--diff``), then lint what is left. Paths are taken as by
    :func:`lint_paths`: folders are walked, ``-`` is standard input (its
    fixed text is returned, never written anywhere).

    A file is rewritten (atomically, keeping its mode) only when it parsed,
    a fix applied, it is not a soft link, and its bytes are still those
    that were linted (an editor saving meanwhile is not overwritten). Fixing repeats (re-lint,
    fix again) up to :data:`edits.MAX_ROUNDS` times.

    Returns:
        (the run over the fixed texts, whose status reflects what remains,
        or 2 when a file with fixes due could not be rewritten; one
        FixOutcome per file linted).
    Raises:
        UsageError: see :func:`prepare`.
    """
    import errno
    import os

    from .fixes.edits import fix_text
    from .loader import read_bytes, write_atomic

    options = options or LintOptions()
    paths = check_paths(paths, options)
    context, selection, project = prepare(options, first_path=settings_start(paths, options))
    results: list[Result] = []
    outcomes: list[FixOutcome] = []
    for item in read_inputs(paths, options, project):
        path = item.path
        file_selection = project.selection_for(path, selection) if project else selection
        outcome = FixOutcome(path, stdin=item.stdin)
        outcomes.append(outcome)
        raw = item.raw
        if not item.stdin and not item.reason:  # read now: an earlier fix may have changed it (a link to it)
            raw, _ = read_bytes(path)
        text = None
        if raw is None:
            outcome.skipped = "cannot be read"
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                outcome.skipped = "is not UTF-8"
                if item.stdin:  # passed through unchanged by --fix -
                    outcome.before = outcome.after = raw.decode("utf-8", "surrogateescape")
        if text is None:
            results.append(lint_input(Input(path, raw, item.reason, item.stdin), context, file_selection))
            continue

        def lint(candidate: str, path: str = path, file_selection: Selection = file_selection) -> list:
            return lint_file(path, context, selection=file_selection, raw=candidate.encode("utf-8")).diagnostics

        outcome.before = text
        if not item.stdin and os.path.islink(path):
            outcome.after = text
            outcome.skipped = "is a soft link; not rewritten (fix the file it points to)"
            found = lint(text)
            # fixes due and not written: exit 2, as for a read-only file (README, --fix)
            outcome.failed = write and any(d.fix is not None and (unsafe or d.fix.safe) for d in found)
            remaining = _unfixable(found)
        else:
            outcome.after, outcome.applied, remaining = fix_text(text, lint, unsafe=unsafe)
            if any(d.code in ("PL001", "PL003", "PL007") for d in remaining) and not outcome.applied:
                outcome.skipped = "does not parse as an msprobe config; nothing fixed"
            pending = [d for d in remaining if d.fix is not None and (unsafe or d.fix.safe)]
            if pending and not outcome.skipped:  # never left silently, nor counted as fixable
                outcome.skipped = _not_applied(pending)
                remaining = [d._replace(fix=None) if d in pending else d for d in remaining]
        if write and not item.stdin and outcome.after != outcome.before:
            try:
                if read_bytes(path)[0] != raw:  # saved by someone else meanwhile: theirs wins
                    raise OSError("it changed while it was being fixed")
                write_atomic(path, outcome.after)
                outcome.written = True
            except OSError as err:
                outcome.skipped = f"not rewritten: {err.strerror or err}"
                if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    outcome.skipped += " (the file and its folder must be writable: it is replaced by a new file)"
                outcome.failed = True
                remaining = _unfixable(lint(text))
                outcome.after, outcome.applied = text, []
        results.append(Result(path, remaining, source=outcome.after))
    once_per_run(results)  # the script's findings come with every config: said once
    status = exit_status(results, strict=options.strict)
    if any(o.failed for o in outcomes):
        status = ExitStatus.USAGE  # could not write: an I/O error, as for a file that cannot be read
    return LintRun(results, status), outcomes


#: how many different fixes a line of ``--fix``'s report names before "and N more"
SHOWN_FIXES = 4


def fixes_named(diagnostics: list, separator: str = ", ") -> str:
    """The fixes of ``diagnostics`` as ``--fix`` names them on one line
    (``PL101 rename 'a' to 'b', PL302 ...``): a fix repeated is named once
    with how many times (``(199 times)``), and after :data:`SHOWN_FIXES`
    different ones the rest is counted (``and 96 more``), so a file with
    hundreds of fixes gets a line that can be read."""
    counted: dict[str, int] = {}
    for d in diagnostics:
        text = f"{d.code} {d.fix.description}"
        counted[text] = counted.get(text, 0) + 1
    named = [f"{text} ({n} times)" if n > 1 else text for text, n in list(counted.items())[:SHOWN_FIXES]]
    rest = sum(list(counted.values())[SHOWN_FIXES:])
    return separator.join(named) + (f"{separator}and {rest} more" if rest else "")


def _not_applied(pending: list) -> str:
    """What ``--fix`` says of fixes it asked for and could not apply (each
    would spoil the text, or the rounds ran out)."""
    named = fixes_named(pending, "; ")
    many = len(pending) != 1
    return (f"{len(pending)} fix{'es' if many else ''} could not be applied ({named}): "
            f"{'they are' if many else 'it is'} left for you to make by hand")


def _unfixable(diagnostics: list) -> list:
    """``diagnostics`` without their fixes: ``--fix`` could not write the
    file, so none of them is fixable by it (the report says why, not
    "[*] N fixable with --fix")."""
    return [d._replace(fix=None) if d.fix is not None else d for d in diagnostics]
