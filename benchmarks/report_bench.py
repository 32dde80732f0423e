"""Speed and memory of ``probe report`` on large synthetic multi-rank dumps
(SPEC section 5: 1,024 ranks x 20 steps under 3 s and 100 MB peak in text
and json, memory flat as ranks grow, text under 200 lines, HTML under 5 MB).

For each dump size (``make_rank_dump.py`` writes it once into a temporary
folder, or into ``--keep DIR`` to reuse), each ``probe`` given with
``--probe`` (several: compared interleaved, e.g. main's against a branch's)
and each format (text, json, html), runs ``probe report DUMP --format F``
``--runs`` times with stdout to a file and prints the median wall time, the
median CPU time (user + system), the largest peak RSS (the child's
``ru_maxrss`` from ``os.wait4``), the exit status and the output's size
(lines for text, bytes for json and html). Each dump is read once before
its runs (``--cold``: not), so the runs time the report, not the disk.

Usage::

    python benchmarks/report_bench.py [--sizes 256x20x9,1024x20x9,4096x20x9,1024x20x1-3] [--runs 3]
                                      [--probe PATH ...] [--formats text,json,html] [--keep DIR] [--cold]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_rank_dump import make_dump  # noqa: E402

DEFAULT_SIZES = "256x20x9,1024x20x9,4096x20x9,1024x20x1-3"


def run_once(probe: str, dump: Path, fmt: str, out_path: Path, extra: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB, exit status) of one ``probe report``."""
    with open(out_path, "wb") as out, open(os.devnull, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([probe, "report", str(dump), "--format", fmt, *extra], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def warm(dump: Path) -> None:
    """Read every file of the dump once, so the timed runs find it in the page cache."""
    for folder, _, files in os.walk(dump):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                while handle.read(1 << 20):
                    pass


def size_of(fmt: str, path: Path) -> str:
    if fmt == "text":
        with open(path, "rb") as handle:
            return f"{sum(1 for _ in handle):,} lines"
    return f"{path.stat().st_size / 1e6:.2f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="RANKSxSTEPSxRECORDS,... (RECORDS: K or LOW-HIGH)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--probe", action="append", help="a probe executable (default: this interpreter's)")
    parser.add_argument("--formats", default="text,json,html")
    parser.add_argument("--keep", type=Path, help="write (or reuse) the dumps under this folder")
    parser.add_argument("--extra", default="", help="further arguments for probe report, e.g. --all")
    parser.add_argument("--cold", action="store_true",
                        help="do not read the dump once before timing it (by default it is read, so every run "
                             "finds it in the page cache)")
    args = parser.parse_args(argv)
    probes = args.probe or [str(Path(sys.executable).parent / "probe")]
    formats = args.formats.split(",")
    extra = args.extra.split()
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        base = args.keep or Path(tmp)
        print(f"{'dump':<16} {'probe':<28} {'format':<6} {'wall s':>7} {'CPU s':>6} {'peak MB':>8} {'exit':>4}  "
              "output (medians of the runs; peak: the largest)")
        for size in args.sizes.split(","):
            ranks, steps, records = size.split("x", 2)
            dump = base / f"dump-{size}"
            if not dump.exists():
                total = make_dump(dump, int(ranks), int(steps), records)
                print(f"# {dump}: {total:,} records")
            if not args.cold:
                warm(dump)
            for fmt in formats:
                times: dict[str, list[float]] = {p: [] for p in probes}
                cpu: dict[str, list[float]] = {p: [] for p in probes}
                peaks: dict[str, float] = {p: 0.0 for p in probes}
                codes: dict[str, int] = {}
                outs = {p: Path(tmp) / f"out-{i}.{fmt}" for i, p in enumerate(probes)}
                for _ in range(args.runs):
                    for probe in probes:  # interleaved: machine noise hits each alike
                        wall, used, peak, code = run_once(probe, dump, fmt, outs[probe], extra)
                        times[probe].append(wall)
                        cpu[probe].append(used)
                        peaks[probe] = max(peaks[probe], peak)
                        codes[probe] = code
                for probe in probes:
                    label = probe if len(probe) <= 28 else "..." + probe[-25:]
                    print(f"{size:<16} {label:<28} {fmt:<6} {statistics.median(times[probe]):>7.2f} "
                          f"{statistics.median(cpu[probe]):>6.2f} {peaks[probe]:>8.0f} {codes[probe]:>4}  "
                          f"{size_of(fmt, outs[probe])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
