"""Reading one step and rank folder, tolerant of damage.

* probe_runtime's dumps: ``overflow.json`` gives the records in detection
  order; ``dump.json`` (msprobe's format) their statistics.
* msprobe's own dumps (no ``overflow.json``): every ``dump.json`` entry is
  a record, in file order, origin unknown; the user's ``file:line`` comes
  from ``stack.json``.

A truncated file (a job killed mid-run) is read as far as it goes and named
in the folder's ``problems``; a file that cannot be read at all is named
there too. Nothing here raises for bad input.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from .discover import RankFolder
from .dumpformat import (CONSTRUCT_FILE, DATA, DUMP_FILE, ENTERED, KIND, MESSAGE, NAME, NONFINITE, ORIGIN,
                         OVERFLOW_FILE, SENTINEL, STACK_FILE, STATS, WHERE)
from .model import RankDump, Record, Tensor

#: files larger than this are not read (a dump file is a few MB at most)
MAX_FILE = 512 * 1024 * 1024
_STACK_FILE_LINE = re.compile(r"File (?P<file>.*?), line (?P<line>\d+), in ")
#: frames of these paths are not the user's code
_TOOL_PATHS = ("site-packages", "dist-packages", "/msprobe/", "/probe_runtime/", "/msprobe_lint/", "<frozen")


class Unreadable(Exception):
    """A file that could not be read at all (the message says why)."""


def read_text(path: Path) -> str:
    """The file's text (undecodable bytes replaced).

    Raises:
        Unreadable: missing, not readable, or larger than :data:`MAX_FILE`.
    """
    try:
        if path.stat().st_size > MAX_FILE:
            raise Unreadable(f"larger than {MAX_FILE // (1024 * 1024)} MiB")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        raise Unreadable(err.strerror or str(err)) from None


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


def load_json(path: Path, problems: list[tuple[str, str]], kind: str) -> tuple[Any, bool]:
    """(parsed value, complete?) of a dump file; ``kind`` is ``overflow``
    (a list: a truncated one gives its complete records), ``dump`` (an
    object with ``data``: a truncated one gives its complete entries) or
    anything else (read whole or not at all). A salvaged file is added to
    ``problems``. Accepts the bare ``Infinity``/``NaN`` tokens msprobe writes.

    Raises:
        Unreadable: empty, not JSON, or not readable.
    """
    text = read_text(path)
    if not text.strip():
        raise Unreadable("empty file")
    try:
        return json.loads(text), True
    except json.JSONDecodeError as err:
        reason = f"{err.msg}: line {err.lineno} column {err.colno}"
    if kind == "overflow":
        at = text.find("[")
        if at < 0 or text[:at].strip():
            raise Unreadable(f"not a JSON list ({reason})")
        items = _salvage_items(text, at + 1, "]", keyed=False)
        problems.append((str(path), f"truncated or malformed ({reason}); read the first {len(items)} record(s)"
                                    " (was the job killed mid-run?)"))
        return items, False
    match = re.search(r'"data"\s*:\s*\{', text)
    if kind == "dump" and match:
        items = _salvage_items(text, match.end(), "}", keyed=True)
        problems.append((str(path), f"truncated or malformed ({reason}); read the first {len(items)} entr"
                                    f"{'y' if len(items) == 1 else 'ies'} (was the job killed mid-run?)"))
        return {DATA: dict(items)}, False
    raise Unreadable(f"not valid JSON ({reason})")


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
    """The tensors of one dump.json entry, labelled by where they are
    (``input_args[0]``, ``output[1]``, ``weight[0]``)."""
    if not isinstance(entry, dict):
        return []
    out: list[Tensor] = []
    for key, value in entry.items():
        out.extend(_tensors(value, key))
    return out


def stack_where(stack: Any, name: str) -> Optional[str]:
    """The user's ``file:line`` for entry ``name`` from msprobe's
    stack.json: the innermost frame outside the tools and site-packages
    (backward entries use their forward entry's stack); None when the
    stack does not name the entry."""
    if not isinstance(stack, dict):
        return None
    forward = name.replace(".backward", ".forward").replace(".parameters_grad", ".forward")
    for value in stack.values():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)):
            continue
        if name in value[0] or forward in value[0] or any(str(n).startswith(forward) for n in value[0]):
            frames = [m for m in (_STACK_FILE_LINE.search(str(line)) for line in value[1] or []) if m]
            for m in frames:
                if not any(tool in m.group("file") for tool in _TOOL_PATHS):
                    return f"{m.group('file')}:{m.group('line')}"
            if frames:
                return f"{frames[0].group('file')}:{frames[0].group('line')}"
    return None


def sentinel_message(item: Any) -> Optional[str]:
    """The message of a probe_runtime sentinel record (kind ``sentinel``:
    inf/nan in what a gradient computation returned, no call named), else None."""
    if isinstance(item, dict) and item.get(KIND) == SENTINEL:
        message = item.get(MESSAGE)
        return message if isinstance(message, str) and message else "inf/nan seen by sentinel checks"
    return None


def _labels(item: dict) -> list[str]:
    labels = item.get(NONFINITE)
    return [str(x) for x in labels] if isinstance(labels, list) else []


def _entered_ok(value: Any) -> bool:
    """An ``entered`` object as probe_runtime writes it (a message at least)."""
    return isinstance(value, dict) and isinstance(value.get(MESSAGE), str) and bool(value[MESSAGE])


def read_folder(folder: RankFolder, *, construct: bool = False) -> RankDump:
    """Read one step and rank folder: its records (statistics joined from
    dump.json) and, with ``construct``, its construct.json Cell tree.

    Example: ``read_folder(RankFolder(0, 1, Path("dump/step0/rank1"))).records[0].name``.
    """
    path = folder.path
    out = RankDump(folder.step, folder.rank, str(path))
    problems = out.problems
    data: dict = {}
    overflow: Optional[list] = None
    readable = False
    dump_file, overflow_file = path / DUMP_FILE, path / OVERFLOW_FILE
    has_dump = dump_file.exists()
    if has_dump:
        try:
            parsed, complete = load_json(dump_file, problems, "dump")
            if isinstance(parsed, dict) and isinstance(parsed.get(DATA, {}), dict):
                data = parsed.get(DATA) or {}
                readable = complete or bool(data)
            else:
                problems.append((str(dump_file), "not an msprobe dump.json (no \"data\" object)"))
        except Unreadable as err:
            problems.append((str(dump_file), str(err)))
    if overflow_file.exists():
        try:
            parsed, complete = load_json(overflow_file, problems, "overflow")
            if isinstance(parsed, list):
                overflow = parsed
                readable = readable or complete or bool(parsed)
            else:
                problems.append((str(overflow_file), "not a list of overflow records"))
        except Unreadable as err:
            problems.append((str(overflow_file), str(err)))
    if overflow and not has_dump and not all(sentinel_message(item) for item in overflow):
        problems.append((str(dump_file), "missing: the records of overflow.json have no statistics"))
    out.readable = readable
    if not readable:
        return out
    if overflow is not None:
        for index, item in enumerate(overflow):
            if not isinstance(item, dict) or not isinstance(item.get(NAME), str):
                problems.append((str(overflow_file), f"record {index} has no name; skipped"))
                continue
            origin, where, entered = item.get(ORIGIN), item.get(WHERE), item.get(ENTERED)
            sentinel = sentinel_message(item)
            entry = None if sentinel else data.get(item[NAME])
            out.records.append(Record(folder.step, folder.rank, str(path), index, item[NAME],
                                      origin if isinstance(origin, bool) else None,
                                      str(where) if where else None, entry_tensors(entry),
                                      has_entry=entry is not None,
                                      entered=entered if _entered_ok(entered) else None, sentinel=sentinel,
                                      nonfinite=_labels(item) if sentinel else []))
    else:
        stack = None
        if (path / STACK_FILE).exists():
            try:
                stack, _ = load_json(path / STACK_FILE, [], "stack")
            except Unreadable:
                stack = None
        for index, (name, entry) in enumerate(data.items()):
            out.records.append(Record(folder.step, folder.rank, str(path), index, str(name), None,
                                      stack_where(stack, str(name)), entry_tensors(entry), has_entry=True))
    if construct:
        _read_construct(out)
    return out


def _read_construct(out: RankDump) -> None:
    """construct.json's parent map into ``out.construct`` (None when absent
    or empty, as at L1), or the reason it could not be read."""
    path = Path(out.folder) / CONSTRUCT_FILE
    if not path.exists():
        return
    try:
        parsed, _ = load_json(path, [], "construct")
    except Unreadable as err:
        out.construct_problem = f"{path}: {err}"
        return
    if not isinstance(parsed, dict):
        out.construct_problem = f"{path}: not a JSON object"
        return
    out.construct = parsed or None
