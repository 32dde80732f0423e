"""A read-only view of a parsed config for the semantic rules.

Values that failed a structural check (schema, NaN literal) are hidden:
the semantic rules see them as absent, so one fault gives one diagnostic.
Defaults follow msprobe: task ``statistics`` and level ``L1`` when absent.
A misspelt task with a clear did-you-mean (``"overflow-check"``) reads as
the task it means, so its PL103 does not hide the rules of that task.
"""
from __future__ import annotations

from .positions import pointer

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any

MISSING: Any = object()


class ConfigView:
    """Attributes:
        data: the parsed config (dict).
        bad: JSON pointers of values that failed a structural check.
        path: the file's path as given (for messages).
        profile: the mindstudio-probe release the config is judged by
            (``"8.1"``, ``"8.3"``, ``"26.0"``, ``"26.1"``, ``"26.2"``; see
            profiles.py).
        given_in_code: top-level keys the training script passes to
            PrecisionDebugger (``dump_path``), whose config values are
            therefore not used.
        memo: what the rules compute once per config and share (a long
            rank list read once for PL301-PL303), keyed by the rule family.
        meant_task: the task a refused ``task`` value clearly means (its
            PL103's did-you-mean, rules/schema.py's ``meant_task``), or
            None."""

    def __init__(self, data: dict, bad: set[str] | frozenset[str] = frozenset(), path: str = "<config>",
                 profile: str = "8.3", given_in_code: frozenset[str] = frozenset(),
                 meant_task: str | None = None):
        self.data = data
        self.bad = bad
        self.path = path
        self.profile = profile
        self.given_in_code = given_in_code
        self.memo: dict = {}
        self.meant_task = meant_task

    def get(self, *parts: Any, default: Any = None) -> Any:
        """The value at ``parts`` (keys/indices), or ``default`` when absent
        or structurally bad (at that place or any parent)."""
        node: Any = self.data
        walked: list[Any] = []
        for part in parts:
            walked.append(part)
            if self.bad and pointer(*walked) in self.bad:  # no pointers to build for a clean config
                return default
            if isinstance(node, dict) and isinstance(part, str) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return default
        return node

    def has(self, *parts: Any) -> bool:
        """True when the key is present with a structurally valid value."""
        return self.get(*parts, default=MISSING) is not MISSING

    @property
    def task(self) -> Any:
        """The active task; ``statistics`` when absent; the task meant when
        the value is a clear misspelling of one (:attr:`meant_task`), else
        None when invalid."""
        if self.data.get("task") in (None, ""):  # absent, or read as absent (rules/schema.py, _DEFAULTED)
            return "statistics"
        if self.meant_task is not None:
            return self.meant_task
        return self.get("task")

    @property
    def level(self) -> Any:
        """The level; ``L1`` when absent (or null or "", which msprobe
        reads as absent), None when invalid."""
        if not self.level_set():
            return "L1"
        return self.get("level")

    def level_set(self) -> bool:
        """True when the config gives a level: present, and neither null
        nor "" (msprobe reads those as absent and takes L1)."""
        return self.data.get("level") not in (None, "")

    def where_level(self) -> str:
        """Pointer to blame for the level: the key if present, else task."""
        return "/level" if "level" in self.data else ("/task" if "task" in self.data else "")
