"""Records none of whose tensors' statistics hold inf/nan because dump.json
keeps no statistics of them (a fresh user's finding: a complex64 ``exp``
overflow, rightly the ORIGIN, read "no inf/nan in the recorded statistics"
in the text report, since dump.json has null Max/Min/Mean/Norm for complex
tensors). The report says that no statistics are kept, in text and HTML."""
from __future__ import annotations

import io
import json

from msprobe_lint.report import main


def tensor(dtype: str, shape: list, stats=(None, None, None, None)) -> dict:
    return {"type": "mindspore.Tensor", "dtype": dtype, "shape": shape,
            **dict(zip(("Max", "Min", "Mean", "Norm"), stats))}


def dump(tmp_path, entries: dict) -> None:
    """One step/rank folder: ``entries`` in dump.json, each an overflow.json
    record (the first the origin)."""
    rank = tmp_path / "step1" / "rank"
    rank.mkdir(parents=True)
    (rank / "dump.json").write_text(json.dumps({"task": "overflow_check", "level": "L1", "framework": "mindspore",
                                                "dump_data_dir": None, "data": entries}))
    (rank / "overflow.json").write_text(json.dumps(
        [{"name": name, "origin": i == 0, "where": f"spec.py:{11 + i}"} for i, name in enumerate(entries)]))


def report(path, fmt: str = "text") -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(str(path), fmt, out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_a_complex_overflow_is_not_said_to_hold_no_inf_nan(tmp_path):
    dump(tmp_path, {
        "Functional.exp.0.forward": {"input_args": [tensor("Complex64", [4])], "input_kwargs": {},
                                     "output": [tensor("Complex64", [4])]},
        "Functional.real.0.forward": {"input_args": [tensor("Complex64", [4])], "input_kwargs": {},
                                      "output": [tensor("Float32", [4], (float("inf"),) * 4)]},
    })
    lines = report(tmp_path).splitlines()
    assert lines[1].split()[:2] == ["ORIGIN", "Functional.exp.0"]
    assert lines[2].strip() == ("dump.json keeps no statistics for complex tensors (input_args[0] Complex64, "
                                "output[0] Complex64): inf/nan in them is not shown"), lines
    assert "no inf/nan" not in "\n".join(lines)
    assert lines[4].split()[:3] == ["output[0]", "Float32", "[4]"]  # a record whose statistics show it: as before
    page = report(tmp_path, "html")
    assert "dump.json keeps no statistics for complex tensors" in page and "no inf/nan" not in page
    assert '<tr class="unstated"><td class="left mono">output[0]</td><td class="left">Complex64' in page


def test_other_tensors_without_statistics_and_finite_ones(tmp_path):
    """A floating tensor dump.json has null statistics of (unread) is
    named too; an empty tensor's nulls hide nothing; finite statistics
    keep their sentence."""
    dump(tmp_path, {
        "Functional.add.0.forward": {"input_args": [tensor("Float16", [0]), tensor("Float16", [2])],
                                     "output": [tensor("Float16", [2])]},
        "Functional.mul.0.forward": {"input_args": [tensor("Float32", [2], (1.0, 0.0, 0.5, 1.0)),
                                                    tensor("Float32", [0])],
                                     "output": [tensor("Float32", [2], (2.0, 0.0, 1.0, 2.0))]},
    })
    lines = report(tmp_path).splitlines()
    assert lines[2].strip() == ("no statistics in dump.json for input_args[1] Float16, output[0] Float16: inf/nan "
                                "in them is not shown"), lines
    assert lines[4].strip() == "no inf/nan in the recorded statistics", lines
