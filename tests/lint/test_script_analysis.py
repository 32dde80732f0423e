"""Static analysis of the training script (--script) and the PL501-PL506
rules: every spelling of set_context, jit_level and framework the analysis
recognises, the debugger's calls, and the cases where it must stay silent."""
from __future__ import annotations

import textwrap

import pytest

from conftest import codes, config, run_probe, write_config
from msprobe_lint.lint.script import ScriptError, analyse_script, analyse_source, is_function_name

HEAD = "import mindspore as ms\nfrom probe_runtime import PrecisionDebugger\n"
LOOP = ("debugger = PrecisionDebugger(config_path='/c.json')\n"
        "for x in loader:\n    debugger.start(net)\n    net(x)\n    debugger.stop()\n    debugger.step()\n")


def facts(source: str) -> dict:
    analysis = analyse_source(textwrap.dedent(source), "train.py")
    return {name: (fact.value, fact.source) for name, fact in analysis.facts.items()}


def mode(source: str):
    return facts(source).get("mode", (None, None))[0]


# ---------------------------------------------------------------- mode


@pytest.mark.parametrize("source, expected", [
    ("import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n", "graph"),
    ("import mindspore as ms\nms.set_context(mode=ms.PYNATIVE_MODE)\n", "pynative"),
    ("import mindspore\nmindspore.set_context(mode=mindspore.PYNATIVE_MODE)\n", "pynative"),
    ("import mindspore\nmindspore.set_context(mode=mindspore.GRAPH_MODE)\n", "graph"),
    ("from mindspore import context\ncontext.set_context(mode=context.GRAPH_MODE)\n", "graph"),
    ("from mindspore import context as ctx\nctx.set_context(mode=ctx.PYNATIVE_MODE)\n", "pynative"),
    ("import mindspore\nmindspore.context.set_context(mode=mindspore.context.GRAPH_MODE)\n", "graph"),
    ("import mindspore.context as C\nC.set_context(mode=C.GRAPH_MODE)\n", "graph"),
    ("import mindspore as ms\nfrom mindspore import context\ncontext.set_context(mode=ms.GRAPH_MODE)\n", "graph"),
    ("from mindspore import set_context, GRAPH_MODE\nset_context(mode=GRAPH_MODE)\n", "graph"),
    ("from mindspore.context import set_context, PYNATIVE_MODE\nset_context(mode=PYNATIVE_MODE)\n", "pynative"),
    ("from mindspore import set_context as sc\nsc(mode=0)\n", "graph"),
    ("import mindspore as ms\nms.set_context(mode=0)\n", "graph"),
    ("import mindspore as ms\nms.set_context(mode=1)\n", "pynative"),
    ("import mindspore as ms\nms.set_context(ms.GRAPH_MODE)\n", "graph"),          # positional
    ("import mindspore as ms\nms.set_context(1, device_target='Ascend')\n", "pynative"),
    ("import mindspore as ms\nms.set_context(device_target='Ascend', mode=ms.GRAPH_MODE)\n", "graph"),
    ("from mindspore import *\nset_context(mode=GRAPH_MODE)\n", "graph"),
    ("import mindspore as ms\nMODE = ms.GRAPH_MODE\nms.set_context(mode=MODE)\n", "graph"),
])
def test_mode_spellings(source, expected):
    assert mode(source) == expected


def test_mode_source_is_the_line_of_the_call():
    assert facts("import mindspore as ms\n\nms.set_context(mode=ms.GRAPH_MODE)\n")["mode"] == ("graph", "train.py:3")


