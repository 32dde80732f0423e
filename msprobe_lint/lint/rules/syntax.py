"""Syntax family (PL001-PL008): reported while reading and parsing the file
(see ``msprobe_lint/lint/loader.py``). After PL001, PL003, PL006, PL007 or PL008
nothing else runs on that file. PL001, PL003, PL004, PL006 and PL008 (a file
msprobe cannot load) are reported whatever the rule selection says
(``engine.ALWAYS_REPORTED``)."""
from __future__ import annotations

from .base import define

define("PL001", "invalid-json", "error", "Not valid JSON", "syntax", """
    msprobe reads the config with Python's json.load; a syntax error stops the
    job at PrecisionDebugger(...) after the model was built. Reported where
    the decoder stops (for a trailing comma, the bracket after it). A file
    that ends with objects or lists still open (a final '}' forgotten, a
    file cut short) is said to, naming each with where it was opened, and
    a string that runs past its line is said to miss its closing quote.
    JSON has no comments, no trailing commas and no single quotes, and a
    backslash in a string starts an escape. Always reported, as an error,
    whatever --select, --ignore, per-file ignores or a severity setting
    say: msprobe cannot load the file, and nothing else is checked on it.

    Bad:
        {"task": "overflow_check", "dump_path": "/data/dump",}
    Good:
        {"task": "overflow_check", "dump_path": "/data/dump"}
    """)

define("PL002", "duplicate-key", "error", "Duplicate key in one object", "syntax", fix="unsafe", doc="""
    json.load silently keeps the last value of a repeated key, so the first
    one you edit may not be the one that counts. Reported at every repeat
    after the first; the other rules see the last value.

    Bad:
        {"level": "L1", "rank": [], "level": "L0"}
    Good:
        {"level": "L0", "rank": []}
    """)

define("PL003", "root-not-object", "error", "Top-level value is not an object", "syntax", """
    A config is one JSON object of settings; msprobe fails on anything else.
    Always reported, as an error, whatever the rule selection says (as
    PL001): nothing else is checked on such a file.

    Bad:
        [{"task": "overflow_check", "dump_path": "/data/dump"}]
    Good:
        {"task": "overflow_check", "dump_path": "/data/dump"}
    """)

define("PL004", "bad-encoding", "error", "Not UTF-8, or starts with a byte-order mark", "syntax", fix="safe", doc="""
    msprobe opens the config as UTF-8 and Python's json refuses a leading
    byte-order mark ("Unexpected UTF-8 BOM"). Editors on Windows often add one.
    A file saved as UTF-16 or UTF-32 (Windows Notepad's "Unicode"), with or
    without a byte-order mark, is named as such (by its mark, or by where
    the NUL bytes of its first characters are): save it as UTF-8. Always
    reported, as an error, whatever the rule selection says (as PL001):
    msprobe cannot load the file.

    Bad:
        <EF BB BF>{"task": "overflow_check", ...}
    Good:
        {"task": "overflow_check", ...}   (saved as UTF-8 without BOM)
    """)

define("PL005", "non-finite-literal", "error", "NaN, Infinity or -Infinity literal", "syntax", """
    Python's json accepts NaN and Infinity though JSON does not; no msprobe
    option takes them, and other tools reading the file fail. Reported
    instead of a type error for that value.

    Bad:
        {"overflow_check": {"overflow_nums": NaN}}
    Good:
        {"overflow_check": {"overflow_nums": -1}}
    """)

define("PL006", "unreadable-file", "error", "File missing, unreadable, not a regular file or over 10 MiB", "syntax", """
    The config could not be read at all. The run exits with status 2, as for
    a usage error, whatever the rule selection says (it is always reported,
    as an error, as PL001 is). An empty file is PL001, not this. When `probe lint DIR`
    walks a folder, a subfolder it cannot list (or a .gitignore it cannot
    read) is reported once with this code and the walk goes on.

    Bad:
        probe lint confg.json        (no such file)
    Good:
        probe lint config.json
    """)

define("PL007", "mindspore-dump-config", "error", "MindSpore's own dump config, not an msprobe config", "syntax", """
    MindSpore's native dump (MINDSPORE_DUMP_CONFIG) uses a JSON with
    common_dump_settings; msprobe's PrecisionDebugger needs its own format
    with task, dump_path and level. Nothing else is checked on such a file.

    Bad:
        {"common_dump_settings": {"dump_mode": 0, "path": "/data/dump", "iteration": "all"}}
    Good:
        {"task": "overflow_check", "dump_path": "/data/dump", "level": "L1"}
    """)

define("PL008", "fullwidth-punctuation", "error", "Fullwidth punctuation where JSON needs ASCII", "syntax",
       fix="safe", doc="""
    Chinese input methods type a fullwidth comma, colon or curly quotes
    where JSON needs ',' ':' and '"': json.load, and so msprobe, stops at
    the first one. Common in configs copied from Chinese docs or chats.
    Reported instead of PL001, at the same place (where the decoder
    stops), with the character named; the fix replaces every such
    character outside strings (，、：“”‘’＂｛｝［］ and the ideographic
    space) by its ASCII one; what stands between a string's quotes (curly
    ones included) is the string's own text and stays. Nothing else runs
    on the file until it parses, and, as PL001, it is always reported
    whatever the rule selection says.

    Bad:
        {"task"："statistics"，“level”: "L1"}
    Good:
        {"task": "statistics", "level": "L1"}
    """)
