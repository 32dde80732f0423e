"""run-example.sh keeps the example's dump inside the clone: it writes the
example configs with the clone's absolute path, moves an earlier dump aside
(never deletes it) and never touches a folder shared by the host's users.
Run with setup.sh and probe stubbed (the real run is in the README test)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_run_example_writes_its_dump_inside_the_clone(tmp_path):
    clone = tmp_path / "clone"
    (clone / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "run-example.sh", clone)
    for name in ("config_l0.json", "config_l1.json"):
        shutil.copy(ROOT / "examples" / name, clone / "examples")
    (clone / "setup.sh").write_text("#!/bin/sh\nexit 0\n")
    bindir = clone / ".venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").symlink_to(sys.executable)
    (bindir / "probe").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'calls'}\nexit 0\n")
    for script in (clone / "setup.sh", bindir / "probe"):
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    earlier = clone / "example-dump" / "l1" / "step3" / "rank"
    earlier.mkdir(parents=True)
    (earlier / "overflow.json").write_text("[]")
    proc = subprocess.run(["bash", str(clone / "run-example.sh")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for level in ("l0", "l1"):
        written = json.loads((clone / "example-dump" / f"config_{level}.json").read_text())
        assert written["dump_path"] == str(clone / "example-dump" / level)
        assert written["level"] == level.upper()
    moved = [p for p in (clone / "example-dump").iterdir() if p.name.startswith("l1.old.")]
    assert len(moved) == 1 and (moved[0] / "step3" / "rank" / "overflow.json").read_text() == "[]"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "run example-dump/config_l1.json -- .venv/bin/python examples/train_overflow.py" in calls
    assert f"report {clone / 'example-dump' / 'l1'}" in calls
    assert "/tmp/" not in (ROOT / "run-example.sh").read_text()
    assert "/example-dump/" in (ROOT / ".gitignore").read_text().split()


def test_the_example_templates_point_nowhere_shared():
    """The templates' dump_path is a placeholder (PL409 if used as is),
    not a folder every clone and user of the host would share."""
    from msprobe_lint.lint.rules.paths import placeholder

    for name in ("config_l0.json", "config_l1.json"):
        dump_path = json.loads((ROOT / "examples" / name).read_text())["dump_path"]
        assert placeholder(dump_path) and not dump_path.startswith("/tmp"), dump_path
