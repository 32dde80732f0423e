"""Reading one step and rank folder, tolerant of damage.

* probe_runtime's dumps: ``overflow.json`` gives the records in detection
  order; ``dump.json`` (msprobe's format) their statistics.
* msprobe's own dumps (no ``overflow.json``): every ``dump.json`` entry is
  a record, in file order, origin unknown; the user's ``file:line`` comes
  from ``stack.json``.

A truncated file (a job killed mid-run) is read as far as it goes and named
in the folder's ``problems``; a file that cannot be read at all is named
there too, and so are tensors in ``dump_tensor_data`` whose records were
never written (:data:`LOST`). Nothing here raises for bad input.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from probe_format.collectives import (COLLECTIVE_API, COLLECTIVE_DIRECTION, COLLECTIVE_GROUP, COLLECTIVE_INDEX,
                                      COLLECTIVE_INPUTS_FINITE, COLLECTIVE_PEER, COLLECTIVE_RANKS, COLLECTIVE_ROOT)
from probe_format.layout import (BACKWARD, COLLECTIVE, CONSTRUCT_FILE, DATA, DUMP_FILE, ENTERED, FORWARD, INSIDE, KIND,
                                 MESSAGE, NAME, NONFINITE, NOTE_KINDS, ORIGIN, OVERFLOW_FILE, REPLAY, SENTINEL,
                                 STACK_FILE, STATS, TENSOR_DATA_DIR, VERSION, WHERE, WRITTEN, INPUT_ARGS,
                                 INPUT_KWARGS)
from probe_format.records import FORMAT_VERSION, parse_version, version_problem

from .discover import RankFolder
from .model import Collective, Constant, RankDump, Record, Tensor, signature

#: the end of the one warning about an overflow.json that cannot be read
#: (not JSON, not a list, no record in it) beside a dump.json: the folder
#: falls back to dump.json's entries, as a dump of msprobe's own
FALLBACK = "the records are dump.json's entries, without origin marks"
#: the words of the warning about an overflow.json or a dump.json cut short
#: after some records or entries (``... read the first 3 record(s) ...``):
#: the rest are missing
CUT_SHORT = re.compile(r"truncated or malformed \(.*\); read the first (\d+) (?:record\(s\)|entry|entries)")
#: the end of the warning about a folder's ``dump_tensor_data`` holding tensors of records that were never
#: written (the writer puts a record's .npy files first, its dump.json and overflow.json after them): a disk
#: that filled, or a job killed, in between
LOST = "were never written (a full disk? the job killed while writing?)"
#: at most this many tensor file names are quoted in that warning
LOST_SHOWN = 2
#: files larger than this are not read (a dump file is a few MB at most)
MAX_FILE = 512 * 1024 * 1024
_STACK_FILE_LINE = re.compile(r"File (?P<file>.*?), line (?P<line>\d+), in ")
#: frames of these paths are not the user's code
_TOOL_PATHS = ("site-packages", "dist-packages", "/msprobe/", "/probe_runtime/", "/msprobe_lint/", "<frozen")


class Unreadable(Exception):
    """A file that could not be read at all (the message says why)."""


def read_bytes(path: Union[str, Path]) -> bytes:
    """The file's bytes.

    Raises:
        Unreadable: missing, not readable, not a regular file (a FIFO, a
            device: opened without waiting for a writer, never read), or
            larger than :data:`MAX_FILE`.
    """
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer, forever (it changes nothing for
        # the read of a regular file)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            status = os.fstat(fd)
            if stat.S_ISDIR(status.st_mode):
                raise Unreadable(os.strerror(errno.EISDIR))
            if not stat.S_ISREG(status.st_mode):
                raise Unreadable("not a regular file")
            size = status.st_size
            if size > MAX_FILE:
                raise Unreadable(f"larger than {MAX_FILE // (1024 * 1024)} MiB")
            chunks = [os.read(fd, size + 1)]
            while chunks[-1] and sum(len(c) for c in chunks) <= MAX_FILE:  # a file that grew since fstat
                chunks.append(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
    except OSError as err:
        raise Unreadable(err.strerror or str(err)) from None
    data = chunks[0] if len(chunks) == 2 and not chunks[1] else b"".join(chunks)
    if len(data) > MAX_FILE:
        raise Unreadable(f"larger than {MAX_FILE // (1024 * 1024)} MiB")
    return data


def read_text(path: Path) -> str:
    """The file's text (undecodable bytes replaced).

    Raises:
        Unreadable: missing, not readable, or larger than :data:`MAX_FILE`.
    """
    return read_bytes(path).decode("utf-8", errors="replace")


class RanksTable:
    """The ``ranks`` lists of collective records, each distinct list parsed
    and kept once.

    On 1,024 ranks every collective record of every rank folder lists the
    same 1,024 ranks, one a line as the runtime's writer indents: most of
    overflow.json. :meth:`compact` replaces each such list in a file's bytes
    by a small marker (``{"\\u0000ranks": n}``) before the JSON parser sees
    it, and :meth:`lookup` gives the list back as one shared tuple. A list
    holding anything but non-negative integers is left to the parser.
    """

    MARKER = "\x00ranks"
    _KEY = b'"ranks"'
    _NUMBERS = b"0123456789 \t\r\n,"

    def __init__(self) -> None:
        self._lists: list[tuple[int, ...]] = []
        self._ids: dict[bytes, int] = {}
        #: the first 64 bytes of a long list's text -> (its whole text, its number): found without slicing it
        self._known: dict[bytes, list[tuple[bytes, int]]] = {}

    def _seen(self, data: bytes, start: int) -> Optional[tuple[int, int]]:
        """(number, end) of a list seen before whose text starts at ``start``."""
        for text, number in self._known.get(data[start:start + 64], ()):
            end = start + len(text)
            if data.startswith(text, start) and data[end:end + 1] == b"]":
                return number, end
        return None

    def compact(self, data: bytes) -> bytes:
        """``data`` with every ``"ranks": [integers]`` list replaced by its marker."""
        at = data.find(self._KEY)
        if at < 0:
            return data
        pieces: list[bytes] = []
        pos = 0
        while at >= 0:
            opening = data.find(b"[", at + 7)
            if opening < 0:
                break
            seen = self._seen(data, opening + 1) if data[at + 7:opening].strip() == b":" else None
            if seen is None:
                closing = data.find(b"]", opening)
                if closing < 0:
                    break
                content = data[opening + 1:closing]
                number = self._ids.get(content)
                if number is None:
                    if data[at + 7:opening].strip() != b":" or content.translate(None, self._NUMBERS):
                        at = data.find(self._KEY, at + 7)
                        continue
                    number = self._ids[content] = len(self._lists)
                    self._lists.append(tuple(int(n) for n in content.replace(b",", b" ").split()))
                    if len(content) >= 64:
                        self._known.setdefault(content[:64], []).append((content, number))
                seen = (number, closing)
            number, closing = seen
            pieces.append(data[pos:opening])
            pieces.append(b'{"\\u0000ranks": %d}' % number)
            pos = closing + 1
            at = data.find(self._KEY, pos)
        if not pieces:
            return data
        pieces.append(data[pos:])
        return b"".join(pieces)

    def lookup(self, value: Any) -> Any:
        """The list a marker stands for (as a tuple); anything else unchanged."""
        if isinstance(value, dict) and len(value) == 1 and self.MARKER in value:
            number = value[self.MARKER]
            if isinstance(number, int) and 0 <= number < len(self._lists):
                return self._lists[number]
        return value


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
        except (ValueError, RecursionError):
            return items


def load_json(path: Union[str, Path], problems: list[tuple[str, str]], kind: str) -> tuple[Any, bool]:
    """(parsed value, complete?) of a dump file; ``kind`` is ``overflow``
    (a list: a truncated one gives its complete records), ``dump`` (an
    object with ``data``: a truncated one gives its complete entries) or
    anything else (read whole or not at all). A salvaged file is added to
    ``problems``. Accepts the bare ``Infinity``/``NaN`` tokens msprobe writes.

    Raises:
        Unreadable: empty, not JSON, not readable, or (``overflow``) cut off
            before its first record.
    """
    return parse_json(read_bytes(path), path, problems, kind)


def parse_json(data: bytes, path: Union[str, Path], problems: list[tuple[str, str]], kind: str) -> tuple[Any, bool]:
    """:func:`load_json` on bytes already read from ``path``."""
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise Unreadable("empty file")
    try:
        return json.loads(text), True
    except json.JSONDecodeError as err:
        reason = f"{err.msg}: line {err.lineno} column {err.colno}"
    except RecursionError:  # no dump file nests this deep: not one probe report reads, nor a truncated one
        raise Unreadable("nested deeper than probe report reads (Python's recursion limit); not a dump file "
                         "msprobe or probe_runtime writes") from None
    if kind == "overflow":
        at = text.find("[")
        if at < 0 or text[:at].strip():
            raise Unreadable(f"not a JSON list ({reason})")
        items = _salvage_items(text, at + 1, "]", keyed=False)
        if not items:  # cut off before its first record: nothing read, one "not read" warning (not two)
            raise Unreadable(f"truncated or malformed before its first record: {reason}; was the job killed "
                             "mid-run?")
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


#: the dump.json types of the non-tensor inputs :func:`entry_constants` reads
CONSTANT_TYPES = ("int", "float", "mindspore.dtype")


def entry_constants(entry: Any) -> list[Constant]:
    """The numbers and dtypes among a dump.json entry's inputs
    (``input_args``, ``input_kwargs``: msprobe writes them as ``{"type":
    "float", "value": -100000.0}``, ``{"type": "mindspore.dtype", "value":
    "Float16"}``), labelled by where they are: what a call was given besides
    tensors (a constant multiplied into a float16 tensor, the dtype of a
    cast)."""
    if not isinstance(entry, dict):
        return []
    out: list[Constant] = []

    def walk(value: Any, where: str, depth: int) -> None:
        if isinstance(value, dict):
            kind = value.get("type")
            if kind in CONSTANT_TYPES and "value" in value and not any(k in value for k in STATS):
                item = value["value"]
                if isinstance(item, (int, float, str)) and not isinstance(item, bool):
                    out.append(Constant(where, kind, item))
                return
            if depth < 4 and "type" not in value:
                for key, item in value.items():
                    walk(item, f"{where}.{key}", depth + 1)
        elif isinstance(value, list) and depth < 4:
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]", depth + 1)

    for key in (INPUT_ARGS, INPUT_KWARGS):
        walk(entry.get(key), key, 0)
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


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_collective(value: Any, ranks: Optional[RanksTable] = None) -> Optional[Collective]:
    """A record's ``collective`` object, or None when it is malformed (a
    missing or mistyped key: the record is then read as a plain one)."""
    if not isinstance(value, dict):
        return None
    members = value.get(COLLECTIVE_RANKS)
    if ranks is not None:
        members = ranks.lookup(members)  # a tuple of ints when the table read it
    if isinstance(members, list):
        if not all(_int(r) is not None for r in members):
            return None
        members = tuple(members)
    elif members is not None and not isinstance(members, tuple):
        return None
    if members == ():  # a group has at least its own rank: an empty list says its members were not recorded
        members = None
    api, group, index = value.get(COLLECTIVE_API), value.get(COLLECTIVE_GROUP), _int(value.get(COLLECTIVE_INDEX))
    direction, finite = value.get(COLLECTIVE_DIRECTION), value.get(COLLECTIVE_INPUTS_FINITE)
    if not (isinstance(api, str) and api and isinstance(group, str) and index is not None
            and direction in (FORWARD, BACKWARD) and isinstance(finite, bool)):
        return None
    return Collective(api, group, members, index, direction, finite, _int(value.get(COLLECTIVE_PEER)),
                      _int(value.get(COLLECTIVE_ROOT)))


#: one overflow.json record, interpreted: a :class:`~.model.Record` without its folder (``step`` and
#: ``rank`` None, ``folder`` empty) nor statistics, shared by the folders whose overflow.json is the same
Item = Record


def _masked(data: bytes, step: Optional[int], rank: Optional[int]) -> bytes:
    """``data`` with ``"step": STEP`` and ``"rank": RANK`` (the folder's
    numbers, as the writer formats them) made ``null``: a key under which
    two folders' files are equal when they differ only there."""
    if step is not None:
        data = data.replace(b'"step": %d' % step, b'"step": null')
    if rank is not None:
        data = data.replace(b'"rank": %d' % rank, b'"rank": null')
    return data


