"""`probe report --format html`: msprobe_lint/report/render/html.py and its template.

The page is rendered from real dumps in tests/data/report/ (``probe-l0``:
probe_runtime at L0; ``msprobe-l0``/``msprobe-l1``: msprobe 8.1.2 itself),
checked as HTML (self-contained, escaped, the first origin and the path to
it marked), and opened in a real headless Chromium: its DOM after layout
and its screenshot (not blank, the origin box's red drawn, and the origin's
name read back by tesseract OCR when installed). .ci/run installs chromium
and tesseract-ocr; without them the browser tests are skipped with the
reason."""
from __future__ import annotations

import io
import json
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from msprobe_lint.report import main
from msprobe_lint.report.command import report as read_report
from msprobe_lint.report.render.html import cell_tree, render_html, tree_rows

from conftest import run_probe

DATA = Path(__file__).parents[1] / "data" / "report"
ORIGIN = "Cell.block.act.Scale.forward.0"


def html_of(path, **kwargs) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(str(path), "html", out=out, err=err, **kwargs)
    return status, out.getvalue(), err.getvalue()


class Elements(HTMLParser):
    """Every start tag as (tag, attrs dict, text up to the next tag)."""

    def __init__(self):
        super().__init__()
        self.items: list[list] = []

    def handle_starttag(self, tag, attrs):
        self.items.append([tag, dict(attrs), ""])

    def handle_data(self, data):
        if self.items:
            self.items[-1][2] += data


def elements(html: str) -> list[list]:
    parser = Elements()
    parser.feed(html)
    return parser.items


def with_class(html: str, name: str) -> list[list]:
    return [e for e in elements(html) if name in (e[1].get("class") or "").split()]


# -- the page --------------------------------------------------------------------------

def test_the_first_origin_is_marked_in_pynative_when_graph_has_only_a_carried_record(tmp_path):
    """A review's finding: when pynative/'s origin answered for a step and
    rank whose graph/ folder held only a carried record, the page marked
    graph/'s record as the first origin."""
    shutil.copytree(DATA / "ours" / "step1" / "rank1", tmp_path / "graph" / "step1" / "rank1")
    shutil.copytree(DATA / "ours" / "step0" / "rank1", tmp_path / "pynative" / "step1" / "rank1")
    status, page, _ = html_of(tmp_path)
    assert status == 0
    first = with_class(page, "first-origin")
    assert len(first) == 1, first
    marked = page[page.index(f'id="{first[0][1]["id"]}"'):][:400]
    assert "Functional.exp.3" in marked and "Mint.matmul" not in marked, marked


def test_l0_page_marks_the_first_origin_and_the_path_to_it():
    status, page, err = html_of(DATA / "probe-l0")
    assert status == 0 and err == ""
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert f"<title>probe report: overflow started at {ORIGIN}</title>" in page
    box = with_class(page, "first-origin-box")
    assert len(box) == 1 and ORIGIN in page[page.index('class="first-origin-box"'):][:600]
    first = with_class(page, "first-origin")
    assert [e[1]["id"] for e in first] == ["rec-0-0"]  # the record itself, once
    # the Cell tree: the origin's node is the target, its parent on the path, nothing else
    on_path = [e for e in elements(page) if e[0] == "li" and "on-path" in e[1].get("class", "")]
    assert len(on_path) == 2
    names = re.findall(r'<li class="cell on-path[^"]*">\s*<a href="#[^"]+">([^<]+)</a>', page)
    assert names == ["Cell.block.Block.forward.0", ORIGIN]
    assert re.search(r'<li class="cell on-path target recorded origin">\s*<a href="#rec-0-0">'
                     + re.escape(ORIGIN), page)
    # parameters_grad is not in construct.json: placed under the Cell's latest backward entry
    tree = page[page.index('<div class="tree">'):page.index("Records in execution order")]
    backward = tree.index("Cell.block.fc.Dense.backward.0")
    assert tree.index("Cell.block.fc.Dense.parameters_grad") > backward
    # every record with its statistics and the user's file:line, in execution order
    records = with_class(page, "record")
    assert len(records) == 9
    assert page.count("tools/make_dumps.py:57") >= 2 and "tools/make_dumps.py:67" in page
    assert '<td class="mono inf">inf</td>' in page and '<td class="mono nan">nan</td>' in page
    assert page.index("Cell.block.act.Scale.0") < page.index("Cell.block.Block.0")