@pytest.mark.parametrize("source", [
    "import mindspore as ms\n",                                               # no set_context
    "import mindspore as ms\nms.set_context(device_target='Ascend')\n",       # mode not set
    "import mindspore as ms\nms.set_context(mode=args.mode)\n",               # not readable
    "import mindspore as ms\nms.set_context(mode=2)\n",
    "import mindspore as ms\nms.set_context(mode=True)\n",
    "import mindspore as ms\nms.set_context(**cfg)\n",
    "import mindspore as ms\nif args.graph:\n    ms.set_context(mode=ms.GRAPH_MODE)\n",
    "import mindspore as ms\nif a:\n    ms.set_context(mode=0)\nelse:\n    ms.set_context(mode=1)\n",
    "import mindspore as ms\ndef f():\n    ms.set_context(mode=ms.GRAPH_MODE)\n",      # never called
    "import other as ms\nms.set_context(mode=ms.GRAPH_MODE)\n",              # not mindspore
    "set_context(mode=0)\n",                                                 # not imported
])
def test_mode_unknown_when_not_sure(source):
    assert mode(source) is None


def test_last_module_level_call_wins():
    src = ("import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n"
           "ms.set_context(device_target='Ascend')\nms.set_context(mode=ms.PYNATIVE_MODE)\n")
    assert facts(src)["mode"] == ("pynative", "train.py:4")


def test_unreadable_last_call_makes_mode_unknown():
    assert mode("import mindspore as ms\nms.set_context(mode=0)\nms.set_context(mode=args.m)\n") is None


def test_both_branches_agreeing_keep_the_mode():
    src = "import mindspore as ms\nif a:\n    ms.set_context(mode=0)\nelse:\n    ms.set_context(mode=ms.GRAPH_MODE)\n"
    assert mode(src) == "graph"


def test_main_guard_and_called_functions_are_followed():
    src = """
        import mindspore as ms
        def setup():
            ms.set_context(mode=ms.GRAPH_MODE)
        def main():
            setup()
            train()
        if __name__ == "__main__":
            main()
    """
    assert facts(src)["mode"] == ("graph", "train.py:4")


def test_call_inside_try_and_with_counts():
    src = "import mindspore as ms\ntry:\n    ms.set_context(mode=0)\nexcept Exception:\n    pass\n"
    assert mode(src) == "graph"


# ---------------------------------------------------------------- jit_level


@pytest.mark.parametrize("source, expected", [
    ("import mindspore as ms\nms.set_context(mode=0, jit_config={'jit_level': 'O2'})\n", "O2"),
    ("import mindspore as ms\nms.set_context(jit_config={'jit_level': 'O1'}, mode=0)\n", "O1"),
    ("import mindspore as ms\nms.set_context(jit_config={\"infer_boost\": \"off\", \"jit_level\": \"o0\"})\n", "O0"),
    ("import mindspore as ms\nms.set_context(jit_config=dict(jit_level='O2'))\n", "O2"),
    ("import mindspore as ms\nCFG = {'jit_level': 'O2'}\nms.set_context(jit_config=CFG)\n", "O2"),
    ("import mindspore as ms\nnet.set_jit_config(ms.JitConfig(jit_level='O2'))\n", "O2"),
    ("from mindspore import JitConfig\ncfg = JitConfig(jit_level='O1')\n", "O1"),
    ("import mindspore as ms\n@ms.jit(jit_level='O2')\ndef f(x):\n    return x\n", "O2"),
    ("from mindspore import jit\nstep = jit(train_step, jit_level='O1')\n", "O1"),
])
def test_jit_level_spellings(source, expected):
    assert facts(source)["jit_level"][0] == expected


def test_set_context_jit_level_wins_over_jit_config_object():
    src = ("import mindspore as ms\nms.set_context(jit_config={'jit_level': 'O2'})\n"
           "net.set_jit_config(ms.JitConfig(jit_level='O0'))\n")
    assert facts(src)["jit_level"] == ("O2", "train.py:2")


@pytest.mark.parametrize("source", [
    "import mindspore as ms\nms.set_context(jit_config={'exec_mode': 'auto'})\n",
    "import mindspore as ms\nms.set_context(jit_config={'jit_level': level})\n",
    "import mindspore as ms\nms.set_context(jit_config={'jit_level': 'O9'})\n",
    "import mindspore as ms\na = ms.JitConfig(jit_level='O0')\nb = ms.JitConfig(jit_level='O2')\n",  # disagree
])
def test_jit_level_unknown_when_not_sure(source):
    assert "jit_level" not in facts(source)


