"""``probe report DUMP_PATH``: the overflows an overflow_check run recorded,
by step and rank, and where the overflow started.

Reads (never imports MindSpore):

* ``DUMP_PATH/step{N}/rank{R}/`` (``rank`` with no number when the job was
  not distributed; also ``DUMP_PATH/{graph,pynative}/step...``, or
  DUMP_PATH being a step or rank folder itself);
* in each rank folder, probe_runtime's ``overflow.json`` (records in
  detection order with ``name``, ``origin``, ``where``) joined with
  ``dump.json`` (msprobe format) for the statistics; without
  ``overflow.json`` (a dump by msprobe itself) every ``dump.json`` entry is a
  record, in file order, origin unknown, and the user's file:line comes from
  ``stack.json``.

Text output: per step and rank, one line per record, in execution order::

    ORIGIN   Functional.exp.3  API  forward  train.py:57
             output[0] Float32 [2, 4]  Max=inf Min=0.37 Mean=inf Norm=inf

(``ORIGIN`` = inputs finite, output not: the overflow started here;
``carried`` = a non-finite input passed on; ``?`` = not known), then a
summary line naming the earliest step with records (lowest rank first):
its first origin. When a step's first overflowing entry was not an origin,
probe_runtime writes where the non-finite value came in (``entered`` in
overflow.json: the data batch, the loss's gradient or another tensor no
checked call or Cell made, or a Parameter that held inf/nan at ``start()``
or after an update); that record gets an ``entered:`` line and, when the
earliest step has no origin, the summary says ``Overflow entered in ...``.
When that step has neither, the summary names its first record ("where it
started is not known"): an origin or ``entered`` of a later step never
outranks an earlier step. A control character (a terminal escape, a
newline) in a name or path from the dump is shown as ``?`` in the text
report and the warnings, as ``probe lint`` shows a config's lines.

``--format html``: one self-contained page (:mod:`msprobe_lint.report_html`).
``--output FILE`` writes any format to FILE instead of stdout and never
replaces an existing file unless ``--force``; on exit 2 (nothing could be
read) it writes no file in any format.

``--format json``: one strict JSON object (``json.loads`` with no NaN
extension parses it): ``{"dump_path", "records": [...], "started": record
or null, "entered": record or null, "problems": [...], "summary": {...}}``
(each record carries its ``entered`` object or null; the top-level
``entered`` is the record the summary names when the overflow came in
rather than started); a non-finite statistic is
the string ``"inf"``, ``"-inf"`` or ``"nan"``.

Exit status: 0 records were shown; 1 the dump path holds no records (no
overflow recorded, or no dump there); 2 the path is missing or not a
folder, or no record was found and some file or folder under it could not
be read (malformed, truncated before its first record, or not readable).
Truncated files (a job killed mid-run) are read as far as they go, and every
file that could not be read whole, and every step or rank folder that could
not be searched or listed, is reported (stderr; ``problems`` in JSON).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from .textsafe import shown

EXIT_FOUND, EXIT_NONE, EXIT_UNREADABLE = 0, 1, 2
STATS = ("Max", "Min", "Mean", "Norm")
_STEP = re.compile(r"^step(\d+)$")
_RANK = re.compile(r"^rank(\d*)$")
_STACK_FILE = re.compile(r"File (?P<file>.*?), line (?P<line>\d+), in ")
_TOOL_PATHS = ("site-packages", "dist-packages", "/msprobe/", "/probe_runtime/", "/msprobe_lint/", "<frozen")
MAX_FILE = 512 * 1024 * 1024


@dataclass
class Tensor:
    """One tensor's statistics in an entry (``where`` e.g. ``output[0]``)."""

    where: str
    dtype: Any
    shape: Any
    stats: dict[str, Any]

    @property
    def nonfinite(self) -> list[str]:
        """Names of the statistics that are inf or nan."""
        return [k for k, v in self.stats.items() if isinstance(v, float) and not math.isfinite(v)]


