"""`probe run`: the guarded launch (msprobe_lint/run/ and the `run`
command). Unit tests of the command parsing, then real launches of small
Python children through the `probe` console script."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from msprobe_lint.lint.api import LintOptions
from msprobe_lint.run import guarded_run
from msprobe_lint.run.environment import child_environment
from msprobe_lint.run.launchers import parse_command
from msprobe_lint.run.process import exit_status

from conftest import probe_command, run_probe

PY = sys.executable


def config(directory: Path, **extra) -> Path:
    data = {"task": "overflow_check", "dump_path": str(directory / "dump"), "level": "L1",
            "overflow_check": {"overflow_nums": 1}}
    data.update(extra)
    path = directory / "config.json"
    path.write_text(json.dumps(data, indent=2))
    return path


# ------------------------------------------------------------ parse_command

@pytest.mark.parametrize("argv, script", [
    (["python", "train.py", "--lr", "1"], "train.py"),
    (["python3", "-u", "train.py"], "train.py"),
    (["/venv/bin/python3.11", "-uB", "-X", "dev", "-W", "ignore", "train.py"], "train.py"),
    (["python", "-Wignore", "-Xdev", "sub/train.py"], "sub/train.py"),
    (["python", "-c", "print(1)"], None),
    (["python"], None),
    (["python", "-", "x"], None),
    (["env", "A=1", "B=2", "python", "train.py"], "train.py"),
    (["./train.py", "--x"], "./train.py"),
    (["bash", "run.sh"], None),
])
def test_parse_python_script(argv, script):
    assert parse_command(argv).script == script


def test_parse_python_module_resolves_under_cwd(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "app").mkdir(parents=True)
    (tmp_path / "pkg" / "train.py").write_text("")
    (tmp_path / "pkg" / "app" / "__main__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert parse_command(["python", "-m", "pkg.train", "--x"]).script == os.path.join("pkg", "train.py")
    assert parse_command(["python", "-u", "-m", "pkg.app"]).script == os.path.join("pkg", "app", "__main__.py")
    plan = parse_command(["python", "-m", "json.tool"])
    assert plan.script is None and plan.module == "json.tool" and plan.notes


@pytest.mark.parametrize("argv, world, source, script", [
    (["msrun", "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1", "--master_port=8118",
      "--join=True", "train.py", "--epochs", "1"], 2, "msrun --worker_num", "train.py"),
    (["msrun", "--worker_num", "4", "--log_dir", "logs", "python", "-u", "train.py"], 4, "msrun --worker_num",
     "train.py"),
    (["msrun", "--worker_n", "3", "train.py"], 3, "msrun --worker_num", "train.py"),  # argparse prefix
    (["msrun", "train.py"], 8, "msrun default --worker_num 8", "train.py"),
    (["python", "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "t.py"], 2, "msrun --worker_num", "t.py"),
    (["torchrun", "--nproc_per_node", "4", "--nnodes", "2", "train.py"], 8,
     "torchrun --nproc_per_node --nnodes", "train.py"),
    (["torchrun", "--standalone", "--nproc-per-node=2", "train.py"], 2, "torchrun --nproc_per_node", "train.py"),
    (["python", "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"], 2,
     "python -m torch.distributed.run --nproc_per_node", "t.py"),
    (["mpirun", "-n", "3", "--host", "a,b", "python", "-u", "train.py"], 3, "mpirun -n", "train.py"),
    (["mpiexec", "-np", "2", "train.py"], 2, "mpiexec -np", "train.py"),
])
def test_parse_launcher_world_size(argv, world, source, script):
    plan = parse_command(argv)
    assert plan.world_size is not None, plan.notes
    assert (plan.world_size.value, plan.world_size.source) == (world, source)
    assert plan.script == script


def test_parse_unknown_world_size():
    plan = parse_command(["torchrun", "--nnodes", "1:4", "--nproc_per_node", "2", "train.py"])
    assert plan.world_size is None and plan.script == "train.py" and "elastic" in plan.notes[0]
    assert parse_command(["torchrun", "--nproc_per_node", "auto", "t.py"]).world_size is None
    assert parse_command(["python", "train.py"]).world_size is None


def test_child_environment_puts_interpreter_first(tmp_path):
    env = child_environment("cfg.json", {"PATH": "/usr/bin:/bin"}, executable="/opt/venv/bin/python",
                            prefix="/opt/venv", base_prefix="/usr")
    assert env["PATH"].split(os.pathsep) == ["/opt/venv/bin", "/usr/bin", "/bin"]
    assert env["PROBE_CONFIG"] == os.path.abspath("cfg.json")
    assert env["VIRTUAL_ENV"] == "/opt/venv"
    again = child_environment("cfg.json", {"PATH": "/usr/bin:/opt/venv/bin"}, executable="/opt/venv/bin/python")
    assert again["PATH"].split(os.pathsep) == ["/opt/venv/bin", "/usr/bin"]  # moved first, not repeated


def test_child_environment_leaves_out_a_runtime_scratch_dump_config():
    """A process that used probe_runtime (a notebook, a test session) and then
    launches ``probe run`` holds MINDSPORE_DUMP_CONFIG for its own replay
    dump; the workers must not dump into that folder. A user's own dump
    config is kept."""
    from probe_runtime.l2.dump_config import SCRATCH_PREFIX

    scratch = f"/tmp/{SCRATCH_PREFIX}4242_ab12cd/dump_config.json"
    env = child_environment("cfg.json", {"PATH": "/bin", "MINDSPORE_DUMP_CONFIG": scratch})
    assert "MINDSPORE_DUMP_CONFIG" not in env
    mine = child_environment("cfg.json", {"PATH": "/bin", "MINDSPORE_DUMP_CONFIG": "/home/u/dump/probe.json"})
    assert mine["MINDSPORE_DUMP_CONFIG"] == "/home/u/dump/probe.json"


def test_exit_status_convention():
    assert [exit_status(c) for c in (0, 3, -15, -9)] == [0, 3, 143, 137]


# --------------------------------------------- guarded_run with a fake runner

class FakeRunner:
    def __init__(self, status=0):
        self.calls = []
        self.status = status

    def __call__(self, argv, env, launcher=None):
        self.calls.append((argv, env, launcher))
        return self.status


def guarded(cfg, command, **options):
    stream, runner = io.StringIO(), FakeRunner(5)
    status = guarded_run(str(cfg), command, LintOptions(isolated=True, **options), stream=stream, runner=runner)
    return status, stream.getvalue(), runner.calls


def test_an_l2_config_under_msrun_without_an_ascend_device_is_refused_before_the_start(tmp_path, monkeypatch):
    """A fresh user's finding: `probe run` let an L2 config start `msrun`,
    and every worker died with an L2Unavailable traceback found only in
    msrun's worker logs. On a machine with no Ascend device the workers run
    L2 on the CPU backend, which refuses a distributed job: said once,
    before anything starts, exit 1. With an Ascend device (MindSpore's
    overflow dump, per rank) or in one process the job starts."""
    import msprobe_lint.run.guarded as guarded_module

    monkeypatch.chdir(tmp_path)
    for name in ("RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "t.py").write_text("")
    cfg = config(tmp_path, level="L2")
    msrun = ["msrun", "--worker_num=2", "--local_worker_num=2", "--join=True", "t.py"]
    monkeypatch.setattr(guarded_module, "_ascend_present", lambda: False)
    status, out, calls = guarded(cfg, msrun)
    assert status == 1 and not calls, out
    assert "level L2 (kernel) in a distributed job of 2 processes" in out and "no Ascend device" in out, out
    assert "in a single process only" in out and "level L1 or L0 in PyNative mode" in out, out
    refusal = out.splitlines()[-1]  # one paragraph, after the lint's warnings
    assert refusal.startswith("probe: not starting `msrun") and "asks for level L2" in refusal, out
    assert guarded(cfg, ["python", "t.py"])[0] == 5  # one process: L2 on the CPU runs
    assert guarded(config(tmp_path, level="L1"), msrun)[0] == 5  # L1 runs in every rank
    monkeypatch.setenv("WORLD_SIZE", "4")  # probe run started once per rank by an outer launcher
    status, out, calls = guarded(config(tmp_path, level="L2"), ["python", "t.py"])
    assert status == 1 and not calls and "distributed job of 4 processes" in out, out
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setattr(guarded_module, "_ascend_present", lambda: True)
    status, out, calls = guarded(cfg, msrun)
    assert status == 5 and calls, out


def test_world_size_from_msrun_feeds_pl303(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    cfg = config(tmp_path, rank=[1, 3])
    msrun = ["msrun", "--worker_num=2", "--local_worker_num=2", "--join=True", "t.py"]
    status, out, calls = guarded(cfg, msrun)
    assert "PL303" in out and "world_size=2 from msrun --worker_num" in out, out
    assert status == 5 and calls and calls[0][2] == "msrun"  # a warning: rank 1 still collects
    status, out, calls = guarded(cfg, msrun, strict=True)
    assert status == 1 and not calls  # --strict: the warning blocks
    nothing = config(tmp_path, rank=[3])
    status, out, calls = guarded(nothing, msrun)
    assert status == 1 and not calls and "PL303 error" in out  # no rank left: the job would collect nothing


def test_world_size_from_launcher_feeds_pl304(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    cfg = config(tmp_path, rank=[0])
    status, out, calls = guarded(cfg, ["torchrun", "--nproc_per_node", "1", "t.py"])
    assert status == 1 and not calls and "PL304" in out and "torchrun --nproc_per_node" in out, out
    status, out, calls = guarded(cfg, ["mpirun", "-n", "4", "hostname"])
    assert status == 5 and calls and "PL30" not in out, out


def test_world_size_flag_wins_over_launcher(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    cfg = config(tmp_path, rank=[3])
    status, out, calls = guarded(cfg, ["msrun", "--worker_num=2", "t.py"], world_size=4)
    assert status == 5 and "PL303" not in out


def test_missing_script_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path)
    status, out, calls = guarded(cfg, ["python", "nope.py"])
    assert status == 2 and not calls and "nope.py: no such file" in out


def test_a_folder_or_zip_python_runs_is_started_and_its_main_linted(tmp_path, monkeypatch):
    """A tester's finding: `python app` (a folder with __main__.py) and
    `python app.pyz` (a zipapp) run, yet probe run refused them as "is a
    directory" and "not UTF-8". The folder's __main__.py is the script the
    lint reads; the zip starts with a note that its script is not
    checked."""
    import zipapp

    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("print(1)\n")
    status, out, calls = guarded(cfg, ["python", "app"])
    assert status == 5 and calls and "directory" not in out, out
    zipapp.create_archive(tmp_path / "app", tmp_path / "app.pyz")
    status, out, calls = guarded(cfg, ["python", "app.pyz"])
    assert status == 5 and calls and "app.pyz is a zip application; its script is not checked" in out, out


def test_no_command_is_usage_error(tmp_path):
    status, out, calls = guarded(config(tmp_path), [])
    assert status == 2 and not calls and "no command" in out


# ------------------------------------------------------- real child process

def test_refuses_bad_config_and_does_not_start(tmp_path):
    cfg = config(tmp_path, dump_path="dump")  # relative dump_path: PL401 error
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert not marker.exists()
    assert "PL401" in proc.stderr and "not starting" in proc.stderr
    assert proc.stdout == ""


def test_a_rule_the_runtime_needs_stays_an_error_whatever_the_project_says(tmp_path):
    """A project that turns off a rule the debugger cannot run without
    (PL104: dump_path missing) passes `probe lint`, as asked, but `probe
    run` refuses as PrecisionDebugger would inside the job (before, it
    started a job certain to die at the debugger's construction)."""
    (tmp_path / "pyproject.toml").write_text('[tool.probe-lint]\nignore = ["PL104", "PL101"]\n')
    cfg = config(tmp_path, dump_pth=str(tmp_path / "dump"))
    data = json.loads(cfg.read_text())
    del data["dump_path"]
    cfg.write_text(json.dumps(data))
    assert run_probe("lint", str(cfg), cwd=tmp_path).returncode == 0  # the project's choice, for msprobe itself
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert not marker.exists() and "PL104" in proc.stderr and "PL101" not in proc.stderr


def _earlier_dump(tmp_path: Path) -> Path:
    """``tmp_path/dump`` holding an earlier run's ``step3/rank`` dump (its
    dump.json written), as the tester's second run found it."""
    earlier = tmp_path / "dump" / "step3" / "rank"
    earlier.mkdir(parents=True)
    (earlier / "dump.json").write_text('{"data": {"earlier": 1}}')
    os.chmod(tmp_path / "dump", 0o750)
    return earlier / "dump.json"


#: every way a project or a command line turns a rule off or down: the table's ignore (by code, prefix and
#: name), select, per-file ignores (by file and at the dump_path pointer), a severity, and the flags; with
#: the grade `probe lint --check-fs` gives PL411 then (none: not reported)
TURNED_OFF = [
    ('ignore = ["PL411"]\n', [], None),
    ('ignore = ["PL407"]\n', [], "warning"),  # the tester's: PL407 used to hold the earlier-dump check
    ('ignore = ["PL4"]\n', [], None),
    ('ignore = ["dump-path-holds-other-run"]\n', [], None),
    ('select = ["PL1"]\n', [], None),
    ('[tool.probe-lint.per-file-ignores]\n"config.json" = ["PL411"]\n', [], None),
    ('[tool.probe-lint.per-file-ignores]\n"config.json#/dump_path" = ["PL4"]\n', [], None),
    ('[tool.probe-lint.severity]\nPL411 = "info"\n', [], "info"),
    ("", ["--ignore", "PL411"], None),
    ("", ["--ignore", "PL4"], None),
    ("", ["--select", "PL1"], None),
    ("", ["--isolated", "--select", "PL2"], None),
]


def _launch_refused(tmp_path, table, flags):
    """``probe run`` with ``[tool.probe-lint]`` ``table`` and ``flags``: it
    must refuse (exit 1) without starting the command. (config, process)."""
    (tmp_path / "pyproject.toml").write_text("[tool.probe-lint]\n" + table)
    cfg = config(tmp_path, rank=[], step=[])
    os.chmod(cfg, 0o640)
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), *flags, "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 1 and not marker.exists(), proc.stderr
    return cfg, proc