def test_page_is_self_contained():
    page = html_of(DATA / "probe-l0")[1]
    assert "<style>" in page
    for pattern in (r"<script", r"<link", r"<img", r"<iframe", r"\bsrc\s*=", r"@import", r"url\(",
                    r"https?://"):
        assert not re.search(pattern, page, re.I), pattern
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    ids = set(re.findall(r'id="([^"]*)"', page))
    assert {h[1:] for h in hrefs} <= ids  # every link lands on the page


def test_names_and_paths_are_escaped(tmp_path):
    rank = tmp_path / "step0" / "rank"
    rank.mkdir(parents=True)
    evil = 'Functional.<script>alert("x")</script>.0.forward'
    (rank / "dump.json").write_text('{"task": "overflow_check", "data": {"%s": {"output": [{"type": '
                                    '"mindspore.Tensor", "dtype": "Float16", "shape": [1], "Max": Infinity, '
                                    '"Min": 1, "Mean": Infinity, "Norm": Infinity}]}}}' % evil.replace('"', '\\"'))
    (rank / "overflow.json").write_text('[{"name": "%s", "origin": true, "where": "<b>x.py</b>:1"}]'
                                        % evil.replace('"', '\\"'))
    status, page, _ = html_of(tmp_path)
    assert status == 0
    assert "<script>" not in page and "<b>x.py" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;x.py&lt;/b&gt;:1" in page



def test_entered_is_shown_on_its_record(tmp_path):
    """A later step's carried overflow that came in (overflow.json
    ``entered``): its record says so, as the text report does, though the
    summary names step 0's origin."""
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "Max": float("inf"), "Min": 0.0,
             "Mean": float("inf"), "Norm": float("inf")}
    message = "Parameter w already held inf/nan at start(); first used by input_args[1] of Primitive.MatMul.0.forward"
    entered = {"entry": "Primitive.MatMul.0.forward", "input": "input_args[1]", "source": "parameter",
               "parameter": "w", "at_start": True, "message": message}
    steps = {0: {"name": "Functional.exp.0.forward", "origin": True, "where": "t.py:1"},
             1: {"name": "Primitive.MatMul.0.forward", "origin": False, "where": "t.py:2", "entered": entered}}
    for step, item in steps.items():
        rank = tmp_path / f"step{step}" / "rank"
        rank.mkdir(parents=True)
        (rank / "overflow.json").write_text(json.dumps([item]))
        (rank / "dump.json").write_text(json.dumps({"task": "overflow_check",
                                                    "data": {item["name"]: {"output": [stats]}}}))
    status, page, _ = html_of(tmp_path)  # by default the later step is counted, not shown
    assert status == 0 and "Overflow started in step0/rank: Functional.exp.0.forward" in page
    assert not with_class(page, "entered") and 'id="later-steps"' in page
    status, page, _ = html_of(tmp_path, show_all=True)
    assert status == 0 and "Overflow started in step0/rank: Functional.exp.0.forward" in page
    shown = with_class(page, "entered")
    assert [e[2].strip() for e in shown] == [f"entered: {message}"]
    record = page[page.index('id="rec-1-0"'):]
    assert record.index("entered: Parameter w already held") < record.index("</article>")
    text = io.StringIO()
    main(str(tmp_path), "text", out=text, err=io.StringIO(), show_all=True)
    assert f"entered: {message}" in text.getvalue()  # the same words as the text report


@pytest.mark.parametrize("folder, first", [("msprobe-l0", ORIGIN), ("msprobe-l1", "Functional.exp.0.forward")])
def test_dump_written_by_msprobe(folder, first):
    """No overflow.json: no origin is claimed, the first record leads the tree."""
    status, page, _ = html_of(DATA / folder)
    assert status == 0
    assert not with_class(page, "first-origin-box") and not with_class(page, "first-origin")
    assert f"First recorded overflow in step0/rank: {first}" in page
    if folder == "msprobe-l0":  # msprobe's construct.json lists every Cell, parameters_grad under backward
        names = re.findall(r'<li class="cell on-path[^"]*">\s*<a href="#[^"]+">([^<]+)</a>', page)
        assert names == ["Cell.block.Block.forward.0", ORIGIN]
        assert "Cell.block.fc.Dense.forward.0" in page  # not recorded, still in the tree
    else:
        assert '<div class="tree">' not in page  # L1: construct.json is {}