@dataclass
class Record:
    """One overflowing entry of one step and rank."""

    step: Optional[int]
    rank: Optional[int]
    folder: str
    index: int
    name: str
    origin: Optional[bool]
    where: Optional[str]
    tensors: list[Tensor] = field(default_factory=list)
    has_entry: bool = False
    #: overflow.json's ``entered``: where a carried overflow came in (``entry``, ``input``, ``source``,
    #: ``parameter``, ``at_start``, ``message``), on the first record of its step; None elsewhere
    entered: Optional[dict] = None
    #: a probe_runtime sentinel finding (overflow.json kind ``sentinel``): its message; it names no call
    sentinel: Optional[str] = None
    #: a sentinel finding's ``nonfinite``: every label of what held inf/nan (the message shows the first few)
    nonfinite: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.sentinel is not None:
            return "sentinel"
        return "Cell" if self.name.startswith("Cell.") else "API"

    @property
    def direction(self) -> Optional[str]:
        return direction_of(self.name)

    @property
    def label(self) -> str:
        """The name without its direction (``Functional.exp.3``, ``Cell.net.fc1.Dense.0``)."""
        parts = self.name.split(".")
        return ".".join(p for p in parts if p not in ("forward", "backward", "parameters_grad")) or self.name

    def offending(self) -> list[Tensor]:
        return [t for t in self.tensors if t.nonfinite]


@dataclass
class Dump:
    """Everything read under a dump path."""

    root: str
    records: list[Record] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    folders: int = 0
    unreadable_folders: int = 0

    @property
    def first_step(self) -> list[Record]:
        """The records of the earliest step that has any naming a call
        (every rank; records are sorted by step, then rank): a step with
        only sentinel records (no call named) is passed over."""
        named = [r for r in self.records if r.sentinel is None]
        if not named:
            return []
        step = named[0].step
        return [r for r in named if r.step == step]

    @property
    def started(self) -> Optional[Record]:
        """The first origin of the earliest step with records, lowest rank;
        None when no record of that step is marked origin (an origin in a
        later step is not where the overflow started: the earlier step
        already had it)."""
        return next((r for r in self.first_step if r.origin), None)

    @property
    def entered(self) -> Optional[Record]:
        """The record saying where the overflow came in (``entered``) in
        the earliest step with records, when that step has no origin;
        else None."""
        if self.started is not None:
            return None
        return next((r for r in self.first_step if r.entered), None)


def direction_of(name: str) -> Optional[str]:
    """``forward``, ``backward`` or ``parameters_grad`` from an entry name."""
    parts = name.split(".")
    for part in reversed(parts[-2:]):
        if part in ("forward", "backward", "parameters_grad"):
            return part
    return None


class _Unreadable(Exception):
    pass


def _read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE:
            raise _Unreadable(f"larger than {MAX_FILE // (1024 * 1024)} MiB")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        raise _Unreadable(err.strerror or str(err)) from None


def _salvage_items(text: str, start: int, closer: str, keyed: bool) -> list:
    """Values (or (key, value) pairs) of a JSON array/object whose opening
    bracket ends at ``start``, read one by one until the text breaks off."""
    decoder = json.JSONDecoder()
    items: list = []
    i = start
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == closer:
            return items
        try:
            if keyed:
                key, i = decoder.raw_decode(text, i)
                while i < n and text[i] in " \t\r\n":
                    i += 1
                if i >= n or text[i] != ":":
                    return items
                i += 1
                while i < n and text[i] in " \t\r\n":
                    i += 1
                value, i = decoder.raw_decode(text, i)
                items.append((key, value))
            else:
                value, i = decoder.raw_decode(text, i)
                items.append(value)
        except (json.JSONDecodeError, ValueError):
            return items