@pytest.mark.parametrize("table, flags, in_lint", TURNED_OFF)
def test_no_setting_lets_a_run_write_into_an_earlier_dump(tmp_path, table, flags, in_lint):
    """A tester's finding: a project with `ignore = ["PL407"]` (or `probe
    run --ignore PL407`, `--select PL1`) also turned off the guard against
    an earlier run's dump: `probe run` started the job, which overwrote
    step3/rank/dump.json, and `probe report` named the old run's origin.
    PL411 is one of the rules the debugger cannot run without: `probe lint`
    keeps the project's choice, `probe run` refuses whatever it says."""
    old = _earlier_dump(tmp_path)
    cfg, proc = _launch_refused(tmp_path, table, flags)
    assert "PL411 error" in proc.stderr and "already holds a dump of an earlier run (step3/rank)" in proc.stderr
    assert old.read_text() == '{"data": {"earlier": 1}}'
    # the lint alone reports as the project and the flags ask (the settings are for reporting)
    lint = run_probe("lint", str(cfg), "--check-fs", *flags, "--format", "json", cwd=tmp_path)
    grades = {d["severity"] for d in json.loads(lint.stdout)["diagnostics"] if d["code"] == "PL411"}
    assert grades == ({in_lint} if in_lint else set()), lint.stdout


