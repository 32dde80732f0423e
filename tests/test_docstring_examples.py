"""The ``>>>`` examples in msprobe_lint's docstrings run and print what
they show (doctest), so an example cannot go stale."""
from __future__ import annotations

import doctest
import importlib

import pytest
from conftest import REPO

SKIP: tuple[str, ...] = ()


def modules_with_examples() -> list[str]:
    found = []
    for path in sorted((REPO / "msprobe_lint").rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if name not in SKIP:
            found.append(name)
    return found


def test_there_are_examples():
    assert len(modules_with_examples()) >= 15


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
