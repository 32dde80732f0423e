"""Which existing file ``probe lint --output FILE`` may replace.

A FILE that exists is replaced only when it holds what ``probe lint``
writes there: a report in any format (text, json, sarif, github), a
``--diff``, a ``--show-files`` listing, or nothing at all (a clean
``github`` report is empty). Anything else is a file of the user's: it is
refused (exit 2, nothing touched) unless ``--force``, as ``probe report
--output`` refuses any existing file. A device or a FIFO
(``/dev/stdout``) is written into, never replaced, and needs no
``--force``; a config being linted, a file the lint reads and an msprobe
config are refused whatever the flags (``cli/lint.py``).

Only the start (64 KiB) and the end (4 KiB) of the file are read, so a
report of any size is recognised in constant time.

Example::

    refused = overwrite_refusal("probe.sarif", force=False)  # None: no such file, or an earlier report
"""
from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Optional

#: how much of the start and of the end of an existing FILE is read
HEAD, TAIL = 64 * 1024, 4 * 1024

#: a line of ``--format github`` (reporters/github.py): a workflow command titled with a PL code
_GITHUB = re.compile(r"::(?:error|warning|notice) file=[^:]*,title=PL\d{3}\b[^\n]*::.*")
#: the first line of a text report with findings (reporters/text.py): ``file:line:col: PL101 ...``
_TEXT_FIRST = re.compile(r".+:\d+:\d+: PL\d{3}\b.*")
#: a clean text report, its only line
_TEXT_CLEAN = re.compile(r"All checks passed \(\d+ files?\)\.")
#: the last line of a text report with findings: the summary, or what --fix would fix after it
_TEXT_LAST = re.compile(r"Found \d+ (?:error|warning|info)s?(?:, \d+ (?:error|warning|info)s?)* in .+\."
                        r"|(?:\[\*\] )?\d+ fixable with --fix\b.*\.")
_SHOWN_FILE = re.compile(r"(?:lint |skip |error) .*  \(.*\)")  # project/discovery.py show_files


def overwrite_refusal(output: str, *, force: bool) -> Optional[str]:
    """Why ``output`` must not be written (a message for ``probe:
    error:``), or None: it is missing, a device or a FIFO, an earlier
    output of ``probe lint``, empty, or ``force`` is given."""
    if force:
        return None
    try:
        info = os.stat(output)
    except OSError:
        return None  # missing (created), or unreachable: the write says why
    if not stat.S_ISREG(info.st_mode):
        return None  # a device, a FIFO: written into; a folder: the write says why
    head, tail = _ends(output, info.st_size)
    if head is None:
        return (f"--output {output} already exists and could not be read to tell whether it is an earlier report; "
                "not overwritten (give --force to replace it, or choose another file)")
    if earlier_output(head, tail, info.st_size):
        return None
    return (f"--output {output} already exists and is not a probe lint report; not overwritten (give --force to "
            "replace it, or choose another file)")


def earlier_output(head: str, tail: str, size: int) -> bool:
    """Whether a file whose first :data:`HEAD` bytes are ``head`` and last
    :data:`TAIL` bytes ``tail`` (decoded; the same text for a small file)
    of ``size`` bytes holds what ``probe lint`` writes to ``--output``."""
    if not head.strip():
        return size <= HEAD  # empty, or a line break or two; not 64 KiB of blanks and then anything
    if head.startswith('{\n  "diagnostics": [') and '\n  "summary": {' in tail:  # --format json
        return tail.endswith("}\n")
    if head.startswith('{\n  "$schema": "https://docs.oasis-open.org/sarif/'):  # --format sarif
        return '"name": "msprobe-lint"' in head and tail.endswith("}\n")
    if head.startswith('{\n  "files": ['):  # --show-files --format json
        return tail.endswith("]\n}\n")
    lines = head.splitlines()
    whole = lines if size <= HEAD else lines[:-1]  # the last line of a long file's head may be cut
    if lines[0].startswith("--- ") and len(lines) > 1 and lines[1].startswith("+++ ") \
            and lines[1].endswith(" (fixed)"):  # --diff
        return True
    if whole and all(_GITHUB.fullmatch(line) for line in whole):  # --format github
        return True
    if whole and all(_SHOWN_FILE.fullmatch(line) for line in whole):  # --show-files
        return True
    if len(lines) == 1 and _TEXT_CLEAN.fullmatch(lines[0]):  # --format text, nothing found
        return True
    last = tail.rstrip("\n").rsplit("\n", 1)[-1]
    return _TEXT_FIRST.fullmatch(lines[0]) is not None and _TEXT_LAST.fullmatch(last) is not None  # with findings


def _ends(path: str, size: int) -> tuple[Optional[str], str]:
    """(the first HEAD bytes, the last TAIL bytes) of the regular file
    ``path``, decoded; (None, "") when it cannot be read. Opened without
    blocking (a FIFO swapped in is never waited on) and checked again."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, ""
        head = os.read(fd, HEAD)
        tail = head
        if size > HEAD:
            os.lseek(fd, max(size - TAIL, 0), os.SEEK_SET)
            tail = os.read(fd, TAIL)
    except OSError:
        return None, ""
    finally:
        os.close(fd)
    return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")
