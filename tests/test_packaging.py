"""The schema and the HTML report's template ship inside the wheel, and a
non-editable install works from another folder without the source tree."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO, config, write_config


@pytest.mark.slow
def test_wheel_carries_the_schema_and_lints_from_elsewhere(tmp_path):
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(wheels), str(REPO)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                               str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = wheels.glob("msprobe_lint-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "msprobe_lint/schema/msprobe-config.schema.json" in names
        assert "msprobe_lint/report/render/templates/report.html.j2" in names
        assert "probe_format/records.py" in names  # the dump format both packages import
        archive.extractall(tmp_path / "site")
    cfg = write_config(tmp_path, config(level="l1"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    run = subprocess.run([sys.executable, "-c", "import sys, msprobe_lint.cli as c; assert 'site' in c.__file__; "
                          "c.main(sys.argv[1:])", "lint", str(cfg), "--isolated"],
                         capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=60)
    assert run.returncode == 1 and "PL103" in run.stdout, run.stdout + run.stderr
    schema = subprocess.run([sys.executable, "-c", "import sys, msprobe_lint.cli as c; c.main(['schema'])"],
                            capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=60)
    assert '"$schema"' in schema.stdout
    html = tmp_path / "report.html"
    page = subprocess.run([sys.executable, "-c", "import sys, msprobe_lint.cli as c; c.main(sys.argv[1:])", "report",
                           str(REPO / "tests" / "data" / "report" / "probe-l0"), "-f", "html", "-o", str(html)],
                          capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=60)
    assert page.returncode == 0, page.stderr
    assert "Cell.block.act.Scale.forward.0" in html.read_text(encoding="utf-8")