def test_ids_are_unique_with_graph_and_pynative_folders(tmp_path):
    """msprobe's layout with mindspore.jit Cells: the same step and rank twice."""
    for part in ("graph", "pynative"):
        shutil.copytree(DATA / "probe-l0" / "step0", tmp_path / part / "step0")
    status, page, _ = html_of(tmp_path)
    assert status == 0
    ids = re.findall(r'id="([^"]*)"', page)
    assert len(ids) == len(set(ids)) and len(with_class(page, "record")) == 18
    assert {h[1:] for h in re.findall(r'href="([^"]*)"', page)} <= set(ids)


def test_nothing_recorded_still_writes_a_page(tmp_path):
    status, page, err = html_of(tmp_path)
    assert status == 1 and "no dump found" in err
    assert "no dump found" in page and page.startswith("<!DOCTYPE html>")


def test_cell_tree_survives_a_cycle():
    tree = cell_tree({"a": "b", "b": "a", "c": None}, "a")
    names = {node.name for node in tree}
    assert "c" in names and ("a" in names or "b" in names)



class Nesting(HTMLParser):
    """The deepest ``<ul>`` nesting and whether every ul/li closes in order."""

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.deepest = 0
        self.balanced = True

    def handle_starttag(self, tag, attrs):
        if tag in ("ul", "li"):
            self.open.append(tag)
            self.deepest = max(self.deepest, self.open.count("ul"))

    def handle_endtag(self, tag):
        if tag in ("ul", "li"):
            self.balanced = self.balanced and bool(self.open) and self.open.pop() == tag


def test_deep_cell_tree_is_drawn_without_recursion(tmp_path):
    """A Cell tree 1200 deep (deeper than Python's recursion limit): the page
    is written, nested 1200 lists deep, with the whole path marked."""
    rank = tmp_path / "step0" / "rank"
    rank.mkdir(parents=True)
    construct, parent = {}, None
    for i in range(1200):
        name = f"Cell.c{i}.Seq.forward.0"
        construct[name], parent = parent, name
    (rank / "construct.json").write_text(json.dumps(construct))
    (rank / "overflow.json").write_text(json.dumps([{"name": parent, "origin": True, "where": "t.py:1"}]))
    stats = {"type": "mindspore.Tensor", "dtype": "Float32", "shape": [1], "Max": float("inf"), "Min": 1.0,
             "Mean": 1.0, "Norm": 1.0}
    (rank / "dump.json").write_text(json.dumps({"task": "overflow_check", "data": {parent: {"output": [stats]}}}))
    status, page, err = html_of(tmp_path)
    assert status == 0 and err == ""
    tree = page[page.index('<div class="tree">'):page.index("</div>", page.index('<div class="tree">'))]
    nesting = Nesting()
    nesting.feed(tree)
    assert nesting.balanced and not nesting.open and nesting.deepest == 1200
    assert len(re.findall(r'<li class="cell on-path', tree)) == 1200
    assert re.search(r'<li class="cell on-path target recorded origin">\s*<a href="#rec-0-0">' + re.escape(parent)
                     + r'</a> <span class="tag">overflow started here', tree)


def test_tree_rows_keep_file_order_and_close_every_list():
    tree = cell_tree({"a": None, "a1": "a", "a1x": "a1", "a2": "a", "b": None}, "a1x")
    rows = tree_rows(tree)
    assert [(r.node.name, r.depth, r.closes) for r in rows] == [("a", 0, 0), ("a1", 1, 0), ("a1x", 2, 1),
                                                                ("a2", 1, 1), ("b", 0, 0)]


# -- writing the file ------------------------------------------------------------------

