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