class ReadCache:
    """What the reads of one report share: the ``ranks`` lists
    (:class:`RanksTable`) and the interpretation of the overflow.json
    contents seen last.

    Two rank folders of a data-parallel job hold the same overflow.json but
    for its ``step`` and ``rank`` values (which the report takes from the
    folder names): the contents are compared with those masked, and one
    parse serves them all. Only files read whole are kept, at most ``size``.
    """

    def __init__(self, size: int = 64) -> None:
        self.ranks = RanksTable()
        self.size = size
        self._seen: dict[bytes, tuple[list[Item], list[str], tuple]] = {}

    def overflow(self, raw: bytes, path: str, problems: list[tuple[str, str]], step: Optional[int] = None,
                 rank: Optional[int] = None) -> tuple[list[Item], bool, tuple]:
        """(the interpreted records of an overflow.json's bytes, read whole?,
        their :func:`signature`).

        Raises:
            Unreadable: empty, not a JSON list, not JSON.
        """
        compact = self.ranks.compact(raw)
        key = _masked(compact, step, rank)
        hit = self._seen.get(key)
        if hit is None:
            try:
                value, complete = json.loads(compact), True
            except (ValueError, RecursionError):  # not JSON, not UTF-8 or too deep: as it is, for the positions
                value, complete = parse_json(raw, path, problems, "overflow")
            if not isinstance(value, list):
                raise Unreadable("not a list of overflow records")
            items, notes = _interpret(value, self.ranks)
            if value and not items:  # nothing in it is a record: not read, as a file that is not JSON
                raise Unreadable(f"no overflow record in it ({len(value)} item(s), "
                                 "none an object with a string \"name\")")
            hit = (items, notes, signature(items))
            if complete:
                if len(self._seen) >= self.size:
                    self._seen.pop(next(iter(self._seen)))
                self._seen[key] = hit
        else:
            complete = True
        items, notes, sign = hit
        problems.extend((path, note) for note in notes)
        return items, complete, sign


