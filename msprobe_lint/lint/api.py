"""The library entry point the CLI, the language server and
probe_runtime's gate share: options in, results and exit status out.

Three facades over the modules that do the work: :func:`lint_paths`
(files, folders, standard input), :func:`lint_text` (a config held in
memory) and :func:`fix_paths` (``--fix``/``--diff``). The option type,
its error and the file listing are importable from here too.

Example::

    from msprobe_lint.lint.api import LintOptions, lint_paths
    run = lint_paths(["config.json"], LintOptions(isolated=True))
    print(run.status, [d.code for r in run.results for d in r.diagnostics])
"""
from __future__ import annotations

from .engine import LintRun, Result, exit_status, lint_file, once_per_run
from .inputs import check_paths, lint_input, list_files, read_inputs, settings_start
from .options import LintOptions, UsageError, prepare

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["LintOptions", "LintRun", "UsageError", "lint_paths", "lint_text", "fix_paths", "list_files", "prepare"]


def lint_paths(paths: list[str], options: Optional[LintOptions] = None, *, walk: bool = True) -> LintRun:
    """Lint every path with one shared context: files, folders (walked for
    msprobe configs, see project/discovery.py) and ``-`` (standard input, read by
    loader.read_stdin). ``walk=False``: see :func:`list_files`.

    Raises:
        UsageError: see :func:`prepare` and :func:`list_files`.
    """
    options = options or LintOptions()
    paths = check_paths(paths, options)
    context, selection, project = prepare(options, first_path=settings_start(paths, options))
    results = [lint_input(item, context, project.selection_for(item.path, selection) if project else selection)
               for item in read_inputs(paths, options, project, walk=walk)]
    once_per_run(results)  # the script's findings come with every config: said once
    return LintRun(results, exit_status(results, strict=options.strict))


def lint_text(text: str, path: str = "<text>", options: Optional[LintOptions] = None) -> Result:
    """Lint a config held in memory (an editor's buffer) as if it were the
    file ``path``: the same engine, and the ``[tool.probe-lint]`` settings
    of the nearest pyproject.toml above ``path`` (which need not exist).

    Args:
        text: the config's text (a leading byte-order mark is reported as
            in a file).
        path: where the text belongs; shown in diagnostics, and the start
            of the settings look-up and of per-file ignores.
    Raises:
        UsageError: see :func:`prepare`.
    """
    options = options or LintOptions()
    context, selection, project = prepare(options, first_path=path)
    file_selection = project.selection_for(path, selection) if project else selection
    return lint_file(path, context, selection=file_selection, raw=text.encode("utf-8", "surrogatepass"))


def fix_paths(paths: list[str], options: Optional[LintOptions] = None, *, unsafe: bool = False,
              write: bool = True) -> tuple[LintRun, list]:
    """Apply the fixes to every path (``probe lint --fix``; ``write=False``
    is ``--diff``), then lint what is left: see fixing.fix_paths
    (imported here only when fixing).

    Returns:
        (the run over the fixed texts, one FixOutcome per file linted).
    Raises:
        UsageError: see :func:`prepare`.
    """
    from .fixing import fix_paths as apply_fixes

    return apply_fixes(paths, options, unsafe=unsafe, write=write)
