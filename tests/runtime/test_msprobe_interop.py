"""msprobe's own tools on probe_runtime's dumps: its accuracy compare
(``msprobe -f mindspore compare``, dump-directory mode) and its graph
visualization build (``msprobe -f mindspore graph``), mindstudio-probe 8.1.2
on MindSpore 2.7.0 in the environment ``tools/make-msprobe-env.sh`` builds
(``.msprobe-env`` in the repository, or ``MSPROBE_PYTHON``). Skipped, with
the reason, when that environment is absent; .ci/run builds it.

The dumps come from ``tools/make_dumps.py``: one float16 training step whose
``ops.exp`` in Cell ``block.act`` overflows, written by probe_runtime (this
project's venv) at L1 and L0, and the same step on a clean batch dumped by
msprobe's own ``tensor`` task, the healthy run to compare against (a run
without overflow leaves no overflow_check dump, msprobe's or ours).
What differs between the layouts and why: docs/msprobe-interop.md.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from conftest import REPO

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]

MSPROBE_VERSION = "8.1.2"
MAKE_DUMPS = REPO / "tools" / "make_dumps.py"
ORIGIN = {"L1": "Functional.exp.0.forward", "L0": "Cell.block.act.Scale.forward.0"}

def source_line(text: str) -> int:
    """The line of tools/make_dumps.py holding ``text``."""
    return next(n for n, line in enumerate(MAKE_DUMPS.read_text(encoding="utf-8").splitlines(), 1) if text in line)


#: the user's line each level's origin is reported at: ops.exp(x) in Scale, self.act(...) in Block
USER_LINE = {"L1": source_line("return ops.exp(x)"), "L0": source_line("return self.act(self.fc(x))")}


def msprobe_python() -> Optional[Path]:
    """$MSPROBE_PYTHON, else .msprobe-env/bin/python in the repository."""
    given = os.environ.get("MSPROBE_PYTHON")
    path = Path(given) if given else REPO / ".msprobe-env" / "bin" / "python"
    return path if path.exists() else None


@pytest.fixture(scope="module")
def msprobe():
    """(python, msprobe command) of the msprobe 8.1.2 environment."""
    python = msprobe_python()
    if python is None:
        pytest.skip("no msprobe 8.1.2 environment: build it with tools/make-msprobe-env.sh "
                    "(or point MSPROBE_PYTHON at one); .ci/run does")
    proc = subprocess.run([str(python), "-c", "from importlib.metadata import version; "
                           "print(version('mindstudio-probe'), version('mindspore'))"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or proc.stdout.split()[:1] != [MSPROBE_VERSION]:
        pytest.skip(f"{python} has no mindstudio-probe {MSPROBE_VERSION} ({proc.stdout.strip() or proc.stderr[-300:]})")
    command = python.parent / "msprobe"
    if not command.exists():
        pytest.skip(f"{command} missing: rebuild the environment with tools/make-msprobe-env.sh")
    return python, command


def make_dump(python, tmp: Path, name: str, *args: str) -> Path:
    out = tmp / name
    proc = subprocess.run([str(python), str(MAKE_DUMPS), *args, str(out)], capture_output=True, text=True,
                          cwd=str(tmp), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def dumps(msprobe, tmp_path_factory):
    """Our overflow dumps at L1 and L0 and msprobe's tensor dumps of the healthy run."""
    pytest.importorskip("mindspore")
    tmp = tmp_path_factory.mktemp("interop")
    made = {}
    for level in ("L1", "L0"):
        made[f"ours-{level}"] = make_dump(sys.executable, tmp, f"ours-{level}", "--tool", "probe", "--level", level)
        made[f"healthy-{level}"] = make_dump(msprobe[0], tmp, f"healthy-{level}", "--tool", "msprobe",
                                             "--task", "tensor", "--level", level, "--clean")
    return tmp, made


def run_msprobe(msprobe, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(msprobe[1]), "-f", "mindspore", *args], capture_output=True, text=True,
                          cwd=str(cwd), timeout=600)


def as_tensor_dump(source: Path, target: Path) -> Path:
    """A copy of an overflow_check dump whose dump.json says ``"task": "tensor"``:
    msprobe's compare reads only tensor and statistics dumps (its own
    overflow_check dumps are refused alike); every tensor of an overflow record
    has its statistics and its .npy, which is what a tensor dump holds."""
    shutil.copytree(source, target)
    for dump_json in target.glob("step*/rank*/dump.json"):
        data = json.loads(dump_json.read_text(encoding="utf-8"))
        data["task"] = "tensor"
        data["dump_data_dir"] = str(dump_json.parent / "dump_tensor_data")
        dump_json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return target


