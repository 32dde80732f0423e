"""`probe report`: what is shown under a record besides its tensors (issue 26).

* the constants an ORIGIN call was given besides tensors (a Python number
  such as ``-1e5`` multiplied into a float16 tensor, a cast's dtype): they
  are in dump.json's ``input_args``/``input_kwargs`` and often explain the
  inf, while the tensor statistics show only the inf output;
* overflow.json's ``inside`` (the call a nested call was made in, which
  masked the overflow) and ``written`` (the Parameters a call wrote inf/nan
  into in place).

The text, JSON and HTML reports show the same.
"""
from __future__ import annotations

import io
import json

import pytest

from msprobe_lint.report import main

INF16 = {"type": "mindspore.Tensor", "dtype": "Float16", "shape": [2], "Max": float("inf"), "Min": 1.0,
         "Mean": float("inf"), "Norm": float("inf")}
FINITE16 = {"type": "mindspore.Tensor", "dtype": "Float16", "shape": [2], "Max": 2.0, "Min": 1.0, "Mean": 1.5,
            "Norm": 2.24}


def report(path, fmt="text"):
    out, err = io.StringIO(), io.StringIO()
    status = main(str(path), fmt, out=out, err=err, show_all=True)
    assert status == 0, err.getvalue()
    return out.getvalue()


def write_step(folder, data, items):
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(json.dumps({"task": "overflow_check", "level": "L1", "data": data}))
    (folder / "overflow.json").write_text(json.dumps(items))


def test_an_origin_shows_the_constants_it_was_called_with(tmp_path):
    data = {
        "Tensor.__mul__.0.forward": {"input_args": [FINITE16, {"type": "float", "value": -100000.0}],
                                     "input_kwargs": {}, "output": [INF16]},
        "Primitive.Cast.0.forward": {"input_args": [INF16, {"type": "mindspore.dtype", "value": "Float32"},
                                                    {"type": "bool", "value": True}],
                                     "input_kwargs": {"scale": {"type": "int", "value": 3}}, "output": [INF16]},
    }
    write_step(tmp_path / "step0" / "rank", data, [
        {"name": "Tensor.__mul__.0.forward", "origin": True, "where": "train.py:7", "kind": "forward"},
        {"name": "Primitive.Cast.0.forward", "origin": False, "where": "train.py:8", "kind": "forward"}])
    text = report(tmp_path)
    lines = text.splitlines()
    at = lines.index("  ORIGIN   Tensor.__mul__.0  API  forward  train.py:7")
    assert lines[at + 1] == "           called with input_args[1]=-100000 (float)"
    assert "called with" not in "\n".join(lines[at + 2:])  # a carried record: its constants are not shown
    payload = json.loads(report(tmp_path, "json"))
    mul, cast = payload["records"]
    assert mul["constants"] == [{"where": "input_args[1]", "type": "float", "value": -100000.0}]
    assert cast["constants"] == []
    assert payload["started"]["constants"] == mul["constants"]
    html = report(tmp_path, "html")
    assert '<p class="note">called with input_args[1]=-100000 (float)</p>' in html
    assert html.count("called with") == 1
    # the same call as an origin: numbers and dtypes, not bools
    items = json.loads((tmp_path / "step0" / "rank" / "overflow.json").read_text())
    items[1]["origin"] = True
    (tmp_path / "step0" / "rank" / "overflow.json").write_text(json.dumps(items))
    assert ("called with input_args[1]=Float32 (mindspore.dtype), input_kwargs.scale=3 (int)"
            in report(tmp_path))


