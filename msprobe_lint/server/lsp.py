"""``probe server``: a Language Server Protocol server over stdio (pygls).

Editors get the findings of ``probe lint`` as they type:

* on ``textDocument/didOpen``, ``didChange`` and ``didSave`` the document's
  text in the editor (not the file on disk) is linted, when its content
  looks like an msprobe config (the same sniffing as ``--only-msprobe``,
  sniff.py); anything else gets an empty diagnostic list, so a model's
  config.json stays clean. ``didClose`` clears the file's diagnostics.
* each diagnostic carries the rule code, the severity, the range of the
  offending key or value, the message with the hint, and as its code
  description a link to the text of ``probe explain CODE`` (a Markdown
  file written once per release under the user's cache folder).
* ``textDocument/codeAction`` offers each fix as a ``quickfix`` (safe
  fixes preferred; unsafe ones say so in their title), and a
  ``source.fixAll`` action applying every safe fix, as ``--fix`` would.
  A relative path is made absolute (PL401's fix) against the workspace
  folder holding the document, else the document's folder, never the
  server's own current folder (``folder_for``). A document that is not
  open gets no code actions.

Settings come from the ``[tool.probe-lint]`` of the pyproject.toml nearest
to the document's path, looked up on every lint (so editing the pyproject
takes effect), with the live environment as for the CLI. pygls is an
optional dependency (``pip install 'msprobe-lint[lsp]'``), imported only
when the server starts.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

from ..lint.diagnostic import Diagnostic, Severity

SOURCE = "probe-lint"
# Fixes that make a relative path absolute against a folder (see ProbeLanguageServer.folder_for).
_FIXES_NEEDING_A_FOLDER = frozenset({"PL401"})
_LINE_BREAKS = ("\r\n", "\n", "\r")


def to_offset_table(text: str) -> list[int]:
    """Offsets at which each linter line starts (lines end at ``\\n``)."""
    starts = [0]
    index = text.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def lsp_position(text: str, offset: int, encoding: str = "utf-16") -> tuple[int, int]:
    """The LSP (line, character) of a code-point ``offset`` in ``text``:
    lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as LSP counts them), and
    characters are counted in ``encoding``'s code units (LSP's default
    ``utf-16``, or ``utf-8``/``utf-32`` when negotiated)."""
    offset = max(0, min(offset, len(text)))
    prefix = text[:offset]
    line = prefix.count("\n") + prefix.count("\r") - prefix.count("\r\n")
    start = max(prefix.rfind("\n"), prefix.rfind("\r")) + 1
    part = prefix[start:]
    if encoding == "utf-8":
        units = len(part.encode("utf-8", "surrogatepass"))
    elif encoding == "utf-32":
        units = len(part)
    else:
        units = len(part.encode("utf-16-le", "surrogatepass")) // 2
    return line, units


class LspLines:
    """Where each LSP line of ``text`` starts (lines end at ``\\n``,
    ``\\r\\n`` or ``\\r``), found once, so the position of each of many
    diagnostics is a binary search, not a count over the text before it
    (a 200,000-entry list with a finding per entry)."""

    def __init__(self, text: str):
        import re

        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\r\n|\n|\r", text)]

    def position(self, offset: int, encoding: str = "utf-16") -> tuple[int, int]:
        """As :func:`lsp_position`."""
        import bisect

        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        if offset > start and self.text[offset - 1] == "\r":
            return line + 1, 0  # between the \r and \n of a pair: the \r ended the line (as lsp_position counts)
        return line, _units(self.text[start:offset], encoding)


def _units(part: str, encoding: str) -> int:
    """The length of ``part`` in ``encoding``'s code units."""
    if encoding == "utf-8":
        return len(part.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(part)
    return len(part.encode("utf-16-le", "surrogatepass")) // 2


def diagnostic_offsets(diagnostic: Diagnostic, starts: list[int], text: str) -> tuple[int, int]:
    """Code-point offsets (start, end) of a diagnostic's range in ``text``
    (a BOM not counted in its columns, as the linter's); a diagnostic
    without an end gets the rest of its token, at least one character.

    Since the linter's columns do not count a BOM, the mark itself is the
    empty range before line 1, column 1 (PL004's, as its fix's edit): in
    a text starting with a BOM that range is the mark, offsets (0, 1)."""
    bom = 1 if text.startswith("\ufeff") else 0
    if bom and (diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column) == (1, 1, 1, 1):
        return 0, 1

    def at(line: int, column: int) -> int:
        line = max(1, min(line, len(starts)))
        return min(len(text), starts[line - 1] + column - 1 + (bom if line == 1 else 0))

    start = at(diagnostic.line, diagnostic.column)
    if diagnostic.end_line is not None and diagnostic.end_column is not None:
        end = at(diagnostic.end_line, diagnostic.end_column)
    else:
        end = start
        while end < len(text) and text[end] not in " \t\r\n,:{}[]":
            end += 1
        end = max(end, min(start + 1, len(text)))
    return start, max(start, end)


def explain_uri(code: str) -> Optional[str]:
    """A ``file://`` URI of the ``probe explain CODE`` text for ``code``,
    written on first use under the user's cache folder; None when it
    cannot be written or the code is unknown."""
    from .. import __version__
    from ..lint.rules import load_all

    info = load_all().get(code)
    if info is None:
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "probe-lint" / __version__ / "explain" / f"{code}.md"
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(f"<!-- probe explain {code} -->\n```text\n{info.explanation()}\n```\n",
                                 encoding="utf-8")
            os.replace(temporary, path)
    except OSError:
        return None
    return path.as_uri()


class ProbeLanguageServer:
    """The handlers; ``server`` is the pygls LanguageServer they serve.

    ``documents`` keeps, per URI, the text last linted and its
    diagnostics, for the code actions.
    """

    def __init__(self, options: Any = None):
        from lsprotocol import types
        from pygls.lsp.server import LanguageServer

        from .. import __version__

        self.types = types
        self.options = options
        self.hrefs: dict[str, Optional[str]] = {}  # code -> its explain_uri, for the lint being published
        self.documents: dict[str, tuple[str, list[Diagnostic]]] = {}
        self.server = LanguageServer(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        server = self.server

        @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
        def did_open(ls: Any, params: Any) -> None:
            self.lint(params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
        def did_change(ls: Any, params: Any) -> None:
            self.lint(params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
        def did_save(ls: Any, params: Any) -> None:
            self.lint(params.text_document.uri)

        @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
        def did_close(ls: Any, params: Any) -> None:
            self.documents.pop(params.text_document.uri, None)
            self.publish(params.text_document.uri, [])

        @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]))
        def code_action(ls: Any, params: Any) -> list:
            return self.code_actions(params)

    # -- linting -------------------------------------------------------
    def open_document(self, uri: str) -> Any:
        """The editor's open document ``uri`` (a pygls TextDocument), or
        None when it is not open. (pygls's ``get_text_document`` would
        read a file that is not open from disk, and raise when there is
        none.)"""
        from urllib.parse import unquote

        return self.server.workspace.text_documents.get(unquote(uri))

    @property
    def encoding(self) -> str:
        kind = self.server.workspace.position_encoding
        return str(getattr(kind, "value", kind) or "utf-16")

    def lint_source(self, uri: str, text: str) -> list[Diagnostic]:
        """The linter's diagnostics for ``text`` (the editor's buffer of
        ``uri``); [] when it is not an msprobe config."""
        from pygls.uris import to_fs_path, uri_scheme

        from ..lint.api import LintOptions, UsageError, lint_text
        from ..project.sniff import looks_like_msprobe

        if not looks_like_msprobe(text.encode("utf-8", "surrogatepass")):
            return []
        options = self.options or LintOptions()
        folder = self.folder_for(uri)
        path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
        if path is None:
            path = os.path.join(folder[0] if folder else os.getcwd(), "untitled.json")
        if folder is not None and not options.cwd:
            options = options._replace(cwd=folder[0], cwd_label=folder[1])
        try:
            found = lint_text(text, path, options).diagnostics
        except UsageError as err:
            self.server.window_show_message(self.types.ShowMessageParams(
                type=self.types.MessageType.Error, message=f"probe lint: {err}"))
            return []
        if folder is None and not options.cwd:
            # No folder to resolve a relative path against but the server's own current one, which is
            # wherever the editor happened to start: the finding stays, the fix is not offered.
            found = [d._replace(fix=None) if d.code in _FIXES_NEEDING_A_FOLDER else d for d in found]
        return found

    def folder_for(self, uri: str) -> Optional[tuple[str, str]]:
        """The folder relative paths in document ``uri`` are resolved
        against (PL401's fix), and how the fix names it: the innermost
        workspace folder holding the document (a training job usually
        starts in the project's root), else the document's own folder; for
        a document that is not a file (an unsaved buffer), the first
        workspace folder. None when there is none: never the server's own
        current folder, which is wherever the editor was started from."""
        from pygls.uris import to_fs_path, uri_scheme

        workspace = self.server.workspace
        roots = [to_fs_path(f.uri) for f in workspace.folders.values()] + [workspace.root_path]
        folders = [os.path.normpath(r) for r in roots if r]
        path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
        if path is None:
            return (folders[0], f"the workspace folder {folders[0]}") if folders else None
        path = os.path.normpath(path)
        holding = [f for f in folders if os.path.commonpath([f, path]) == f and f != path]
        if holding:
            best = max(holding, key=len)
            return best, f"the workspace folder {best}"
        own = os.path.dirname(path)
        return own, f"the document's folder {own}"

    def lint(self, uri: str) -> None:
        """Lint the open document ``uri`` and publish its diagnostics."""
        document = self.server.workspace.get_text_document(uri)
        text = document.source
        found = self.lint_source(uri, text)
        self.documents[uri] = (text, found)
        self.hrefs = {}  # looked at again on each lint (the cache folder may have been cleared)
        starts, lines = to_offset_table(text), LspLines(text)  # once per lint, not per diagnostic
        self.publish(uri, [self.to_lsp(d, text, starts, lines) for d in found], document.version)

    def publish(self, uri: str, diagnostics: list, version: Optional[int] = None) -> None:
        self.server.text_document_publish_diagnostics(self.types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=version))

    def lsp_range(self, text: str, start: int, end: int, lines: Optional[LspLines] = None) -> Any:
        types = self.types
        lines = lines or LspLines(text)
        encoding = self.encoding
        first = lines.position(start, encoding)
        last = lines.position(end, encoding)
        return types.Range(start=types.Position(*first), end=types.Position(*last))

    def to_lsp(self, diagnostic: Diagnostic, text: str, starts: Optional[list[int]] = None,
               lines: Optional[LspLines] = None) -> Any:
        """The LSP Diagnostic for one of ours (``starts`` and ``lines``:
        the text's line tables, built once for many diagnostics)."""
        types = self.types
        start, end = diagnostic_offsets(diagnostic, starts or to_offset_table(text), text)
        message = diagnostic.message + (f"\nhelp: {diagnostic.hint}" if diagnostic.hint else "")
        if diagnostic.fix is not None:
            message += f"\n{'fix' if diagnostic.fix.safe else 'unsafe fix'}: {diagnostic.fix.description}"
        if diagnostic.code not in self.hrefs:  # a file check per code, not per diagnostic
            self.hrefs[diagnostic.code] = explain_uri(diagnostic.code)
        href = self.hrefs[diagnostic.code]
        severity = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
                    Severity.INFO: types.DiagnosticSeverity.Information}[diagnostic.severity]
        return types.Diagnostic(
            range=self.lsp_range(text, start, end, lines), message=message, severity=severity, code=diagnostic.code,
            code_description=types.CodeDescription(href=href) if href else None, source=SOURCE,
            data={"pointer": diagnostic.pointer, "explain": f"probe explain {diagnostic.code}",
                  "fix": diagnostic.fix.applicability if diagnostic.fix else None})

    # -- code actions ----------------------------------------------------
    def code_actions(self, params: Any) -> list:
        """Quick fixes for the diagnostics in the requested range, and a
        fix-all of the safe fixes; [] for a document the editor has not
        opened (or has closed): the server lints buffers, never files on
        disk."""
        types = self.types
        uri = params.text_document.uri
        document = self.open_document(uri)
        if document is None:
            return []
        cached = self.documents.get(uri)
        if cached is None or cached[0] != document.source:
            self.documents[uri] = cached = (document.source, self.lint_source(uri, document.source))
        text, found = cached
        only = params.context.only
        wanted = lambda kind: not only or any(kind == k or kind.startswith(f"{k}.") for k in only)  # noqa: E731
        starts, lines = to_offset_table(text), LspLines(text)
        actions = []
        if wanted(types.CodeActionKind.QuickFix):
            requested = params.range
            for diagnostic in found:
                if diagnostic.fix is None:
                    continue
                lsp = self.to_lsp(diagnostic, text, starts, lines)
                if not _intersects(lsp.range, requested):
                    continue
                edits = [types.TextEdit(range=self.lsp_range(text, e.start, e.end, lines), new_text=e.text)
                         for e in diagnostic.fix.edits]
                title = f"{diagnostic.code}: {diagnostic.fix.description}"
                if not diagnostic.fix.safe:
                    title += " (unsafe: may change what the job does)"
                actions.append(types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp],
                    is_preferred=diagnostic.fix.safe, edit=types.WorkspaceEdit(changes={uri: edits})))
        if wanted(types.CodeActionKind.SourceFixAll) and any(d.fix is not None and d.fix.safe for d in found):
            from ..lint.fixes.edits import fix_text

            fixed, applied, _ = fix_text(text, lambda t: self.lint_source(uri, t))
            if applied and fixed != text:
                whole = self.lsp_range(text, 0, len(text), lines)
                actions.append(types.CodeAction(
                    title=f"probe-lint: apply {len(applied)} safe fix{'es' if len(applied) != 1 else ''}",
                    kind=types.CodeActionKind.SourceFixAll,
                    edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=whole, new_text=fixed)]})))
        return actions


def _intersects(a: Any, b: Any) -> bool:
    """True when LSP ranges ``a`` and ``b`` overlap or touch."""
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def main(options: Any = None) -> int:
    """Run the server on stdin/stdout until the client says exit.

    Returns ExitStatus.USAGE (with a message) when pygls is not installed."""
    from ..exit import ExitStatus

    try:
        handlers = ProbeLanguageServer(options)
    except ImportError as err:
        sys.stderr.write(f"probe: error: probe server needs pygls ({err}); "
                         "install it with: pip install 'msprobe-lint[lsp]'\n")
        return ExitStatus.USAGE
    handlers.server.start_io()
    return ExitStatus.OK
