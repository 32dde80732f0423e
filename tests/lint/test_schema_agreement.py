"""The JSON Schema on its own (what an editor or check-jsonschema sees)
agrees with ``probe lint --isolated`` on every golden lint case
(tests/cases) whose findings JSON Schema can express, and on every such
case of ../shared/cases/lint when it is present (an extra).

A case takes part when every code probe reports is a schema finding
(PL101-PL104, PL107, PL301), or when it reports nothing. The file is valid
for probe when none of those findings is an error: a value msprobe reads
as absent (a null level, rank or check_mode) is a warning, and the schema
accepts it, as it accepts a deprecated key probe only warns about; so
probe's exit status and check-jsonschema's agree. Left out, as SPEC section 3 says JSON Schema cannot
express them: duplicate keys (PL002), NaN/Infinity (PL005), a byte-order
mark (PL004), syntax errors (PL001), a non-object root (PL003), integral
floats such as ``3.0`` and reversed ``"a-b"`` ranges.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SHARED_CASES, run_probe

import golden

SCHEMA = REPO / "schema" / "msprobe-config.schema.json"
EXPRESSIBLE = {"PL101", "PL102", "PL103", "PL104", "PL107", "PL301"}
RANGE = re.compile(r"^([0-9]+)-([0-9]+)$")


def check_jsonschema() -> list[str]:
    beside = Path(sys.executable).parent / "check-jsonschema"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "check_jsonschema"]


def inexpressible(raw: bytes) -> str | None:
    """Why JSON Schema cannot judge this file the way probe does, or None."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return "byte-order mark"
    floats: list[float] = []
    try:
        data = json.loads(raw.decode("utf-8"), parse_float=lambda t: floats.append(float(t)) or float(t),
                          parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))
    except (ValueError, RecursionError):
        return "not strict JSON"
    if any(f.is_integer() for f in floats):
        return "integral float"
    if isinstance(data, dict):
        for key in ("rank", "step"):
            for item in data.get(key) or [] if isinstance(data.get(key), list) else []:
                match = RANGE.match(item) if isinstance(item, str) else None
                if match and int(match.group(1)) > int(match.group(2)):
                    return "reversed range"
    return None


def shared_verdicts() -> list[tuple[Path, set[str], bool]]:
    """(config, codes probe reports, whether one is an error) for each case
    of ../shared/cases/lint."""
    out = []
    for case in sorted(p.parent for p in (SHARED_CASES / "lint").glob("*/expect.json")):
        expect = json.loads((case / "expect.json").read_text(encoding="utf-8"))
        args = ["lint", str(case / "config.json"), "--isolated", "--format", "json", *expect.get("args", [])]
        if expect.get("script"):
            args += ["--script", str(case / expect["script"])]
        proc = run_probe(*args)
        assert proc.returncode in (0, 1, 2), proc.stderr
        found = json.loads(proc.stdout)["diagnostics"]
        out.append((case / "config.json", {d["code"] for d in found}, any(d["severity"] == "error" for d in found)))
    return out


# Options that change only the context, never the schema findings or which
# are reported (--select, --ignore and --msprobe-version do).
CONTEXT_OPTIONS = {"--mode", "--framework", "--jit-level", "--mindspore-version", "--world-size", "--script"}


def golden_verdicts() -> list[tuple[Path, set[str], bool]]:
    """(config, codes, whether one is an error) for each isolated single-config golden case; the
    codes are its expected diagnostics, which tests/lint/test_cases.py keeps
    current."""
    out = []
    for case in golden.discover():
        if case.format or case.make or case.env or case.pythonpath or not case.isolated:
            continue
        paths, options, args = [], set(), iter(case.args)
        for arg in args:
            if arg in CONTEXT_OPTIONS:
                next(args)
            elif arg.startswith("-"):
                options.add(arg)
            else:
                paths.append(arg)
        expected = golden.load_expected(case)
        if paths != ["config.json"] or options - {"--isolated", "--check-fs"} or expected is None or expected.exit == 2:
            continue
        found = [line.split(": ", 1)[1].split() for line in expected.diagnostics]
        out.append((case.folder / "config.json", {f[0] for f in found}, any(f[1] == "error" for f in found)))
    return out


