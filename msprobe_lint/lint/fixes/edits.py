"""Fixes: turning a rule's :class:`~msprobe_lint.lint.diagnostic.FixSpec` into
text edits, and applying them.

A rule states its fix in terms of the parsed config (rename the key at a
JSON pointer, replace a value, remove a member); :func:`resolve` turns that
into character ranges of the file's text, using the positions the parser
recorded, so a fix touches exactly the tokens it names and the rest of the
file (key order, indentation, spacing, ``\\r\\n`` line endings, a final
newline or its absence) stays byte for byte. Removing an object member or
an array item also removes the comma that separated it and the white space
up to the next token, so the result is still valid JSON.

:func:`apply_fixes` is pure (text in, text out); :func:`fix_text` re-lints
and fixes again, up to :data:`MAX_ROUNDS` times, since fixes can overlap
(two removals in one list) or unlock others (a renamed key whose value is
then checked).
"""
from __future__ import annotations

import json

from ..diagnostic import Diagnostic, Edit, Fix, FixSpec, json_text
from ..positions import escape, split

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Callable, Iterable, Optional, Sequence

MAX_ROUNDS = 20  # bounded, as ruff bounds its fix loop; a config settles in two or three rounds
_WHITESPACE = " \t\r\n"


class _Unresolvable(Exception):
    pass


def resolve(spec: FixSpec, doc) -> Optional[Fix]:
    """The edits of ``spec`` in ``doc`` (a parsed loader.Document).

    Returns:
        A Fix whose offsets count characters of the file's decoded text
        (a byte-order mark counted as one), or None when a position is
        not known (a value the scan did not record, a config that did not
        parse, but for ``text`` operations: PL008's replacements; a
        byte-order mark stays until the file parses) or two of its own edits
        overlap. A removal of a non-empty object (a section holding user
        keys) is made unsafe whatever the spec says.
    """
    if doc is None or not doc.text:
        return None
    # A file that did not parse (PL001, PL003, PL007) is left alone but for
    # PL008's replacements, which make it parse (README, Fixing): not even
    # its byte-order mark is removed (PL004 comes back once it parses).
    if doc.fatal and any(op[0] != "text" for op in spec.ops):
        return None
    text = doc.text
    line_col = _line_col_of(doc)
    shift = 1 if doc.bom else 0
    edits: list[Edit] = []
    writes: list[str] = []
    removes: list[str] = []
    safe = spec.safe
    try:
        for op in spec.ops:
            kind = op[0]
            if kind == "bom":
                if doc.bom:  # before column 1 of line 1 (columns do not count it): a point there
                    edits.append(Edit(0, 1, "", 1, 1, 1, 1, None))
                continue
            if kind == "text":
                start, end, new = op[1], op[2], op[3]
                if not 0 <= start <= end <= len(text):
                    raise _Unresolvable(kind)
                line, column = line_col(start)
                end_line, end_column = line_col(end)
                edits.append(Edit(start + shift, end + shift, new, line, column, end_line, end_column, None))
                continue
            # A value replaced (or wrapped in a list) stays the user's key:
            # not in ``writes``, so a later fix may still remove that key
            # (``"async_dump": "true"`` written true, then removed by PL207
            # as having no effect). What a rename or a move creates is kept.
            if kind == "value":
                start, end = _offsets(doc, op[1], "value")
                new = op[2]
            elif kind == "wrap":
                start, end = _offsets(doc, op[1], "value")
                new = "[" + text[start:end] + "]"
            elif kind == "key":
                start, end = _offsets(doc, op[1], "key")
                new = json_text(op[2])
                writes.append(op[1].rpartition("/")[0] + "/" + escape(op[2]))
            elif kind == "remove":
                start, end = _member(doc, op[1])
                start, end = _with_separator(text, start, end)
                new = ""
                removes.append(op[1])
                if _holds_something(doc.data, op[1]):
                    safe = False
            elif kind == "remove-member-at":
                start, end = _member_at(text, op[1])
                start, end = _with_separator(text, start, end)
                new = ""
            elif kind == "move":
                renamed = op[3] if len(op) > 3 else None
                for start, end, new in _move(doc, op[1], op[2], renamed):
                    line, column = line_col(start)
                    end_line, end_column = line_col(end)
                    edits.append(Edit(start + shift, end + shift, new, line, column, end_line, end_column, op[1]))
                writes.append(("/" + escape(op[2]) if op[2] else "") + "/" + escape(renamed or split(op[1])[-1]))
                continue
            else:
                raise _Unresolvable(kind)
            line, column = line_col(start)
            end_line, end_column = line_col(end)
            edits.append(Edit(start + shift, end + shift, new, line, column, end_line, end_column,
                              op[1] if isinstance(op[1], str) else None))
    except (_Unresolvable, ValueError, IndexError, RecursionError):
        return None
    edits.sort(key=lambda e: (e.start, e.end))
    if _overlap(edits):
        return None
    return Fix(spec.description, tuple(edits), safe, tuple(writes), tuple(removes))