def _interpret(overflow: list, ranks: RanksTable) -> tuple[list[Item], list[str]]:
    """The records of an overflow.json list, and what is wrong with them.

    Raises:
        Unreadable: a record written in a newer major version of the format
            (``format_version``; records without it predate versioning and
            are read as version 1.0).
    """
    items: list[Item] = []
    notes: list[str] = []
    for index, item in enumerate(overflow):
        if not isinstance(item, dict) or not isinstance(item.get(NAME), str):
            why = ("is not an object" if not isinstance(item, dict) else "has no \"name\"" if NAME not in item
                   else f"has a \"name\" that is not a string ({item[NAME]!r})")
            notes.append(f"record {index} {why}; skipped")
            continue
        newer = version_problem(item.get(VERSION))
        if newer is not None:
            raise Unreadable(f"{newer}; its records are not read")
        if item.get(VERSION) is not None and parse_version(item.get(VERSION)) is None:
            notes.append(f"record {index} has format_version {item.get(VERSION)!r}, not \"MAJOR.MINOR\"; "
                         f"read as version {FORMAT_VERSION}")
        name = item[NAME]
        origin, where, entered, kind = item.get(ORIGIN), item.get(WHERE), item.get(ENTERED), item.get(KIND)
        sentinel = sentinel_message(item)
        note = kind in NOTE_KINDS  # names no call: no dump.json entry, and no collective
        collective = None
        if COLLECTIVE in item and not note:
            collective = read_collective(item[COLLECTIVE], ranks)
            if collective is None:
                notes.append(f"record {index} ({name}): malformed \"collective\" object; read as a plain record")
        message, replay, inside, written = item.get(MESSAGE), item.get(REPLAY), item.get(INSIDE), item.get(WRITTEN)
        items.append(Record(
            step=None, rank=None, folder="", index=index, name=name,
            origin=origin if isinstance(origin, bool) else None, where=str(where) if where else None,
            entered=entered if _entered_ok(entered) else None, sentinel=sentinel,
            nonfinite=_labels(item) if note else [], record_kind=kind if isinstance(kind, str) else None,
            collective=collective, message=message if isinstance(message, str) and message else None,
            replay=str(replay) if replay and not note else None,
            inside=inside if isinstance(inside, str) and inside else None,
            written=[str(w) for w in written] if isinstance(written, list) else []))
    return items, notes


