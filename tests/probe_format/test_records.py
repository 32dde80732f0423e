"""probe_format.records: the constructors of each record kind and the
format's version; probe_format as a neutral leaf (issue 32)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from probe_format import layout, records
from probe_format.collectives import collective_object

PACKAGE = Path(records.__file__).parent


def test_a_call_record_has_the_keys_the_report_reads_and_the_version():
    item = records.call_record("Functional.exp.0.forward", origin=True, where="train.py:3", kind="forward", step=2,
                               rank=None, written=[], inside="Functional.outer.0.forward", replay="train.py:9")
    assert item == {"name": "Functional.exp.0.forward", "origin": True, "where": "train.py:3", "kind": "forward",
                    "step": 2, "rank": None, "inside": "Functional.outer.0.forward", "replay": "train.py:9",
                    "format_version": records.FORMAT_VERSION}


def test_a_communication_record_needs_its_collective():
    call = collective_object("AllReduce", "g", [0, 1], 0, "forward", True)
    item = records.call_record("Primitive.AllReduce.0.forward", origin=False, where=None, kind="communication",
                               step=0, rank=1, collective=call, message="received")
    assert item["collective"] == {"api": "AllReduce", "group": "g", "ranks": [0, 1], "index": 0,
                                  "direction": "forward", "inputs_finite": True}
    with pytest.raises(ValueError):
        records.call_record("x", origin=False, where=None, kind="communication", step=0, rank=1)
    with pytest.raises(ValueError):
        records.call_record("x", origin=False, where=None, kind="sentinel", step=0, rank=1)


@pytest.mark.parametrize("kind", layout.NOTE_KINDS)
def test_a_note_names_its_kind(kind):
    item = records.note_record(kind, step=0, rank=None, where="train.py:9", nonfinite=("loss",), message="m")
    assert (item["name"], item["kind"], item["origin"], item["nonfinite"]) == (kind, kind, False, ["loss"])
    assert item["format_version"] == records.FORMAT_VERSION


def test_entered_objects():
    item = records.entered_object("Cell.fc.Dense.forward.0", input=None, source=layout.SOURCE_PARAMETER,
                                  parameter="fc.weight", at_start=True, message="m")
    assert item == {"entry": "Cell.fc.Dense.forward.0", "input": None, "source": "parameter",
                    "parameter": "fc.weight", "at_start": True, "message": "m"}
    cast = records.entered_object("Primitive.MatMul.0.forward", input="input_args[0]",
                                  source=layout.SOURCE_MIXED_PRECISION, message="m")
    assert cast["source"] == "mixed-precision" and cast["input"] == "input_args[0]"
    with pytest.raises(ValueError):
        records.entered_object("x", input=None, source="elsewhere", message="m")


@pytest.mark.parametrize("value, readable", [(None, True), ("1.0", True), ("1.7", True), ("0.9", True),
                                             ("2.0", False), ("10.1", False), ("garbage", True), (3, True)])
def test_versions_a_reader_accepts(value, readable):
    assert (records.version_problem(value) is None) == readable


def test_the_format_imports_only_the_standard_library():
    allowed = {"__future__", "re", "dataclasses", "typing"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                assert {a.name.split(".")[0] for a in node.names} <= allowed, path
            elif isinstance(node, ast.ImportFrom) and not node.level:
                assert node.module.split(".")[0] in allowed, (path, node.module)