def _line_col_of(doc):
    """offset -> (line, column) in ``doc.text``: by the position map's
    newline index when the text parsed (its map is built anyway), else by
    counting (a text that did not parse: PL008's few edits). Columns are
    those of the diagnostics: a byte-order mark is not counted."""
    if doc.data is not None and not doc.fatal:
        return doc.positions.line_col
    from ..positions import line_col

    return lambda offset: line_col(doc.text, offset)


def _holds_something(data, ptr: str) -> bool:
    """True when the value at ``ptr`` is a non-empty object."""
    node = data
    for token in split(ptr):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return isinstance(node, dict) and bool(node)


def covers(removed: str, written: str) -> bool:
    """True when removing the member at JSON pointer ``removed`` would take
    ``written`` (itself or something inside it) with it."""
    return written == removed or written.startswith(removed + "/")


def _offsets(doc, ptr: str, at: str) -> tuple[int, int]:
    found = doc.positions.offsets(ptr, at)
    if found is None:
        raise _Unresolvable(ptr)
    return found


def removal(doc, ptr: str) -> Optional[tuple[int, int]]:
    """The character range of ``doc.text`` that removing the member (or
    item) at ``ptr`` takes, with its separator (see :func:`_with_separator`),
    or None when its position is not known."""
    try:
        return _with_separator(doc.text, *_member(doc, ptr))
    except (_Unresolvable, ValueError, IndexError):
        return None


def _member(doc, ptr: str) -> tuple[int, int]:
    """Offsets from the key (object member) or the value (array item) at
    ``ptr`` to the end of its value."""
    if not split(ptr):
        raise _Unresolvable("the root cannot be removed")
    start, end = _offsets(doc, ptr, "value")
    key = doc.positions.offsets(ptr, "key")  # recorded for object members only
    if key is not None:
        start = key[0]
    return start, end


def _move(doc, ptr: str, location: str, renamed: Optional[str] = None) -> list[tuple[int, int, str]]:
    """Edits moving the member at ``ptr`` into the object ``location``
    (``""`` for the top level, else a top-level section name), under the
    key ``renamed`` when given: removed where it is, added after the last
    member there with the white space that precedes that member; when the
    section does not exist yet, the member becomes it in place (``"k": 1``
    -> ``"section": {"k": 1}``). Unresolvable when the key is already
    there or the place is not an object."""
    text = doc.text
    key = renamed or split(ptr)[-1]
    start, end = _member(doc, ptr)
    member = text[start:end]
    if renamed is not None:
        key_end = _offsets(doc, ptr, "key")[1]
        member = json_text(renamed) + text[key_end:end]
    if location and location not in doc.data:
        return [(start, end, json_text(location) + ": {" + member + "}")]
    node = doc.data.get(location) if location else doc.data
    if not isinstance(node, dict) or key in node:
        raise _Unresolvable(ptr)
    target = "/" + escape(location) if location else ""
    opening, closing = _offsets(doc, target, "value")
    last = closing - 1  # the closing brace
    while last > opening + 1 and text[last - 1] in _WHITESPACE:
        last -= 1
    removal = _with_separator(text, start, end) + ("",)
    if last == opening + 1:  # an empty object
        return [removal, (last, last, member)]
    key_start = _offsets(doc, target + "/" + escape(list(node)[-1]), "key")[0]
    before = key_start
    while text[before - 1] in _WHITESPACE:
        before -= 1
    return [removal, (last, last, "," + (text[before:key_start] or " ") + member)]


