"""``probe server`` through a real LSP session: the test spawns the
server as a subprocess and talks JSON-RPC over its stdin/stdout with
Content-Length framing, as an editor does (initialize, initialized,
didOpen, publishDiagnostics, codeAction, didChange, shutdown, exit)."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import config, probe_command

pytest.importorskip("pygls")


class Client:
    """A minimal LSP client: framed requests and notifications out, a
    reader thread queueing every message the server sends."""

    def __init__(self, cwd: Path, home: Optional[Path] = None):
        home = home or cwd
        env = {"XDG_CACHE_HOME": str(home / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(home)}
        if "PYTHONPATH" in os.environ:  # a checkout run against another's installed package: serve its code
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self.proc = subprocess.Popen(probe_command() + ["server"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def wait(self, match, timeout: float = 60) -> dict:
        while True:
            try:
                message = self.messages.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("no reply from the server") from None
            if match(message):
                return message

    def diagnostics(self, uri: str, version: Optional[int] = None) -> list[dict]:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri
                            and (version is None or m["params"].get("version") == version))
        return message["params"]["diagnostics"]


@pytest.fixture
def client(tmp_path):
    session = Client(tmp_path)
    result = session.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                            "capabilities": {}})
    assert result["capabilities"]["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll"]
    assert result["serverInfo"]["name"] == "probe-lint"
    session.notify("initialized", {})
    yield session
    if session.proc.poll() is None:
        session.proc.kill()
        session.proc.wait(timeout=10)


def shut_down(client: Client) -> None:
    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    assert client.proc.wait(timeout=30) == 0


def test_session_diagnostics_code_actions_and_changes(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nmode = "pynative"\nignore = ["PL4"]\n')
    path = tmp_path / "config.json"
    text = json.dumps(config(level="l1", dump_path="rel", overflow_check={"overflow_number": 3}), indent=4)
    path.write_text('{"task": "overflow_check"}')  # on disk: something else; the buffer is what counts
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                            "text": text}})
    found = client.diagnostics(uri, 1)
    by_code = {d["code"]: d for d in found}
    assert set(by_code) == {"PL103", "PL101"}  # PL401 ignored by [tool.probe-lint]
    level = by_code["PL103"]
    line = text.splitlines().index('    "level": "l1",')
    assert level["range"] == {"start": {"line": line, "character": 13}, "end": {"line": line, "character": 17}}
    assert level["severity"] == 1 and level["source"] == "probe-lint"
    assert "did you mean 'L1'?" in level["message"]
    href = level["codeDescription"]["href"]
    assert href.startswith("file://") and href.endswith("PL103.md")
    assert "value-not-allowed" in Path(href[len("file://"):]).read_text()
    assert level["data"]["explain"] == "probe explain PL103"

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": level["range"], "context": {"diagnostics": [level]}})
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert len(quick) == 1 and quick[0]["isPreferred"] is True
    assert quick[0]["title"] == "PL103: replace 'l1' with 'L1'"
    assert quick[0]["edit"]["changes"][uri] == [{"range": level["range"], "newText": '"L1"'}]
    (fix_all,) = [a for a in actions if a["kind"] == "source.fixAll"]
    (whole,) = fix_all["edit"]["changes"][uri]
    assert whole["newText"] == text.replace('"l1"', '"L1"').replace('"overflow_number"', '"overflow_nums"')

    fixed = text.replace('"l1"', '"L1"')
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    assert [d["code"] for d in client.diagnostics(uri, 2)] == ["PL101"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    shut_down(client)


def test_unsafe_fix_offered_not_preferred_and_utf16_columns(client, tmp_path):
    uri = (tmp_path / "config.json").as_uri()
    text = '{"task": "overflow_check", "dump_path": "/d/\U0001F600 x", "level": "L1", "rank": [], "step": []}'
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                            "text": text}})
    (bad,) = [d for d in client.diagnostics(uri, 1) if d["code"] == "PL402"]
    start = text.index('"/d/')
    # The emoji is two UTF-16 code units: the end column counts it twice.
    assert bad["range"]["start"] == {"line": 0, "character": start}
    assert bad["range"]["end"] == {"line": 0, "character": start + len('"/d/\U0001F600 x"') + 1}
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": bad["range"], "context": {"diagnostics": [bad], "only": ["quickfix"]}})
    (action,) = actions
    assert action["isPreferred"] is False and "unsafe" in action["title"]
    assert json.loads(action["edit"]["changes"][uri][0]["newText"]) == "/d/_x"
    shut_down(client)


def test_other_json_files_get_no_diagnostics(client, tmp_path):
    uri = (tmp_path / "config.json").as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                            "text": '{"architectures": ["Bert"], "levle": 1}'}})
    assert client.diagnostics(uri, 1) == []
    broken = '{"task": "overflow_check", "dump_path": "/d",}'
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": broken}]})
    (syntax,) = client.diagnostics(uri, 2)
    assert syntax["code"] == "PL001"
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": syntax["range"], "context": {"diagnostics": [syntax]}})
    assert actions == []
    shut_down(client)


def test_code_actions_for_documents_not_open_are_empty(client, tmp_path):
    """A codeAction for a URI the editor never opened (missing on disk, or
    a config on disk), or has closed, gets no actions: no error reply, no
    traceback on stderr, and the server goes on serving."""
    on_disk = tmp_path / "config.json"
    on_disk.write_text('{"task": "overflow_check", "dump_path": "/d", "level": "l1"}')
    everywhere = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 99}}

    def actions(uri: str) -> Any:
        return client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": everywhere, "context": {"diagnostics": []}})

    assert actions((tmp_path / "nope.json").as_uri()) == []
    assert actions("file:///nope.json") == []
    assert actions(on_disk.as_uri()) == []
    uri = on_disk.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                            "text": on_disk.read_text()}})
    client.diagnostics(uri, 1)
    assert [a["title"] for a in actions(uri) if a["kind"] == "quickfix"] == ["PL103: replace 'l1' with 'L1'"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    assert actions(uri) == []
    shut_down(client)
    assert client.proc.stderr is not None
    stderr = client.proc.stderr.read().decode("utf-8", "replace")
    assert "Traceback" not in stderr and "FileNotFoundError" not in stderr, stderr


def test_byte_order_mark_range_is_the_mark(client, tmp_path):
    """PL004's range is the byte-order mark itself (character 0-1); the
    other ranges on that line count the mark too, as its fix's edit does."""
    uri = (tmp_path / "config.json").as_uri()
    text = '\ufeff{"task": "overflow_check", "dump_path": "/d", "level": "l1"}'
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                            "text": text}})
    by_code = {d["code"]: d for d in client.diagnostics(uri, 1)}
    assert by_code["PL004"]["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    level = text.index('"l1"')
    assert by_code["PL103"]["range"] == {"start": {"line": 0, "character": level},
                                         "end": {"line": 0, "character": level + 4}}
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": by_code["PL004"]["range"],
        "context": {"diagnostics": [by_code["PL004"]], "only": ["quickfix"]}})
    (remove,) = [a for a in actions if a["title"].startswith("PL004")]
    assert remove["edit"]["changes"][uri] == [{"range": by_code["PL004"]["range"], "newText": ""}]
    shut_down(client)


