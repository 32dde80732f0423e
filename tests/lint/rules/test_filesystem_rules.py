"""--check-fs (PL406-PL408) in temporary folders: soft links anywhere on
the path, dump_path as a file, a parent that is not writable, files and
folders writable by others or owned by another user; relative paths
resolved against --cwd, the resolved path shown.

The tests run as root, for whom os.access says everything is writable. The
"not writable" and "owned by another user" cases are therefore checked
for real in a forked child that drops to the unprivileged ``nobody`` user
before linting (skipped when that is not possible), plus one unit test
with os.access replaced, for the message."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import as_nobody, codes, config, write_config
from msprobe_lint.lint.api import LintOptions, lint_paths


def lint_fs(path: Path, **options):
    options.setdefault("isolated", True)
    return lint_paths([str(path)], LintOptions(check_fs=True, **options)).results[0].diagnostics


def only(diagnostics, code):
    return [d for d in diagnostics if d.code == code]


@pytest.fixture
def base(open_tmp):
    return open_tmp


def test_rules_do_not_run_without_check_fs(base):
    os.symlink(base, base / "link")
    cfg = write_config(base, config(dump_path=str(base / "link" / "dump")))
    found = lint_paths([str(cfg)], LintOptions(isolated=True)).results[0].diagnostics
    assert not {"PL406", "PL407", "PL408"} & set(codes(found))


# ---------------------------------------------------------------- PL406


def test_soft_link_as_the_dump_path_itself(base):
    (base / "real").mkdir()
    os.symlink(base / "real", base / "dump")
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "dump")))), "PL406")
    assert len(found) == 1 and f"{base}/dump -> {base}/real" in found[0].message
    assert found[0].pointer == "/dump_path" and found[0].line == 3


def test_soft_link_in_a_parent_of_a_path_not_yet_created(base):
    (base / "real").mkdir()
    os.symlink(base / "real", base / "link")
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "link" / "a" / "b")))), "PL406")
    assert len(found) == 1 and f"soft link {base}/link" in found[0].message
    assert found[0].hint == f"use the real path: {base}/real/a/b"


def test_dangling_soft_link_is_reported(base):
    os.symlink(base / "nowhere", base / "dump")
    assert only(lint_fs(write_config(base, config(dump_path=str(base / "dump")))), "PL406")


def test_soft_link_is_not_hidden_by_dotdot(base):
    (base / "real" / "x").mkdir(parents=True)
    os.symlink(base / "real" / "x", base / "link")
    found = lint_fs(write_config(base, config(dump_path=str(base / "link" / ".." / "dump"))))
    assert only(found, "PL406")


def test_config_file_through_a_soft_link(base):
    (base / "real").mkdir()
    write_config(base / "real", config(dump_path=str(base / "dumps")))
    os.symlink(base / "real", base / "cfg")
    found = only(lint_fs(base / "cfg" / "config.json"), "PL406")
    assert len(found) == 1 and found[0].message.startswith("config ") and found[0].pointer is None


def test_no_soft_link_no_pl406(base):
    (base / "real").mkdir()
    assert not only(lint_fs(write_config(base, config(dump_path=str(base / "real" / "dump")))), "PL406")


# ---------------------------------------------------------------- PL407


def test_dump_path_is_a_file(base):
    (base / "dumpfile").write_text("x")
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "dumpfile")))), "PL407")
    assert len(found) == 1 and "exists and is not a directory" in found[0].message


def test_dump_path_under_a_file(base):
    (base / "dumpfile").write_text("x")
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "dumpfile" / "sub")))), "PL407")
    assert len(found) == 1 and f"{base}/dumpfile is a file" in found[0].message


def test_dump_path_existing_folder_or_creatable_is_fine(base):
    (base / "dump").mkdir()
    assert not only(lint_fs(write_config(base, config(dump_path=str(base / "dump")))), "PL407")
    assert not only(lint_fs(write_config(base, config(dump_path=str(base / "new" / "deep")))), "PL407")


@pytest.mark.parametrize("levels, refused", [(16, False), (17, True)])
def test_dump_path_needing_more_new_levels_than_msprobe_creates(base, levels, refused):
    """A hunt's finding: msprobe 8.1.2's create_directory stops at a
    recursion depth of 16 (one call per missing folder), so a dump_path
    17 new levels deep made its PrecisionDebugger raise, while the lint
    passed it (16 and 17 checked against msprobe 8.1.2 itself)."""
    deep = base.joinpath(*[f"l{i}" for i in range(levels)])
    found = only(lint_fs(write_config(base, config(dump_path=str(deep)))), "PL407")
    assert bool(found) == refused, found
    if refused:
        assert "needs 17 new folder levels" in found[0].message and "at most 16" in found[0].message
        assert f"mkdir -p {deep}" in found[0].hint
    assert not (base / "l0").exists()


def test_dump_path_leaves_nothing_behind(base):
    """The creation check makes one folder and removes it."""
    (base / "dump").mkdir()
    lint_fs(write_config(base, config(dump_path=str(base / "dump"))))
    lint_fs(write_config(base, config(dump_path=str(base / "new" / "deep"))))
    assert sorted(p.name for p in base.iterdir()) == ["config.json", "dump"]
    assert list((base / "dump").iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self") or not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs Linux's /proc and root, for whom os.access lets /proc through")
def test_dump_path_where_no_folder_can_be_made_though_access_allows_it(base):
    """A fresh user's finding: root passes os.access for /proc, so
    `probe lint --check-fs` passed dump_path /proc/x, which the runtime
    then refused ("No such file or directory")."""
    found = only(lint_fs(write_config(base, config(dump_path="/proc/probe-dump"))), "PL407")
    assert len(found) == 1, found
    assert "no folder can be created in its nearest existing parent /proc" in found[0].message
    assert found[0].pointer == "/dump_path"


def test_dump_path_creation_refused_message(base, monkeypatch):
    """Unit check of the message when making a folder fails for another
    reason (a root-squashed mount: EACCES)."""
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    (base / "dump").mkdir()
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "dump")))), "PL407")
    assert len(found) == 1
    assert "no folder can be created in dump_path (Permission denied)" in found[0].message


@pytest.mark.parametrize("nested", ["rank0/step3", "rank/step0", "rank0/step3,rank1/step3"])
def test_an_earlier_dump_nested_rank_first_is_another_runs(base, nested):
    """`probe report` reads a dump nested rank first (``rank0/step3``) as
    well as msprobe's ``step3/rank0``, so a new run beside it is read with
    it as one run. PL411 counted only the step-first nesting and let such
    a dump_path through."""
    dump = base / "dump"
    for entry in nested.split(","):
        (dump / entry).mkdir(parents=True)
        (dump / entry / "dump.json").write_text("{}")
    (found,) = only(lint_fs(write_config(base, config(dump_path=str(dump)))), "PL411")
    assert found.severity.value == "warning"
    assert f"already holds a dump of an earlier run ({nested.replace(',', ', ')})" in found.message, found.message


def test_rank_named_folders_without_steps_are_not_a_dump(base):
    """Only a rank folder holding step folders is the other nesting: a
    ``rank0`` folder of something else, a ``ranking.txt`` file, or a
    ``rank0/notes`` folder is no earlier run."""
    dump = base / "dump"
    (dump / "rank0" / "notes").mkdir(parents=True)
    (dump / "ranking.txt").write_text("")
    (dump / "step1").mkdir()
    assert only(lint_fs(write_config(base, config(dump_path=str(dump)))), "PL411") == []


@pytest.mark.parametrize("nested", ["step0/rank", "rank/step0"])
def test_a_dump_being_written_is_not_taken_for_an_earlier_run(base, nested):
    """A fresh user's finding: a second job into the dump_path of one still
    running was told the step folders were an earlier run's and to move
    them away (under the running job). While their writer runs (its marker
    held locked) PL411 names that job instead; once it ended, the folders
    are an earlier run's again. The same in either nesting of the step and
    rank folders."""
    import subprocess
    import sys

    dump = base / "dump"
    (dump / nested).mkdir(parents=True)
    cfg = write_config(base, config(dump_path=str(dump)))
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom msprobe_lint.live_writers import claim\n"
                               "held = claim(sys.argv[1], 'rank')\nprint('ready', flush=True)\ntime.sleep(120)\n",
                               str(dump)], env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[3])),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        (found,) = only(lint_fs(cfg), "PL411")
        assert f"is being written by another running job (rank: pid {holder.pid}" in found.message, found.message
        assert "mv " not in (found.hint or "") and "own dump_path" in (found.hint or "")
    finally:
        holder.kill()
        holder.wait()
    (found,) = only(lint_fs(cfg), "PL411")
    assert "already holds a dump of an earlier run" in found.message and "mv " in (found.hint or "")


def test_not_writable_message_with_os_access_replaced(base, monkeypatch):
    """Unit check of the message; the real permission check is below."""
    (base / "ro").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != base / "ro")
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "ro" / "dump")))), "PL407")
    assert len(found) == 1
    assert f"its nearest existing parent {base}/ro is not writable by this user" in found[0].message


def _as_nobody(cfg: Path, **options) -> list[dict]:
    """Lint ``cfg`` as the user nobody; the diagnostics come back as dicts."""
    data = as_nobody(lambda: [d.to_dict() for d in lint_fs(cfg, **options)])
    assert isinstance(data, list), data
    return data


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to switch to nobody")
def test_read_only_parent_for_a_real_unprivileged_user(base):
    (base / "ro").mkdir(mode=0o755)              # root's folder: nobody cannot write in it
    (base / "mine").mkdir(mode=0o755)
    import pwd

    nobody = pwd.getpwnam("nobody")
    os.chown(base / "mine", nobody.pw_uid, nobody.pw_gid)
    cfg = write_config(base, config(dump_path=str(base / "ro" / "dump")))
    os.chmod(cfg, 0o644)
    found = [d for d in _as_nobody(cfg) if d["code"] == "PL407"]
    assert len(found) == 1 and f"{base}/ro is not writable" in found[0]["message"]
    ro_itself = write_config(base, config(dump_path=str(base / "ro")), "c2.json")
    found = [d for d in _as_nobody(ro_itself) if d["code"] == "PL407"]
    assert len(found) == 1 and "dump_path is not writable" in found[0]["message"]
    ok = write_config(base, config(dump_path=str(base / "mine" / "dump")), "c3.json")
    assert not [d for d in _as_nobody(ok) if d["code"] == "PL407"]


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to switch to nobody")
def test_owned_by_another_user_for_a_real_unprivileged_user(base):
    import pwd

    nobody = pwd.getpwnam("nobody")
    other = base / "other"
    other.mkdir(mode=0o755)
    os.chown(other, 4242, 4242)                  # neither nobody nor root
    def pl408(cfg):
        return [d for d in _as_nobody(cfg) if d["code"] == "PL408"]

    def nobodys(cfg):  # the config nobody runs is nobody's: only the dump_path is in question
        os.chown(cfg, nobody.pw_uid, nobody.pw_gid)
        return cfg

    cfg = nobodys(write_config(base, config(dump_path=str(other))))
    found = pl408(cfg)
    assert len(found) == 1 and "belongs to another user (uid 4242)" in found[0]["message"]
    mine = base / "mine"
    mine.mkdir(mode=0o755)
    os.chown(mine, nobody.pw_uid, nobody.pw_gid)
    assert not pl408(nobodys(write_config(base, config(dump_path=str(mine)), "c2.json")))
    # a helper's finding: root's files were trusted, but msprobe refuses them to anyone but root
    roots = base / "roots"
    roots.mkdir(mode=0o755)
    found = pl408(nobodys(write_config(base, config(dump_path=str(roots)), "c3.json")))
    assert len(found) == 1 and "belongs to another user (uid 0)" in found[0]["message"]
    found = pl408(write_config(base, config(dump_path=str(mine)), "c4.json"))  # root's config
    assert len(found) == 1 and found[0]["message"].startswith("config ") and "(uid 0)" in found[0]["message"]


# ---------------------------------------------------------------- PL408


def test_world_writable_dump_folder(base):
    (base / "open").mkdir()
    os.chmod(base / "open", 0o777)
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "open")))), "PL408")
    assert len(found) == 1 and "writable by other users" in found[0].message and "drwxrwxrwx" in found[0].message
    assert found[0].hint == f"chmod o-w {base}/open"


def test_world_writable_parent_of_a_new_dump_path(base):
    (base / "open").mkdir()
    os.chmod(base / "open", 0o777)
    found = only(lint_fs(write_config(base, config(dump_path=str(base / "open" / "new")))), "PL408")
    assert len(found) == 1 and "nearest existing parent" in found[0].message


def test_sticky_shared_parent_is_fine(base):
    (base / "shared").mkdir()
    os.chmod(base / "shared", 0o1777)          # like /tmp
    assert not only(lint_fs(write_config(base, config(dump_path=str(base / "shared" / "mine")))), "PL408")


def test_world_writable_config_file(base):
    cfg = write_config(base, config(dump_path=str(base / "dump")))
    os.chmod(cfg, 0o666)
    found = only(lint_fs(cfg), "PL408")
    assert len(found) == 1 and found[0].message.startswith("config ") and found[0].line == 1


def test_private_folder_is_fine(base):
    (base / "dump").mkdir()
    os.chmod(base / "dump", 0o750)
    assert not only(lint_fs(write_config(base, config(dump_path=str(base / "dump")))), "PL408")


# ---------------------------------------------------------------- relative paths and --cwd


def test_relative_dump_path_resolved_against_cwd_and_shown(base, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                  # somewhere else entirely
    (base / "job").mkdir()
    (base / "job" / "real").mkdir()
    os.symlink(base / "job" / "real", base / "job" / "out")
    cfg = write_config(base, config(dump_path="out/dump"))
    found = only(lint_fs(cfg, cwd=str(base / "job")), "PL406")
    assert len(found) == 1 and f"out/dump (resolved to {base}/job/out/dump)" in found[0].message
    assert not only(lint_fs(cfg), "PL406")      # against the real current folder: no link there


def test_relative_config_path_is_resolved_against_here_not_cwd(base, monkeypatch):
    monkeypatch.chdir(base)
    cfg = write_config(base, config(dump_path=str(base / "dump")))
    os.chmod(cfg, 0o666)
    (base / "elsewhere").mkdir()
    found = only(lint_fs(Path("config.json"), cwd=str(base / "elsewhere")), "PL408")
    assert len(found) == 1 and f"resolved to {base}/config.json" in found[0].message


def test_cli_check_fs(base):
    from conftest import run_probe

    (base / "dumpfile").write_text("x")
    cfg = write_config(base, config(dump_path="dumpfile"))
    proc = run_probe("lint", str(cfg), "--isolated", "--check-fs", "--cwd", str(base), "--format", "json")
    found = {d["code"]: d for d in json.loads(proc.stdout)["diagnostics"]}
    assert "PL407" in found and f"resolved to {base}/dumpfile" in found["PL407"]["message"]
    assert proc.returncode == 1


def test_unreachable_path_does_not_crash(base, monkeypatch):
    real_stat = os.stat

    def denied(path, *args, **kwargs):
        if str(path).startswith(str(base / "locked")):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", denied)
    found = lint_fs(write_config(base, config(dump_path=str(base / "locked" / "dump"))))
    assert not [d for d in found if "internal error" in d.message]


@pytest.mark.parametrize("entry, shown", [
    ("pynative/step1/rank", "pynative/step1/rank"), ("graph/step3/rank0", "graph/step3/rank0"),
    ("pynative/rank0/step3", "pynative/rank0/step3"), ("rank0", "rank0"), ("rank", "rank"), ("step3", "step3")])
def test_every_layout_probe_report_reads_is_an_earlier_dump(base, entry, shown):
    """A tester's finding: `probe report` also reads msprobe's
    ``graph/``/``pynative/`` split and a lone rank or step folder holding
    the records, and PL411 let a new run start beside them: the report then
    named the old run's origin as the new run's."""
    dump = base / "dump"
    (dump / entry).mkdir(parents=True)
    (dump / entry / ("overflow.json" if entry == "step3" else "dump.json")).write_text("{}")
    (found,) = only(lint_fs(write_config(base, config(dump_path=str(dump)))), "PL411")
    assert f"already holds a dump of an earlier run ({shown})" in found.message, found.message


@pytest.mark.parametrize("entry", ["rank_old/step1", "ranking/step1", "rank0_1/step3", "step3/rank_notes.txt",
                                   "rank0/step3"])
def test_names_msprobe_does_not_write_are_no_dump(base, entry):
    """A tester's finding: any name starting with ``rank`` counted, files
    too: an old dump moved aside inside dump_path (``rank_old/step1``), or
    a file ``rank0/step3``, blocked every launch with no way around it.
    Only msprobe's folder names count (``rank``, ``rank<R>``, ``step<N>``)."""
    dump = base / "dump"
    (dump / entry).parent.mkdir(parents=True)
    if entry.endswith((".txt", "/step3")) and entry.startswith(("step3/", "rank0/")):
        (dump / entry).write_text("")
    else:
        (dump / entry).mkdir()
    assert only(lint_fs(write_config(base, config(dump_path=str(dump)))), "PL411") == []
