#!/usr/bin/env python
"""Long fuzz run of ``probe lint``: the lint must never crash.

Usage::

    python fuzz/fuzz_lint.py 5000          # 5000 inputs
    python fuzz/fuzz_lint.py 300s          # as many inputs as fit in 300 s
    python fuzz/fuzz_lint.py 300s --seed 7 --cli-every 50

Inputs are made from msprobe's docs examples (``tests/data/msprobe_docs``)
and the real configs that are valid JSON (``tests/data/real``): arbitrary JSON
values put in every config position, and byte mutations (truncation, bit
flips, control characters, invalid UTF-8, byte-order marks, line-ending
changes, deep nesting, long strings, huge and non-finite numbers, escaped
lone surrogates, duplicate keys, keys with ``/``, ``~``, quotes and
escapes). Each input is linted through the library with random context
flags and rendered in every output format; every ``--cli-every``-th input
also through the real ``probe lint`` command.

A finding is: an exception (a traceback), an exit status other than 0, 1,
2, an "internal error" diagnostic (a rule that raised), a diagnostic whose
line/column is outside the file, a report that cannot be written, or a
``--format json`` report that is not JSON. The script prints how many
inputs it tried and every finding (with the input saved under
``--keep DIR``), and exits 1 if there was any.

The same functions (``check_input``, ``mutate``, ``structured``) serve the
bounded property tests in ``tests/lint/test_fuzz_lint.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "tests" / "data" / "msprobe_docs"
REAL = REPO / "tests" / "data" / "real"
MAX_BYTES = 10 * 1024 * 1024

# --------------------------------------------------------------------------
# Seeds


def seed_paths() -> list[Path]:
    """The valid configs mutations start from."""
    paths = sorted(DOCS.glob("*.json")) + sorted(REAL.glob("*/config.json"))
    return [p for p in paths if p.is_file() and p.name != "index.json" and _is_json(p)]


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_bytes())
    except ValueError:
        return False
    return True


def seeds() -> list[bytes]:
    """Bytes of every seed config (a fallback one when none is found)."""
    found = [p.read_bytes() for p in seed_paths()]
    return found or [b'{"task": "overflow_check", "dump_path": "/home/dump", "rank": [], "step": [],\n'
                     b' "level": "L1", "overflow_check": {"overflow_nums": 1}}\n']


# --------------------------------------------------------------------------
# Context flags

FLAG_VALUES: dict[str, list[Any]] = {
    "framework": [None, None, "mindspore", "msadapter", "pytorch", "MindSpore", "tensorflow", ""],
    "mode": [None, None, "pynative", "graph", "GRAPH_MODE", "0", "1", "2", ""],
    "jit_level": [None, None, "O0", "O1", "O2", "o2", "O3", ""],
    "mindspore_version": [None, None, "2.5.0", "2.6.0", "2.3.0rc1", "2.2", "1!0.1", "x.y", "9" * 40 + ".0"],
    "world_size": [None, None, 1, 2, 8, 0, -1, 10 ** 30, "8", "abc", True],
    "check_fs": [False, False, True],
    "strict": [False, True],
}
# What the real command line accepts (typer validates enums and ints).
CLI_FLAGS = {"framework": "--framework", "mode": "--mode", "jit_level": "--jit-level",
             "mindspore_version": "--mindspore-version", "world_size": "--world-size"}


def random_flags(rng: random.Random) -> dict[str, Any]:
    """A random set of context flags, odd values included."""
    return {name: rng.choice(values) for name, values in FLAG_VALUES.items()}


# --------------------------------------------------------------------------
# Arbitrary JSON values and where they go

TRICKY_STRINGS = [
    "", " ", "/", "~", "~0", "~1", "a/b", "a~b", "~1~0/", '"', "\\", '\\"', "\x00", "\x1b[31m", "\r", "\r\n",
    "\u2028", "\u0085", "\ud800", "\udfff", "\ud83d\ude00", "é", "数据", "\ufeff", "L0", "L1", "L2", "l1",
    "mix", "debug", "overflow_check", "statistics", "tensor", "free_benchmark", "run_ut", "grad_probe",
    "structure", "exception_dump", "0", "0-3", "3-0", "1-", "-1", "0-0", "²-3", "١-٣", "1" * 5000 + "-2",
    "2-" + "9" * 5000, "/home/dump", "./dump", "../dump", "~/dump", "$HOME/dump", "${X}", "/a b", "/" + "x" * 300,
    "/" + "a/" * 3000, "all", "input", "forward", "backward", "npy", "bin", "md5", "NaN", "Infinity",
]
NUMBERS = [0, 1, -1, 2, 3, 7, 8, 65535, 65536, -2, 10 ** 30, -(10 ** 30), 2 ** 63, 0.5, 3.0, -0.0, 1e300, 1e-300]
# Number literals written as text (json.dumps cannot produce them).
LITERALS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "123456789012345678901234567890",
            "1" * 4300, "1" * 4301, "-" + "9" * 5000, "1." + "0" * 5000, "1e-400", "0e0", "-0", "1E2", "3.0"]


def known_keys() -> dict[str, list[str]]:
    """Location ("" = top level, else a section) -> keys the schema knows."""
    try:
        from msprobe_lint.lint.rules.schema import key_index

        return {k: list(v) for k, v in key_index().items()}
    except Exception:  # fuzzing must not depend on the schema loading
        return {"": ["task", "dump_path", "rank", "step", "level", "overflow_check"]}


def random_key(rng: random.Random, location: str = "") -> str:
    keys = known_keys()
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(keys.get(location) or keys[""])
    if roll < 0.7:
        return rng.choice(keys[rng.choice(list(keys))])
    if roll < 0.9:
        return rng.choice(TRICKY_STRINGS)
    return "".join(rng.choice("ab/~\"\\\u00e9\ud800 ") for _ in range(rng.randint(0, 6)))


class Raw:
    """A number literal to splice in as text."""

    def __init__(self, text: str):
        self.text = text


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """An arbitrary JSON value (and now and then a Raw literal)."""
    roll = rng.random()
    if depth > 4 or roll < 0.55:
        kind = rng.randrange(6)
        if kind == 0:
            return rng.choice(TRICKY_STRINGS)
        if kind == 1:
            return rng.choice(NUMBERS)
        if kind == 2:
            return rng.choice([True, False, None])
        if kind == 3:
            return Raw(rng.choice(LITERALS))
        if kind == 4:
            return rng.randint(-10, 10 ** rng.randint(1, 25))
        return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x10FFFF)]))
                       for _ in range(rng.randint(0, 8)))
    if roll < 0.8:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {random_key(rng): random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def dump(value: Any, rng: random.Random) -> str:
    """JSON text of ``value`` with Raw literals spliced in, in a random
    layout (indent, ASCII or not)."""
    raws: dict[str, str] = {}

    def convert(v: Any) -> Any:
        if isinstance(v, Raw):
            marker = f"@@raw{len(raws)}@@"
            raws[marker] = v.text
            return marker
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v

    indent = rng.choice([None, 0, 2, 4, "\t"])
    text = json.dumps(convert(value), indent=indent, ensure_ascii=rng.random() < 0.5)
    for marker, literal in raws.items():
        text = text.replace(f'"{marker}"', literal)
    return text


def structured(rng: random.Random, seed: bytes) -> bytes:
    """A seed config with arbitrary values in random positions: top-level
    keys, task-section keys, rank/step items, nested objects; sometimes a
    duplicate key."""
    try:
        data = json.loads(seed)
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(5)
        if where == 0:
            data[random_key(rng)] = random_value(rng)
        elif where == 1:
            section = rng.choice([k for k in known_keys() if k]) if rng.random() < 0.8 else str(data.get("task"))
            target = data.setdefault(section, {})
            if isinstance(target, dict):
                target[random_key(rng, section)] = random_value(rng)
            else:
                data[section] = random_value(rng)
        elif where == 2:
            key = rng.choice(["rank", "step"])
            items = data.get(key)
            items = list(items) if isinstance(items, list) else []
            items.insert(rng.randint(0, len(items)), random_value(rng, depth=5))
            data[key] = items
        elif where == 3:
            node = data
            for _depth in range(rng.randint(1, 4)):
                key = random_key(rng)
                child = node.get(key)
                if not isinstance(child, dict):
                    child = node[key] = {}
                node = child
            node[random_key(rng)] = random_value(rng)
        elif data:
            key = rng.choice(list(data))
            if rng.random() < 0.3:
                del data[key]
            else:
                data[key] = random_value(rng)
    text = dump(data, rng)
    if rng.random() < 0.2:  # a duplicate key, at the top or deeper
        position = text.find("{", rng.randint(0, max(0, len(text) - 1)))
        if position < 0:
            position = text.find("{")
        if position >= 0:
            key = json.dumps(random_key(rng))
            text = text[: position + 1] + f"{key}: 1, {key}: {dump(random_value(rng), rng)}," + text[position + 1:]
    return text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------
# Byte mutations

def _deep(rng: random.Random, levels: int) -> bytes:
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}"), (b'{"a/~":[', b"]}")])
    inner = rng.choice([b"1", b"NaN", b'""', b"1e400"])
    return opener * levels + inner + closer * levels


def mutate(rng: random.Random, raw: bytes, *, big: bool = True) -> bytes:
    """One to four random byte-level mutations of ``raw``. ``big`` allows
    the costly ones (10 MiB strings, 10,000 levels of nesting)."""
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(16 if big else 14)
        at = rng.randint(0, len(data))
        if kind == 0:  # truncation
            del data[at:]
        elif kind == 1 and data:  # bit flips
            for _flip in range(rng.randint(1, 8)):
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
        elif kind == 2:  # control characters
            data[at:at] = bytes(rng.choice([0, 1, 8, 9, 10, 11, 12, 13, 27, 31, 127]) for _ in range(rng.randint(1, 3)))
        elif kind == 3:  # invalid UTF-8
            data[at:at] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82"])
        elif kind == 4:  # escaped surrogates and other escapes inside a string
            quote = data.find(b'"', at)
            if quote >= 0:
                data[quote + 1:quote + 1] = rng.choice([b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\u0000",
                                                        b"\\/", b"\\\\", b'\\"', b"~1", b"/", b"\\u2028"])
        elif kind == 5:  # number literals
            data[at:at] = rng.choice(LITERALS).encode()
        elif kind == 6 and data:  # delete a range
            del data[at:at + rng.randint(1, 20)]
        elif kind == 7 and data:  # duplicate a range
            start = rng.randrange(len(data))
            data[at:at] = data[start:start + rng.randint(1, 80)]
        elif kind == 8:  # line endings
            data = bytearray(bytes(data).replace(b"\n", rng.choice([b"\r\n", b"\r", b"", b"\n\n", "\u2028".encode()])))
        elif kind == 9:  # byte-order mark(s)
            data[0:0] = b"\xef\xbb\xbf" * rng.randint(1, 2)
        elif kind == 10:  # structural characters
            data[at:at] = rng.choice([b"{", b"}", b"[", b"]", b",", b":", b'"', b"//", b"/*", b"'", b"\\"])
        elif kind == 11:  # a key with pointer-special characters
            brace = data.find(b"{", at)
            if brace >= 0:
                key = json.dumps(rng.choice(["a/b", "~", "~1", "q\"k", "back\\slash", "x\ud800", "\u00e9/~0"]))
                data[brace + 1:brace + 1] = key.encode("utf-8", "surrogatepass") + b": 1,"
        elif kind == 12:  # moderate nesting
            data[at:at] = _deep(rng, rng.choice([10, 100, 500, 990, 1000]))
        elif kind == 13:  # splice with another seed
            other = rng.choice(_SEEDS or [raw])
            cut = rng.randint(0, len(other))
            data = data[:at] + bytearray(other[cut:])
        elif kind == 14:  # deep nesting, 10,000 levels
            data[at:at] = _deep(rng, 10_000)
        elif kind == 15:  # long strings, around the 10 MiB limit
            size = rng.choice([1 << 16, MAX_BYTES - len(data) - 2, MAX_BYTES - len(data) + 1])
            data[at:at] = b'"' + b"x" * max(0, size) + b'"'
    return bytes(data)


_SEEDS: list[bytes] = []


def random_input(rng: random.Random, *, big: bool = True) -> bytes:
    """One fuzz input: structured, mutated, or both."""
    if not _SEEDS:
        _SEEDS.extend(seeds())
    seed = rng.choice(_SEEDS)
    roll = rng.random()
    if roll < 0.4:
        return structured(rng, seed)
    if roll < 0.8:
        return mutate(rng, seed, big=big)
    return mutate(rng, structured(rng, seed), big=big)


# --------------------------------------------------------------------------
# The oracle

def file_lines(raw: bytes) -> list[str]:
    """The file's lines as the lint counts them: UTF-8 (bad bytes
    replaced), one byte-order mark dropped, split at \\n only."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw.decode("utf-8", errors="replace").split("\n")