def test_relative_dump_path_made_absolute_against_the_documents_folder(tmp_path):
    """PL401's fix resolves a relative dump_path against the workspace
    folder holding the document, else the document's own folder, and says
    which; never against the server's current folder (here another temp
    folder, as `/` is when an editor starts from a desktop). An unsaved
    buffer with no workspace at all gets the finding without the fix."""
    started_in, workspace, elsewhere = tmp_path / "started-in", tmp_path / "lsp", tmp_path / "fx2" / "sub"
    for folder in (started_in, workspace / "configs", elsewhere):
        folder.mkdir(parents=True)
    text = '{"task": "overflow_check", "dump_path": "dump data", "level": "L1"}'
    everywhere = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": len(text)}}

    def pl401_fix(session: Client, uri: str) -> Optional[tuple[str, str]]:
        session.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                                 "text": text}})
        (found,) = [d for d in session.diagnostics(uri, 1) if d["code"] == "PL401"]
        actions = session.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": everywhere,
            "context": {"diagnostics": [found], "only": ["quickfix"]}})
        fixes = [a for a in actions if a["title"].startswith("PL401")]
        if not fixes:
            return None
        (fix,) = fixes
        return fix["title"], json.loads(fix["edit"]["changes"][uri][0]["newText"])

    session = Client(started_in, home=tmp_path)
    try:
        session.request("initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}})
        session.notify("initialized", {})
        title, new = pl401_fix(session, (workspace / "configs" / "config.json").as_uri())
        assert new == str(workspace / "dump data")
        assert f"against the workspace folder {workspace}: {workspace / 'dump data'}" in title
        title, new = pl401_fix(session, (elsewhere / "config.json").as_uri())
        assert new == str(elsewhere / "dump data")
        assert f"against the document's folder {elsewhere}: {elsewhere / 'dump data'}" in title
        title, new = pl401_fix(session, "untitled:Untitled-1")
        assert new == str(workspace / "dump data") and f"the workspace folder {workspace}" in title
        shut_down(session)
    finally:
        if session.proc.poll() is None:
            session.proc.kill()
            session.proc.wait(timeout=10)
    session = Client(started_in, home=tmp_path)
    try:
        session.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        session.notify("initialized", {})
        assert pl401_fix(session, "untitled:Untitled-1") is None
        shut_down(session)
    finally:
        if session.proc.poll() is None:
            session.proc.kill()
            session.proc.wait(timeout=10)


def test_positions_follow_lsp_line_breaks():
    from msprobe_lint.server.lsp import lsp_position

    text = 'a\r\nb\rc\n\U0001F600d'
    assert lsp_position(text, text.index("b")) == (1, 0)
    assert lsp_position(text, text.index("c")) == (2, 0)
    assert lsp_position(text, text.index("d")) == (3, 2)
    assert lsp_position(text, text.index("d"), "utf-8") == (3, 4)
    assert lsp_position(text, text.index("d"), "utf-32") == (3, 1)


def test_without_pygls_a_message_not_a_traceback(tmp_path):
    """pygls is an optional extra: without it `probe server` says how to
    install it and exits 2. (A sitecustomize that hides pygls stands in
    for an environment without it.)"""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['pygls'] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", "from msprobe_lint.cli import main; main(['server'])"],
                          capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "probe server needs pygls" in proc.stderr and "msprobe-lint[lsp]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_line_index_agrees_with_lsp_position_everywhere():
    """Issue 34: the server counted the text before each diagnostic (5.7 s
    for a 200,000-entry list); LspLines finds the lines once."""
    from msprobe_lint.server.lsp import LspLines, lsp_position

    text = 'a\r\nb\rc\n\U0001F600d\r\n\r\r\n\n"x\u00e9"'
    lines = LspLines(text)
    for offset in range(len(text) + 2):
        for encoding in ("utf-16", "utf-8", "utf-32"):
            assert lines.position(offset, encoding) == lsp_position(text, offset, encoding), (offset, encoding)


def test_diagnostics_of_a_long_list_convert_with_one_line_index(monkeypatch):
    """The work of publishing many diagnostics is bounded: one line table
    and one LSP line index per lint, however many diagnostics."""
    pytest.importorskip("pygls")
    from msprobe_lint.lint.options import LintOptions
    from msprobe_lint.server import lsp

    built = {"tables": 0, "indexes": 0}
    table, index = lsp.to_offset_table, lsp.LspLines.__init__

    def counting_table(text):
        built["tables"] += 1
        return table(text)

    def counting_index(self, text):
        built["indexes"] += 1
        index(self, text)

    monkeypatch.setattr(lsp, "to_offset_table", counting_table)
    monkeypatch.setattr(lsp.LspLines, "__init__", counting_index)
    server = lsp.ProbeLanguageServer(LintOptions(isolated=True))
    text = '{"task": "overflow_check", "dump_path": "/d", "level": "L1",\n "step": [' + ", ".join(["1"] * 2000) + "]}"
    published = []

    class Document:
        source, version = text, 1

    from types import SimpleNamespace

    server.server = SimpleNamespace(workspace=SimpleNamespace(get_text_document=lambda uri: Document,
                                                              position_encoding="utf-16"))
    monkeypatch.setattr(server, "folder_for", lambda uri: None)
    monkeypatch.setattr(server, "publish", lambda uri, diagnostics, version=None: published.extend(diagnostics))
    server.lint("file:///tmp/config.json")
    assert len(published) == 1999 and built == {"tables": 1, "indexes": 1}
    assert published[-1].range.start.line == 1
