"""Reading and parsing a config file: the syntax stage (PL001-PL007).

``json.loads`` does the parsing (fast, and exactly what msprobe itself
uses); its hooks notice duplicate keys (``object_pairs_hook``) and the
NaN/Infinity literals Python accepts but JSON does not (``parse_constant``).
Positions are only computed (see positions.py) when one of those needs
reporting.
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections import namedtuple

from ..project.files import MAX_BYTES, read_bytes
from .diagnostic import Finding, FixSpec
from .positions import PositionMap, line_col, pointer, split

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Iterator, Optional

BOM = b"\xef\xbb\xbf"
# Punctuation that Chinese (and other CJK) input methods type where JSON
# needs ASCII, common in configs copied from Chinese docs: character ->
# (its name, the ASCII character JSON needs there). Single curly quotes
# become double quotes: JSON has no single-quoted strings.
FULLWIDTH = {
    "\uff0c": ("fullwidth comma", ","),
    "\u3001": ("ideographic comma", ","),
    "\uff1a": ("fullwidth colon", ":"),
    "\u201c": ("left double quotation mark", '"'),
    "\u201d": ("right double quotation mark", '"'),
    "\u2018": ("left single quotation mark", '"'),
    "\u2019": ("right single quotation mark", '"'),
    "\uff02": ("fullwidth quotation mark", '"'),
    "\uff5b": ("fullwidth left curly bracket", "{"),
    "\uff5d": ("fullwidth right curly bracket", "}"),
    "\uff3b": ("fullwidth left square bracket", "["),
    "\uff3d": ("fullwidth right square bracket", "]"),
    "\u3000": ("ideographic space", " "),
}


class NonFinite(float):
    """A NaN/Infinity/-Infinity literal as parsed; a float subclass so
    comparisons do not crash, told apart from real numbers by type."""

    literal: str

    def __new__(cls, literal: str) -> "NonFinite":
        obj = super().__new__(cls, {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[literal])
        obj.literal = literal
        return obj


class Document:
    """A parsed config.

    Attributes:
        path: as given by the user.
        text: the decoded text (without a byte-order mark).
        data: the parsed value (dict for a usable config; for a duplicate
            key, the last value, as ``json.load`` keeps).
        findings: syntax findings (PL002, PL004, PL005) already made.
        fatal: True when nothing else may run on the file.
        unreadable: True for PL006 (the run exits 2).
        nonfinite: pointers of NaN/Infinity values.
        bom: True when the file started with a UTF-8 byte-order mark (not
            part of ``text``).
    """

    __slots__ = ("path", "text", "data", "findings", "fatal", "unreadable", "nonfinite", "bom", "_positions")

    def __init__(self, path: str, text: str = "", data: Any = None) -> None:
        self.path = path
        self.text = text
        self.data = data
        self.findings: list[Finding] = []
        self.fatal = False
        self.unreadable = False
        self.nonfinite: list[str] = []
        self.bom = False
        self._positions: Optional[PositionMap] = None

    @property
    def positions(self) -> PositionMap:
        """The position map, computed on first use."""
        if self._positions is None:
            self._positions = PositionMap(self.text)
        return self._positions


class StdinSource(namedtuple("StdinSource", "name raw reason", defaults=(None,))):
    """A config read from standard input (``probe lint -``).

    Attributes:
        name: the name shown in messages and used for ``[tool.probe-lint]``
            lookup and per-file ignores (``--stdin-filename``; ``-`` when
            not given).
        raw: the bytes read, or None when standard input could not be read.
        reason: why it could not be read (for PL006), else None.
    """

    __slots__ = ()


def read_stdin(name: Optional[str] = None, stream: Any = None) -> StdinSource:
    """Read a whole config from standard input (or ``stream``, a binary
    file object), at most MAX_BYTES.

    The one place ``probe lint -`` reads its input: the lint takes
    ``raw`` as it takes a file's bytes (so a BOM or non-UTF-8 input is
    PL004, empty input PL001). Never raises for bad input.
    """
    name = name or "-"
    if stream is None:
        stream = getattr(sys.stdin, "buffer", sys.stdin)
    if stream is None:
        return StdinSource(name, None, "cannot be read: standard input is closed")
    try:
        raw = stream.read(MAX_BYTES + 1)
    except (OSError, ValueError) as err:
        return StdinSource(name, None, f"cannot be read from standard input ({getattr(err, 'strerror', None) or err})")
    if isinstance(raw, str):  # a text stream without .buffer
        raw = raw.encode("utf-8", "surrogateescape")
    if len(raw) > MAX_BYTES:
        return StdinSource(name, None, "on standard input is over the 10 MiB limit for a config")
    return StdinSource(name, raw)


#: the extended attribute that holds a file's POSIX ACL (its access entries)
ACCESS_ACL = "system.posix_acl_access"


def copy_xattrs(source: str, target: str) -> None:
    """Give ``target`` every extended attribute of ``source`` (which
    carries its POSIX ACL, ``system.posix_acl_access``, its SELinux label,
    ``user.*`` notes...), and drop an access ACL ``target`` inherited from
    its folder's default ACL that ``source`` does not have. Nothing to do
    where the platform (no ``os.listxattr``: macOS, Windows) or the file
    system has no extended attributes.

    Raises:
        OSError: one cannot be read or kept; the message (words that
            follow the path) names it.
    """
    import errno

    listxattr = getattr(os, "listxattr", None)
    if listxattr is None:
        return
    unsupported = {errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)}
    try:
        names = listxattr(source)
    except OSError as err:
        if err.errno in unsupported:
            return  # the file system has none
        raise OSError(f"its extended attributes could not be read ({err.strerror or err})") from None
    for name in names:
        what = "access control list (ACL)" if name == ACCESS_ACL else f"extended attribute {name!r}"
        try:
            value = os.getxattr(source, name)
            try:
                if os.getxattr(target, name) == value:
                    continue  # given already (a SELinux label the folder gives): setting it may need privileges
            except OSError:
                pass
            os.setxattr(target, name, value)
        except OSError as err:
            raise OSError(f"its {what} could not be kept ({err.strerror or err})") from None
    if ACCESS_ACL not in names:
        try:
            os.removexattr(target, ACCESS_ACL)  # inherited from the folder's default ACL: not the file's
        except OSError as err:
            if err.errno not in unsupported and err.errno != getattr(errno, "ENODATA", errno.ENOENT):
                raise OSError(f"an access control list (ACL) it does not have could not be left out "
                              f"({err.strerror or err})") from None


def write_atomic(path: str, text: str) -> None:
    """Replace the file ``path`` with ``text`` (UTF-8, line endings as
    given) atomically: a temporary file in the same folder, given the
    file's mode, owner, group and extended attributes (its POSIX ACL among
    them), then renamed over it; a failure leaves the file as it was.

    Refused, because the rename would not do what editing the file does:
    a soft link (the link itself would be replaced; the file it points to
    may be shared), a file with other hard links (they would keep the old
    text), a read-only file (no write permission bit, or none for this
    user: a plain write would fail too), and a file whose owner, group or
    any extended attribute cannot be kept (:func:`copy_xattrs`).

    Raises:
        OSError: one of the refusals above (its message says which, in
            words that follow the path), or the folder is not writable.
    """
    import stat
    import tempfile

    if os.path.islink(path):
        raise OSError("it is a soft link (edit the file it points to)")
    info = os.stat(path)
    if info.st_nlink > 1:
        raise OSError(f"it has {info.st_nlink - 1} other hard link(s), which would keep the old text")
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise OSError("it is read-only")
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".probe-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        made = os.stat(temporary)
        if (made.st_uid, made.st_gid) != (info.st_uid, info.st_gid):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except PermissionError:
                raise OSError("its owner or group could not be kept") from None
        copy_xattrs(path, temporary)  # after chown, which drops security.capability
        os.chmod(temporary, info.st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class _Duplicate(Exception):
    pass


def load(path: str, raw: Optional[bytes] = None) -> Document:
    """Read and parse ``path`` (or ``raw`` bytes given for it).

    Never raises for bad input: every problem becomes a Finding in the
    returned Document.
    """
    doc = Document(path=path)
    if raw is None:
        raw, reason = read_bytes(path)
        if raw is None:
            doc.findings.append(Finding("PL006", f"config {reason}", hint=None))
            doc.fatal = doc.unreadable = True
            return doc
    wide = wide_encoding(raw)
    if wide:
        doc.findings.append(Finding(
            "PL004", f"the file is {wide}, not UTF-8 as an msprobe config must be",
            hint=f"save it as UTF-8 (Notepad: Save As, Encoding: UTF-8; or iconv -f {wide.split()[0]} -t UTF-8)",
            line=1, column=1, end_line=1, end_column=1))
        doc.fatal = True
        return doc
    if raw.startswith(BOM):
        doc.findings.append(Finding(
            "PL004", "file starts with a UTF-8 byte-order mark; Python's json.load, and so msprobe, rejects it",
            # The mark itself: columns do not count it, so it is the empty range before column 1
            # (as the fix's edit gives it; the editor server maps that range onto the mark).
            hint="save the file as UTF-8 without BOM", line=1, column=1, end_line=1, end_column=1,
            fix=FixSpec("remove the byte-order mark", (("bom",),))))
        raw = raw[len(BOM):]
        doc.bom = True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[: err.start].decode("utf-8", errors="replace")
        line, column = line_col(bad, len(bad))
        doc.findings.append(Finding(
            "PL004", f"not valid UTF-8: byte 0x{raw[err.start]:02x} at offset {err.start}",
            hint="save the file as UTF-8", line=line, column=column, end_line=line, end_column=column + 1))
        doc.fatal = True
        return doc
    doc.text = text
    flags = {"duplicates": False}
    found_nonfinite: list[NonFinite] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
        result = dict(pairs)
        if len(result) != len(pairs):
            flags["duplicates"] = True
        return result

    def constant_hook(literal: str) -> NonFinite:
        value = NonFinite(literal)
        found_nonfinite.append(value)
        return value

    try:
        data = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=constant_hook)
    except json.JSONDecodeError as err:
        doc.findings.append(_fullwidth(text, err) or _invalid(text, err))
        doc.fatal = True
        return doc
    except RecursionError:
        doc.findings.append(_too_deep(text))
        doc.fatal = True
        return doc
    except ValueError as err:  # an integer over Python's int-string limit (4300 digits): json.load raises too
        line, column = _long_integer_position(text)
        doc.findings.append(Finding(
            "PL001", f"not valid JSON for Python: {str(err).split(';')[0]}; json.load, and so msprobe, fails on it",
            hint="write a smaller number: no msprobe option takes one this large", line=line, column=column))
        doc.fatal = True
        return doc
    doc.data = data
    if flags["duplicates"]:
        positions = doc.positions
        for (raw_ptr, span), earlier, first in zip(positions.duplicates, positions.previous, positions.first):
            key = split(raw_ptr)[-1]
            first_line, first_column = positions.line_col(first)  # the map's newline index: no count per key
            doc.findings.append(Finding(
                "PL002", f"duplicate key {key!r} (first at line {first_line} col {first_column}): json.load keeps "
                         "only the last value",
                hint="remove all but one occurrence of the key", line=span.line, column=span.column,
                end_line=span.end_line, end_column=span.end_column, pointer=raw_ptr,
                fix=FixSpec(f"remove the earlier {key!r}, whose value json.load drops",
                            (("remove-member-at", earlier),), safe=False)))
    if found_nonfinite:
        for ptr, value in _walk_nonfinite(data):
            doc.nonfinite.append(ptr)
            doc.findings.append(Finding(
                "PL005", f"{value.literal} is not JSON; Python's json accepts it but other tools do not, "
                         "and no msprobe option takes it", pointer=ptr,
                hint="write a value the key accepts (or remove the key to use the default)"))
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        doc.findings.append(Finding("PL003", f"the top-level value is {kind}; a config must be a JSON object",
                                    hint='wrap the settings in { ... }, e.g. {"task": "overflow_check", ...}',
                                    pointer=""))
        doc.fatal = True
        return doc
    if "common_dump_settings" in data and "task" not in data:
        doc.findings.append(Finding(
            "PL007", "this is MindSpore's own dump config (common_dump_settings), not an msprobe config",
            hint="use it with MINDSPORE_DUMP_CONFIG; msprobe's PrecisionDebugger needs a config with "
                 "\"task\", \"dump_path\" and \"level\"", pointer="/common_dump_settings", at="key"))
        doc.fatal = True
    return doc


# Byte-order marks of the wide encodings (UTF-32's before UTF-16's: FF FE starts both).
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with a byte-order mark)"),
              (b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with a byte-order mark)"),
              (b"\xff\xfe", "UTF-16 (little-endian, with a byte-order mark)"),
              (b"\xfe\xff", "UTF-16 (big-endian, with a byte-order mark)"))


def wide_encoding(raw: bytes) -> Optional[str]:
    """The name of the UTF-16 or UTF-32 encoding ``raw`` is in (Windows
    Notepad's "Unicode" is UTF-16 little-endian), or None: by its
    byte-order mark, else by where the NUL bytes of its first four bytes
    are (a JSON text starts with ASCII, so RFC 4627 section 3's pattern
    tells the encoding: ``xx 00 xx 00`` is UTF-16LE, ``00 00 00 xx`` is
    UTF-32BE...)."""
    for mark, name in _WIDE_BOMS:
        if raw.startswith(mark):
            return name
    head = raw[:4]
    if len(head) < 2 or b"\x00" not in head:
        return None
    nul = tuple(b == 0 for b in head)
    patterns = {(False, True, True, True): "UTF-32 (little-endian)", (True, True, True, False): "UTF-32 (big-endian)",
                (False, True, False, True): "UTF-16 (little-endian)", (True, False, True, False): "UTF-16 (big-endian)",
                (False, True): "UTF-16 (little-endian)", (True, False): "UTF-16 (big-endian)"}
    return patterns.get(nul if len(head) == 4 else nul[:2])


def _too_deep(text: str) -> Finding:
    """PL001 for a text nested deeper than Python's json can read in this
    process (its recursion limit less the frames already in use): how deep
    it is, where it is deepest, and that this is a limit of the reader,
    not a syntax error (json.load in a fresh interpreter may read it),
    unless the bracket scan finds them unbalanced (left open, a closer of
    the other kind or with nothing open): that text is not valid JSON
    either, and the message says so, where the scan found it."""
    import sys

    from .positions import bracket_error, nesting

    frames, frame = 0, sys._getframe()
    while frame is not None:
        frames, frame = frames + 1, frame.f_back  # type: ignore[assignment]
    limit = max(sys.getrecursionlimit() - frames, 1)
    depth, offset = nesting(text)  # at the deepest bracket: the same place whatever the stack
    broken = bracket_error(text)
    if broken is not None:
        line, column = line_col(text, broken[1])
        return Finding("PL001", f"not valid JSON: {broken[0]}; it is also nested {depth} levels deep, deeper "
                                "than probe lint reads "
                                f"(about {limit} levels: Python's recursion limit, {sys.getrecursionlimit()}, "
                                "less what the linter uses)", line=line, column=column,
                       hint="close every [ and {, and check what generated this file: msprobe configs nest a "
                            "few levels")
    line, column = line_col(text, offset)
    return Finding("PL001", f"nested {depth} levels deep, deeper than probe lint reads (about {limit} levels: "
                            f"Python's recursion limit, {sys.getrecursionlimit()}, less what the linter uses); "
                            "this is not a syntax error", line=line, column=column,
                   hint="msprobe configs nest a few levels: check what generated this file")


def nested_too_deep(data: Any) -> Finding:
    """PL001 for parsed ``data`` that json.loads read but that is nested
    too deep for the checks after it (jsonschema, the rules: they recurse
    into values and, near Python's recursion limit, raise RecursionError):
    how deep it is, at its deepest value (by pointer), found without
    recursion; not a syntax error."""
    deepest, where = 0, ()
    stack: list[tuple[Any, tuple, int]] = [(data, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, (dict, list)):
            depth += 1
            if depth > deepest:
                deepest, where = depth, path
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((value, path + (key,), depth) for key, value in children)
    return Finding("PL001", f"nested {deepest} levels deep, deeper than probe lint checks (Python's recursion limit, "
                            f"{sys.getrecursionlimit()}, less what the linter uses); this is not a syntax error",
                   pointer=pointer(*where), hint="msprobe configs nest a few levels: check what generated this file")


def _walk_nonfinite(value: Any, path: tuple = ()) -> list[tuple[str, NonFinite]]:
    found: list[tuple[str, NonFinite]] = []
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, NonFinite):
            found.append((pointer(*where), item))
        elif isinstance(item, dict):
            stack.extend((v, where + (k,)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, where + (i,)) for i, v in enumerate(item))
    return sorted(found)


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def _long_integer_position(text: str) -> tuple[int, int]:
    """Line and column of the first integer literal longer than Python's
    int-string limit (1:1 when it cannot be found). String literals are
    blanked first so digits inside them do not count."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    masked = _STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    match = re.search(r"(?<![\w.+-])-?[0-9]{%d,}(?![\w.])" % (limit + 1), masked) if limit else None
    return line_col(text, match.start()) if match else (1, 1)


def _invalid(text: str, err: json.JSONDecodeError) -> Finding:
    """PL001 where the decoder stopped."""
    message = err.msg
    if message == "Invalid control character at" and text[err.pos: err.pos + 1] in ("\n", "\r"):
        message = ("a string runs on past the end of its line: its closing '\"' is missing, or a line break "
                   "inside it must be written \\n")
    elif message == "Unterminated string starting at":  # the file ends inside it
        message = "a string starts here and the file ends before its closing '\"'"
    elif message.endswith(" at"):  # "Invalid control character at": the position is ours to give
        message = message[:-3] + " in a string (write it escaped, e.g. \\n or \\t)"
    if not text.strip():
        message = "empty input; a config is a JSON object"
    hint = _syntax_hint(text, err)
    opened = _open_at_end(text) if not text[err.pos:].strip(_JSON_SPACE) and text.strip(_JSON_SPACE) else None
    if opened:  # the text ends with objects or lists still open: a file cut short, a final '}' forgotten
        closers = "".join(_CLOSER[char] for char, _ in reversed(opened))
        try:
            json.loads(text.rstrip(_JSON_SPACE) + closers)
            enough = True
        except (ValueError, RecursionError):  # a trailing ',' or ':' before the end: closing it is not enough
            enough = False
        message = f"unexpected end of file: {_not_closed(text, opened, enough)}"
        hint = f"add {closers!r} at the end of the file" if enough else hint
    return Finding("PL001", f"not valid JSON: {message}", line=err.lineno, column=err.colno, hint=hint)


#: the whitespace JSON allows between tokens (Python's decoder: no other)
_JSON_SPACE = " \t\n\r"
_CLOSER = {"{": "}", "[": "]"}


def _open_at_end(text: str) -> list[tuple[str, int]]:
    """The objects and lists still open at the end of ``text`` as
    ``(opening character, offset)``, outermost first; [] when the text
    ends inside a string (that is another fault: a missing or fullwidth
    closing quote, a backslash before it) or closes everything. Called
    only when the decoder read up to the end, so the brackets before it
    are balanced as JSON requires."""
    stack: list[tuple[str, int]] = []
    for index, char in _outside_strings(text):
        if index == len(text):  # it ends inside a string
            return []
        if char in _CLOSER:
            stack.append((char, index))
        elif char in "}]" and stack:
            stack.pop()
    return stack


def _not_closed(text: str, opened: list[tuple[str, int]], enough: bool) -> str:
    """What is open at the end of ``text``, innermost first (three at most
    named). ``enough``: adding the closers makes the text valid JSON, so
    they are what is missing (``'}' missing (the object opened at 1:1 is
    not closed)``); otherwise more is missing (a value after a ',' or a
    ':') and only what is not closed is said."""
    def what(char: str, offset: int) -> str:
        line, column = line_col(text, offset)
        return f"the {'object' if char == '{' else 'list'} opened at {line}:{column}"

    inner = list(reversed(opened))
    more = f" and {len(inner) - 3} more" if len(inner) > 3 else ""
    if not enough:
        if len(inner) == 1:
            return f"{what(*inner[0])} is not closed"
        return f"{len(inner)} objects or lists are not closed, innermost first: " \
               f"{', '.join(what(*item) for item in inner[:3])}{more}"
    if len(inner) == 1:
        char, offset = inner[0]
        return f"{_CLOSER[char]!r} missing ({what(char, offset)} is not closed)"
    named = ", ".join(f"{_CLOSER[char]!r} for {what(char, offset)}" for char, offset in inner[:3])
    return f"{len(inner)} closing brackets missing, innermost first: {named}{more}"


def _fullwidth(text: str, err: json.JSONDecodeError) -> Optional[Finding]:
    """PL008 when the decoder stopped at fullwidth punctuation (at the same
    place PL001 would be), with the safe fix replacing every such
    character outside a string by the ASCII one; None otherwise."""
    found = FULLWIDTH.get(text[err.pos: err.pos + 1])
    if found is None:
        return None
    name, ascii_char = found
    char = text[err.pos]
    outside = fullwidth_outside_strings(text)
    ops = tuple(("text", i, i + 1, FULLWIDTH[text[i]][1]) for i in outside)
    kinds = sorted({text[i] for i in outside}, key=lambda c: list(FULLWIDTH).index(c))
    described = ", ".join(f"{c!r} -> {FULLWIDTH[c][1]!r}" for c in kinds)
    return Finding("PL008", f"not valid JSON: {name} {char!r} (U+{ord(char):04X}) where JSON needs {ascii_char!r}",
                   line=err.lineno, column=err.colno,
                   hint=f"type {ascii_char!r} with the input method in English mode"
                        + (f"; {len(outside)} such characters outside strings" if len(outside) > 1 else ""),
                   fix=FixSpec(f"replace the fullwidth punctuation outside strings: {described}", ops))


#: the FULLWIDTH quotation marks (JSON needs '"' for each)
_QUOTES = frozenset(c for c, (_, ascii_char) in FULLWIDTH.items() if ascii_char == '"')
#: what may follow a string's closing quote: JSON's structure, as typed in ASCII or by an input method,
#: or the quote opening the next string (a comma forgotten: another syntax error, not the string's text)
_AFTER_STRING = frozenset(",:}]") | frozenset(c for c, (_, a) in FULLWIDTH.items() if a in ",:}]") | _QUOTES | {'"'}
_SPACE = frozenset(_JSON_SPACE + "\u3000")  # JSON's white space and the ideographic space


def fullwidth_outside_strings(text: str) -> list[int]:
    """Offsets of the FULLWIDTH characters of ``text`` that stand outside
    JSON strings: a string's own characters stay, whatever quotes it.

    A string opened by '"' runs to the next unescaped '"', as JSON reads
    it. One opened by a curly or fullwidth quotation mark (``“/tmp/a，b”``,
    as a Chinese input method types it) is a string too once its quotes
    are fixed: it runs to the next unescaped '"', or to the next such
    quotation mark that is followed (after white space) by the end of the
    text, JSON's structure (``,`` ``:`` ``}`` ``]``, fullwidth or not) or
    another quote; a quotation mark followed by anything else (the
    apostrophe of ``“it’s”``) is the string's own text. The quotation
    marks that open and close a string are structure: they are listed."""
    found: list[int] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == '"' or char in _QUOTES:
            if char != '"':
                found.append(index)
            curly = char != '"'
            index += 1
            while index < size:
                char = text[index]
                if char == "\\":
                    index += 2
                    continue
                if char == '"':
                    break
                if curly and char in _QUOTES and _closes(text, index + 1):
                    found.append(index)
                    break
                index += 1
        elif char in FULLWIDTH:
            found.append(index)
        index += 1
    return found


def _closes(text: str, index: int) -> bool:
    """True when what follows a quotation mark ending at ``index`` (white
    space skipped) is the end of ``text`` or can follow a string."""
    while index < len(text) and text[index] in _SPACE:
        index += 1
    return index == len(text) or text[index] in _AFTER_STRING


def _outside_strings(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, character)`` of each character of ``text`` outside JSON
    (double-quoted, backslash-escaped) strings, their quotes left out;
    then ``(len(text), '"')`` when the text ends inside a string."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        else:
            yield index, char
    if in_string:
        yield len(text), '"'


def _syntax_hint(text: str, err: json.JSONDecodeError) -> Optional[str]:
    """A fix for the common mistakes: trailing commas, comments, single
    quotes, and fullwidth punctuation near the error (inside what the
    decoder took for a string, so it is not PL008's to replace)."""
    before = text[: err.pos].rstrip()
    here = text[err.pos: err.pos + 2]
    if err.msg == "Invalid \\escape":
        return "a backslash in a JSON string starts an escape (\\n, \\t, \\\"): write a backslash itself as \\\\, " \
               "or '/' in a Linux path"
    if before.endswith(",") and here[:1] in ("}", "]"):
        return "remove the trailing comma before this bracket"
    if here.startswith("//") or here.startswith("/*"):
        return "JSON has no comments; remove them"
    if here.startswith("'"):
        return "JSON strings use double quotes"
    start = text.rfind("\n", 0, err.pos) + 1
    end = text.find("\n", err.pos)
    near = [c for c in text[start: end if end >= 0 else len(text)] if c in FULLWIDTH]
    if near:
        name, ascii_char = FULLWIDTH[near[0]]
        return f"this line holds a {name} {near[0]!r} (U+{ord(near[0]):04X}): JSON needs {ascii_char!r} there"
    return None