# ---------------------------------------------------------------- framework


@pytest.mark.parametrize("source, expected", [
    ("import mindspore as ms\n", "mindspore"),
    ("from mindspore import nn\n", "mindspore"),
    ("import torch\n", "pytorch"),
    ("import torch.nn.functional as F\n", "pytorch"),
    ("import msadapter.pytorch as torch\nimport mindspore\n", "msadapter"),
    ("import mindtorch.torch as torch\n", "msadapter"),
    ("import torch\nimport mindspore\nfrom msprobe.pytorch import PrecisionDebugger\n", "pytorch"),
    ("import torch\nimport mindspore\nfrom msprobe.mindspore import PrecisionDebugger\n", "mindspore"),
    ("import torch\nimport mindspore as ms\nms.set_context(mode=1)\n", "mindspore"),
])
def test_framework_from_imports(source, expected):
    assert facts(source)["framework"][0] == expected


def test_framework_unknown_with_torch_and_mindspore_and_no_clue():
    assert "framework" not in facts("import torch\nimport mindspore\n")


# ---------------------------------------------------------------- PL501 functions vs modules/classes


@pytest.mark.parametrize("module, name, expected", [
    ("mindspore.ops", "relu", True), ("mindspore.ops", "matmul", True), ("mindspore.mint", "add", True),
    ("mindspore.mint.nn.functional", "gelu", True), ("torch", "cat", True), ("torch.nn.functional", "relu", True),
    ("mindspore.ops", "operations", False), ("mindspore.ops", "functional", False),
    ("mindspore.ops", "Primitive", False), ("mindspore.ops", "Exp", False), ("mindspore.ops", "value_and_grad", False),
    ("mindspore.ops", "_private", False), ("torch", "nn", False), ("torch", "float16", False),
    ("torch", "Tensor", False), ("torch", "no_grad", False), ("torch", "save", False), ("mindspore.mint", "nn", False),
])
def test_function_or_not(module, name, expected):
    assert is_function_name(module, name) is expected


def test_direct_imports_recorded_at_the_import():
    src = ("from mindspore import nn, ops, context, Tensor\nfrom mindspore.ops import operations as P\n"
           "from mindspore.ops import functional as F, Primitive\nfrom mindspore.ops import relu, matmul as mm\n"
           "from torch.nn.functional import gelu\nimport mindspore as ms\nsoftmax = ms.ops.softmax\n")
    found = analyse_source(src).direct_imports
    assert [(d.name, d.bound, d.line, d.column) for d in found] == [
        ("relu", "relu", 4, 27), ("matmul", "mm", 4, 33), ("gelu", "gelu", 5, 33), ("softmax", "softmax", 7, 1)]


# ---------------------------------------------------------------- debugger facts


@pytest.mark.parametrize("imp", [
    "from probe_runtime import PrecisionDebugger",
    "from msprobe.mindspore import PrecisionDebugger",
    "from msprobe.pytorch import PrecisionDebugger",
    "from msprobe.mindspore import PrecisionDebugger as PD\nPrecisionDebugger = PD",
    "import msprobe.mindspore as msm\nPrecisionDebugger = msm.PrecisionDebugger",
])
def test_debugger_import_spellings(imp):
    src = imp + "\nd = " + ("PD" if "as PD" in imp else "msm.PrecisionDebugger" if "msm" in imp else
                            "PrecisionDebugger") + "(config_path='c.json')\nd.start()\n"
    (debugger,) = analyse_source(src).debuggers
    assert debugger.name == "d" and [c.method for c in debugger.calls] == ["start"]


def test_debugger_calls_loops_and_model():
    src = HEAD + LOOP.replace("start(net)", "start()")
    (debugger,) = analyse_source(src).debuggers
    assert debugger.loop is None and debugger.escapes is None
    assert [(c.method, c.line, c.has_model, c.loops) for c in debugger.calls] == [
        ("start", 5, False, ((4, 1),)), ("stop", 7, None, ((4, 1),)), ("step", 8, None, ((4, 1),))]


