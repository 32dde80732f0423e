"""msprobe_lint.report.reader: records built with named fields, and the one
grouping signature (issue 32)."""
from __future__ import annotations

import dataclasses
import json

from msprobe_lint.report.analysis.facts import fingerprint
from msprobe_lint.report.discover import RankFolder
from msprobe_lint.report.model import Record, signature
from msprobe_lint.report.reader import ReadCache, read_folder

FINITE = {"type": "mindspore.Tensor", "dtype": "Float16", "shape": [2], "Max": 2.0, "Min": 1.0, "Mean": 1.5,
          "Norm": 2.24}
INF = dict(FINITE, Max=float("inf"), Mean=float("inf"), Norm=float("inf"))
ITEMS = [
    {"name": "sentinel", "origin": False, "where": "train.py:9", "kind": "sentinel", "step": 0, "rank": 0,
     "nonfinite": ["gradient of fc.weight"], "message": "inf/nan in gradient of fc.weight"},
    {"name": "Functional.exp.0.forward", "origin": True, "where": "train.py:3", "kind": "forward", "step": 0,
     "rank": 0, "inside": "Functional.outer.0.forward", "written": ["bn.moving_mean"], "replay": "train.py:9"},
    {"name": "outside", "origin": False, "where": "train.py:12", "kind": "outside", "step": 0, "rank": 0,
     "nonfinite": ["loss"], "message": "the loss held inf"},
]


def write_folder(path, items, rank=0):
    path.mkdir(parents=True)
    (path / "dump.json").write_text(json.dumps(
        {"task": "overflow_check", "level": "L1",
         "data": {"Functional.exp.0.forward": {"input_args": [FINITE], "input_kwargs": {}, "output": [INF]}}}))
    (path / "overflow.json").write_text(json.dumps([dict(item, rank=rank) for item in items]))
    return RankFolder(0, rank, str(path))


def test_records_carry_every_overflow_json_field_by_name(tmp_path):
    dump = read_folder(write_folder(tmp_path / "step0" / "rank0", ITEMS))
    sentinel, exp, outside = dump.records
    assert (sentinel.step, sentinel.rank, sentinel.folder, sentinel.index) == (0, 0, dump.folder, 0)
    assert sentinel.sentinel == "inf/nan in gradient of fc.weight" and sentinel.nonfinite == ["gradient of fc.weight"]
    assert not sentinel.has_entry and sentinel.tensors == []
    assert (exp.name, exp.origin, exp.where, exp.record_kind) == ("Functional.exp.0.forward", True, "train.py:3",
                                                                  "forward")
    assert (exp.inside, exp.written, exp.replay, exp.has_entry) == ("Functional.outer.0.forward",
                                                                    ["bn.moving_mean"], "train.py:9", True)
    assert [t.where for t in exp.offending()] == ["output[0]"]
    assert (outside.kind, outside.message, outside.index) == ("outside", "the loss held inf", 2)


def test_the_readers_signature_is_the_one_the_analysis_computes(tmp_path):
    """Before issue 32 the reader and analysis.facts.fingerprint each built
    the key, and differed on a sentinel record's message: a folder grouped
    by the reader's key never equalled the same records keyed by the
    analysis."""
    dump = read_folder(write_folder(tmp_path / "step0" / "rank0", ITEMS))
    assert dump.signature is not None
    recomputed = dataclasses.replace(dump, signature=None)
    assert fingerprint(recomputed) == dump.signature == signature(dump.records)


def test_folders_equal_but_for_rank_share_one_signature_and_one_parse(tmp_path):
    cache = ReadCache()
    first = read_folder(write_folder(tmp_path / "step0" / "rank0", ITEMS, rank=0), cache=cache)
    second = read_folder(write_folder(tmp_path / "step0" / "rank1", ITEMS, rank=1), cache=cache)
    assert first.signature == second.signature
    assert [r.rank for r in second.records] == [1, 1, 1]
    assert second.records[0] is not first.records[0]  # each folder has its own records


def test_signature_tells_apart_what_the_report_shows():
    base = Record(step=0, rank=0, folder="f", index=0, name="outside", origin=False, where="train.py:1",
                  record_kind="outside", message="the loss held inf")
    assert signature([base]) == signature([dataclasses.replace(base, rank=3, folder="g", step=2)])
    assert signature([base]) != signature([dataclasses.replace(base, message="the optimizer update")])
    call = dataclasses.replace(base, name="Functional.exp.0.forward", record_kind="forward", message="m")
    assert signature([call]) == signature([dataclasses.replace(call, message="another")])  # not shown for a call


def test_an_unversioned_dump_is_read_as_today():
    """tests/data/report/probe-l0: probe_runtime's dump from before the format had a version."""
    from conftest import REPO

    folder = REPO / "tests" / "data" / "report" / "probe-l0" / "step0" / "rank"
    assert "format_version" not in (folder / "overflow.json").read_text()
    dump = read_folder(RankFolder(0, None, str(folder)))
    assert dump.problems == [] and dump.records
    assert dump.records[0].origin is True and dump.records[0].name == "Cell.block.act.Scale.forward.0"


def test_a_newer_major_version_is_refused_with_a_reason(tmp_path):
    items = [dict(ITEMS[1], format_version="2.0")]
    dump = read_folder(write_folder(tmp_path / "step0" / "rank0", items))
    (path, problem), = dump.problems
    assert path.endswith("overflow.json") and "dump format 2.0" in problem and "upgrade msprobe-lint" in problem
    # dump.json is still read as msprobe's own dump would be: its entries, origin unknown
    assert [(r.name, r.origin) for r in dump.records] == [("Functional.exp.0.forward", None)]


def test_a_newer_minor_version_is_read(tmp_path):
    dump = read_folder(write_folder(tmp_path / "step0" / "rank0", [dict(ITEMS[1], format_version="1.9", extra=1)]))
    assert dump.problems == [] and dump.records[0].origin is True


def test_a_malformed_version_is_read_as_this_one_and_said(tmp_path):
    """"format_version": [1] is no version: the record is read (as 1.0),
    and the folder's problems say so (it was accepted silently)."""
    dump = read_folder(write_folder(tmp_path / "step0" / "rank0", [dict(ITEMS[1], format_version=[1])]))
    assert dump.records[0].origin is True
    (path, problem), = dump.problems
    assert "format_version [1]" in problem and "read as version 1.0" in problem


def test_a_fifo_is_not_read_and_not_waited_on(tmp_path):
    """Opening a FIFO blocks until a writer comes: read_bytes must say it is
    not a regular file at once (probe report hung on one)."""
    import os

    import pytest

    from msprobe_lint.report.reader import Unreadable, read_bytes

    if not hasattr(os, "mkfifo"):
        pytest.skip("named pipes")
    os.mkfifo(tmp_path / "overflow.json")
    with pytest.raises(Unreadable, match="not a regular file"):
        read_bytes(tmp_path / "overflow.json")
    with pytest.raises(Unreadable, match="Is a directory"):
        read_bytes(tmp_path)