@pytest.mark.parametrize("table, flags", [('ignore = ["PL407"]\n', []), ('select = ["PL1"]\n', []),
                                          ("", ["--ignore", "PL4"])])
def test_no_setting_lets_a_run_start_into_a_dump_path_it_cannot_write(tmp_path, table, flags):
    """The same for PL407: a dump_path that is a file, let through, makes
    the debugger turn detection off and the job end with a false "no
    overflow found"."""
    (tmp_path / "dump").write_text("not a folder")
    _, proc = _launch_refused(tmp_path, table, flags)
    assert "PL407 error" in proc.stderr and "exists and is not a directory" in proc.stderr


@pytest.mark.parametrize("nested", ["rank/step3", "rank0/step3"])
def test_an_earlier_dump_nested_rank_first_blocks_the_launch(tmp_path, nested):
    """`probe report` reads a dump nested rank first as well as msprobe's
    step first; a new run into it would be read with it as one run, so
    `probe run` refuses it as it refuses ``step3/rank``."""
    earlier = tmp_path / "dump" / nested
    earlier.mkdir(parents=True)
    (earlier / "dump.json").write_text('{"data": {"earlier": 1}}')
    os.chmod(tmp_path / "dump", 0o750)
    cfg = config(tmp_path, rank=[], step=[])
    os.chmod(cfg, 0o640)
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 1 and not marker.exists(), proc.stderr
    assert "PL411 error" in proc.stderr and f"already holds a dump of an earlier run ({nested})" in proc.stderr
    assert (earlier / "dump.json").read_text() == '{"data": {"earlier": 1}}'


