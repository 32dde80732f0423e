"""Cost of linting a large config (issue 34): CPU seconds and microseconds
per list entry of ``probe lint`` on generated configs, and of the language
server's lint-and-publish of one.

Configs (each well under the 10 MiB limit, written to a temporary folder):

* ``rank ranges``: a ``rank`` list of N ``"a-b"`` strings, clean (the
  rank/step rules PL301-PL303 and the schema stage read every entry);
* ``step ints``: a ``step`` list of N distinct integers, clean;
* ``nested with findings``: an unknown key holding N two-item lists, with
  a relative dump_path and another unknown key (so the position scan runs
  over the whole text to place three findings);
* ``step repeats``: a ``step`` list of N/6 repeats of one entry (a PL302
  finding, with its fix, per entry).

Each is linted by ``probe lint --isolated`` in a child process, the
median CPU time (user + system) of ``--runs`` runs printed with the time
per entry. ``--server`` also times ``ProbeLanguageServer.lint`` (the work
of one ``didChange``: lint the buffer, convert every diagnostic to LSP)
on a ``step`` list of N/3 entries with a finding each (needs pygls).

Several ``--probe`` executables (another checkout's, say) are run
interleaved, so machine noise hits them alike; compare their figures as
ratios.

Usage::

    python benchmarks/large_config_bench.py [--entries 600000] [--runs 3] [--probe PATH ...] [--server]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD = '{"task": "overflow_check", "dump_path": "/data/dump", "level": "L1", '


def configs(folder: Path, entries: int) -> dict[str, tuple[Path, int]]:
    """The generated configs: name -> (path, number of list entries)."""
    made = {
        "rank ranges": (HEAD + '"rank": [' + ",".join(f'"{2 * i}-{2 * i + 1}"' for i in range(entries)) + "]}",
                        entries),
        "step ints": (HEAD + '"step": [' + ",".join(str(i) for i in range(entries)) + "]}", entries),
        "nested with findings": ('{"task": "overflow_check", "dump_path": "rel", "level": "L1",\n "xx": ['
                                 + ",".join(["[1, 2]"] * entries) + '],\n "bad": 1}', entries),
        "step repeats": (HEAD + '"step": [' + ",".join(["1"] * (entries // 6)) + "]}", entries // 6),
    }
    out = {}
    for name, (text, count) in made.items():
        path = folder / (name.replace(" ", "-") + ".json")
        path.write_text(text, encoding="utf-8")
        out[name] = (path, count)
    return out


def cpu_of(command: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one child process running ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def server_lint_seconds(entries: int, repeats: bool = True) -> tuple[float, int]:
    """(wall seconds of one ProbeLanguageServer.lint on a step list of
    ``entries`` repeats, or of distinct steps with two other findings
    when not ``repeats``; the number of diagnostics published), in this
    process (the msprobe_lint it imports), with a stand-in for the pygls
    workspace."""
    from types import SimpleNamespace

    from msprobe_lint.lint.options import LintOptions
    from msprobe_lint.server.lsp import ProbeLanguageServer

    if repeats:
        text = HEAD + '"step": [' + ", ".join(["1"] * entries) + "]}"
    else:
        steps = ", ".join(str(i) for i in range(entries))
        text = HEAD.replace("/data/dump", "rel") + '"step": [' + steps + '], "xx": 1}'
    server = ProbeLanguageServer(LintOptions(isolated=True))
    document = SimpleNamespace(source=text, version=1)
    server.server = SimpleNamespace(workspace=SimpleNamespace(get_text_document=lambda uri: document,
                                                              position_encoding="utf-16"))
    published: list = []
    server.folder_for = lambda uri: None  # type: ignore[method-assign]
    server.publish = lambda uri, diagnostics, version=None: published.extend(diagnostics)  # type: ignore
    started = time.perf_counter()
    server.lint("file:///tmp/config.json")
    return time.perf_counter() - started, len(published)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=600_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--probe", action="append", help="a probe executable (default: this interpreter's)")
    parser.add_argument("--server", action="store_true", help="also time the language server's lint")
    args = parser.parse_args()
    probes = args.probe or [str(Path(sys.executable).parent / "probe")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        made = configs(folder, args.entries)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for name, (path, _) in made.items():
                for probe in probes:
                    times.setdefault((name, probe), []).append(
                        cpu_of([probe, "lint", "--isolated", str(path)], folder))
        print(f"probe lint --isolated, median CPU of {args.runs} runs")
        print(f"{'config':<22} {'size':>9} {'entries':>8}  " + "  ".join(f"{p[-40:]:>24}" for p in probes))
        for name, (path, count) in made.items():
            size = f"{os.path.getsize(path) / 1e6:.1f} MB"
            cells = []
            for probe in probes:
                cpu = statistics.median(times[(name, probe)])
                cells.append(f"{cpu:8.2f} s {cpu / count * 1e6:6.2f} us/entry")
            print(f"{name:<22} {size:>9} {count:>8}  " + "  ".join(f"{c:>24}" for c in cells))
    if args.server:
        for repeats, what in ((False, "distinct steps, 2 other findings"), (True, "repeats, a finding each")):
            seconds, published = server_lint_seconds(args.entries // 3, repeats)
            print(f"probe server: one didChange on a {args.entries // 3}-entry step list ({what}): "
                  f"{seconds:.2f} s, {published} diagnostics published")


if __name__ == "__main__":
    main()
