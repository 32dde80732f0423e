"""Finding and loading the JSON Schema that ships with the package.

The schema in the repository's ``schema/`` folder is the single source of
structure. A wheel carries it as ``msprobe_lint/schema/`` (hatch
force-include); an editable or source checkout reads it from ``schema/``
beside the ``msprobe_lint`` package.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Optional


ATB = "atb"  # the schema name of msprobe's ATB dump config (lint/atb.py)
ATB_SCHEMA_FILE = "atb-dump-config.schema.json"


def schema_path(profile: str = "8.3") -> str:
    """Path of the installed schema file of a release profile (``"8.1"``,
    ``"8.3"``, ``"26.0"``, ``"26.1"``, ``"26.2"``; see profiles.py), or of
    msprobe's ATB dump config (``"atb"``; see lint/atb.py).

    Raises:
        FileNotFoundError: when neither the packaged nor the source copy
            exists (a broken install).
        KeyError: for an unknown profile.
    """
    from ..profiles import PROFILES

    name = ATB_SCHEMA_FILE if profile == ATB else PROFILES[profile].schema_file
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # msprobe_lint/
    for candidate in (os.path.join(package, "schema", name), os.path.join(os.path.dirname(package), "schema", name)):
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"{name} is missing from the msprobe-lint installation")


@lru_cache(maxsize=None)
def load_schema(profile: str = "8.3") -> dict:
    """The parsed schema of ``profile`` (cached for the process)."""
    with open(schema_path(profile), encoding="utf-8") as handle:
        return json.load(handle)


def resolve(node: dict, root: dict) -> dict:
    """Follow local ``$ref`` (``#/$defs/name``) chains; merge sibling
    keywords over the target so titles next to a ``$ref`` survive."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        target = root
        for token in node["$ref"].lstrip("#/").split("/"):
            target = target[token]
        merged = dict(target)
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        if "$ref" in target:
            merged["$ref"] = target["$ref"]
        node = merged
        seen += 1
    return node


def sections(root: Optional[dict] = None) -> dict[str, dict]:
    """Task name -> resolved section schema (top-level properties that are
    objects)."""
    root = root or load_schema()
    out = {}
    for key, sub in root["properties"].items():
        resolved = resolve(sub, root)
        kind = resolved.get("type")
        if kind == "object" or isinstance(kind, list) and "object" in kind:  # ["object", "null"]: null reads as {}
            out[key] = resolved
    return out


@lru_cache(maxsize=None)
def key_index(profile: str = "8.3") -> dict[str, dict[str, Any]]:
    """Location (``""`` for top level, else the section name) -> {key:
    resolved subschema} of every key the schema ``profile`` accepts (a
    release profile of profiles.py, or ``"atb"``)."""
    root = load_schema(profile)
    index = {"": {k: resolve(v, root) for k, v in root["properties"].items()}}
    for name, section in sections(root).items():
        index[name] = {k: resolve(v, root) for k, v in section.get("properties", {}).items()}
    return index
