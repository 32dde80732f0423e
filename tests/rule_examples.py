"""One bad and one good input per rule code, used by test_catalogue.py.

A case is a dict: ``config`` (dict, text or bytes), ``options`` (LintOptions
fields), optionally ``script`` (training-script text, given with --script)
and ``setup`` (a function of the temporary folder returning option changes,
for the filesystem rules). The bad case must report the code; the good case
must not.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from packaging.version import Version

from conftest import config
from msprobe_lint.lint.context import Fact

PYNATIVE = {"framework": "mindspore", "mode": "pynative"}
GRAPH_O2_26 = {"mode": "graph", "jit_level": "O2", "mindspore_version": "2.6.0"}
SCRIPT_HEAD = ("import mindspore as ms\nfrom mindspore import nn, ops\n"
               "from probe_runtime import PrecisionDebugger\nms.set_context(mode=ms.PYNATIVE_MODE)\n")
LOOP_OK = ("debugger = PrecisionDebugger(config_path='/home/cfg/config.json')\n"
           "for x in loader:\n    debugger.start(net)\n    net(x)\n    debugger.stop()\n    debugger.step()\n")


def _symlinked_dump(tmp: Path) -> dict:
    real = tmp / "real"
    real.mkdir()
    os.symlink(real, tmp / "link")
    return {"config": config(dump_path=str(tmp / "link" / "dump")), "check_fs": True}


def _real_dump(tmp: Path) -> dict:
    (tmp / "real").mkdir()
    os.chmod(tmp / "real", 0o750)
    return {"config": config(dump_path=str(tmp / "real" / "dump")), "check_fs": True}


def _file_dump(tmp: Path) -> dict:
    (tmp / "dumpfile").write_text("x")
    return {"config": config(dump_path=str(tmp / "dumpfile")), "check_fs": True}


def _earlier_dump(tmp: Path) -> dict:
    (tmp / "dump" / "step0" / "rank0").mkdir(parents=True)
    (tmp / "dump" / "step0" / "rank0" / "dump.json").write_text("{}")
    os.chmod(tmp / "dump", 0o750)
    return {"config": config(dump_path=str(tmp / "dump")), "check_fs": True}


def _world_writable(tmp: Path) -> dict:
    (tmp / "open").mkdir()
    os.chmod(tmp / "open", 0o777)
    return {"config": config(dump_path=str(tmp / "open")), "check_fs": True}


def _named(name: str):
    def setup(tmp: Path) -> dict:
        path = tmp / name
        path.write_text(json.dumps(config()), encoding="utf-8")
        return {"path": str(path)}

    return setup


EXAMPLES = {
    "PL001": ({"config": '{"task": "overflow_check", "dump_path": "/d",}'}, {"config": config()}),
    "PL002": ({"config": '{"task": "overflow_check", "dump_path": "/d", "task": "overflow_check"}'},
              {"config": config()}),
    "PL003": ({"config": "[1, 2]"}, {"config": config()}),
    "PL004": ({"config": b"\xef\xbb\xbf" + b'{"dump_path": "/d"}'}, {"config": b'{"dump_path": "/d"}'}),
    "PL005": ({"config": '{"dump_path": "/d", "overflow_check": {"overflow_nums": Infinity}}'},
              {"config": '{"dump_path": "/d", "overflow_check": {"overflow_nums": -1}}'}),
    "PL006": ({"setup": lambda tmp: {"path": str(tmp / "missing.json")}}, {"config": config()}),
    "PL007": ({"config": {"common_dump_settings": {"dump_mode": 0, "path": "/d"}}}, {"config": config()}),
    "PL008": ({"config": '{"task": "overflow_check"\uff0c "dump_path": "/d"}'},
              {"config": '{"task": "overflow_check", "dump_path": "/d\uff0c1"}'}),
    "PL101": ({"config": config(levle="L1")}, {"config": config()}),
    "PL102": ({"config": config(rank=0)}, {"config": config(rank=[0])}),
    "PL103": ({"config": config(level="l1")}, {"config": config(level="L1")}),
    "PL104": ({"config": config(dump_path="")}, {"config": config()}),
    "PL105": ({"config": config(overflow_nums=3)}, {"config": config(overflow_check={"overflow_nums": 3})}),
    "PL106": ({"config": config(seed=1)}, {"config": config()}),
    "PL107": ({"config": config(overflow_check={"overflow_nums": -2})},
              {"config": config(overflow_check={"overflow_nums": -1})}),
    "PL201": ({"config": config(level="L1"), "options": {"mode": "graph"}},
              {"config": config(level="L2"), "options": GRAPH_O2_26}),
    "PL202": ({"config": config(level="L2"), "options": dict(GRAPH_O2_26, jit_level="O1")},
              {"config": config(level="L2"), "options": GRAPH_O2_26}),
    "PL203": ({"config": config(level="L2"), "options": dict(GRAPH_O2_26, mindspore_version="2.4.10")},
              {"config": config(level="L2"), "options": GRAPH_O2_26}),
    "PL204": ({"config": config(overflow_check={"check_mode": "all"}), "options": PYNATIVE},
              {"config": config(overflow_check={"overflow_nums": 1}), "options": PYNATIVE}),
    "PL205": ({"config": config(task="run_ut"), "options": {"framework": "mindspore"}},
              {"config": config(task="run_ut"), "options": {"framework": "pytorch"}}),
    "PL206": ({"config": config(statistics={})}, {"config": config(overflow_check={})}),
    "PL207": ({"config": config(async_dump=True)}, {"config": config(task="statistics", async_dump=True)}),
    "PL301": ({"config": config(step=["3-1"])}, {"config": config(step=["1-3"])}),
    "PL302": ({"config": config(step=[2, 2])}, {"config": config(step=[2, 3])}),
    "PL303": ({"config": config(rank=[4]), "options": {"world_size": 4}},
              {"config": config(rank=[3]), "options": {"world_size": 4}}),
    "PL304": ({"config": config(rank=[0]), "options": {"world_size": 1}},
              {"config": config(rank=[]), "options": {"world_size": 1}}),
    "PL305": ({"config": config(task="statistics", statistics={"scope": ["Functional.relu", "Functional.add"]})},
              {"config": config(task="statistics", statistics={"scope": ["Functional.relu.0.forward",
                                                                         "Functional.add.2.forward"]})}),
    "PL306": ({"config": config(task="tensor", step=[])}, {"config": config(task="tensor", step=[0])}),
    "PL401": ({"config": config(dump_path="dump")}, {"config": config(dump_path="/dump")}),
    "PL402": ({"config": config(dump_path="/data/dump:1")}, {"config": config(dump_path="/data/dump_1")}),
    "PL403": ({"config": config(dump_path="/" + "a" * 256)}, {"config": config(dump_path="/" + "a" * 255)}),
    "PL404": ({"config": config(dump_path="/a/../b")}, {"config": config(dump_path="/b")}),
    "PL405": ({"config": config(dump_path="$HOME/dump")}, {"config": config(dump_path="/home/u/dump")}),
    "PL406": ({"setup": _symlinked_dump}, {"setup": _real_dump}),
    "PL409": ({"config": config(dump_path="/path/to/dump")}, {"config": config(dump_path="/data/run1/dump")}),
    "PL410": ({"setup": _named("Config.JSON")}, {"setup": _named("config.json")}),
    "PL407": ({"setup": _file_dump}, {"setup": _real_dump}),
    "PL408": ({"setup": _world_writable}, {"setup": _real_dump}),
    "PL411": ({"setup": _earlier_dump}, {"setup": _real_dump}),
    "PL501": ({"config": config(), "script": SCRIPT_HEAD + "from mindspore.ops import relu\n" + LOOP_OK},
              {"config": config(), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL502": ({"config": config(), "script": SCRIPT_HEAD + "debugger = PrecisionDebugger()\nnet(x)\n"},
              {"config": config(), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL503": ({"config": config(), "script": SCRIPT_HEAD + "for x in loader:\n    d = PrecisionDebugger()\n"
                                                             "    d.start(net)\n    net(x)\n    d.stop()\n"
                                                             "    d.step()\n"},
              {"config": config(), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL504": ({"config": config(level="L0"), "script": SCRIPT_HEAD + LOOP_OK.replace("start(net)", "start()")},
              {"config": config(level="L0"), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL505": ({"config": config(step=[1]), "script": SCRIPT_HEAD + LOOP_OK.replace("    debugger.step()\n", "")},
              {"config": config(step=[1]), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL506": ({"config": config(), "script": SCRIPT_HEAD + "@ms.jit\ndef f(x):\n    return x\n" + LOOP_OK},
              {"config": config(), "script": SCRIPT_HEAD + LOOP_OK}),
    "PL601": ({"config": config(), "options": {"extra_facts": {"msprobe_version": Fact(
        Version("26.2.0"), "installed mindstudio-probe 26.2.0")}}},
              {"config": config(), "options": {"extra_facts": {"msprobe_version": Fact(
                  Version("8.3.3"), "installed mindstudio-probe 8.3.3")}}}),
}