def test_bad_probe_checks_exits_2_before_starting(tmp_path):
    cfg = config(tmp_path)
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path,
                     env={"PROBE_CHECKS": "bogus"})
    assert proc.returncode == 2 and not marker.exists()
    assert "PROBE_CHECKS must be 'exact', 'auto' or 'sentinel', not 'bogus'" in proc.stderr
    assert "passed" not in proc.stderr
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path,
                     env={"PROBE_CHECKS": "Sentinel"})  # case does not matter, as for PrecisionDebugger
    assert proc.returncode == 0 and marker.exists()
    marker.unlink()
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path,
                     env={"PROBE_SYNC": "maybe"})
    assert proc.returncode == 2 and not marker.exists() and "passed" not in proc.stderr
    assert "PROBE_SYNC must be '0', '1' or 'auto' (or off/on, false/true, no/yes), not 'maybe'" in proc.stderr


def test_unreadable_config_exits_2(tmp_path):
    marker = tmp_path / "started"
    proc = run_probe("run", str(tmp_path / "missing.json"), "--", PY, "-c",
                     f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 2 and not marker.exists() and "PL006" in proc.stderr


@pytest.mark.parametrize("before, hint", [
    (["--mindspore-versoin", "2.5.0", "--"], False),  # a misspelt probe option is not the command
    (["--format", "json", "--"], False),  # a lint option probe run does not take
    ([], True),  # no -- at all: CMD's own options would be read as probe's
])
def test_an_option_probe_does_not_know_is_a_usage_error_not_the_command(tmp_path, before, hint):
    config(tmp_path)
    marker = tmp_path / "started"
    proc = run_probe("run", "config.json", *before, PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    assert "No such option" in proc.stderr and "starting" not in proc.stderr
    assert ("put -- between probe's options and the command" in " ".join(proc.stderr.split())) == hint


def test_a_command_without_dashes_is_a_usage_error_even_when_its_options_are_probes(tmp_path):
    """A hunt's finding: ``probe run cfg.json python train.py --strict``
    ran train.py without ``--strict``, which probe took as its own. CMD
    needs ``--`` before it; nothing starts without."""
    config(tmp_path)
    marker = tmp_path / "started"
    script = tmp_path / "child.py"
    script.write_text(f"import sys; open({str(marker)!r}, 'w').write(repr(sys.argv[1:]))\n")
    proc = run_probe("run", "config.json", PY, str(script), "--strict", cwd=tmp_path)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    assert "put -- between probe's options and the command" in " ".join(proc.stderr.split())
    # a review's finding: a -- later on did not help the options before it
    proc = run_probe("run", "config.json", PY, str(script), "--strict", "--", "x", cwd=tmp_path)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    proc = run_probe("run", "config.json", "--", PY, str(script), "--strict", cwd=tmp_path)
    assert proc.returncode == 0 and marker.read_text() == "['--strict']", proc.stderr


def test_runs_command_with_env_and_passes_status(tmp_path):
    cfg = config(tmp_path)
    script = tmp_path / "child.py"
    script.write_text("import json, os, sys\n"
                      "json.dump({'cfg': os.environ['PROBE_CONFIG'], 'path': os.environ['PATH'],\n"
                      "           'argv': sys.argv[1:]}, open('seen.json', 'w'))\n"
                      "sys.exit(7)\n")
    proc = run_probe("run", "config.json", "--", "python", "-u", "child.py", "--flag", "x", cwd=tmp_path,
                     env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 7, proc.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["cfg"] == str(cfg) and seen["argv"] == ["--flag", "x"]
    assert seen["path"].split(os.pathsep)[0] == os.path.dirname(os.path.abspath(sys.executable))
    assert "passed; starting" in proc.stderr


def test_a_job_whose_debugger_turned_detection_off_is_warned_about_at_the_end(tmp_path):
    """A tester's finding: a full disk turned the job's detection off
    ("probe_runtime: detection turned off: cannot write the dump (...)"
    mid-log) and probe run ended without a word. It reads the reason the
    debugger kept in its dump_path marker and warns, naming the rank,
    step and reason; an earlier run's marker is not this job's. The exit
    status stays the job's (a finished training run is no failed one, and
    `probe run ... || exit 1` must still reach `probe report`)."""
    from msprobe_lint.live_writers import claim

    cfg = config(tmp_path)
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / ".probe-writer-rank0.lock").write_text(json.dumps(  # an earlier run's, stale
        {"pid": 999999, "host": "elsewhere", "started": "2020-01-01T00:00:00Z", "rank_dir": "rank0",
         "turned_off": {"reason": "an earlier run's reason", "step": 9}}))
    reason = "cannot write the dump (OSError: [Errno 28] No space left on device)"

    class TurningOff(FakeRunner):
        def __call__(self, argv, env, launcher=None):
            held = claim(str(dump), "rank1")
            assert held is not None
            held.turned_off(reason, 3)
            held.release()
            return super().__call__(argv, env, launcher)

    stream = io.StringIO()
    status = guarded_run(str(cfg), ["true"], LintOptions(isolated=True), stream=stream, runner=TurningOff(0))
    err = stream.getvalue()
    assert status == 0, err
    assert err.endswith(f"probe: warning: detection was turned off in rank1 (step 3): {reason}\n"
                        f"probe: warning: the dump in {dump} lacks what the job found from then on and is no "
                        f"all-clear: `probe report {dump}` says what it holds; the exit status is the job's own "
                        "(0)\n"), err
    assert "earlier run" not in err
    # a job that turned nothing off: no word
    stream = io.StringIO()
    (dump / ".probe-writer-rank1.lock").unlink()
    assert guarded_run(str(cfg), ["true"], LintOptions(isolated=True), stream=stream, runner=FakeRunner(3)) == 3
    assert "turned off" not in stream.getvalue()


def test_child_killed_by_signal_gives_128_plus_n(tmp_path):
    config(tmp_path)
    proc = run_probe("run", "config.json", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                     cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGKILL


def test_command_not_found_is_127(tmp_path):
    config(tmp_path)
    proc = run_probe("run", "config.json", "--", "no-such-program-xyz", cwd=tmp_path)
    assert proc.returncode == 127 and "command not found" in proc.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_forwards_signal_to_child(tmp_path, signum):
    config(tmp_path)
    child = tmp_path / "child.py"
    child.write_text(
        "import signal, sys, time, pathlib\n"
        "def bye(n, f):\n"
        "    pathlib.Path('got').write_text(str(n))\n"
        "    sys.exit(42)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "signal.signal(signal.SIGINT, bye)\n"
        "pathlib.Path('ready').write_text('1')\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen(probe_command() + ["run", "config.json", "--", PY, "child.py"], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 42
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (tmp_path / "got").read_text() == str(int(signum))  # delivered once, as sent


def test_script_of_the_command_is_linted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                       "debugger = PrecisionDebugger()\n")  # never started: PL502
    cfg = config(tmp_path)
    for command in (["python", "-u", "train.py"], ["msrun", "--worker_num=1", "train.py"]):
        status, out, calls = guarded(cfg, command)
        assert status == 1 and not calls and "train.py:2" in out and "PL502" in out, out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_kill_9_of_probe_run_takes_the_child_with_it(tmp_path):
    """kill -9 of `probe run` (no chance to forward anything): the training
    process dies too instead of running on as an orphan."""
    config(tmp_path)
    child = tmp_path / "child.py"
    child.write_text("import os, pathlib, time\n"
                     "pathlib.Path('pid').write_text(str(os.getpid()))\n"
                     "time.sleep(120)\n")
    proc = subprocess.Popen(probe_command() + ["run", "config.json", "--", PY, "child.py"], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = None
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        pid = int((tmp_path / "pid").read_text())
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, f"child {pid} outlived probe run"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_not_started_into_a_dump_path_another_job_writes(tmp_path):
    """A job already writing the config's dump_path (its marker is held
    locked): probe run refuses to start a second one into it, naming it;
    once that job is gone, the launch goes ahead."""
    cfg = config(tmp_path)
    dump = tmp_path / "dump"
    (dump / "step0" / "rank").mkdir(parents=True)  # what the running job has written so far
    holder = subprocess.Popen([PY, "-c", "import sys, time\nfrom msprobe_lint.live_writers import claim\n"
                               "held = claim(sys.argv[1], 'rank')\nprint('ready', flush=True)\ntime.sleep(120)\n",
                               str(dump)], env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2])),
                              stdout=subprocess.PIPE, text=True)
    marker = tmp_path / "started"
    start = ["--", PY, "-c", f"open({str(marker)!r}, 'w').close()"]
    try:
        assert holder.stdout.readline().strip() == "ready"
        proc = run_probe("run", str(cfg), *start, cwd=tmp_path)
        assert proc.returncode == 1 and not marker.exists(), proc.stderr
        assert f"is being written by another running job (rank: pid {holder.pid}" in proc.stderr
        assert "passed; starting" not in proc.stderr
        # not the earlier-run advice to move the dump away: it would move it from under the running job
        assert "PL411" not in proc.stderr and "mv " not in proc.stderr, proc.stderr
    finally:
        holder.kill()
        holder.wait()
    (dump / "step0" / "rank").rmdir()
    proc = run_probe("run", str(cfg), *start, cwd=tmp_path)
    assert proc.returncode == 0 and marker.exists(), proc.stderr


@pytest.mark.parametrize("ranks, codes", [([0], {"PL304"}), ([3], {"PL303", "PL304"})])
def test_plain_python_is_one_process_before_the_start(tmp_path, monkeypatch, ranks, codes):
    """`probe run cfg -- python train.py` with "rank": [0] or [3]: world
    size 1 is known before the start, so the refusal the in-process gate
    would make after MindSpore was imported comes first; PL303 with no rank
    left is graded as the gate grades it (an error)."""
    monkeypatch.chdir(tmp_path)
    for name in ("RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "t.py").write_text("")
    cfg = config(tmp_path, rank=ranks)
    status, out, calls = guarded(cfg, ["python", "t.py"])
    assert status == 1 and not calls, out
    assert {code for code in ("PL303", "PL304") if f"{code} error" in out} == codes, out
    assert "python without a launcher: one process" in out
    # an outer launcher's environment gives the world size: not one process then
    monkeypatch.setenv("RANK_SIZE", "4")
    status, out, calls = guarded(config(tmp_path, rank=[3]), ["python", "t.py"])
    assert status == 5 and calls and "PL30" not in out, out


def test_pl303_severity_is_the_same_in_the_catalogue_and_the_gate():
    """PL303 is a warning, and the catalogue says when it is an error (no
    rank left in a guarded launch), as the gate and probe run grade it."""
    from msprobe_lint.lint.rules import load_all

    rule = load_all()["PL303"]
    assert rule.severity.value == "warning" and "an error in probe run and the runtime gate" in rule.summary
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert rule.summary in readme


def test_a_script_that_reads_another_config_is_said_and_that_config_linted(tmp_path, monkeypatch):
    """`probe run CONFIG` with a script that hard-codes
    PrecisionDebugger(config_path="other.json"): the job reads other.json,
    not CONFIG. Said as a warning, other.json linted too; an error there
    refuses the start."""
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path)
    (tmp_path / "train.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                       "debugger = PrecisionDebugger(config_path='other.json')\n"
                                       "debugger.start()\ndebugger.stop()\ndebugger.step()\n")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"task": "overflow_check", "dump_path": "dump", "level": "L1"}))  # PL401
    status, out, calls = guarded(cfg, ["python", "train.py"])
    assert status == 1 and not calls, out
    assert ("probe: warning: train.py:2: PrecisionDebugger(config_path='other.json') ignores "
            f"{cfg} (PROBE_CONFIG): the job reads other.json; linting it too") in out
    assert "other.json:1:" in out and "PL401 error" in out and "not starting" in out
    other.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "d2"), "level": "L1"}))
    status, out, calls = guarded(cfg, ["python", "train.py"])
    assert status == 5 and calls and "ignores" in out, out
    assert "(other.json, which train.py reads instead, passed too); starting" in out
    other.unlink()  # the job would fail reading it
    status, out, calls = guarded(cfg, ["python", "train.py"])
    assert status == 2 and not calls and "PL006" in out, out
    # the script reading CONFIG itself: nothing to say
    (tmp_path / "train.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                       f"debugger = PrecisionDebugger({str(cfg)!r})\n"
                                       "debugger.start()\ndebugger.stop()\ndebugger.step()\n")
    status, out, calls = guarded(cfg, ["python", "train.py"])
    assert status == 5 and calls and "ignores" not in out, out


