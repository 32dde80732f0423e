"""Is this JSON file an msprobe config? (``probe lint --only-msprobe``,
and every JSON file a folder walk finds.)

True for a JSON object with a top-level key msprobe reads (``task``,
``dump_path``, a task section of any release, or ``exec_range`` or
``save_child`` of msprobe's ATB dump config) or an msprobe ``level``; for a
file that does not parse as an object, when its text holds one of those
keys (a broken config is still reported, also one whose key is followed by
a fullwidth colon or written in curly or single quotes, as Chinese input
methods and Python's ``repr`` write them, and one saved as UTF-16 or
UTF-32, as Windows editors do: msprobe cannot read any of those, which
is what the linter is there to say). msprobe's own dump.json is not a config,
nor another program's config whose only such key is ``task`` holding a
value near no msprobe task (``"task": "translation"``: a trainer config a
pre-commit hook would otherwise fail on every commit) or an object or list.
The definition is in docs/integrations.md ("Which files are msprobe
configs"), the shortcuts that spare the parse in docs/lint-design.md.

Example::

    >>> looks_like_msprobe(b'{"task": "overflow_check", "dump_path": "/d"}')
    True
    >>> looks_like_msprobe(b'{"architectures": ["Bert"], "level": "INFO"}')
    False
    >>> looks_like_msprobe(b'{"task": "translation", "steps": 1000}'), looks_like_msprobe(b'{"task": "overflow"}')
    (False, True)
"""
from __future__ import annotations

import difflib
import json
import re

SECTIONS = ("statistics", "tensor", "overflow_check", "free_benchmark", "run_ut", "grad_probe", "structure",
            "exception_dump", "acc_check", "diff_check", "nan_check")
ATB = ("exec_range", "save_child")  # keys only msprobe's ATB dump config has (lint/atb.py)
KEYS = frozenset(("task", "dump_path") + SECTIONS + ATB)
LEVELS = frozenset({"l0", "l1", "l2", "mix", "debug"})
# \s is ASCII whitespace (JSON's own), so the text and bytes tests agree.
_KEY_NAMES = "|".join(("task", "dump_path") + SECTIONS + ATB)
_TEXT_PATTERN = r'"(?:%s)"\s*:|"level"\s*:\s*"(?i:L[012]|mix|debug)"' % _KEY_NAMES
_TEXT = re.compile(_TEXT_PATTERN, re.ASCII)
# An object written with single quotes (Python's repr of a dict), from its first key: tried only on a file
# that does not parse, so a JSON string holding such text ("cfg = {'task': 'ner'}") is not taken for one.
_QUOTED_TEXT = re.compile(r"\A(?:\ufeff)?\s*\{\s*'(?:%s|level)'\s*:" % _KEY_NAMES, re.ASCII)
# The same keys as Chinese input methods type them: curly quotes, a
# fullwidth colon (an object that does not parse, so only the text test).
_WIDE_TEXT = re.compile(r'["\u201c\u201d](?:%s)["\u201c\u201d]\s*[:\uff1a]' % _KEY_NAMES, re.ASCII)
_WIDE_MARKS = (b"\xef\xbc\x9a", b"\xe2\x80\x9c", b"\xe2\x80\x9d")  # \uff1a, \u201c, \u201d in UTF-8
# The same test on bytes, with the quote factored out and the names' first
# letters looked ahead for (a fifth faster over a project's JSON files).
_FIRST_LETTERS = "".join(sorted({name[0] for name in KEYS | {"level"}}))
_MAYBE = re.compile((r'["\'](?=[%s])(?:(?:%s)["\']\s*:|level["\']\s*:\s*["\'](?i:L[012]|mix|debug)["\'])'
                     % (_FIRST_LETTERS, _KEY_NAMES)).encode())
#: byte order marks of the wide encodings, longest first (UTF-32 LE starts as UTF-16 LE does)
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
              (b"\xfe\xff", "utf-16"))
# An object whose first key is one of KEYS: True whether it parses (the key
# is at the top level) or not (the text test matches), so no parse is needed.
# Not "task": a file whose only such key is a foreign task is no config (:func:`foreign_task`).
_FIRST_KEY = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"(?:%s)"\s*:' % "|".join(sorted(KEYS - {"task"})).encode())
#: the task values of msprobe's ATB dump config besides the task names (lint/profiles.py ATB_TASKS)
ATB_TASKS = ("all",)


def looks_like_msprobe(raw: bytes) -> bool:
    """True when the file's bytes look like an msprobe config (see the
    module docstring); the same answer as :func:`parsed_verdict`, sooner."""
    if b"\x00" in raw[:4] or raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 or UTF-32, perhaps
        return parsed_verdict(raw)
    if b"\\" not in raw or b"\\u" not in raw:  # one byte first: memchr-fast, and most files have no escape
        if _MAYBE.search(raw) is None and not any(mark in raw for mark in _WIDE_MARKS):
            return False
        if _FIRST_KEY.match(raw) is not None and b'"dump_data_dir"' not in raw:
            return True
    return parsed_verdict(raw)


def _wide_text(raw: bytes) -> "str | None":
    """The text of a file saved as UTF-16 or UTF-32 (a byte order mark, or
    a NUL byte in its first two, which JSON text in UTF-8 never has); None
    for any other file or when it does not decode so."""
    head = raw[:4]
    if b"\x00" not in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    encoding = next((name for mark, name in _WIDE_BOMS if head.startswith(mark)), None)
    if encoding is None:
        if b"\x00" not in raw[:2]:
            return None
        encoding = "utf-16-be" if raw[:1] == b"\x00" else "utf-16-le"
    try:
        return raw.decode(encoding).lstrip("\ufeff")
    except (UnicodeDecodeError, LookupError):
        return None


def parsed_verdict(raw: bytes) -> bool:
    """:func:`looks_like_msprobe` by its definition alone: parse, look at
    the keys and the level, else search the text (no shortcut; the tests
    hold the shortcuts to it)."""
    text = _wide_text(raw)
    if text is None:
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        if "dump_data_dir" in data and "data" in data and "dump_path" not in data:
            return False  # msprobe's own dump.json output
        found = KEYS.intersection(data)
        if found and (found != {"task"} or not foreign_task(data["task"])):
            return True
        level = data.get("level")
        return isinstance(level, str) and level.lower() in LEVELS
    if _TEXT.search(text) is not None or _WIDE_TEXT.search(text) is not None:
        return True
    return data is None and _QUOTED_TEXT.match(text) is not None


def foreign_task(value: object) -> bool:
    """A ``task`` value that names no msprobe task and is near none (by
    the similarity the linter's suggestions use: ``difflib`` ratio 0.6, as
    is and in lower case), or an object or list: what another program's
    config holds under its own ``task`` key. Strings near a task
    (``"overflow"``, ``"Overflow-Check"``), empty ones and other scalars
    are msprobe's (the lint reports them).

    >>> foreign_task("translation"), foreign_task("overflow-check"), foreign_task({"name": "ner"}), foreign_task(3)
    (True, False, True, False)
    """
    if isinstance(value, (dict, list)):
        return True
    if not isinstance(value, str) or not value.strip() or value in SECTIONS or value in ATB_TASKS:
        return False
    lowered = value.lower()
    return not any(lowered == task for task in SECTIONS) and \
        not difflib.get_close_matches(value, SECTIONS, n=1, cutoff=0.6) and \
        not difflib.get_close_matches(lowered, SECTIONS, n=1, cutoff=0.6)
