"""The README against the code: its rule table is generated from the rule
catalogue, not written twice, and must be up to date; the paths it names
exist; its report sample of the bundled example is real output."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


def test_rule_table_is_current():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "render_rules.py"), "--check"], cwd=REPO)
    assert proc.returncode == 0, "README rule table is stale: run python tools/render_rules.py --write"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "./run-example.sh" in readme.split("## ")[0]
    test_lines = [line.strip() for line in ci.splitlines() if "pytest" in line and not line.startswith("#")]
    assert test_lines and all(line in readme for line in test_lines)


def readme_section(title: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_path_the_readme_and_docs_name_exists():
    import re

    texts = [(REPO / "README.md").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md"))]
    texts.append((REPO / "benchmarks" / "README.md").read_text(encoding="utf-8"))
    named = set()
    for text in texts:
        named |= set(re.findall(r"(?<![\w./-])((?:msprobe_lint|probe_runtime|probe_format|tests|tools|benchmarks|schema"
                                r"|docs|examples)"
                                r"/[\w./-]*\w/?)", text))
    missing = sorted(path for path in named if not list(REPO.glob(path + "*"))  # `schema/msprobe-config*.json`
                     and not path.startswith("msprobe_lint/schema"))  # the wheel's copy of schema/
    assert not missing, missing


def test_the_layout_map_names_only_what_is_there():
    import re

    layout = readme_section("Layout").split("- `msprobe_lint/`:", 1)[1].split("\n- `", 1)[0]
    files = {p.name for p in (REPO / "msprobe_lint").rglob("*.py")} | {
        p.name + "/" for p in (REPO / "msprobe_lint").rglob("*") if p.is_dir() and p.name != "__pycache__"}
    files |= {"report.html.j2"}
    named = set(re.findall(r"`([\w.]+(?:\.py|/|\.j2))`", layout))
    assert named and not named - files, sorted(named - files)
    for folder in ("cli/", "lint/", "project/", "run/", "server/", "rules/", "script/", "fixes/", "reporters/"):
        assert f"`{folder}`" in layout, folder


def test_every_command_of_the_usage_runs(tmp_path):
    from conftest import run_probe

    usage = readme_section("Usage").split("```", 2)[1]
    commands = sorted({line.split()[1] for line in usage.splitlines() if line.startswith("probe ")})
    assert {"lint", "rules", "explain", "schema", "run", "report", "migrate", "server", "completion"} <= set(commands)
    for command in commands:
        args = [command] if command.startswith("-") else [command, "--help"]
        proc = run_probe(*args, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout, (command, proc.stderr)


def test_the_tests_layout_the_readme_states_holds():
    """Unit tests sit at their module's place (tests/<package>/test_<module>.py;
    tests/runtime/ for probe_runtime) and test file names are unique."""
    import re
    from collections import Counter

    found = [p for p in (REPO / "tests").rglob("test_*.py") if not {"cases", "data"} & set(p.parts)]
    twice = [name for name, n in Counter(p.name for p in found).items() if n > 1]
    assert not twice, twice
    unit = readme_section("Layout").split("unit tests of one module", 1)[1].split("scenario suites", 1)[0]
    named = re.findall(r"`(tests/[\w/]+/test_\w+\.py)`", unit)
    assert len(named) >= 4, unit
    for test in named:
        parts = test.split("/")[1:]
        top = {"runtime": ["probe_runtime"], "probe_format": ["probe_format"]}.get(parts[0], ["msprobe_lint", parts[0]])
        module = REPO.joinpath(*top, *parts[1:-1], parts[-1][len("test_"):])
        assert (REPO / test).is_file() and module.is_file(), (test, module)


EXAMPLE_INTRO = "On the bundled example\n(`./run-example.sh`, real output):\n\n```\n"


def _normalised(text: str, dump: str) -> list[str]:
    """Lines of a report with the dump folder and the example's path
    replaced (they differ per clone), trailing blanks dropped."""
    import re

    text = text.replace(dump, "DUMP")
    text = re.sub(r"\S*/examples/train_overflow\.py", "SCRIPT", text)
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.mark.slow
@pytest.mark.mindspore
def test_the_readme_report_sample_is_the_bundled_examples_real_output(tmp_path):
    """The README's `probe report` sample of the bundled example (and
    docs/report-format.md's, with its `--all` tail) is what `probe report`
    prints on a fresh run of it (with whatever checks are the default),
    compared line by line, the dump folder and the clone's path aside."""
    pytest.importorskip("mindspore")
    import json
    import os

    from conftest import run_probe

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert EXAMPLE_INTRO in readme, "the README's report sample of the bundled example moved"
    block = readme.split(EXAMPLE_INTRO, 1)[1].split("\n```", 1)[0]
    command, shown = block.split("\n", 1)
    assert command.startswith("$ probe report ")
    config = json.loads((REPO / "examples" / "config_l1.json").read_text(encoding="utf-8"))
    config["dump_path"] = str(tmp_path / "dump")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    os.chmod(path, 0o640)
    env = {k: v for k, v in os.environ.items() if k not in ("PROBE_CHECKS", "PROBE_SYNC", "RANK_ID", "RANK",
                                                            "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM")}
    env.update(PROBE_CONFIG=str(path), PYTHONPATH=str(REPO))
    trained = subprocess.run([sys.executable, str(REPO / "examples" / "train_overflow.py")], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert trained.returncode == 0, trained.stderr[-2000:]
    report = run_probe("report", str(tmp_path / "dump"), cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    assert report.returncode == 0, report.stderr
    dump = command.split()[-1]
    assert _normalised(shown, dump) == _normalised(report.stdout, str(tmp_path / "dump"))
    # docs/report-format.md's "Real output": the same report, then the tail of --all (step 4)
    docs = (REPO / "docs" / "report-format.md").read_text(encoding="utf-8")
    plain = docs.split(f"$ probe report {dump}\n", 1)[1].split(f"$ probe report {dump} --all\n", 1)
    assert _normalised(plain[0], dump) == _normalised(report.stdout, str(tmp_path / "dump"))
    every = run_probe("report", str(tmp_path / "dump"), "--all", cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    tail = plain[1].split("```", 1)[0]
    assert tail.startswith("...\n")
    real = _normalised(every.stdout, str(tmp_path / "dump"))
    shown_tail = _normalised(tail[len("...\n"):], dump)
    assert real[-len(shown_tail):] == shown_tail


def _code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a Markdown text, without their fences."""
    parts = text.split("```")
    return [part.split("\n", 1)[1] if "\n" in part else "" for part in parts[1::2]]


def _matches(expected: str, actual: str) -> bool:
    """True when ``actual`` is ``expected``, a line ``...`` in it standing
    for any number of lines."""
    chunks = [chunk.strip("\n") for chunk in ("\n" + expected + "\n").split("\n...\n")]
    lines = actual.rstrip("\n")
    if not lines.startswith(chunks[0]) or not lines.endswith(chunks[-1]):
        return False
    at = len(chunks[0])
    for chunk in chunks[1:-1]:
        at = lines.find(chunk, at)
        if at < 0:
            return False
        at += len(chunk)
    return len(chunks) > 1 or lines == chunks[0]


def test_the_readme_lint_samples_are_what_probe_prints(tmp_path):
    """Issue 34: the README's lint samples had drifted (the --fix summary
    wording). Each is run here: the sample in "Why", the --fix session of
    "Fixing" (in a folder standing for /tmp/fixdemo, as it says), the diff
    it shows and the release note of "Choosing the target release"."""
    import difflib
    import shlex
    import shutil

    from conftest import run_probe

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = _code_blocks(readme)
    why = next(b for b in blocks if b.startswith("examples/lint/mistakes.json:"))
    proc = run_probe("lint", "--isolated", "examples/lint/mistakes.json", cwd=REPO)
    assert why in proc.stdout, proc.stdout

    folder = tmp_path / "fixdemo"
    folder.mkdir()
    shutil.copy(REPO / "examples" / "lint" / "mistakes.json", folder / "config.json")
    before = (folder / "config.json").read_text(encoding="utf-8")
    session = next(b for b in blocks if b.startswith("$ probe lint --isolated config.json"))
    status = None
    for command in ("\n" + session).split("\n$ ")[1:]:
        line, _, expected = command.partition("\n")
        if line == "echo $?":
            assert expected.strip() == str(status)
            continue
        args = shlex.split(line)
        assert args[0] == "probe"
        proc = run_probe(*args[1:], cwd=folder)
        status = proc.returncode
        printed = (proc.stderr + proc.stdout).replace(str(folder), "/tmp/fixdemo")
        assert _matches(expected, printed), (line, printed)
    after = (folder / "config.json").read_text(encoding="utf-8")
    diff = next(b for b in blocks if b.startswith("-    \"rank\": 0,"))
    changed = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "-+" and not line.startswith(("---", "+++"))]
    assert changed == [line for line in diff.splitlines() if line[:1] in "-+"]

    note = next(b for b in blocks if "acc_check" in b and b.startswith("config.json:20:5: PL101"))
    (tmp_path / "acc.json").write_text('{"task": "overflow_check", "dump_path": "/d", "level": "L1",\n'
                                       + '"x": 1,\n' * 18 + '    "acc_check": {}}\n', encoding="utf-8")
    proc = run_probe("lint", "--isolated", "acc.json", cwd=tmp_path)
    first = next(line for line in proc.stdout.splitlines() if "acc_check" in line)
    assert first.replace("acc.json", "config.json") == " ".join(note.strip().splitlines())