def _load(path: Path, problems: list, kind: str) -> tuple[Any, bool]:
    """(parsed value or salvaged part, complete?). Raises _Unreadable."""
    text = _read_text(path)
    if not text.strip():
        raise _Unreadable("empty file")
    try:
        return json.loads(text), True
    except json.JSONDecodeError as err:
        reason = f"{err.msg}: line {err.lineno} column {err.colno}"
    if kind == "overflow":
        at = text.find("[")
        if at < 0 or text[:at].strip():
            raise _Unreadable(f"not a JSON list ({reason})")
        items = _salvage_items(text, at + 1, "]", keyed=False)
        problems.append((str(path), f"truncated or malformed ({reason}); read the first {len(items)} record(s)"
                                    " (was the job killed mid-run?)"))
        return items, False
    match = re.search(r'"data"\s*:\s*\{', text)
    if kind == "dump" and match:
        items = _salvage_items(text, match.end(), "}", keyed=True)
        problems.append((str(path), f"truncated or malformed ({reason}); read the first {len(items)} entr"
                                    f"{'y' if len(items) == 1 else 'ies'} (was the job killed mid-run?)"))
        return {"data": dict(items)}, False
    raise _Unreadable(f"not valid JSON ({reason})")


def _tensors(value: Any, where: str) -> Iterator[Tensor]:
    """Every tensor statistics object inside an argument structure."""
    if isinstance(value, dict):
        if any(k in value for k in STATS) and ("dtype" in value or "type" in value):
            yield Tensor(where, value.get("dtype"), value.get("shape"), {k: value.get(k) for k in STATS})
            return
        for key, item in value.items():
            yield from _tensors(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _tensors(item, f"{where}[{i}]")


def entry_tensors(entry: Any) -> list[Tensor]:
    """The tensors of one dump.json entry, labelled by where they are."""
    if not isinstance(entry, dict):
        return []
    out: list[Tensor] = []
    for key, value in entry.items():
        out.extend(_tensors(value, key))
    return out


def _stack_where(stack: Any, name: str) -> Optional[str]:
    """The user's file:line for ``name`` from msprobe's stack.json (the
    innermost frame outside the tools and site-packages; backward entries
    use their forward entry's stack)."""
    if not isinstance(stack, dict):
        return None
    forward = name.replace(".backward", ".forward").replace(".parameters_grad", ".forward")
    for value in stack.values():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)):
            continue
        if name in value[0] or forward in value[0] or any(str(n).startswith(forward) for n in value[0]):
            frames = [m for m in (_STACK_FILE.search(str(line)) for line in value[1] or []) if m]
            for m in frames:
                if not any(tool in m.group("file") for tool in _TOOL_PATHS):
                    return f"{m.group('file')}:{m.group('line')}"
            if frames:
                return f"{frames[0].group('file')}:{frames[0].group('line')}"
    return None


def _number(name: str, pattern: re.Pattern) -> tuple[bool, Optional[int]]:
    match = pattern.match(name)
    if not match:
        return False, None
    digits = match.group(1)
    return True, int(digits) if digits else None


def _folders(root: Path, problems: list) -> list[tuple[Optional[int], Optional[int], Path]]:
    """(step, rank, folder) of every rank folder under root; a folder that
    cannot be searched or listed is added to ``problems`` and skipped."""
    found: list[tuple[Optional[int], Optional[int], Path]] = []

    def visit(folder: Path, step: Optional[int], rank: Optional[int], depth: int) -> None:
        try:
            if (folder / "dump.json").exists() or (folder / "overflow.json").exists():
                found.append((step, rank, folder))
                return
            if depth > 3:
                return
            children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError as err:
            problems.append((str(folder), err.strerror or str(err)))
            return
        for child in children:
            is_step, s = _number(child.name, _STEP)
            is_rank, r = _number(child.name, _RANK)
            if is_step:
                visit(child, s, rank, depth + 1)
            elif is_rank:
                visit(child, step, r, depth + 1)
            elif child.name in ("graph", "pynative") and depth == 0:
                visit(child, step, rank, depth + 1)

    is_step, s = _number(root.name, _STEP)
    is_rank, r = _number(root.name, _RANK)
    if is_rank:
        s = _number(root.parent.name, _STEP)[1]
    visit(root, s if (is_step or is_rank) else None, r if is_rank else None, 0)
    found.sort(key=lambda item: (item[0] if item[0] is not None else -1,
                                 item[1] if item[1] is not None else -1, str(item[2])))
    return found