def test_start_model_keyword_and_none():
    src = HEAD + "d = PrecisionDebugger()\nd.start(model=net)\nd.start(None)\nd.start(*a)\n"
    (debugger,) = analyse_source(src).debuggers
    assert [c.has_model for c in debugger.calls] == [True, False, None]


def test_class_level_calls_count_for_the_singleton():
    src = HEAD + "PrecisionDebugger(config_path='c.json')\nfor x in loader:\n    PrecisionDebugger.start()\n"
    (debugger,) = analyse_source(src).debuggers
    assert [c.method for c in debugger.calls] == ["start"] and debugger.escapes is None


@pytest.mark.parametrize("body, reason", [
    ("d = PrecisionDebugger()\nhelper(d)\n", "passed on"),
    ("d = PrecisionDebugger()\ncallbacks = [d]\n", "passed on"),
    ("self.d = PrecisionDebugger()\n", "not bound"),
    ("dbg = [PrecisionDebugger()]\n", "not bound"),
    ("d = PrecisionDebugger()\ndef step_fn():\n    d.start()\nd.stop()\n", "both at module level"),
    ("d = PrecisionDebugger()\ndef a():\n    d.start()\ndef b():\n    d.stop()\n", "several functions"),
    ("d = PrecisionDebugger()\ndef a():\n    def inner():\n        d.start()\n", "nested function"),
    ("d = PrecisionDebugger()\nd = other()\n", "assigned again"),
    ("d = PrecisionDebugger()\nf = d.start\n", "other than by calling"),
    ("d = PrecisionDebugger()\nmodel.train(1, ds, callbacks=[MsprobeStep(d)])\n", "passed on"),
    ("def make():\n    return PrecisionDebugger()\n", "not bound"),
    ("PrecisionDebugger()\ndef h():\n    PrecisionDebugger.start()\n", "another function"),
])
def test_escapes(body, reason):
    (debugger,) = analyse_source(HEAD + body).debuggers
    assert debugger.escapes and reason in debugger.escapes


def test_debugger_inside_a_function_is_followed_there():
    src = HEAD + ("def main():\n    d = PrecisionDebugger()\n    for x in data:\n        d.start(net)\n"
                  "        d.stop()\n")
    (debugger,) = analyse_source(src).debuggers
    assert debugger.escapes is None and [c.method for c in debugger.calls] == ["start", "stop"]


def test_same_name_in_another_function_is_another_variable():
    src = HEAD + "def a():\n    d = PrecisionDebugger()\n    d.start()\ndef b(d):\n    d.stop()\n"
    (debugger,) = analyse_source(src).debuggers
    assert debugger.escapes is None and [c.method for c in debugger.calls] == ["start"]


def test_constructor_keywords_and_loop():
    src = HEAD + "for e in range(3):\n    d = PrecisionDebugger(level='L0', step=[1, 2])\n"
    (debugger,) = analyse_source(src).debuggers
    assert debugger.loop == (3, 1) and debugger.level == "L0" and debugger.step == [1, 2]


def test_jit_uses_and_model_train():
    src = ("import mindspore as ms\nfrom mindspore import jit\n@ms.jit\ndef f(x):\n    return x\n"
           "class Net:\n    @jit(jit_level='O1')\n    def construct(self, x):\n        return x\n"
           "g = ms.jit(h)\nmodel.train(1, ds)\nnet.train()\n")
    analysis = analyse_source(src)
    assert [(j.line, j.target, j.jit_level) for j in analysis.jit_uses] == [
        (3, "f", None), (7, "construct", "O1"), (10, "h", None)]
    assert analysis.model_train == 11


# ---------------------------------------------------------------- errors