def read_folder(folder: RankFolder, *, statistics: bool = True, construct: bool = False,
                cache: Optional[ReadCache] = None) -> RankDump:
    """Read one step and rank folder: its records in detection order.

    Args:
        folder: from :func:`~msprobe_lint.report.discover.iter_rank_folders`.
        statistics: join each record with its dump.json statistics. Without
            it dump.json is read only when there is no overflow.json (the
            records are then its entries) and the records have no tensors
            (``has_entry`` then says whether dump.json exists).
        construct: also read construct.json's Cell tree (for the HTML page).
        cache: shared between the folders of one report (:class:`ReadCache`).

    Example: ``read_folder(RankFolder(0, 1, "dump/step0/rank1")).records[0].name``.
    """
    folder_text = str(folder.path)
    out = RankDump(folder.step, folder.rank, folder_text)
    problems = out.problems
    files = folder.files
    data: dict = {}
    items: Optional[list[Item]] = None
    readable = False
    dump_file, overflow_file = f"{folder_text}{os.sep}{DUMP_FILE}", f"{folder_text}{os.sep}{OVERFLOW_FILE}"
    has_dump = DUMP_FILE in files if files is not None else os.path.exists(dump_file)
    has_overflow = OVERFLOW_FILE in files if files is not None else os.path.exists(overflow_file)
    fallback: Optional[tuple[int, str]] = None  # (index in problems, the warning without FALLBACK)
    whole: Optional[list[str]] = None  # the entry names of a file read whole, whose tensors dump_tensor_data holds
    if has_overflow:
        try:
            items, complete, out.signature = (cache or ReadCache()).overflow(
                read_bytes(overflow_file), overflow_file, problems, folder.step, folder.rank)
            readable = complete or bool(items)
            if complete and items:
                whole = [item.name for item in items if item.names_call]
            if items == [] and has_dump:  # a list with no record in it, beside statistics: as one not read
                fallback = (len(problems), "not read (an empty list)")
                items, readable = None, False
        except Unreadable as err:
            if has_dump:
                fallback = (len(problems), f"not read ({err})")
            else:
                problems.append((str(overflow_file), str(err)))
        if fallback is not None:
            problems.append((str(overflow_file), f"{fallback[1]}; {FALLBACK}"))
    if has_dump and (statistics or items is None):
        dump_read = False
        try:
            parsed, complete = load_json(dump_file, problems, "dump")
            if isinstance(parsed, dict) and isinstance(parsed.get(DATA, {}), dict):
                data = parsed.get(DATA) or {}
                framework = parsed.get("framework")
                out.framework = framework if isinstance(framework, str) else None
                readable = readable or complete or bool(data)
                dump_read = True
                if items is None and complete:  # its entries are the records
                    whole = [str(name) for name in data]
            else:
                problems.append((str(dump_file), "not an msprobe dump.json (no \"data\" object)"))
        except Unreadable as err:
            problems.append((str(dump_file), str(err)))
        if fallback is not None and not dump_read:  # a hunt's finding: no entry of dump.json was read either
            problems[fallback[0]] = (str(overflow_file), fallback[1])
    if items and not has_dump and any(item.names_call for item in items):
        problems.append((str(dump_file), "missing: the records of overflow.json have no statistics"))
    tensors = folder.tensors if folder.tensors is not None else os.path.isdir(f"{folder_text}{os.sep}{TENSOR_DATA_DIR}")
    if tensors and not has_overflow and not has_dump:  # a tester's finding: a full disk left only these, and the
        _records_lost(folder_text, None, "", problems)  # report said "nothing overflowed"
    elif tensors and whole is not None:
        _records_lost(folder_text, whole, "overflow.json" if items is not None else "dump.json", problems)
    out.readable = readable
    if not readable:
        return out
    step, rank, records = folder.step, folder.rank, out.records
    if items is not None:
        for item in items:
            note = not item.names_call
            entry = None if note or not statistics else data.get(item.name)
            records.append(replace(item, step=step, rank=rank, folder=folder_text,
                                   tensors=entry_tensors(entry) if entry is not None else [],
                                   has_entry=entry is not None if statistics else has_dump and not note,
                                   constants=entry_constants(entry) if entry is not None else []))
    else:
        stack = None
        stack_file = os.path.join(folder_text, STACK_FILE)
        has_stack = STACK_FILE in files if files is not None else os.path.exists(stack_file)
        if has_stack:
            try:
                stack, _ = load_json(stack_file, [], "stack")
            except Unreadable as err:  # a hunt's finding: a stack.json cut short made every file:line unknown, unsaid
                problems.append((stack_file, f"not read ({err}); the records' file:line are not known"))
                stack = None
        for index, (name, entry) in enumerate(data.items()):
            records.append(Record(step=step, rank=rank, folder=folder_text, index=index, name=str(name), origin=None,
                                  where=stack_where(stack, str(name)),
                                  tensors=entry_tensors(entry) if statistics else [], has_entry=True,
                                  constants=entry_constants(entry) if statistics else []))
    if construct:
        _read_construct(out)
    return out


