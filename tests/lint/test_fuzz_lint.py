"""The lint never crashes (issue 9): property tests over arbitrary JSON
values in every config position, byte mutations of msprobe's docs
examples and the real configs (tests/data), the hostile inputs named in the issue
(10,000 levels of nesting, 10 MiB strings at and over the file limit,
invalid UTF-8, escaped lone surrogates, huge numbers, duplicate keys at
depth, keys with '/', '~', quotes and escapes), and random context flags.

For every input: exit status 0, 1 or 2, no traceback, no "internal error"
diagnostic, every line and column inside the file, every output format
writable. The oracle and the generators are fuzz/fuzz_lint.py's (its long
run: ``python fuzz/fuzz_lint.py 300s``); here the budget is bounded (well
under a minute in all).
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_lint.lint import loader
from msprobe_lint.lint.api import LintOptions, lint_paths
from msprobe_lint.lint.engine import lint_file

from conftest import REPO, run_probe, write_config

_spec = importlib.util.spec_from_file_location("fuzz_lint", REPO / "fuzz" / "fuzz_lint.py")
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["fuzz_lint"] = fuzz
_spec.loader.exec_module(fuzz)

SEEDS = fuzz.seeds()
SEED_DATA = [d for d in map(json.loads, SEEDS) if isinstance(d, dict)]
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def assert_fine(raw: bytes, flags: dict | None = None) -> None:
    problems = fuzz.check_input(raw, flags)
    assert not problems, "\n".join(problems)


def test_the_seeds_are_there_and_clean():
    assert len(SEEDS) >= 10, "tests/data/msprobe_docs and tests/data/real are the fuzz seeds"
    for raw in SEEDS[:3]:
        assert_fine(raw)


# ---------------------------------------------------------------------------
# Strategies

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10 ** 40), max_value=10 ** 40)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(fuzz.TRICKY_STRINGS))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6) | st.sampled_from(fuzz.TRICKY_STRINGS), inner,
                                             max_size=4), max_leaves=12)
literals = st.sampled_from(fuzz.LITERALS)
flag_sets = st.fixed_dictionaries({name: st.sampled_from(values) for name, values in fuzz.FLAG_VALUES.items()})
all_keys = st.sampled_from(sorted({k for keys in fuzz.known_keys().values() for k in keys})) | st.sampled_from(
    fuzz.TRICKY_STRINGS)


@st.composite
def configs_with_a_value(draw):
    """A seed config with an arbitrary value at one position; the text
    sometimes with a raw literal (NaN, 1e400, a huge integer) instead."""
    data = json.loads(json.dumps(draw(st.sampled_from(SEED_DATA))))
    value = draw(json_values)
    where = draw(st.sampled_from(["top", "section", "rank", "step", "nested", "replace"]))
    if where == "top":
        data[draw(all_keys)] = value
    elif where == "section":
        section = draw(st.sampled_from([k for k in fuzz.known_keys() if k] + ["task-of-config"]))
        section = str(data.get("task")) if section == "task-of-config" else section
        target = data.get(section)
        if not isinstance(target, dict):
            target = data[section] = {}
        target[draw(st.sampled_from(fuzz.known_keys().get(section, ["x"])) | all_keys)] = value
    elif where in ("rank", "step"):
        items = data.get(where) if isinstance(data.get(where), list) else []
        data[where] = items + [value]
    elif where == "nested":
        node = data
        for key in draw(st.lists(all_keys, min_size=1, max_size=4)):
            child = node.get(key)
            node = node.setdefault(key, {}) if not isinstance(child, dict) else child
            if not isinstance(node, dict):
                break
        if isinstance(node, dict):
            node[draw(all_keys)] = value
    else:
        data = value
    text = json.dumps(data, indent=draw(st.sampled_from([None, 2, 4])), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()) and isinstance(data, dict) and data:
        key = json.dumps(draw(st.sampled_from(sorted(data))))
        literal = draw(literals | st.just("1"))
        index = text.find(key + ":")
        if index >= 0:
            head = index + len(key) + 1
            text = text[:head] + " " + literal + ", " + key + ":" + text[head:]  # a duplicate, raw literal first
    return text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------
# Properties (library API: fast)

@settings(FUZZ, max_examples=300)
@given(configs_with_a_value(), flag_sets)
def test_arbitrary_values_in_every_position(raw, flags):
    assert_fine(raw, flags)


@settings(FUZZ, max_examples=300)
@given(st.integers(0, len(SEEDS) - 1), st.integers(0, 2 ** 32), flag_sets)
def test_random_byte_mutations_of_the_seed_configs(index, seed, flags):
    assert_fine(fuzz.mutate(random.Random(seed), SEEDS[index], big=False), flags)


@settings(FUZZ, max_examples=200)
@given(st.integers(0, len(SEEDS) - 1), st.data())
def test_truncation_bit_flips_and_control_characters(index, data):
    raw = bytearray(SEEDS[index])
    cut = data.draw(st.integers(0, len(raw)))
    flips = data.draw(st.lists(st.tuples(st.integers(0, max(0, cut - 1)), st.integers(0, 7)), max_size=4))
    inserted = data.draw(st.binary(max_size=3) | st.sampled_from([b"\x00", b"\x1b", b"\r", b"\xff", b"\xc3"]))
    raw = raw[:cut]
    for at, bit in flips:
        if raw:
            raw[at] ^= 1 << bit
    at = data.draw(st.integers(0, len(raw)))
    raw[at:at] = inserted
    assert_fine(bytes(raw), data.draw(flag_sets))


@settings(FUZZ, max_examples=150)
@given(st.integers(0, 2 ** 32))
def test_structured_and_mutated_inputs_from_the_long_run(seed):
    rng = random.Random(seed)
    assert_fine(fuzz.random_input(rng, big=False), fuzz.random_flags(rng))


# ---------------------------------------------------------------------------
# The real command line, on a smaller sample

@settings(FUZZ, max_examples=6)
@given(st.integers(0, 2 ** 32), st.sampled_from(["text", "json", "sarif", "github"]))
def test_cli_never_shows_a_traceback(seed, fmt):
    rng = random.Random(seed)
    raw, flags = fuzz.random_input(rng, big=False), fuzz.random_flags(rng)
    problems = fuzz.check_cli(raw, flags, fmt)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# The hostile inputs named in the issue, each explicitly

BASE = '{"task": "overflow_check", "dump_path": "/home/dump", "level": "L1", '


def _deep(levels: int, opener: str, closer: str, inner: str = "1") -> str:
    return opener * levels + inner + closer * levels


HOSTILE = {
    "nest-10000-arrays": _deep(10_000, "[", "]"),
    "nest-10000-objects": _deep(10_000, '{"a":', "}"),
    "nest-10000-in-rank": BASE + '"rank": ' + _deep(10_000, "[", "]") + "}",
    "nest-10000-in-section": BASE + '"overflow_check": ' + _deep(10_000, '{"a/~":', "}") + "}",
    "nest-10000-unclosed": "[" * 10_000,
    "nest-990-in-section": BASE + '"overflow_check": ' + _deep(985, '{"a":', "}", '{"k": 1, "k": NaN}') + "}",
    "surrogates": BASE + '"\\ud800": "\\udfff", "overflow_check": {"overflow_nums": "\\ud83d"}, "rank": ["\\ud800"]}',
    "surrogate-dump-path": '{"task": "overflow_check", "dump_path": "/home/\\udc80"}',
    "huge-float": BASE + '"overflow_check": {"overflow_nums": 1e400}, "rank": [-1e400]}',
    "huge-int": BASE + '"overflow_check": {"overflow_nums": 123456789012345678901234567890}, '
                       '"rank": [123456789012345678901234567890, "0-123456789012345678901234567890"]}',
    "int-over-digit-limit": BASE + '"step": [' + "1" * 4301 + "]}",
    "nan": BASE + '"overflow_check": {"overflow_nums": NaN}, "rank": [Infinity, -Infinity], "x": {"y": NaN}}',
    "duplicates-at-depth": BASE + '"overflow_check": {"a": {"b": {"c": 1, "c": 2}}, "a": 3, '
                                  '"overflow_nums": 1, "overflow_nums": 2}, "level": "L2"}',
    "pointer-keys": BASE + '"a/b": 1, "~": 2, "~1": 3, "\\"": 4, "\\\\": 5, "\\/": 6, "\\u0000": 7, '
                           '"overflow_check": {"/": {"~0": {"": 1}}}, "": 8}',
    "empty": "",
    "whitespace": " \n\r\n\t",
    "bom-only": "\ufeff",
    "two-boms": "\ufeff\ufeff{}",
    "cr-only": BASE.replace(", ", ",\r") + '"x": 1}',
    "crlf": BASE.replace(", ", ",\r\n") + '"x": 1}',
    "separators-in-strings": BASE + '"x": "a\u2028b\u0085c\x7f", "dump_path": "/a\u2029"}',
    "long-line": BASE + '"x": "' + "y" * 100_000 + '", "bad": 1}',
    "root-scalars": "123456789012345678901234567890",
    "root-string": '"\\ud800"',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input(name):
    assert_fine(HOSTILE[name].encode("utf-8", "surrogatepass"))


def test_hostile_bytes():
    for raw in (b"\xff\xfe{}", b'{"a": "\xed\xa0\x80"}', b'{"task": "\xc3"}', b"\xef\xbb\xbf" + b"\x80" * 5,
                b'{"a":' + b"\x00" * 10 + b"}", b"\xef\xbb\xbf\xef\xbb\xbf{}"):
        assert_fine(raw)


def test_hostile_inputs_through_the_cli():
    for name in ("nest-10000-objects", "surrogates", "int-over-digit-limit", "pointer-keys", "cr-only"):
        for fmt in ("text", "json"):
            problems = fuzz.check_cli(HOSTILE[name].encode("utf-8", "surrogatepass"), {}, fmt)
            assert not problems, (name, fmt, problems)


# ---------------------------------------------------------------------------
# 10 MiB: at the limit it is read and linted; over it, refused unread

def test_a_10_mib_string_at_the_limit_is_linted(tmp_path):
    head = BASE + '"x": "'
    tail = '", "bad": 1}'
    raw = (head + "y" * (loader.MAX_BYTES - len(head) - len(tail)) + tail).encode()
    assert len(raw) == loader.MAX_BYTES
    path = write_config(tmp_path, raw)
    result = lint_file(str(path))
    assert not result.unreadable
    assert {(d.code, d.line) for d in result.diagnostics} == {("PL101", 1)}
    assert_fine(raw)


def test_one_byte_over_10_mib_is_pl006_exit_2_without_reading_the_file(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    with open(path, "wb") as handle:  # sparse: nothing to read anyway
        handle.truncate(loader.MAX_BYTES + 1)
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    result = lint_file(str(path))
    monkeypatch.undo()
    assert str(path) not in [str(p) for p in opened], "the config was opened although st_size is over the limit"
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("PL006", 1, 1)]
    assert "10485761 bytes" in result.diagnostics[0].message
    run = lint_paths([str(path)], LintOptions(isolated=True))
    assert run.status == 2
    done = run_probe("lint", "--isolated", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "PL006" in done.stdout


def test_a_file_that_grows_while_read_is_read_only_up_to_the_limit(tmp_path, monkeypatch):
    # st_size said small, but the file is bigger by the time it is read: the
    # read is bounded (MAX_BYTES + 1), never the whole file.
    path = tmp_path / "config.json"
    with open(path, "wb") as handle:
        handle.truncate(loader.MAX_BYTES * 3)
    real_stat = os.stat
    sizes = []

    class Small:
        def __init__(self, info):
            self._info = info

        def __getattr__(self, name):
            return 10 if name == "st_size" else getattr(self._info, name)

    monkeypatch.setattr(loader.os, "stat", lambda p, *a, **k: Small(real_stat(p, *a, **k)))
    real_read = os.read

    def spying_read(fd, size):
        sizes.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(loader.os, "read", spying_read)
    raw, reason = loader.read_bytes(str(path))
    monkeypatch.undo()
    assert raw is None and "grew over the 10 MiB limit" in reason
    assert sizes == [11, loader.MAX_BYTES + 1 - 11]  # st_size + 1, then up to the limit, never more


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    result = lint_file(str(fifo))  # would block forever if it were opened
    assert result.unreadable and [d.code for d in result.diagnostics] == ["PL006"]
    assert "not a regular file" in result.diagnostics[0].message


# ---------------------------------------------------------------------------
# Config files (issue 9): soft link, writable by others, another owner

CONFIG = {"task": "overflow_check", "dump_path": "/home/dump", "rank": [], "step": [], "level": "L1",
          "overflow_check": {"overflow_nums": 1}}


def fs_codes(path: Path, *, check_fs: bool = True) -> list[tuple[str, str]]:
    run = lint_paths([str(path)], LintOptions(isolated=True, check_fs=check_fs, framework="mindspore",
                                              mode="pynative"))
    return [(d.code, d.message) for r in run.results for d in r.diagnostics if d.code in ("PL406", "PL408")]


def test_config_through_a_soft_link_is_pl406(tmp_path):
    real = write_config(tmp_path, CONFIG, "real.json")
    real.chmod(0o640)
    link = tmp_path / "config.json"
    link.symlink_to(real)
    found = fs_codes(link)
    assert [c for c, _ in found] == ["PL406"] and "soft link" in found[0][1] and str(link) in found[0][1]
    assert fs_codes(link, check_fs=False) == []
    assert fs_codes(real) == []
    folder_link = tmp_path / "linked"
    folder_link.symlink_to(tmp_path, target_is_directory=True)
    assert [c for c, _ in fs_codes(folder_link / "real.json")] == ["PL406"]  # a parent is a link
    done = run_probe("lint", "--isolated", "--check-fs", str(link))
    assert done.returncode == 1 and "PL406" in done.stdout and "Traceback" not in done.stderr


def test_config_writable_by_others_is_pl408(tmp_path):
    path = write_config(tmp_path, CONFIG)
    path.chmod(0o666)
    found = fs_codes(path)
    assert [c for c, _ in found] == ["PL408"] and "writable by other users" in found[0][1]
    path.chmod(0o640)
    assert fs_codes(path) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_config_owned_by_another_user_is_fine_for_root(tmp_path):
    """msprobe's check_path_owner_consistent lets root read anyone's files."""
    path = write_config(tmp_path, CONFIG)
    path.chmod(0o640)
    os.chown(path, 4321, 4321)
    assert fs_codes(path) == []


def test_config_owned_by_another_user_is_pl408_simulated(tmp_path, monkeypatch):
    # Without root, simulate the other owner through os.getuid.
    path = write_config(tmp_path, CONFIG)
    path.chmod(0o640)
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1 if owner + 1 != 0 else owner + 2)
    found = fs_codes(path)  # root's file too: msprobe exempts a job run as root, not a file root owns
    assert [c for c, _ in found] == ["PL408"] and "belongs to another user" in found[0][1]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_config_own_path_gets_pl402_and_pl403_with_check_fs(tmp_path, monkeypatch):
    """A fresh user's finding: msprobe checks the config file's own real
    path for its characters and length as it reads it (so a config under
    "my configs/" stops the job), but the lint looked at the paths inside
    the config only. With --check-fs (always in the gate) it looks at the
    config's real path too; without it, where the config will live is not
    known."""
    def codes(path, check_fs=True):
        run = lint_paths([str(path)], LintOptions(isolated=True, check_fs=check_fs, framework="mindspore",
                                                  mode="pynative"))
        return [(d.code, d.message) for r in run.results for d in r.diagnostics if d.code in ("PL402", "PL403")]

    spaced = tmp_path / "my configs"
    spaced.mkdir()
    path = write_config(spaced, CONFIG)
    path.chmod(0o640)
    found = codes(path)
    assert [c for c, _ in found] == ["PL402"] and f"real path {path}" in found[0][1] and "' '" in found[0][1]
    assert codes(path, check_fs=False) == []
    monkeypatch.chdir(tmp_path)  # a real path over 4096 characters, read through a short relative one
    for _ in range(17):
        os.mkdir("d" * 250)
        os.chdir("d" * 250)
    write_config(Path("."), CONFIG).chmod(0o640)
    found = codes(Path("config.json"))
    assert [c for c, _ in found] == ["PL403"] and "characters long; the limit is 4096" in found[0][1], found
    monkeypatch.chdir(tmp_path)
    # the real path is judged: a clean link to the spaced folder is PL406 (a link) and PL402, not clean
    clean = tmp_path / "clean"
    clean.symlink_to(spaced, target_is_directory=True)
    assert [c for c, _ in codes(clean / path.name)] == ["PL402"]
    assert [c for c, _ in fs_codes(clean / path.name)] == ["PL406"]
    done = run_probe("lint", "--isolated", "--check-fs", str(path))
    assert done.returncode == 1 and "PL402" in done.stdout and "Traceback" not in done.stderr