def position_problems(diagnostics: list, lines: list[str], path: str) -> list[str]:
    """Diagnostics in ``path`` whose line/column is outside the file."""
    out = []
    for d in diagnostics:
        if d.path != path:
            continue
        if not 1 <= d.line <= len(lines):
            out.append(f"{d.code} at line {d.line}, file has {len(lines)} lines")
        elif not 1 <= d.column <= len(lines[d.line - 1]) + 1:
            out.append(f"{d.code} at {d.line}:{d.column}, line has {len(lines[d.line - 1])} characters")
    return out


def check_input(raw: bytes, flags: Optional[dict] = None, *, workdir: Optional[str] = None,
                name: str = "config.json") -> list[str]:
    """Lint ``raw`` (written to a file) through the library with ``flags``
    and render every format. Returns the problems found (empty: fine)."""
    from msprobe_lint.lint.api import LintOptions, UsageError, lint_paths
    from msprobe_lint.lint.reporters import NAMES, get

    flags = dict(flags or {})
    owned = workdir is None
    directory = tempfile.mkdtemp(prefix="fuzz-lint-") if owned else workdir
    path = os.path.join(directory, name)
    problems: list[str] = []
    try:
        with open(path, "wb") as handle:
            handle.write(raw)
        try:
            run = lint_paths([path], LintOptions(isolated=True, cwd=directory, **flags))
        except UsageError:
            return []  # exit 2, a usage error: fine
        except BaseException:  # that is what we look for
            return ["exception: " + traceback.format_exc(limit=-6)]
        if run.status not in (0, 1, 2):
            problems.append(f"exit status {run.status}")
        diagnostics = [d for r in run.results for d in r.diagnostics]
        problems += [f"internal error: {d.message}" for d in diagnostics if "internal error" in d.message]
        problems += position_problems(diagnostics, file_lines(raw), path)
        for fmt in NAMES:
            out = os.path.join(directory, "report." + fmt)
            try:
                text = get(fmt)(run.results, color=fmt == "text" and bool(flags.get("strict")))
                with open(out, "w", encoding="utf-8") as handle:
                    handle.write(text)
                if fmt in ("json", "sarif"):
                    with open(out, encoding="utf-8") as handle:
                        json.load(handle)
            except BaseException:
                problems.append(f"format {fmt}: " + traceback.format_exc(limit=-4))
    finally:
        if owned:
            _remove_tree(directory)
    return problems