def read_dump(dump_path: str) -> Dump:
    """Read every step and rank under ``dump_path``. Never raises for bad
    input: what cannot be read is listed in ``problems``."""
    dump = Dump(dump_path)
    root = Path(dump_path)
    for step, rank, folder in _folders(root, dump.problems):
        dump.folders += 1
        problems: list[tuple[str, str]] = []
        data: dict = {}
        overflow: Optional[list] = None
        stack: Any = None
        readable = False
        dump_file, overflow_file = folder / "dump.json", folder / "overflow.json"
        if dump_file.exists():
            try:
                parsed, complete = _load(dump_file, problems, "dump")
                if isinstance(parsed, dict) and isinstance(parsed.get("data", {}), dict):
                    data = parsed.get("data") or {}
                    readable = complete or bool(data)
                else:
                    problems.append((str(dump_file), "not an msprobe dump.json (no \"data\" object)"))
            except _Unreadable as err:
                problems.append((str(dump_file), str(err)))
        if overflow_file.exists():
            try:
                parsed, complete = _load(overflow_file, problems, "overflow")
                if isinstance(parsed, list):
                    overflow = parsed
                    readable = complete or bool(parsed)
                else:
                    problems.append((str(overflow_file), "not a list of overflow records"))
            except _Unreadable as err:
                problems.append((str(overflow_file), str(err)))
        if overflow and not dump_file.exists() and not all(_sentinel(item) for item in overflow):
            problems.append((str(dump_file), "missing: the records of overflow.json have no statistics"))
        if overflow is None and (folder / "stack.json").exists():
            try:
                stack, _ = _load(folder / "stack.json", [], "stack")
            except _Unreadable:
                stack = None
        dump.problems.extend(problems)
        if not readable:
            dump.unreadable_folders += 1
            continue
        if overflow is not None:
            for index, item in enumerate(overflow):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    dump.problems.append((str(overflow_file), f"record {index} has no name; skipped"))
                    continue
                origin = item.get("origin")
                where = item.get("where")
                entered = item.get("entered")
                sentinel = _sentinel(item)
                entry = None if sentinel else data.get(item["name"])
                dump.records.append(Record(step, rank, str(folder), index, item["name"],
                                           origin if isinstance(origin, bool) else None,
                                           str(where) if where else None, entry_tensors(entry),
                                           has_entry=entry is not None,
                                           entered=entered if _entered_ok(entered) else None, sentinel=sentinel,
                                           nonfinite=_labels(item) if sentinel else []))
        else:
            for index, (name, entry) in enumerate(data.items()):
                dump.records.append(Record(step, rank, str(folder), index, str(name), None,
                                           _stack_where(stack, str(name)), entry_tensors(entry), has_entry=True))
    return dump


def _sentinel(item: Any) -> Optional[str]:
    """The message of a probe_runtime sentinel record (``kind``
    ``sentinel``: inf/nan in what a gradient computation returned, no call
    named), else None."""
    if isinstance(item, dict) and item.get("kind") == "sentinel":
        message = item.get("message")
        return message if isinstance(message, str) and message else "inf/nan seen by sentinel checks"
    return None


def _labels(item: dict) -> list[str]:
    """A sentinel record's ``nonfinite`` labels (strings only)."""
    labels = item.get("nonfinite")
    return [str(x) for x in labels] if isinstance(labels, list) else []


def _entered_ok(value: Any) -> bool:
    """An ``entered`` object as probe_runtime writes it (a message at least)."""
    return isinstance(value, dict) and isinstance(value.get("message"), str) and bool(value["message"])


# ---------------------------------------------------------------- output

def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _place(record: Record) -> str:
    step = "step?" if record.step is None else f"step{record.step}"
    rank = "rank" if record.rank is None else f"rank{record.rank}"
    return f"{step}/{rank}"


def _describe(record: Record) -> str:
    where = f" at {record.where}" if record.where else ""
    return f"{record.name} ({record.kind}, {record.direction or 'direction unknown'}){where}"