def test_a_script_finding_is_said_once_when_the_script_reads_another_config(tmp_path, monkeypatch):
    """A script hard-coding PrecisionDebugger(config_path="other.json")
    and never calling start(): its PL502 was printed twice, once under
    CONFIG and once under other.json, each "Found 1 error", for one
    finding. It is said, and counted, once."""
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path)
    (tmp_path / "other.json").write_text(cfg.read_text())
    (tmp_path / "hc.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                    "d = PrecisionDebugger(config_path=\"other.json\")\n")
    status, out, calls = guarded(cfg, ["python", "hc.py"])
    assert status == 1 and not calls, out
    assert out.count("PL502") == 1 and out.count("Found ") == 1, out
    assert "Found 1 error in 1 file." in out and "not starting" in out
    # an error in other.json too: each config's own findings, the script's once
    (tmp_path / "other.json").write_text(json.dumps({"task": "overflow_check", "dump_path": "dump", "level": "L1"}))
    status, out, calls = guarded(cfg, ["python", "hc.py"])
    assert status == 1 and not calls, out
    assert out.count("PL502") == 1 and out.count("PL401") == 1 and out.count("Found 1 error in 1 file.") == 2, out


def test_the_fix_summary_names_probe_lint_since_probe_run_has_no_fix(tmp_path):
    """`probe run` has no --fix: its refusal names `probe lint --fix CONFIG`."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "d"), "level": "L1",
                                  "overflow_check": {"overflow_num": 1}}))
    os.chmod(config, 0o640)
    (tmp_path / "t.py").write_text("print(1)\n")
    proc = run_probe("run", "c.json", "--", sys.executable, "t.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "[*] 1 fixable with `probe lint --fix c.json`." in proc.stderr + proc.stdout
    assert "fixable with --fix" not in proc.stderr + proc.stdout


def test_a_fix_that_needs_the_world_size_probe_run_found_is_told_it(tmp_path):
    """A fresh user's finding: `probe run` found world size 1 (a plain
    python) and said "fixable with `probe lint --fix c.json
    --unsafe-fixes`", which found nothing to fix without that world size.
    The command it names now carries it, and it does fix the file; the
    two rank rules' hints agree ("rank": [])."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "d"), "level": "L1",
                                  "rank": [5]}))
    os.chmod(config, 0o640)
    (tmp_path / "t.py").write_text("print(1)\n")
    proc = run_probe("run", "c.json", "--", sys.executable, "t.py", cwd=tmp_path)
    out = proc.stderr + proc.stdout
    assert proc.returncode == 1 and "PL304" in out and "PL303" in out, out
    assert "use rank 0" not in out and out.count('write "rank": []') == 2, out
    command = "probe lint --fix c.json --world-size 1 --unsafe-fixes"
    assert f"fixable with `{command}`" in out, out
    proc = run_probe(*command.split()[1:], cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(config.read_text())["rank"] == [], proc.stdout + proc.stderr


@pytest.mark.parametrize("how", ["--mode", "script", "link"])
def test_the_fix_command_carries_what_probe_run_knew(tmp_path, how):
    """A fresh user's finding: the command `probe run` named ("fixable with
    `probe lint --fix c.json --unsafe-fixes`") fixed nothing when the
    finding came from --mode, from the mode CMD's script sets, or from the
    filesystem checks probe run always makes: it said all checks passed.
    The command carries --mode, --script or --check-fs, and does fix it."""
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    dump = tmp_path / ("linked" if how == "link" else "real") / "d"
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(dump), "level": "L1", "rank": [],
                                  "step": [], "overflow_check": {"overflow_nums": 1}}))
    os.chmod(config, 0o640)
    mode = "GRAPH_MODE" if how == "script" else "PYNATIVE_MODE"
    (tmp_path / "t.py").write_text(f"import mindspore as ms\nms.set_context(mode=ms.{mode})\n")
    flags = ["--mode", "graph"] if how == "--mode" else []
    proc = run_probe("run", "c.json", *flags, "--", sys.executable, "t.py", cwd=tmp_path)
    out = proc.stderr + proc.stdout
    wanted = {"--mode": "--mode graph", "script": "--script t.py", "link": "--check-fs"}[how]
    command = f"probe lint --fix c.json {wanted} --unsafe-fixes"
    assert proc.returncode == 1 and f"fixable with `{command}`" in out, out
    before = config.read_text()
    proc = run_probe(*command.split()[1:], cwd=tmp_path)
    assert "fixed 1" in proc.stderr or "fixed 2" in proc.stderr, proc.stdout + proc.stderr
    assert config.read_text() != before


def test_every_config_the_job_reads_is_reported_at_once(tmp_path, monkeypatch):
    """A fresh user's finding: with CONFIG and the config the script reads
    instead both wrong, only CONFIG's errors were shown; the other's came
    after fixing it. Both are reported before the refusal."""
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path, level="L9")
    (tmp_path / "train.py").write_text("from probe_runtime import PrecisionDebugger\n"
                                       "debugger = PrecisionDebugger(config_path='other.json')\n"
                                       "debugger.start()\ndebugger.stop()\ndebugger.step()\n")
    (tmp_path / "other.json").write_text(json.dumps({"task": "overflow_check", "dump_path": "dump", "level": "L1"}))
    status, out, calls = guarded(cfg, ["python", "train.py"])
    assert status == 1 and not calls, out
    assert "PL103" in out and "other.json:1:" in out and "PL401 error" in out, out
    assert out.count("not starting") == 1, out


@pytest.mark.parametrize("expression, warned", [('os.path.join("/tmp", "other.json")', True),
                                                ('os.environ["PROBE_CONFIG"]', False),
                                                ("None", False)])
def test_a_config_path_the_analysis_cannot_read_is_said_before_the_start(tmp_path, expression, warned):
    """A script passing config_path as an expression may read another
    config than CONFIG: said before the start (not linted), unless the
    expression reads PROBE_CONFIG, which probe run sets."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "d"), "level": "L1"}))
    os.chmod(config, 0o640)
    (tmp_path / "t.py").write_text("import os\nfrom probe_runtime import PrecisionDebugger\n"
                                   f"debugger = PrecisionDebugger(config_path={expression})\n"
                                   "if False:\n    debugger.start()\n")
    proc = run_probe("run", "c.json", "--", sys.executable, "t.py", cwd=tmp_path,
                     env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    said = "cannot tell which config that expression names" in proc.stderr
    assert said is warned, proc.stderr


def test_a_config_too_deep_for_json_is_pl001_and_not_started(tmp_path):
    """A config nested deeper than json.load reads crashed `probe run` in
    its check for running writers (RecursionError, a traceback), where
    `probe lint` says PL001."""
    cfg = tmp_path / "config.json"
    cfg.write_text('{"task": "overflow_check", "dump_path": ' + json.dumps(str(tmp_path / "dump"))
                   + ', "level": "L1", "overflow_check": ' + '{"a": ' * 1200 + "1" + "}" * 1200 + "}")
    marker = tmp_path / "started"
    proc = run_probe("run", str(cfg), "--", PY, "-c", f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 1 and not marker.exists()
    assert "PL001" in proc.stderr and "levels deep" in proc.stderr and "not starting" in proc.stderr


@pytest.mark.parametrize("body", [
    "v = 3\nif v == 0:\n    x = 0\n" + "".join(f"elif v == {i}:\n    x = {i}\n" for i in range(1, 501)),
    "x = " + "+".join(["1"] * 1000) + "\n",
])
def test_a_script_with_a_long_elif_chain_or_sum_is_analysed_and_run(tmp_path, body):
    """A valid training script with 500 elifs or a 1,000-term sum crashed
    `probe run` with RecursionError in the script analysis."""
    cfg = config(tmp_path)
    marker = tmp_path / "started"
    (tmp_path / "train.py").write_text(f"{body}open({str(marker)!r}, 'w').close()\n")
    proc = run_probe("run", str(cfg), "--", PY, "train.py", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0 and marker.exists() and "passed; starting" in proc.stderr, proc.stderr[-1000:]