def cli_args(flags: dict) -> list[str]:
    """``probe lint`` options for ``flags`` (odd values passed as given)."""
    args = ["--isolated"]
    for name, option in CLI_FLAGS.items():
        if flags.get(name) is not None:
            args += [option, str(flags[name])]
    if flags.get("check_fs"):
        args.append("--check-fs")
    if flags.get("strict"):
        args.append("--strict")
    return args


def probe_command() -> list[str]:
    candidate = Path(sys.executable).parent / "probe"
    return [str(candidate)] if candidate.exists() else [sys.executable, "-m", "msprobe_lint"]


def check_cli(raw: bytes, flags: Optional[dict] = None, fmt: str = "text", *, timeout: float = 120) -> list[str]:
    """Lint ``raw`` with the real ``probe lint``: exit 0/1/2, no traceback."""
    flags = flags or {}
    directory = tempfile.mkdtemp(prefix="fuzz-cli-")
    try:
        path = os.path.join(directory, "config.json")
        with open(path, "wb") as handle:
            handle.write(raw)
        env = dict(os.environ, NO_COLOR="1")
        done = subprocess.run(probe_command() + ["lint", "--format", fmt] + cli_args(flags) + [path],
                              capture_output=True, cwd=directory, env=env, timeout=timeout)
        problems = []
        stderr = done.stderr.decode("utf-8", "replace")
        if done.returncode not in (0, 1, 2):
            problems.append(f"cli exit status {done.returncode}")
        if "Traceback" in stderr:
            problems.append("cli traceback: " + stderr[-2000:])
        if fmt == "json" and done.returncode in (0, 1):
            try:
                json.loads(done.stdout)
            except ValueError:
                problems.append("cli --format json printed something that is not JSON")
        return problems
    finally:
        _remove_tree(directory)