def test_script_errors(tmp_path):
    with pytest.raises(ScriptError, match="no such file"):
        analyse_script(str(tmp_path / "missing.py"))
    with pytest.raises(ScriptError, match="directory"):
        analyse_script(str(tmp_path))
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = 1\ny = '\xff'\n")
    with pytest.raises(ScriptError, match=r"bad\.py:2: not UTF-8"):
        analyse_script(str(bad))
    bad.write_text("x = 1\ndef f(:\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"bad\.py:2:\d+: syntax error"):
        analyse_script(str(bad))
    assert issubclass(ScriptError, ValueError)


def test_a_pep_263_coding_line_is_honoured_as_python_honours_it(tmp_path):
    """A Latin-1 script with its coding line runs under Python; `probe run`
    refused it as "not UTF-8". It is read in its declared encoding; bytes
    that are not in it, or a coding line Python refuses, are still errors."""
    script = tmp_path / "train.py"
    script.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport mindspore as ms\n"
                       b"ms.set_context(mode=ms.GRAPH_MODE)\n")
    assert analyse_script(str(script)).facts["mode"].value == "graph"
    script.write_bytes(b"# coding: no-such-codec\nx = 1\n")
    with pytest.raises(ScriptError, match="unknown encoding: no-such-codec: Python cannot run it"):
        analyse_script(str(script))
    script.write_bytes(b"# coding: ascii\nx = '\xe9'\n")
    with pytest.raises(ScriptError, match=r"train\.py:2: not ascii \(byte 0xe9\); save it as ascii"):
        analyse_script(str(script))


def test_bad_script_exits_2_without_traceback(tmp_path):
    cfg = write_config(tmp_path, config())
    script = tmp_path / "train.py"
    script.write_text("for x in\n", encoding="utf-8")
    proc = run_probe("lint", str(cfg), "--isolated", "--script", str(script))
    assert proc.returncode == 2
    assert "train.py:1" in proc.stderr and "syntax error" in proc.stderr and "Traceback" not in proc.stderr


def test_bom_script_is_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b"\xef\xbb\xbfimport mindspore as ms\nms.set_context(mode=0)\n")
    assert analyse_script(str(script)).facts["mode"].value == "graph"


def test_the_script_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('x')\nimport mindspore as ms\n", encoding="utf-8")
    analyse_script(str(script))
    assert not marker.exists()


# ---------------------------------------------------------------- the rules


@pytest.fixture
def lint_script(lint, tmp_path):
    def run(script: str, cfg=None, **options):
        path = tmp_path / "train.py"
        path.write_text(textwrap.dedent(script), encoding="utf-8")
        return lint(cfg if cfg is not None else config(), script=str(path), **options)

    return run


PYN = HEAD + "ms.set_context(mode=ms.PYNATIVE_MODE)\n"
GRAPH = HEAD + "ms.set_context(mode=ms.GRAPH_MODE, jit_config={'jit_level': 'O2'})\n"


def test_good_script_is_silent(lint_script):
    assert codes(lint_script(PYN + LOOP)) == []


def test_pl501_bad_and_good(lint_script):
    bad = lint_script("from mindspore.ops import relu\n" + PYN + LOOP)
    assert codes(bad) == ["PL501"] and (bad[0].line, bad[0].column) == (1, 27)  # at the imported name
    assert bad[0].path.endswith("train.py") and bad[0].pointer is None
    assert codes(lint_script("from mindspore import nn, ops, context, Tensor\n" + PYN + LOOP)) == []


def test_pl501_only_where_l1_intercepts(lint_script):
    assert codes(lint_script("from mindspore.ops import relu\n" + PYN + LOOP, config(level="L0"))) == []
    assert codes(lint_script("from torch import cat\n" + PYN + LOOP)) == []  # torch is not intercepted on MindSpore
    assert codes(lint_script("from torch import *\nimport torch\nfrom msprobe.pytorch import PrecisionDebugger\n"
                             + LOOP)) == ["PL501"]


def test_pl502_never_started(lint_script):
    found = lint_script(PYN + "debugger = PrecisionDebugger()\nnet(x)\n")
    assert codes(found) == ["PL502"] and found[0].line == 4
    assert codes(lint_script(PYN + "debugger = PrecisionDebugger()\nhelpers.run(debugger)\n")) == []