def _records_lost(folder: str, names: Optional[list[str]], source: str, problems: list[tuple[str, str]]) -> None:
    """Append to ``problems`` what ``folder``'s ``dump_tensor_data`` says
    was lost: with ``names`` None, the folder has no dump.json nor
    overflow.json, so every tensor in it (or the write that made the empty
    folder) belongs to records never written; else the tensor files of no
    entry among ``names`` (the records of ``source``, read whole), whose
    records were never written. A record's ``.npy`` files are named after
    its entry (``Functional.exp.0.forward.output.0.npy``; a kernel's ``/``
    as ``_``), so a file belongs to the entry its name starts with. A
    folder that cannot be listed says nothing (its tensors are not read)."""
    data_dir = f"{folder}{os.sep}{TENSOR_DATA_DIR}"
    try:
        with os.scandir(data_dir) as listing:
            files = sorted(e.name for e in listing if e.name.endswith(".npy") and not e.name.startswith("."))
    except OSError:
        files = None
    if names is None:
        if not files:
            problems.append((data_dir, "empty, and no dump.json or overflow.json beside it: not read whole; the "
                                       f"records whose tensors were being written there {LOST}"))
        else:
            problems.append((data_dir, f"{len(files):,} tensor file(s) ({_some(files)}) and no dump.json or "
                                       f"overflow.json beside it: not read whole; the records of these tensors {LOST}"))
        return
    if not files:
        return
    known = set(names) | {name.replace("/", "_") for name in names}
    orphans = [f for f in files if not _belongs(f[:-len(".npy")], known)]
    if orphans:
        what = "record in overflow.json" if source == "overflow.json" else "entry in dump.json"
        problems.append((data_dir, f"{len(orphans):,} tensor file(s) of no {what} ({_some(orphans)}; "
                                   f"{len(names):,} read): read in part; the records of these tensors {LOST}"))


def _belongs(stem: str, known: set) -> bool:
    """``stem`` (a tensor file's name without ``.npy``) is an entry of
    ``known`` followed by ``.`` and the tensor's place
    (``Functional.exp.0.forward`` + ``.output.0``), or the entry itself."""
    if stem in known:
        return True
    dot = stem.find(".")
    while dot != -1:
        if stem[:dot] in known:
            return True
        dot = stem.find(".", dot + 1)
    return False


def _some(files: list[str]) -> str:
    """The first :data:`LOST_SHOWN` names of ``files``, and how many more."""
    more = len(files) - LOST_SHOWN
    return ", ".join(files[:LOST_SHOWN]) + (f" and {more:,} more" if more > 0 else "")


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
