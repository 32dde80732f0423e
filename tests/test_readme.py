"""The README's rule table is generated from the rule catalogue, not written
twice; it must be up to date."""
from __future__ import annotations

import subprocess
import sys

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
        named |= set(re.findall(r"(?<![\w./-])((?:msprobe_lint|probe_runtime|tests|tools|benchmarks|schema|docs|examples)"
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