def _member_at(text: str, offset: int) -> tuple[int, int]:
    """Offsets of the object member whose key starts at ``offset``."""
    decoder = json.JSONDecoder()
    if text[offset] != '"':
        raise _Unresolvable(offset)
    _, index = decoder.raw_decode(text, offset)
    index = _skip(text, index)
    if text[index] != ":":
        raise _Unresolvable(offset)
    _, end = decoder.raw_decode(text, _skip(text, index + 1))
    return offset, end


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _with_separator(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen the range of a member or item to be removed so that what is
    left is valid JSON laid out as before: with the following comma and
    the white space up to the next member (or, when it shares a line with
    the member before it, the white space before it instead); for the last
    member, with the comma before it; for the only member, with the white
    space before it (``{\\n  "a": 1\\n}`` -> ``{\\n}``)."""
    after = _skip(text, end)
    before = start
    while before > 0 and text[before - 1] in _WHITESPACE:
        before -= 1
    if after < len(text) and text[after] == ",":
        if before > 0 and text[before - 1] == "," and not any(c in text[before:start] for c in "\r\n"):
            # on one line with the member before it: take the space before, keep the line break after
            return before, after + 1
        return start, _skip(text, after + 1)
    if before > 0 and text[before - 1] == ",":
        return before - 1, end
    return before, end


def _overlap(edits: Sequence[Edit]) -> bool:
    """True when two of ``edits`` (sorted by start) touch the same text."""
    return any(_clash(a.start, a.end, b.start, b.end) for a, b in zip(edits, edits[1:]))


def _clash(a: int, b: int, c: int, d: int) -> bool:
    return (a < d and c < b) or (a == c and (a == b or c == d))


def _touch(a: int, b: int, removes_ab: bool, c: int, d: int, removes_cd: bool) -> bool:
    """True when edits ``[a, b)`` and ``[c, d)`` of two different fixes
    cannot be applied together: they overlap, or one inserts at an end of
    text the other removes (``removes_*``: the edit deletes its range).
    Each fix's edits are made for the text around them as it is (an
    insertion after the last member of a section brings its own comma),
    so an insertion where another fix removes that member must wait for
    the next round, against the text that removal leaves; an insertion
    beside a replaced value (a moved key's value fixed) needs no wait."""
    return _clash(a, b, c, d) or (a == b and removes_cd and c <= a <= d) or \
        (c == d and removes_ab and a <= c <= b)


def apply_fixes(text: str, diagnostics: Iterable[Diagnostic], unsafe: bool = False,
                protected: Iterable[str] = ()) -> tuple[str, list[Diagnostic]]:
    """Apply the fixes of ``diagnostics`` to ``text`` (the file's decoded
    text, byte-order mark included, that the diagnostics were made from).

    Safe fixes only, unless ``unsafe``. Fixes are taken in the order of
    their first edit; one whose edits overlap (or insert at an end of) the
    edits of a fix already taken is left for a later round (see
    :func:`fix_text`). A fix that would remove one
    of the ``protected`` pointers (what earlier fixes wrote) or anything
    holding one is never taken.

    Returns:
        (new text, the diagnostics whose fix was applied).
    """
    chosen: list[Diagnostic] = []
    taken: list[tuple[int, int, bool]] = []  # (start, end, the edit deletes its range)
    protected = tuple(protected)
    candidates = [d for d in diagnostics if d.fix is not None and d.fix.edits and (unsafe or d.fix.safe)
                  and not any(covers(r, w) for r in d.fix.removes for w in protected)]
    candidates.sort(key=lambda d: (min(e.start for e in d.fix.edits), d.sort_key()))  # type: ignore[union-attr]
    for diagnostic in candidates:
        edits = diagnostic.fix.edits  # type: ignore[union-attr]
        if any(e.end > len(text) for e in edits):
            continue
        if any(_touch(e.start, e.end, e.start < e.end and not e.text, s, t, gone) for e in edits
               for s, t, gone in taken):
            continue
        taken.extend((e.start, e.end, e.start < e.end and not e.text) for e in edits)
        chosen.append(diagnostic)
    every = sorted((e for d in chosen for e in d.fix.edits), key=lambda e: e.start,  # type: ignore[union-attr]
                   reverse=True)
    for edit in every:
        text = text[:edit.start] + edit.text + text[edit.end:]
    return text, chosen


def fix_text(text: str, lint: Callable[[str], list[Diagnostic]], *, unsafe: bool = False,
             rounds: int = MAX_ROUNDS) -> tuple[str, list[Diagnostic], list[Diagnostic]]:
    """Fix ``text`` until no fix applies, at most ``rounds`` times.

    Args:
        text: the file's decoded text.
        lint: text -> its diagnostics (with fixes).
        unsafe: apply unsafe fixes too.
    Returns:
        (fixed text, every diagnostic whose fix was applied, the
        diagnostics of the fixed text). What a fix writes is never removed
        by a later one (a key moved into a section, then that section
        removed as inactive). A round whose result would not parse while
        its input did, or would hold more duplicate keys, is never taken
        whole: its fixes are taken one by one, each kept when the text
        stays sound, and a fix that spoils the text even alone (a bug in
        a fix) is left out of every later round, its finding keeping its
        fix (the caller says it could not be applied). So conflicting
        fixes never cancel each other or the rest of the round, and the
        text returned always parses when the one given did; a text that
        did not parse may only be repaired (PL008's replacements).
    """
    diagnostics = lint(text)
    applied: list[Diagnostic] = []
    written: list[str] = []
    failed: set[tuple] = set()
    for _ in range(rounds):
        usable = [d for d in diagnostics if _identity(d) not in failed]
        new, chosen = apply_fixes(text, usable, unsafe, protected=written)
        if not chosen:
            break
        after = lint(new) if new != text else diagnostics
        if new == text or _spoilt(after, diagnostics):
            new, chosen, after, spoiling = _one_by_one(text, chosen, lint, diagnostics, written)
            failed.update(_identity(d) for d in spoiling)
            if not chosen:
                continue  # some fix was left out for good: the next round tries the rest
        text, diagnostics = new, after
        applied.extend(chosen)
        written.extend(w for d in chosen for w in d.fix.writes)  # type: ignore[union-attr]
    return text, applied, [_blocked(d, written) for d in diagnostics]


def _identity(diagnostic: Diagnostic) -> tuple:
    """What names one finding's fix from one round to the next (its edits'
    offsets move as other fixes change the text)."""
    fix = diagnostic.fix
    return diagnostic.code, diagnostic.pointer, fix.description if fix is not None else None


def _spoilt(after: Sequence[Diagnostic], before: Sequence[Diagnostic]) -> bool:
    """True when a text with the diagnostics ``after`` is worse than the
    one with ``before``: it no longer parses, or holds more duplicate keys."""
    return (_broken(after) and not _broken(before)) or _duplicates(after) > _duplicates(before)


def _blocked(diagnostic: Diagnostic, written: Sequence[str]) -> Diagnostic:
    """``diagnostic`` without its fix when that fix would remove what an
    earlier fix of the run wrote (it is never applied, so the report must
    not count it as fixable)."""
    fix = diagnostic.fix
    if fix is not None and any(covers(r, w) for r in fix.removes for w in written):
        return diagnostic._replace(fix=None)
    return diagnostic


def _broken(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when the diagnostics say the text does not parse as an object."""
    return any(d.code in ("PL001", "PL003", "PL008") for d in diagnostics)


def _duplicates(diagnostics: Iterable[Diagnostic]) -> int:
    """How many duplicate keys (PL002) the diagnostics report."""
    return sum(d.code == "PL002" for d in diagnostics)


def _one_by_one(text: str, chosen: list[Diagnostic], lint: Callable[[str], list[Diagnostic]],
                before: Sequence[Diagnostic], protected: Sequence[str] = ()
                ) -> tuple[str, list[Diagnostic], list[Diagnostic], list[Diagnostic]]:
    """The fixes of one round taken one by one, each kept only when the
    text it leaves, with those kept before it, still parses (if ``text``
    did), holds no more duplicate keys than ``text`` and differs from it.
    One fix never makes a duplicate (a rename or move into a key that is
    there already has no fix), but two can: two keys renamed to the same
    name, or two members moved into a section that neither finds there
    and each creates. A fix left out only for what another kept did is
    tried again in the next round, against the text this one leaves.

    Returns:
        (new text, the fixes kept, the new text's diagnostics, the fixes
        that spoil ``text`` even alone).
    """
    kept: list[Diagnostic] = []
    spoiling: list[Diagnostic] = []
    new, after = text, list(before)
    for diagnostic in chosen:
        trial, _ = apply_fixes(text, kept + [diagnostic], unsafe=True, protected=protected)
        trial_after = lint(trial) if trial != new else after
        if trial != new and not _spoilt(trial_after, before):
            kept.append(diagnostic)
            new, after = trial, trial_after
        elif not kept:
            spoiling.append(diagnostic)  # alone against ``text``: it can never apply there
        else:
            alone, _ = apply_fixes(text, [diagnostic], unsafe=True, protected=protected)
            if alone == text or _spoilt(lint(alone), before):
                spoiling.append(diagnostic)
    return new, kept, after, spoiling


def unified_diff(before: str, after: str, fromfile: str, tofile: str) -> str:
    """A unified diff of two texts that ``patch`` and ``git apply`` accept:
    a last line without a newline is marked ``\\ No newline at end of
    file``; ``\\r\\n`` endings are kept in the lines. "" when equal."""
    import difflib

    out = []
    for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                     fromfile=fromfile, tofile=tofile):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def counts(diagnostics: Iterable[Diagnostic]) -> tuple[int, int]:
    """(findings with a safe fix, findings with an unsafe fix)."""
    safe = unsafe = 0
    for diagnostic in diagnostics:
        if diagnostic.fix is not None:
            if diagnostic.fix.safe:
                safe += 1
            else:
                unsafe += 1
    return safe, unsafe
