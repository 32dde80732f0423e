"""`probe report` on a large job (issue 25): ranks with the same records
grouped and printed once, later steps counted unless ``--all``, the dump
read as a stream (one folder's records alive at a time), the HTML page of a
1,024-rank dump small enough to open (and opened in headless Chromium), and
progress only on a terminal. Speed and memory are measured by
benchmarks/report_bench.py, not here."""
from __future__ import annotations

import gc
import inspect
import io
import json
import re
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from msprobe_lint.report import main
from msprobe_lint.report.analysis.scan import RankSet, scan
from msprobe_lint.report.discover import iter_rank_folders
from probe_format.collectives import rank_ranges
from msprobe_lint.report.progress import Progress
from msprobe_lint.report.reader import ReadCache, read_folder

from conftest import REPO, run_probe

sys.path.insert(0, str(REPO / "benchmarks"))
from make_rank_dump import make_dump


def run(path, fmt="text", *, show_all=False, **kwargs):
    out, err = io.StringIO(), io.StringIO()
    status = main(str(path), fmt, out=out, err=err, show_all=show_all, **kwargs)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def small_job(tmp_path_factory) -> Path:
    """16 ranks x 5 steps x 9 records: rank 8 makes the overflow in step 0."""
    root = tmp_path_factory.mktemp("job") / "dump"
    assert make_dump(root, 16, 5, "9") == 16 * 5 * 9
    return root


def test_rank_ranges_and_rank_sets():
    assert rank_ranges([5, 0, 1, 2, 7, 8, 2]) == "0-2, 5, 7-8"
    assert rank_ranges([]) == "" and rank_ranges([4]) == "4"
    ranks = RankSet.of([3, 0, 1, 2, 9, None])
    assert ranks.spans == ((0, 3), (9, 9)) and ranks.unnumbered and len(ranks) == 6
    assert list(ranks) == [None, 0, 1, 2, 3, 9] and 2 in ranks and 4 not in ranks and None in ranks
    assert ranks.text() == "rank, 0-3, 9" and RankSet.of([7]).label() == "rank 7"
    assert RankSet.of(range(0, 1024)).label() == "ranks 0-1023"


def test_default_view_groups_ranks_and_counts_later_steps(small_job):
    status, out, err = run(small_job)
    assert status == 0 and err == ""
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("step")]
    assert headers == [
        f"step0/ranks 0-7, 9-15  (15 ranks with the same records; statistics of rank 0: {small_job}/step0/rank0)",
        f"step0/rank8  ({small_job}/step0/rank8)"]
    assert lines[2].strip() == "through AllReduce call 0 of group hccl_world_group (ranks 0-15, forward) from rank 8"
    counted = lines[lines.index("Later steps, counted (--all shows their records):") + 1:-2]
    assert counted == [f"  step{s}: 144 records in 16 folders, ranks 0-15 (1 group of ranks)" for s in range(1, 5)]
    assert lines[-1] == ("720 records in 80 step/rank folders. Overflow started in step0/rank8: "
                         "Functional.exp.0.forward (API, forward) at /work/job/train.py:11. 15 ranks received "
                         "inf/nan through collective calls: ranks 0-7, 9-15.")
    assert len(lines) < 80  # two groups of 9 records, 4 count lines, the summary: not 16 x 5 folders


def test_all_shows_every_step_each_group_once(small_job):
    status, out, _ = run(small_job, show_all=True)
    assert status == 0 and "Later steps" not in out
    headers = [line.split("  (")[0] for line in out.splitlines() if line.startswith("step")]
    assert headers == ["step0/ranks 0-7, 9-15", "step0/rank8"] + [f"step{s}/ranks 0-15" for s in range(1, 5)]
    assert out.count("entered: Parameter fc.weight already held inf/nan at start()") == 4
    assert out.splitlines()[-1] == run(small_job)[1].splitlines()[-1]


def test_json_default_and_all(small_job):
    data = json.loads(run(small_job, "json")[1])
    assert data["summary"]["records"] == 720 and data["summary"]["steps"] == 5
    assert [(s["step"], s["records"], s["groups"], s["shown"]) for s in data["steps"]] == [
        (0, 144, 2, True), (1, 144, 1, False), (2, 144, 1, False), (3, 144, 1, False), (4, 144, 1, False)]
    assert len(data["records"]) == 18 and {r["step"] for r in data["records"]} == {0}
    group = [r for r in data["records"] if r["rank"] == 0]
    assert group[0]["ranks"] == [r for r in range(16) if r != 8]
    assert group[0]["received"]["from"] == [8] and group[0]["collective"]["inputs_finite"] is True
    assert data["started"]["rank"] == 8 and data["started"]["ranks"] == [8]
    assert [(r["rank"], r["from"]) for r in data["received"]] == [(r, 8) for r in range(16) if r != 8]
    every = json.loads(run(small_job, "json", show_all=True)[1])
    assert len(every["records"]) == 18 + 4 * 9 and all(s["shown"] for s in every["steps"])
    assert every["started"] == data["started"]