def test_pl502_no_stop_and_stop_first(lint_script):
    no_stop = lint_script(PYN + "d = PrecisionDebugger()\nfor x in data:\n    d.start(net)\n    net(x)\n")
    assert codes(no_stop) == ["PL502"] and "mode=pynative from" in no_stop[0].message
    stop_first = lint_script(PYN + "d = PrecisionDebugger()\nfor x in data:\n    d.stop()\n    d.start(net)\n"
                             "    net(x)\n    d.step()\n")
    assert codes(stop_first) == ["PL502"] and stop_first[0].line == 6


def test_pl502_order_not_judged_in_graph_mode_or_with_model_train(lint_script):
    body = "d = PrecisionDebugger()\nfor x in data:\n    d.start(net)\n    net(x)\n"
    assert codes(lint_script(GRAPH + body, config(level="L2"), mindspore_version="2.6.0")) == []
    assert codes(lint_script(PYN + body + "model.train(1, ds)\n")) == []


def test_pl502_order_needs_a_known_scenario(lint_script):
    body = HEAD + "d = PrecisionDebugger()\nfor x in data:\n    d.start(net)\n"
    # statistics at L1 runs in either mode: without the mode, only "never started" applies
    assert codes(lint_script(body, config(task="statistics"))) == []
    # overflow_check L1 runs only in dynamic graph
    assert codes(lint_script(body)) == ["PL502"]


def test_pl502_silent_when_driven_from_helpers(lint_script):
    src = PYN + "d = PrecisionDebugger()\ndef begin():\n    d.start(net)\nfor x in data:\n    begin()\n"
    assert codes(lint_script(src)) == []


STOP_THEN_START = ("d = PrecisionDebugger()\nd.start(net)\nfor x in data:\n    d.stop()\n    d.step()\n"
                   "    d.start(net)\n    net(x)\n")


def test_pl502_accepts_stop_then_start_per_step_after_a_start_before_the_loop(lint_script):
    """Issue 34: each step stops the previous one and starts the next: every
    step is checked (the runtime agrees), so PL502 must not refuse it."""
    assert codes(lint_script(PYN + STOP_THEN_START)) == []
    # without the start() before the loop, the first step runs unchecked
    assert codes(lint_script(PYN + STOP_THEN_START.replace("d.start(net)\nfor", "for"))) == ["PL502"]


def _in_main(body: str) -> str:
    """``body`` (after its first line, the construction) moved into main()."""
    first, _, rest = body.partition("\n")
    return first + "\ndef main():\n" + "".join(f"    {line}\n" for line in rest.splitlines()) + "main()\n"


@pytest.mark.parametrize("body, expected", [
    ("d = PrecisionDebugger()\nfor x in data:\n    d.stop()\n    d.start(net)\n    net(x)\n    d.step()\n",
     ["PL502"]),
    ("d = PrecisionDebugger()\nfor x in data:\n    d.start(net)\n    net(x)\n", ["PL502"]),
    ("d = PrecisionDebugger()\nfor x in data:\n    d.start(net)\n    net(x)\n    d.stop()\n    d.step()\n", []),
    (STOP_THEN_START, []),
])
def test_pl502_judges_a_loop_in_a_function_as_at_module_level(lint_script, body, expected):
    """Issue 34: the same loop in main(), with the debugger at module level,
    was not analysed at all."""
    assert codes(lint_script(PYN + body)) == expected
    assert codes(lint_script(PYN + _in_main(body))) == expected


def test_pl502_a_parameter_of_the_same_name_is_another_variable(lint_script):
    src = PYN + "d = PrecisionDebugger()\nd.start(net)\ndef f(d):\n    d.stop()\n"
    (debugger,) = analyse_source(src).debuggers
    assert debugger.escapes is None and [c.method for c in debugger.calls] == ["start"]


def test_pl503_bad_and_good(lint_script):
    bad = lint_script(PYN + "for x in data:\n    d = PrecisionDebugger()\n    d.start(net)\n    d.stop()\n"
                      "    d.step()\n")
    assert codes(bad) == ["PL503"] and (bad[0].line, bad[0].column) == (5, 9)
    assert codes(lint_script(PYN + LOOP)) == []


