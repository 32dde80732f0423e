"""msprobe's ATB dump config: telling it apart, and what it holds.

mindstudio-probe 26.x dumps models built on Ascend Transformer Boost (ATB)
with a separate module, loaded into the model's process by
``source msprobe/scripts/atb/load_atb_probe.sh --output=DIR --config=FILE``
(the script exports ``ATB_OUTPUT_DIR`` and ``ATB_DUMP_CONFIG`` and preloads
``msprobe/lib/libatb_probe_abi{0,1}.so``). Its config is a JSON object of
its own, not PrecisionDebugger's: the dump goes under ``--output`` (so no
``dump_path``), and no level, rank, step or task section applies.

The keys, their types and defaults (all optional), as the module reads
them: ``task`` (string: ``tensor``, ``statistics`` or ``all``; default
tensor), ``dump_enable`` (boolean, default false: the module sleeps until
it is true), ``exec_range`` (string: ``all``, ``none`` or
``"FIRST,LAST"`` execution rounds, counted from 0; default ``"0,0"``),
``ids`` (string of comma-separated op ids, ``PARENT_CHILD`` for an op
inside another; default empty: every layer-level op), ``op_name`` (string
of comma-separated, case-insensitive name prefixes), ``save_child``
(boolean, default false), ``device`` (string of comma-separated device
ids; default empty: every device) and ``filter_level`` (integer 0, 1 or 2,
default 1). A value of the wrong type or outside these is not an error for
the module: it logs a warning and uses the default, so the setting is lost
silently. Sources: the warnings compiled into
``msprobe/lib/libatb_probe_abi1.so`` of the mindstudio-probe 26.1.0.post1
and 26.2.0 wheels (``"ids" in ATB dump configuration file does not exist
or has a wrong type, which should be a string...``; the 26.0.0 wheel ships
the loading script but not the library), ``msprobe/scripts/atb/
load_atb_probe.sh`` of the 26.0.0-26.2.0 wheels, and msprobe's ATB dump
guide (docs/en/dump/atb_data_dump_instruct.md in the msprobe repository;
the wheels carry no docs). The JSON Schema is
``schema/atb-dump-config.schema.json``; the schema stage validates such a
file with it, and no PrecisionDebugger rule runs on it (engine.py). The key
names are kept in profiles.py (``ATB_KEYS``, ``ATB_ONLY_KEYS``,
``ATB_TASKS``), beside the release data.

Example::

    >>> is_atb_config({"task": "tensor", "dump_enable": True, "exec_range": "all", "ids": "0"})
    True
    >>> is_atb_config({"task": "tensor", "dump_path": "/d", "tensor": {}})
    False
"""
from __future__ import annotations

from functools import lru_cache

from .profiles import ATB_KEYS, ATB_ONLY_KEYS

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any

#: How messages name the format.
LABEL = "ATB dump config (load_atb_probe.sh --config)"


def is_atb_config(data: Any) -> bool:
    """True when ``data`` (a parsed config) is an ATB dump config: an object
    with at least one key only that config has (or ``"task": "all"``) and
    none of PrecisionDebugger's own top-level keys (``dump_path``,
    ``level``, ``rank``, ``step``, a task section, ...). A mixture stays a
    PrecisionDebugger config, whose rules then name the ATB keys in it."""
    if not isinstance(data, dict):
        return False
    if not (ATB_ONLY_KEYS.intersection(data) or data.get("task") == "all"):
        return False
    return all(key in ATB_KEYS for key in data) or not _precision_debugger_keys().intersection(data)


@lru_cache(maxsize=1)
def _precision_debugger_keys() -> frozenset:
    """Top-level keys of every PrecisionDebugger release but those the ATB
    config shares."""
    from .profiles import PROFILES
    from .schema.files import key_index

    keys: set = set()
    for name in PROFILES:
        keys.update(key_index(name)[""])
    return frozenset(keys - ATB_KEYS)
