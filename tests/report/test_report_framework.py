"""The report reads dump.json's framework (issue #36): PyTorch code on
MindSpore (MSAdapter) is said in the group's header and in each JSON
record; its L0 records are ``Module`` ones."""
from __future__ import annotations

import json

from conftest import run_probe


def write_folder(root, framework, name):
    folder = root / "dump" / "step3" / "rank"
    folder.mkdir(parents=True)
    tensor = {"type": "mindspore.Tensor", "dtype": "Float16", "shape": [2], "Max": float("inf"), "Min": 1.0,
              "Mean": float("inf"), "Norm": float("inf")}
    header = {"task": "overflow_check", "level": "L0", "dump_data_dir": None, "data": {name: {"input": [tensor]}}}
    if framework is not None:
        header["framework"] = framework
    (folder / "dump.json").write_text(json.dumps(header))
    (folder / "overflow.json").write_text(json.dumps([{"name": name, "origin": False, "where": "train.py:9"}]))
    return root / "dump"


def test_mindtorch_is_said_in_text_and_json(tmp_path):
    dump = write_folder(tmp_path, "mindtorch", "Module.fc2.Linear.backward.0")
    text = run_probe("report", str(dump))
    assert text.returncode == 0, text.stderr
    header = text.stdout.splitlines()[0]
    assert header.endswith("PyTorch code on MindSpore (MSAdapter, framework mindtorch)")
    assert "Module.fc2.Linear.0  Module  backward" in text.stdout
    report = json.loads(run_probe("report", str(dump), "--format", "json").stdout)
    record = report["records"][0]
    assert record["framework"] == "mindtorch" and record["kind"] == "Module"


def test_mindspore_dumps_read_as_before(tmp_path):
    dump = write_folder(tmp_path, "mindspore", "Cell.fc2.Dense.backward.0")
    text = run_probe("report", str(dump))
    assert "framework" not in text.stdout.splitlines()[0]
    report = json.loads(run_probe("report", str(dump), "--format", "json").stdout)
    assert "framework" not in report["records"][0]