def xlsx_rows(msprobe, path: Path) -> list[dict]:
    """The compare result's rows as dicts (read with openpyxl in msprobe's environment)."""
    script = ("import json, sys, openpyxl\n"
              "sheet = openpyxl.load_workbook(sys.argv[1]).active\n"
              "rows = [[None if c is None else str(c).strip() for c in row]\n"
              "        for row in sheet.iter_rows(values_only=True)]\n"
              "print(json.dumps([dict(zip(rows[0], row)) for row in rows[1:]]))\n")
    proc = subprocess.run([str(msprobe[0]), "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_compare_reads_our_dump_against_a_healthy_run(msprobe, dumps, level):
    tmp, made = dumps
    npu = as_tensor_dump(made[f"ours-{level}"], tmp / f"npu-{level}")
    config = tmp / f"compare-{level}.json"
    config.write_text(json.dumps({"npu_path": str(npu / "step0"), "bench_path": str(made[f"healthy-{level}"] / "step0"),
                                  "is_print_compare_log": True}))
    out = tmp / f"compare-out-{level}"
    proc = run_msprobe(msprobe, tmp, "compare", "-i", str(config), "-o", str(out))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "msprobe compare ends successfully" in log, log[-4000:]
    assert "[ERROR]" not in log, log[-4000:]
    (result,) = out.glob("compare_result_rank_*.xlsx")
    rows = {row["NPU Name"]: row for row in xlsx_rows(msprobe, result)}
    origin = ORIGIN[level]
    row = rows[f"{origin}.output.0"]
    assert row["Bench Name"] == f"{origin}.output.0"
    assert row["NPU max"] == "inf" and row["Bench max"] not in ("inf", "nan", None)
    assert row["Accuracy Reached or Not"] == "No"
    assert f"tools/make_dumps.py, line {USER_LINE[level]}" in rows[f"{origin}.input.0"]["NPU_Stack_Info"]
    # msprobe's advisor names the first node that missed accuracy: the overflowing one
    (advice,) = out.glob("advisor_rank_*.txt")
    assert origin in advice.read_text(encoding="utf-8")
    assert f"Suspect Nodes: {origin}." in log


def test_compare_refuses_overflow_check_dumps_msprobes_own_too(msprobe, dumps):
    """Why the compare test relabels the task: msprobe 8.1.2's compare reads
    only ``tensor`` and ``statistics`` dumps, and says so for msprobe's own
    overflow_check dump exactly as for ours."""
    tmp, made = dumps
    own = REPO / "tests" / "data" / "report" / "msprobe-l0"
    for name, npu in (("msprobe", own), ("ours", made["ours-L0"])):
        config = tmp / f"refused-{name}.json"
        config.write_text(json.dumps({"npu_path": str(npu / "step0"), "bench_path": str(npu / "step0")}))
        out = tmp / f"refused-out-{name}"
        proc = run_msprobe(msprobe, tmp, "compare", "-i", str(config), "-o", str(out))
        assert "Compare applies only to task is tensor or statistics" in proc.stdout + proc.stderr
        assert not out.exists() or not list(out.glob("*.xlsx"))


def graph_nodes(msprobe, cwd: Path, rank_dir: Path, name: str) -> dict:
    config = cwd / f"graph-{name}.json"
    config.write_text(json.dumps({"npu_path": str(rank_dir), "is_print_compare_log": True}))
    out = cwd / f"graph-out-{name}"
    proc = run_msprobe(msprobe, cwd, "graph", "-i", str(config), "-o", str(out), "--overflow_check")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Model graph exported successfully" in log, log[-4000:]
    assert "[ERROR]" not in log, log[-4000:]
    (vis,) = out.glob("build_*.vis")
    graph = json.loads(vis.read_text(encoding="utf-8"))
    assert graph["OverflowCheck"] is True
    return graph["node"]


def test_graph_build_on_our_l0_dump_marks_the_overflowing_cell(msprobe, dumps):
    tmp, made = dumps
    nodes = graph_nodes(msprobe, tmp, made["ours-L0"] / "step0" / "rank", "ours")
    origin = nodes[ORIGIN["L0"]]
    assert origin["data"]["overflow_level"] == "critical"
    assert origin["upnode"] == "Cell.block.Block.forward.0"
    assert nodes["Cell.block.Block.forward.0"]["upnode"] == "DefaultModel"
    assert any(f"tools/make_dumps.py, line {USER_LINE['L0']}" in line for line in origin["stack_info"]), \
        origin["stack_info"]
    assert origin["output_data"][f"{ORIGIN['L0']}.output.0"]["Max"] == "inf"
    # parameter gradients sit under their own Cell's backward node, as in msprobe's own dumps
    assert nodes["Cell.block.fc.Dense.parameters_grad"]["upnode"] == "Cell.block.fc.Dense.backward.0"
    assert nodes["Cell.head.Dense.parameters_grad"]["upnode"] == "Cell.head.Dense.backward.0"
    # every node of ours sits where msprobe's graph of its own dump of the same step puts it
    own = graph_nodes(msprobe, tmp, REPO / "tests" / "data" / "report" / "msprobe-l0" / "step0" / "rank", "own")
    placed = {name: node["upnode"] for name, node in nodes.items()}
    assert placed == {name: own[name]["upnode"] for name in placed}
    levels = {name: node["data"].get("overflow_level") for name, node in nodes.items()}
    assert levels == {name: own[name]["data"].get("overflow_level") for name in levels}