def summary_line(dump: Dump) -> str:
    """One sentence naming the earliest step whose records show the
    overflow: its origin, else where it came in (``entered``), else its
    first record ("where it started is not known"). A later step's origin
    or ``entered`` never outranks an earlier step."""
    first = dump.records[0] if dump.records else None
    if first is not None and first.sentinel is not None:  # the earliest step: sentinel checks, no call named
        later = Dump(dump.root, [r for r in dump.records if r.sentinel is None])
        then = f" Then: {summary_line(later)}" if later.records else ""
        return f"Sentinel checks saw inf/nan in {_place(first)}: {first.sentinel}.{then}"
    started = dump.started
    if started is not None:
        return f"Overflow started in {_place(started)}: {_describe(started)}."
    entered = dump.entered
    if entered is not None and entered.entered is not None:
        return f"Overflow entered in {_place(entered)}: {entered.entered['message']}."
    if dump.records:
        first = dump.records[0]
        why = ("no overflow.json: a dump without origin marks"
               if all(r.origin is None for r in dump.records) else "no record is marked as the origin")
        return (f"First recorded overflow in {_place(first)}: {_describe(first)}; where it started is not known "
                f"({why}).")
    return "No overflow recorded."


def render_text(dump: Dump) -> str:
    lines: list[str] = []
    current = None
    for record in dump.records:
        place = _place(record)
        if place != current:
            current = place
            if lines:
                lines.append("")
            lines.append(f"{place}  ({record.folder})")
        if record.sentinel is not None:  # names no call: what held inf/nan, and the user's gradient line
            lines.append(f"  SENTINEL  {record.where or 'file:line unknown'}")
            lines.append(f"           {record.sentinel}")
            if record.nonfinite:
                lines.append(f"           held inf/nan: {', '.join(record.nonfinite)}")
            continue
        mark = {True: "ORIGIN ", False: "carried", None: "?      "}[record.origin]
        lines.append(f"  {mark}  {record.label}  {record.kind}  {record.direction or '-'}  "
                     f"{record.where or 'file:line unknown'}")
        if record.entered is not None:
            lines.append(f"           entered: {record.entered['message']}")
        bad = record.offending()
        for tensor in bad:
            shape = "[" + ", ".join(str(d) for d in tensor.shape) + "]" if isinstance(tensor.shape, list) \
                else _fmt(tensor.shape)
            stats = " ".join(f"{k}={_fmt(v)}" for k, v in tensor.stats.items())
            lines.append(f"           {tensor.where}  {tensor.dtype} {shape}  {stats}")
        if not bad:
            lines.append("           " + ("no statistics in dump.json" if not record.has_entry
                                         else "no inf/nan in the recorded statistics"))
    if dump.records:
        n = len(dump.records)
        groups = len({_place(r) for r in dump.records})
        lines.append("")
        lines.append(f"{n} record{'s' if n != 1 else ''} in {groups} step/rank folder{'s' if groups != 1 else ''}. "
                     + summary_line(dump))
    return "\n".join(shown(line) for line in lines) + "\n"  # names and paths from a dump: no escapes