def test_output_file_is_never_replaced_without_force(tmp_path):
    target = tmp_path / "report.html"
    status, out, err = html_of(DATA / "probe-l0", output=str(target))
    assert status == 0 and out == "" and err == ""
    written = target.read_text(encoding="utf-8")
    assert ORIGIN in written
    target.write_text("the user's own notes")
    status, out, err = html_of(DATA / "probe-l0", output=str(target))
    assert status == 2 and "already exists" in err and "--force" in err
    assert target.read_text() == "the user's own notes"
    status, _, err = html_of(DATA / "probe-l0", output=str(target), force=True)
    assert status == 0 and target.read_text(encoding="utf-8") == written
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left


def test_cli_html_output_and_refusals(tmp_path):
    target = tmp_path / "r.html"
    proc = run_probe("report", str(DATA / "probe-l0"), "--format", "html", "-o", str(target))
    assert proc.returncode == 0 and proc.stdout == "" and ORIGIN in target.read_text(encoding="utf-8")
    proc = run_probe("report", str(DATA / "probe-l0"), "--format", "html", "-o", str(target))
    assert proc.returncode == 2 and "already exists" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_probe("report", str(DATA / "probe-l0"), "-f", "html", "-o", str(target), "--force")
    assert proc.returncode == 0
    proc = run_probe("report", str(DATA / "probe-l0"), "-f", "html", "-o", str(tmp_path))
    assert proc.returncode == 2 and "is a directory" in proc.stderr
    proc = run_probe("report", str(DATA / "probe-l0"), "-f", "html", "-o", str(tmp_path / "no" / "r.html"))
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_probe("report", str(DATA / "probe-l0"), "-f", "html")
    assert proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>")
    text = tmp_path / "r.txt"  # --output works for the text report too
    proc = run_probe("report", str(DATA / "probe-l0"), "-o", str(text))
    assert proc.returncode == 0 and proc.stdout == "" and "Overflow started in step0/rank" in text.read_text()


def test_missing_jinja2_is_a_message(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_jinja(name, *args, **kwargs):
        if name == "jinja2" or name.startswith("jinja2."):
            raise ImportError("No module named 'jinja2'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jinja)
    status, out, err = html_of(DATA / "probe-l0")
    assert status == 2 and out == "" and "needs Jinja2" in err and "pip install" in err


def test_render_html_api():
    page = "".join(render_html(read_report(str(DATA / "ours"), html=True)))
    assert "Functional.exp.3.forward" in page and 'id="rec-0-0"' in page


# -- in a real browser -----------------------------------------------------------------

def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")


def run_chromium(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1000"]
    return subprocess.run([chromium(), *flags, *extra, page.as_uri()], capture_output=True, text=True,
                          timeout=120)


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("html")
    page = tmp_path / "report.html"
    assert html_of(DATA / "probe-l0", output=str(page))[0] == 0
    return tmp_path, page


def test_chromium_dom_shows_the_origin_highlighted(rendered):
    tmp_path, page = rendered
    proc = run_chromium(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<style>" in dom and "Overflow started here" in dom
    box = dom[dom.index('class="first-origin-box"'):][:800]
    assert ORIGIN in box
    record = re.search(r'<article class="record origin first-origin" id="rec-0-0">.*?</article>', dom, re.S)
    assert record and "Cell.block.act.Scale.0" in record.group(0) and "tools/make_dumps.py:57" in record.group(0)


def test_chromium_screenshot_shows_the_origin(rendered):
    tmp_path, page = rendered
    shot = tmp_path / "report.png"
    proc = run_chromium(page, tmp_path, f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, channels, rows = png_pixels(shot)
    colours = {row[x:x + 3] for row in rows[::7] for x in range(0, width * channels, channels * 5)}
    assert len(colours) > 20  # not a blank page
    red = bytes((0xB3, 0x26, 0x1E))  # the first-origin box's border (--origin)
    assert any(red in row for row in rows[:300]), "the origin box's border is not drawn near the top"
    tesseract = shutil.which("tesseract")
    if tesseract is None:
        pytest.skip("tesseract not installed (Debian: apt-get install tesseract-ocr): the screenshot was "
                    "checked for content and the highlight colour, not read")
    text = subprocess.run([tesseract, str(shot), "-"], capture_output=True, text=True, timeout=120).stdout
    squeezed = re.sub(r"\s+", "", text)
    assert "OVERFLOWSTARTEDHERE" in squeezed.upper()
    assert "Cell.block.act.Scale.forward" in squeezed, text
