"""msprobe_lint/installed.py reads a distribution's version from its
METADATA file without importing importlib.metadata; the answer must be
importlib.metadata's, for every distribution installed here."""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from msprobe_lint import installed


def expected(name: str):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_every_installed_distribution_agrees_with_importlib_metadata():
    names = {d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]}
    assert len(names) > 20  # MindSpore, jsonschema, typer, pytest ... are installed here
    wrong = {name: (installed.version(name), expected(name)) for name in sorted(names)
             if installed.version(name) != expected(name)}
    assert not wrong


@pytest.mark.parametrize("name", ["mindspore", "mindstudio-probe", "MindStudio_Probe", "jsonschema",
                                  "Check-JsonSchema", "msprobe-lint", "msprobe.lint", "pre_commit",
                                  "json.source.map", "no-such-dist", "no-such-dist-" + "x" * 8])
def test_spellings_of_a_name_agree_with_importlib_metadata(name):
    assert installed.version(name) == expected(name)


def test_a_version_is_read_from_the_first_folder_that_has_it(tmp_path, monkeypatch):
    for folder, version in (("first", "1.0"), ("second", "2.0")):
        info = tmp_path / folder / "Fake_Dist-9.9.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-dist\nVersion: {version}\n\nVersion: 3\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "first"), str(tmp_path / "second")])
    assert installed.version("fake.dist") == "1.0" == expected("fake.dist")


def test_an_unusual_install_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    info = tmp_path / "odd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: odd\n")  # no Version header
    egg = tmp_path / "eggy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: eggy\nVersion: 0.5\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert installed.version("odd") == expected("odd")
    assert installed.version("eggy") == "0.5" == expected("eggy")


def test_reading_a_version_does_not_import_importlib_metadata():
    code = ("import sys; from msprobe_lint.installed import version; v = version('jsonschema'); "
            "print(v is not None, 'importlib.metadata' in sys.modules, 'email' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "False", "False"], proc.stdout + proc.stderr