def test_inside_and_written_are_shown_everywhere(tmp_path):
    data = {
        "Primitive.Square.0.forward": {"input_args": [FINITE16], "input_kwargs": {}, "output": [INF16]},
        "Primitive.BatchNorm.0.forward": {"input_args": [FINITE16], "input_kwargs": {}, "output": [FINITE16],
                                          "written": {"input_args[4]": INF16}},
    }
    inside = "Functional.clip_by_global_norm.0.forward"
    write_step(tmp_path / "step0" / "rank", data, [
        {"name": "Primitive.Square.0.forward", "origin": True, "where": "train.py:9", "kind": "forward",
         "inside": inside},
        {"name": "Primitive.BatchNorm.0.forward", "origin": True, "where": "train.py:4", "kind": "forward",
         "written": ["bn.moving_variance"]}])
    text = report(tmp_path)
    assert (f"           inside {inside}: that call's inputs and result were finite (it masked this overflow)"
            in text.splitlines())
    assert "           wrote inf/nan into Parameter bn.moving_variance (in place)" in text.splitlines()
    assert "           written.input_args[4]  Float16 [2]  Max=inf Min=1 Mean=inf Norm=inf" in text.splitlines()
    assert text.rstrip().endswith(f"Overflow started in step0/rank: Primitive.Square.0.forward (API, forward) "
                                  f"inside {inside} at train.py:9.")
    payload = json.loads(report(tmp_path, "json"))
    square, bn = payload["records"]
    assert (square["inside"], square["written"]) == (inside, [])
    assert (bn["inside"], bn["written"]) == (None, ["bn.moving_variance"])
    html = report(tmp_path, "html")
    assert f'<p class="note">inside {inside}: that call&#39;s inputs and result were finite' in html
    assert '<p class="note">wrote inf/nan into Parameter bn.moving_variance (in place)</p>' in html
    # the BatchNorm first: the summary names the Parameter
    items = json.loads((tmp_path / "step0" / "rank" / "overflow.json").read_text())
    (tmp_path / "step0" / "rank" / "overflow.json").write_text(json.dumps(items[::-1]))
    assert report(tmp_path).rstrip().endswith(
        "Overflow started in step0/rank: Primitive.BatchNorm.0.forward (API, forward) at train.py:4, writing "
        "inf/nan into Parameter bn.moving_variance.")


@pytest.mark.parametrize("inside, written", [(3, "bn.w"), ("", None), (None, [1, "x"])])
def test_malformed_inside_and_written_are_read_as_absent_or_as_text(tmp_path, inside, written):
    data = {"Primitive.Square.0.forward": {"input_args": [FINITE16], "input_kwargs": {}, "output": [INF16]}}
    write_step(tmp_path / "step0" / "rank", data, [
        {"name": "Primitive.Square.0.forward", "origin": True, "where": "train.py:9", "inside": inside,
         "written": written}])
    record = json.loads(report(tmp_path, "json"))["records"][0]
    assert record["inside"] is None
    assert record["written"] == (["1", "x"] if isinstance(written, list) else [])


@pytest.mark.mindspore
def test_constants_in_a_dump_written_by_the_runtime(tmp_path, monkeypatch):
    """A float16 tensor multiplied by the Python constant -1e5, and a float32
    value cast to float16: the report shows the constant and the dtype that
    made each inf."""
    ms = pytest.importorskip("mindspore")
    np = pytest.importorskip("numpy")
    from probe_runtime import PrecisionDebugger
    from runtime_support import isolate, write_runtime_config

    isolate(monkeypatch, tmp_path)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    debugger = PrecisionDebugger(config_path=str(write_runtime_config(tmp_path, nums=-1)))
    try:
        debugger.start()
        masked = ms.Tensor(np.array([1.0, 2.0], np.float16)) * -1e5
        cast = ms.ops.cast(ms.Tensor(np.array([1e5], np.float32)), ms.float16)
        debugger.stop()
    finally:
        debugger.stop()
        debugger.windows.summary.said = True
    assert np.isinf(masked.asnumpy()).all() and np.isinf(cast.asnumpy()).all()
    text = report(tmp_path / "dump")
    assert "  ORIGIN   Tensor.__mul__.0  API  forward" in text
    assert "called with input_args[1]=-100000 (float)" in text
    assert "called with input_args[1]=Float16 (mindspore.dtype)" in text


def test_a_kernel_inside_a_jit_region_is_not_said_to_be_masked(tmp_path):
    """A kernel record of a mindspore.jit region (``inside`` names the region,
    whose result held inf/nan) was told "that call's inputs and result were
    finite (it masked this overflow)": false there. A kernel's note says it
    is a kernel of that region, named by the replay under the kernel dump."""
    name = "Log.Default/Log-op1"
    write_step(tmp_path / "step0" / "rank", {name: {"input_args": [FINITE16], "input_kwargs": {}, "output": [INF16]}},
               [{"name": name, "origin": True, "where": "train.py:13", "kind": "forward",
                 "inside": "Jit.bad_loss.0.forward"}])
    text = report(tmp_path)
    assert "masked" not in text and "result were finite" not in text, text
    assert ("           inside Jit.bad_loss.0.forward: a kernel of that mindspore.jit region, which runs as one "
            "graph (named by running the region again under MindSpore's kernel dump)") in text.splitlines(), text