def test_pl504_bad_and_good(lint_script):
    bad = lint_script(PYN + LOOP.replace("start(net)", "start()"), config(level="L0"))
    assert codes(bad) == ["PL504"] and bad[0].line == 6
    assert codes(lint_script(PYN + LOOP, config(level="L0"))) == []
    assert codes(lint_script(PYN + LOOP.replace("start(net)", "start()"), config(level="L1"))) == []


def test_pl504_constructor_level_overrides_config(lint_script):
    src = PYN + LOOP.replace("start(net)", "start()").replace("config_path='/c.json'", "level='L0'")
    found = lint_script(src, config(level="L1"))
    assert codes(found) == ["PL504"] and "PrecisionDebugger(level=...)" in found[0].message


def test_pl504_silent_when_the_script_picks_start_by_level(lint_script):
    """A fresh user's finding: `debugger.start(net) if LEVEL == "L0" else
    debugger.start()` was refused by PL504 at the branch L0 never takes."""
    src = PYN + LOOP.replace("debugger.start(net)", "debugger.start(net) if LEVEL == 'L0' else debugger.start()")
    assert "if LEVEL" in src
    assert codes(lint_script(src, config(level="L0"))) == []


def test_pl504_silent_when_passed_on(lint_script):
    src = PYN + LOOP.replace("start(net)", "start()") + "register(debugger)\n"
    assert codes(lint_script(src, config(level="L0"))) == []


def test_pl505_bad_and_good(lint_script):
    no_step = LOOP.replace("    debugger.step()\n", "")
    bad = lint_script(PYN + no_step, config(step=[2, 3]))
    assert codes(bad) == ["PL505"] and bad[0].severity.value == "warning"
    assert codes(lint_script(PYN + LOOP, config(step=[2, 3]))) == []
    assert codes(lint_script(PYN + no_step, config(step=[]))) == []


def test_pl505_silent_in_static_graph(lint_script):
    src = GRAPH + "d = PrecisionDebugger()\nd.start()\nmodel.train(1, ds)\n"
    assert "PL505" not in codes(lint_script(src, config(level="L2", step=[1]), mindspore_version="2.6.0"))


def test_pl506_bad_and_good(lint_script):
    bad = lint_script(PYN + "@ms.jit\ndef train_step(x):\n    return x\n" + LOOP)
    assert codes(bad) == ["PL506"] and bad[0].severity.value == "info" and bad[0].line == 4
    assert codes(lint_script(PYN + "def train_step(x):\n    return x\n" + LOOP)) == []
    assert codes(lint_script(GRAPH + "@ms.jit\ndef f(x):\n    return x\n" + "d = PrecisionDebugger()\nd.start()\n",
                             config(level="L2"), mindspore_version="2.6.0")) == []


def test_script_facts_drive_the_level_rules_with_provenance(lint_script):
    found = lint_script(GRAPH + "d = PrecisionDebugger()\nd.start()\n", config(level="L1"))
    assert codes(found) == ["PL201"]
    assert "mode=graph from" in found[0].message and "train.py:3" in found[0].message


def test_json_output_of_a_script_finding(tmp_path):
    cfg = write_config(tmp_path, config())
    script = tmp_path / "train.py"
    script.write_text("from mindspore.ops import relu\n" + PYN + LOOP, encoding="utf-8")
    proc = run_probe("lint", str(cfg), "--isolated", "--script", str(script), "--format", "json")
    import json

    (diagnostic,) = json.loads(proc.stdout)["diagnostics"]
    assert diagnostic["path"] == str(script) and diagnostic["pointer"] is None
    assert (diagnostic["line"], diagnostic["column"], diagnostic["code"]) == (1, 27, "PL501")


def test_pathological_call_chains_leave_the_mode_unknown():
    lines = ["import mindspore as ms", "def f0():", "    ms.set_context(mode=0)"]
    for i in range(1, 16):
        lines += [f"def f{i}():"] + [f"    f{i - 1}()"] * 3
    lines.append("f15()")
    analysis = analyse_source("\n".join(lines) + "\n")
    assert "mode" not in analysis.facts and analysis.notes