def _strict(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return _fmt(value)
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def record_dict(record: Record) -> dict:
    return {
        "step": record.step, "rank": record.rank, "folder": record.folder, "name": record.name,
        "kind": record.kind, "direction": record.direction, "origin": record.origin, "where": record.where,
        "tensors": [{"where": t.where, "dtype": t.dtype, "shape": t.shape, **_strict(t.stats),
                     "nonfinite": t.nonfinite} for t in record.offending()],
        "entered": record.entered,
        "sentinel": record.sentinel,
        "nonfinite": record.nonfinite,
    }


def render_json(dump: Dump, status: int, message: Optional[str] = None) -> str:
    started, entered = dump.started, dump.entered
    payload = {
        "dump_path": dump.root,
        "records": [record_dict(r) for r in dump.records],
        "started": record_dict(started) if started else None,
        "entered": record_dict(entered) if entered else None,
        "problems": [{"path": p, "message": m} for p, m in dump.problems],
        "summary": {"records": len(dump.records), "folders": dump.folders, "status": status,
                    "message": message or summary_line(dump)},
    }
    return json.dumps(_strict(payload), indent=1, allow_nan=False) + "\n"


def report(dump_path: str) -> tuple[Dump, int, Optional[str]]:
    """(dump, exit status, message when nothing could be shown)."""
    root = Path(dump_path)
    if not root.exists():
        return Dump(dump_path), EXIT_UNREADABLE, f"{dump_path}: no such file or directory"
    if not root.is_dir():
        return Dump(dump_path), EXIT_UNREADABLE, f"{dump_path}: not a directory (give the dump_path folder)"
    if not os.access(root, os.R_OK | os.X_OK):
        return Dump(dump_path), EXIT_UNREADABLE, f"{dump_path}: permission denied"
    dump = read_dump(dump_path)
    if dump.records:
        return dump, EXIT_FOUND, None
    if dump.problems:  # a file, or a folder that might hold one, could not be read
        return dump, EXIT_UNREADABLE, f"{dump_path}: no dump could be read (see the warnings above)"
    if dump.folders == 0:
        return dump, EXIT_NONE, (f"{dump_path}: no dump found (no step*/rank*/dump.json or overflow.json): "
                                 "nothing overflowed, or the job wrote elsewhere (check dump_path)")
    return dump, EXIT_NONE, f"{dump_path}: the dumps hold no overflow records"


def write_output(text: str, output: str, *, force: bool = False) -> Optional[str]:
    """Write a report to the file ``output``; the reason it could not be
    written, or None. An existing file is never replaced unless ``force``
    (the file is created with ``O_EXCL`` otherwise, so a file made between a
    check and the write is not lost either); with ``force`` the new report
    goes to a temporary file beside it first and is renamed over it, so the
    old file stays whole if writing fails."""
    path = Path(output)
    if path.is_dir():
        return f"{output} is a directory; give a file name"
    if not force:
        try:
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            return f"{output} already exists; not overwritten (give --force to replace it)"
        except OSError as err:
            return f"cannot write {output}: {err.strerror or err}"
        return None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as err:
        try:
            tmp.unlink()
        except OSError:
            pass
        return f"cannot write {output}: {err.strerror or err}"
    return None


def main(dump_path: str, fmt: str = "text", out=None, err=None, *, output: Optional[str] = None,
         force: bool = False) -> int:
    """``probe report``: print (or write to ``output``) and return the exit
    status. ``fmt`` is ``text``, ``json`` or ``html`` (one self-contained
    page, :mod:`msprobe_lint.report_html`). An existing ``output`` file is
    refused (exit 2) unless ``force``; no ``output`` file is written when
    the report itself fails (exit 2), whatever the format."""
    out = out or sys.stdout
    err = err or sys.stderr
    dump, status, message = report(dump_path)
    if fmt == "html":
        from .report_html import HtmlUnavailable, render_html

        try:
            text = render_html(dump, status, message)
        except HtmlUnavailable as missing:
            err.write(f"probe: error: {missing}\n")
            return EXIT_UNREADABLE
    elif fmt == "json":
        text = render_json(dump, status, message)
    else:
        text = render_text(dump) if dump.records else ""
    unwritten = output is not None and status == EXIT_UNREADABLE  # no file: stderr says why, JSON too
    if fmt != "json" or unwritten:
        for path, problem in dump.problems:
            err.write(shown(f"probe: warning: {path}: {problem}") + "\n")
        if not dump.records:
            err.write(shown(f"probe: {'error' if status == EXIT_UNREADABLE else 'note'}: {message}") + "\n")
    if output is None:
        out.write(text)
        return status
    if text and not unwritten:  # a failed report leaves no file that looks like one
        failure = write_output(text, output, force=force)
        if failure:
            err.write(f"probe: error: {failure}\n")
            return EXIT_UNREADABLE
    return status
