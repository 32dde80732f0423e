"""Is this JSON file an msprobe config? (``probe lint --only-msprobe``)

The pre-commit hook hands ``probe lint`` every JSON file whose name looks
like a config, and many such files belong to other tools (a model's
``config.json``, ``tsconfig.json``, MindSpore's own dump config). With
``--only-msprobe`` such files are skipped silently. A file is taken for an
msprobe config when:

* it parses as a JSON object with at least one top-level key msprobe
  reads: ``task``, ``dump_path``, a task section (``overflow_check``,
  ``statistics``, ``tensor``, ``free_benchmark``, ``run_ut``,
  ``grad_probe``, ``structure``, ``exception_dump``), or ``level`` holding
  one of msprobe's levels in any case (``"L1"``, ``"l1"``, ``"mix"``; a
  logging ``"level": "INFO"`` does not count);
* or it does not parse as an object (a syntax error, a top-level array, a
  bad encoding) but its text holds one of those keys (``"dump_path":`` ...),
  so a broken msprobe config is still reported.

Anything else is skipped, including MindSpore's ``common_dump_settings``
file and the ``dump.json`` msprobe itself writes into a dump (it has
``task`` and ``level`` too, but also ``dump_data_dir`` and ``data`` and no
``dump_path``; the layout of msprobe's dump.json is in its
``27.dump_json_instruction.md``). Files that cannot be read are never
skipped (they are PL006).

``probe lint DIR`` runs this test on every JSON file of a project, most of
which are not msprobe configs. Both ways in need the text test's match (a
top-level key is a quoted name, JSON whitespace and a colon; a level value
is the quoted level), so a file whose bytes do not match it and hold no
``\\u`` escape (through which a key could be spelt) is rejected without
decoding or parsing it: a logging config's ``"level": "INFO"`` or a
``"tensor"`` that is only a value costs one regular-expression search.
Nor is an object whose first key is ``task``, ``dump_path`` or a task
section parsed (the usual msprobe config): parsed or not, the answer is
yes (unless it may be msprobe's dump.json). tests/project/test_discovery.py checks
these shortcuts against the plain test.
"""
from __future__ import annotations

import json
import re

SECTIONS = ("statistics", "tensor", "overflow_check", "free_benchmark", "run_ut", "grad_probe", "structure",
            "exception_dump")
KEYS = frozenset(("task", "dump_path") + SECTIONS)
LEVELS = frozenset({"l0", "l1", "l2", "mix", "debug"})
# \s is ASCII whitespace (JSON's own), so the text and bytes tests agree.
_KEY_NAMES = "|".join(("task", "dump_path") + SECTIONS)
_TEXT_PATTERN = r'"(?:%s)"\s*:|"level"\s*:\s*"(?i:L[012]|mix|debug)"' % _KEY_NAMES
_TEXT = re.compile(_TEXT_PATTERN, re.ASCII)
# The same test on bytes, with the quote factored out and the names' first
# letters looked ahead for (a fifth faster over a project's JSON files).
_FIRST_LETTERS = "".join(sorted({name[0] for name in KEYS | {"level"}}))
_MAYBE = re.compile((r'"(?=[%s])(?:(?:%s)"\s*:|level"\s*:\s*"(?i:L[012]|mix|debug)")'
                     % (_FIRST_LETTERS, _KEY_NAMES)).encode())
# An object whose first key is one of KEYS: True whether it parses (the key
# is at the top level) or not (the text test matches), so no parse is needed.
_FIRST_KEY = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"(?:%s)"\s*:' % _KEY_NAMES.encode())


def looks_like_msprobe(raw: bytes) -> bool:
    """True when the file's bytes look like an msprobe config (see the
    module docstring)."""
    if b"\\" not in raw or b"\\u" not in raw:  # one byte first: memchr-fast, and most files have no escape
        if _MAYBE.search(raw) is None:
            return False
        if _FIRST_KEY.match(raw) is not None and b'"dump_data_dir"' not in raw:
            return True
    return parsed_verdict(raw)


def parsed_verdict(raw: bytes) -> bool:
    """:func:`looks_like_msprobe` by its definition alone: parse, look at
    the keys and the level, else search the text (no shortcut; the tests
    hold the shortcuts to it)."""
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        if "dump_data_dir" in data and "data" in data and "dump_path" not in data:
            return False  # msprobe's own dump.json output
        if KEYS.intersection(data):
            return True
        level = data.get("level")
        return isinstance(level, str) and level.lower() in LEVELS
    return _TEXT.search(text) is not None