class CountingRecords:
    """Reads folders and keeps a weak reference to every record it hands out."""

    def __init__(self):
        self.alive: list = []
        self.most = 0
        self.reads = 0

    def __call__(self, folder):
        gc.collect()
        self.most = max(self.most, sum(1 for ref in self.alive if ref() is not None))
        dump = read_folder(folder, statistics=False, cache=self.cache)
        self.reads += 1
        self.alive = [ref for ref in self.alive if ref() is not None] + [weakref.ref(r) for r in dump.records]
        return dump

    cache = ReadCache()


def test_the_first_pass_holds_one_folder_of_records_at_a_time(small_job):
    """While the summary is built, no record of an earlier folder is still
    alive (each folder's records are dropped before the next is read), and
    the folders come from a generator pulled one at a time."""
    problems: list = []
    folders = iter_rank_folders(small_job, problems)
    assert inspect.isgenerator(folders)
    pulled = []

    def lazily():
        for folder in folders:
            pulled.append(folder)
            yield folder

    reads_follow_pulls: list[int] = []
    reader = CountingRecords()
    summary = scan(str(small_job), lazily(), reader,
                   progress=lambda folder, records: reads_follow_pulls.append(len(pulled) - reader.reads))
    assert reader.reads == len(pulled) == 80 and summary.records == 720
    assert set(reads_follow_pulls) == {0}  # each folder read as soon as it is pulled, none pulled ahead
    assert reader.most <= 9  # the records of the folder just read, no more
    assert summary.start.rank == 8


def test_the_second_pass_reads_only_the_folders_shown(small_job, monkeypatch):
    import msprobe_lint.report.command as command

    reads: list = []

    def counted(folder, **kwargs):
        if kwargs.get("statistics"):
            reads.append(folder.path)
        return read_folder(folder, **kwargs)

    monkeypatch.setattr(command, "read_folder", counted)
    assert run(small_job)[0] == 0
    # the started record's folder (for the summary), then one folder per group of the shown step
    assert sorted(set(reads)) == [f"{small_job}/step0/rank0", f"{small_job}/step0/rank8"]


@pytest.fixture(scope="module")
def big_html(tmp_path_factory):
    """The HTML page of a 1,024-rank x 3-step dump, and of the same job with 5 steps."""
    base = tmp_path_factory.mktemp("big")
    pages = {}
    for steps in (3, 5):
        root = base / f"dump{steps}"
        make_dump(root, 1024, steps, "9")
        page = base / f"report{steps}.html"
        status, out, err = run(root, "html", output=str(page))
        assert status == 0 and out == "" and err == ""
        pages[steps] = page
    return base, pages


def test_html_of_1024_ranks_is_small_and_does_not_grow_with_later_steps(big_html):
    _, pages = big_html
    three, five = (pages[n].read_text(encoding="utf-8") for n in (3, 5))
    assert len(three.encode()) < 5_000_000 and len(five.encode()) < 5_000_000
    # two more later steps (18,432 more records) add two table rows, not their records
    assert len(five) - len(three) < 1_000
    assert three.count('<article class="record') == 18
    assert "ranks <span class=\"ranks\">0-511, 513-1023</span>" in three
    assert re.search(r'id="later-steps"', three) and three.count("<tr><td class=\"left\">step") == 2
    assert "Overflow started here &middot; step0/rank512" in three


def chromium() -> str:
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")


def test_html_of_1024_ranks_opens_in_headless_chromium(big_html):
    base, pages = big_html
    browser = chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={base / 'profile'}", "--window-size=1280,1000"]
    proc = subprocess.run([browser, *flags, "--dump-dom", pages[5].as_uri()], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "Overflow started here" in dom and "Functional.exp.0.forward" in dom
    assert dom.count("<article") == 18 and 'id="later-steps"' in dom
    assert "1,023 ranks received inf/nan through collective calls: ranks 0-511, 513-1023." in dom


def test_progress_only_on_a_terminal(small_job):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    shown = Terminal()
    progress = Progress(shown, delay=0)
    folders = list(iter_rank_folders(small_job, []))
    for n, folder in enumerate(folders):
        progress(folder, n * 9)
    progress.close()
    assert "probe report: reading step" in shown.getvalue()
    quiet = io.StringIO()
    progress = Progress(quiet, delay=0)
    for folder in folders:
        progress(folder, 0)
    progress.close()
    assert quiet.getvalue() == "" and progress.folders == 80


def test_cli_all_flag_and_no_progress_in_a_pipe(small_job):
    proc = run_probe("report", str(small_job), "--all")
    assert proc.returncode == 0 and proc.stderr == ""  # stderr is a pipe: no progress line
    assert "Later steps" not in proc.stdout and "step4/ranks 0-15" in proc.stdout
    proc = run_probe("report", "--help")
    assert "--all" in proc.stdout