def _remove_tree(directory: str) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


# --------------------------------------------------------------------------
# The long run

@dataclass
class Tally:
    tried: int = 0
    cli: int = 0
    findings: list[tuple[int, str, str]] = field(default_factory=list)  # (input number, kind, detail)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("budget", nargs="?", default="1000",
                        help="number of inputs (e.g. 5000) or seconds (e.g. 300s); default 1000")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--cli-every", type=int, default=100,
                        help="also run every Nth input through the real command (0: never)")
    parser.add_argument("--no-big", action="store_true", help="skip 10 MiB strings and 10,000-level nesting")
    parser.add_argument("--keep", default=None, help="save inputs that gave a finding into this folder")
    args = parser.parse_args(argv)
    budget = args.budget.strip()
    seconds = float(budget[:-1]) if budget.endswith("s") else None
    count = None if seconds is not None else int(budget)
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    tally = Tally()
    started = time.monotonic()
    print(f"fuzz_lint: seed {seed}, budget {budget}, {len(seeds())} seed configs", flush=True)
    workdir = tempfile.mkdtemp(prefix="fuzz-lint-")
    last_report = started
    try:
        while True:
            if count is not None and tally.tried >= count:
                break
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            raw = random_input(rng, big=not args.no_big)
            flags = random_flags(rng)
            number = tally.tried
            tally.tried += 1
            problems = check_input(raw, flags, workdir=workdir)
            if args.cli_every and number % args.cli_every == 0 and len(raw) < 1 << 20:
                tally.cli += 1
                problems += check_cli(raw, flags, rng.choice(["text", "json", "sarif", "github"]))
            for problem in problems:
                kind = problem.split(":", 1)[0]
                tally.findings.append((number, kind, problem))
                print(f"FINDING input #{number} flags={flags}: {problem[:3000]}", flush=True)
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    Path(args.keep, f"input-{seed}-{number}.json").write_bytes(raw)
                    Path(args.keep, f"input-{seed}-{number}.flags").write_text(repr(flags))
            if time.monotonic() - last_report > 30:
                last_report = time.monotonic()
                print(f"  ... {tally.tried} inputs, {len(tally.findings)} findings", flush=True)
    finally:
        _remove_tree(workdir)
    elapsed = time.monotonic() - started
    kinds: dict[str, int] = {}
    for _, kind, _detail in tally.findings:
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"fuzz_lint: tried {tally.tried} inputs ({tally.cli} also through the CLI) in {elapsed:.0f} s, "
          f"seed {seed}: {len(tally.findings)} findings"
          + (" (" + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")" if kinds else ""))
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