def participants(verdicts: list[tuple[Path, set[str], bool]]) -> list[tuple[Path, bool]]:
    from msprobe_lint.lint.atb import is_atb_config

    out = []
    for config, codes, error in verdicts:
        if inexpressible(config.read_bytes()):
            continue
        try:
            if is_atb_config(json.loads(config.read_bytes())):
                continue  # msprobe's ATB dump config: its own schema, not this one
        except ValueError:
            pass
        if not codes or codes <= EXPRESSIBLE:
            out.append((config, not error))
    return out


def assert_check_jsonschema_agrees(cases: list[tuple[Path, bool]]) -> None:
    assert len(cases) >= 15
    assert any(valid for _, valid in cases) and any(not valid for _, valid in cases)
    files = [str(config) for config, _ in cases]
    proc = subprocess.run(check_jsonschema() + ["-o", "json", "--schemafile", str(SCHEMA), *files],
                          capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    assert report["parse_errors"] == []
    failing = {error["filename"] for error in report["errors"]}
    disagree = [(config.parent.name, "probe: " + ("valid" if valid else "invalid"))
                for config, valid in cases if (str(config) in failing) == valid]
    assert not disagree


def test_check_jsonschema_agrees_with_probe_on_the_golden_cases():
    assert_check_jsonschema_agrees(participants(golden_verdicts()))


@pytest.mark.shared
def test_check_jsonschema_agrees_with_probe_on_the_shared_cases():
    assert_check_jsonschema_agrees(participants(shared_verdicts()))


def test_the_schema_is_a_valid_2020_12_schema_with_editor_annotations():
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["title"] and schema["description"] and schema["markdownDescription"]
    top = schema["properties"]
    for key in ("task", "dump_path", "rank", "step", "level", "async_dump", "precision"):
        assert top[key].get("title") and top[key].get("description") and top[key].get("markdownDescription"), key
    for key in ("task", "level", "rank", "step"):
        assert "default" in top[key] and top[key].get("examples"), key
    for key in ("seed", "is_deterministic", "enable_dataloader"):
        assert top[key]["deprecated"] is True, key
    for name, section in schema["$defs"].items():
        if name.endswith("Section") and name != "emptySection":  # titled where it is used
            assert section.get("title") and section.get("description") and section.get("examples"), name
            for key, sub in section["properties"].items():
                assert sub.get("title") or sub.get("$ref"), (name, key)


def test_deprecated_keys_are_accepted_by_the_schema_alone():
    """check-jsonschema (like an editor) only strikes deprecated keys
    through; probe reports them as PL106 warnings, not errors."""
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    config = {"task": "overflow_check", "dump_path": "/d", "seed": 1, "is_deterministic": True,
              "overflow_check": {"overflow_nums": 1, "backward_input": ["x"]}}
    assert Draft202012Validator(schema).is_valid(config)


def test_check_jsonschema_accepts_the_values_probe_only_warns_about(tmp_path):
    """A null level, task, rank or check_mode (read by msprobe as absent)
    passes probe lint with a warning; check-jsonschema refused it."""
    cases = []
    for index, changes in enumerate(({"level": None}, {"task": None, "level": ""}, {"rank": None, "step": None},
                                     {"overflow_check": {"check_mode": "", "overflow_nums": None}},
                                     {"overflow_check": None})):
        config = tmp_path / str(index) / "config.json"
        config.parent.mkdir()
        config.write_text(json.dumps(dict({"task": "overflow_check", "dump_path": "/data/dump"}, **changes)))
        proc = run_probe("lint", "--isolated", "--format", "json", str(config))
        found = json.loads(proc.stdout)["diagnostics"]
        assert proc.returncode == 0 and found and {d["severity"] for d in found} == {"warning"}, found
        cases.append(config)
    invalid = tmp_path / "invalid" / "config.json"
    invalid.parent.mkdir()
    invalid.write_text(json.dumps({"task": "overflow_check", "dump_path": "/data/dump", "level": "l1"}))
    proc = subprocess.run(check_jsonschema() + ["-o", "json", "--schemafile", str(SCHEMA), *map(str, cases),
                                                str(invalid)], capture_output=True, text=True, timeout=300)
    assert {error["filename"] for error in json.loads(proc.stdout)["errors"]} == {str(invalid)}


def msprobe_reads(entry: str) -> bool:
    """Whether msprobe 8.1.2 takes the rank/step string ``entry``
    (get_step_or_rank_from_string, core/common/utils.py: split on "-",
    exactly two parts, each through int(), 0 <= first <= last <= 1000000)."""
    parts = entry.split("-")
    if len(parts) != 2:
        return False
    try:
        first, last = int(parts[0]), int(parts[1])
    except ValueError:
        return False
    return 0 <= first <= last <= 1_000_000


# Fullwidth digits (a Chinese input method's), Arabic-Indic and mathematical
# bold digits, the ideographic space: int() reads them all, so msprobe does.
# \x1c-\x1f are str.isspace() (and re's \s) but int() does not strip them.
RANGE_ENTRIES = ["1-3", "\uff11-\uff13", "\u0663-\u0665", "\U0001d7cf-\U0001d7d1", "\u3000\uff11 - \uff13\u3000",
                 "+\uff11_\uff10-\uff12\uff10", "\uff11", "\uff11-\uff13-\uff15", "\xb2-3", "\x1c1-3", "1-3\x1f",
                 "\uff11\uff0e5-3", "\uff11\u2212\uff13"]


def test_a_range_of_fullwidth_digits_is_valid_for_check_jsonschema_and_probe_as_for_msprobe(tmp_path):
    """"１-３" (U+FF11..) in rank or step: msprobe reads it with int(),
    which takes any Unicode digit, and collects 1-3. probe lint took it
    (re's \\d); the schema refused it, since \\d in a JSON Schema pattern
    is ECMA-262's, ASCII only (check-jsonschema, editors). Both now agree
    with msprobe, entry by entry."""
    configs = []
    for index, entry in enumerate(RANGE_ENTRIES):
        config = tmp_path / f"c{index}" / "config.json"
        config.parent.mkdir()
        config.write_text(json.dumps({"task": "statistics", "dump_path": "/data/dump", "level": "L1",
                                      "step": [entry], "rank": [entry]}, ensure_ascii=False), encoding="utf-8")
        configs.append(config)
    assert [msprobe_reads(e) for e in RANGE_ENTRIES] == [True] * 6 + [False] * 7
    proc = subprocess.run(check_jsonschema() + ["-o", "json", "--schemafile", str(SCHEMA), *map(str, configs)],
                          capture_output=True, text=True, timeout=300)
    failing = {error["filename"] for error in json.loads(proc.stdout)["errors"]}
    for config, entry in zip(configs, RANGE_ENTRIES):
        proc = run_probe("lint", "--isolated", "--format", "json", str(config))
        found = json.loads(proc.stdout)["diagnostics"]
        valid = msprobe_reads(entry)
        assert (str(config) not in failing) == valid, (entry, "check-jsonschema")
        assert proc.returncode == (0 if valid else 1) and all(d["code"] == "PL301" for d in found), (entry, found)


def test_the_range_pattern_takes_exactly_the_characters_int_takes():
    """The schema spells out int()'s digits and blanks (JSON Schema's \\d
    and \\s are not Python's): the classes hold exactly the characters
    int() reads as a digit (str.isdecimal) and strips around a number."""
    import unicodedata

    if unicodedata.unidata_version != "14.0.0":
        pytest.skip("the schema lists the digits of Unicode 14.0 (Python 3.11)")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    pattern = schema["$defs"]["indexList"]["items"]["anyOf"][1]["pattern"]
    blank, digit = re.match(r"\^(\[[^]]*\])\*\\\+\?(\[[^]]*\])\+", pattern).groups()
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(digit, every)) == {char for char in every if char.isdecimal()}
    assert set(re.findall(blank, every)) == {char for char in every if char.isspace() and msprobe_reads(f"{char}0-9")}
    for char in "0\uff10\U0001d7ce \u3000\x1c+_-a":
        for entry in (f"{char}-9", f"0-{char}", f"{char}0-9{char}", f"+{char}_1-2"):
            assert bool(re.search(pattern, entry)) == msprobe_reads(entry), entry
