"""Speed of ``probe lint`` against ``check-jsonschema`` (SPEC section 5),
and ``probe``'s start-up against a bare interpreter (issue 24).

First the start-up: ``probe lint --isolated`` and ``probe lint`` on one
small clean config, and ``probe report`` on an empty folder and on a small
dump (``tests/data/report/ours``), interleaved
with ``python -c pass`` (the floor), each the median of ``--runs`` cold
processes, printed side by side with their ratio to the bare interpreter
(targets: under 50 ms and 70 ms where a bare interpreter takes 10 ms, i.e.
ratios under 5 and 7). The children run without PYTHONDONTWRITEBYTECODE,
so, as after an install, they use cached bytecode (a warm-up run writes
it). ``--importtime`` also prints the most expensive imports of
``probe lint --isolated`` (``python -X importtime``).

Then three measurements, interleaved in one run so that machine noise hits
both tools alike, each the median of ``--runs`` cold processes:

1. one config: ``probe lint CONFIG`` against
   ``check-jsonschema --schemafile schema/msprobe-config.schema.json CONFIG``;
2. ``--files`` generated configs (varied tasks, levels, ranks, steps and
   sections; about one in ten with a typical mistake) given to each tool in
   one invocation;
3. a project tree: the same configs spread over nested folders among
   ``--others`` (default 10 times as many) JSON files that are not msprobe
   configs (model, tokenizer, package, logging, MindSpore dump settings,
   data records; some with a ``"level"`` key, so they are parsed to be
   told apart), with a ``.gitignore``; ``probe lint .`` run in the tree
   (it finds the configs itself) against check-jsonschema given the
   configs alone. A hidden folder, a virtual environment and an ignored
   folder holding more configs check that the walk prunes them.

``probe lint`` runs every rule a default run has (no ``--select``; the
live environment is read as usual); ``--check-fs`` adds the filesystem
rules PL406-PL408, which pre-commit and a plain run leave out. Both tools
start in the temporary folder, so no project ``pyproject.toml`` is read. Prints both medians and
their ratio (probe / check-jsonschema); the targets are ratios <= 1.0.

Usage::

    python benchmarks/lint_bench.py [--runs 15] [--files 1000] [--others N] [--check-fs]
    python benchmarks/lint_bench.py --startup-only [--importtime]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "schema" / "msprobe-config.schema.json"

TASKS = ["overflow_check", "statistics", "tensor", "free_benchmark", "structure"]


def make_config(rng: random.Random, dump_root: str, index: int) -> dict:
    """One plausible msprobe config; varied but valid."""
    task = rng.choice(TASKS)
    level = {"overflow_check": rng.choice(["L0", "L1"]), "free_benchmark": "L1"}.get(
        task, rng.choice(["L0", "L1", "mix"]))
    config: dict = {
        "task": task,
        "dump_path": f"{dump_root}/run_{index:04d}",
        "rank": rng.choice([[], [0], [0, 1], ["0-3"], [0, "2-3"]]),
        "step": rng.choice([[], [0], [0, 1, 2], ["4-6"], [1, "10-20"]]),
        "level": level,
    }
    if task == "overflow_check":
        config["overflow_check"] = {"overflow_nums": rng.choice([1, 3, -1])}
    elif task == "statistics":
        config["statistics"] = {"scope": [], "list": rng.choice([[], ["Functional.relu"]]),
                                "data_mode": rng.choice([["all"], ["forward"], ["input", "output"]]),
                                "summary_mode": rng.choice(["statistics", "md5", ["max", "min"]])}
        if rng.random() < 0.5:
            config["async_dump"] = False
    elif task == "tensor":
        config["tensor"] = {"scope": rng.choice([[], ["Cell.a.Dense.forward.0", "Cell.b.Dense.forward.0"]]),
                            "list": [], "data_mode": ["all"], "file_format": "npy"}
    elif task == "free_benchmark":
        config["free_benchmark"] = {"scope": [], "list": [], "fuzz_device": "npu",
                                    "pert_mode": rng.choice(["improve_precision", "add_noise", "bit_noise"]),
                                    "handler_type": "check", "fuzz_level": "L1", "fuzz_stage": "forward",
                                    "if_preheat": False, "preheat_step": 15, "max_sample": 20}
    return config


def spoil(config: dict, rng: random.Random) -> dict:
    """A typical mistake: a misspelt key, a quoted number, a lowercase enum
    or a scalar rank."""
    kind = rng.randrange(4)
    if kind == 0:
        config["levle"] = config.pop("level")
    elif kind == 1:
        config["overflow_check"] = {"overflow_nums": "3"}
    elif kind == 2:
        config["level"] = config["level"].lower()
    else:
        config["rank"] = 0
    return config


def write_generated(path: Path, rng: random.Random, dump_root: str, index: int) -> str:
    """Write one generated config (one in ten spoilt) to ``path``."""
    config = make_config(rng, dump_root, index)
    if rng.random() < 0.1:
        config = spoil(config, rng)
    path.write_text(json.dumps(config, indent=rng.choice([2, 4])) + "\n", encoding="utf-8")
    return str(path)


def generate(folder: Path, count: int, seed: int = 20240601) -> list[str]:
    """Write ``count`` configs into ``folder``; returns their paths."""
    rng = random.Random(seed)
    dump_root = str(folder / "dumps")
    return [write_generated(folder / f"config_{index:04d}.json", rng, dump_root, index) for index in range(count)]


def other_json(rng: random.Random, index: int) -> tuple[str, object]:
    """A JSON file of another tool (name, content), 0.1 to a few KB."""
    kind = index % 8
    if kind == 0:
        return "config.json", {"architectures": ["BertModel"], "hidden_size": rng.choice([768, 1024]),
                               "num_attention_heads": 12, "num_hidden_layers": rng.randint(2, 24),
                               "vocab_size": 30522, "layer_norm_eps": 1e-12, "torch_dtype": "float32",
                               "id2label": {str(i): f"LABEL_{i}" for i in range(rng.randint(2, 40))}}
    if kind == 1:
        return "tokenizer_config.json", {"do_lower_case": True, "model_max_length": 512,
                                         "special_tokens": [f"[unused{i}]" for i in range(rng.randint(5, 80))]}
    if kind == 2:
        return "package.json", {"name": f"pkg-{index}", "version": "1.0.0", "scripts": {"test": "jest"},
                                "dependencies": {f"dep{i}": f"^{i}.0.0" for i in range(rng.randint(1, 30))}}
    if kind == 3:
        return "logging.json", {"version": 1, "handlers": {"console": {"class": "logging.StreamHandler",
                                                                      "level": "INFO"}},
                                "root": {"level": rng.choice(["INFO", "DEBUG", "WARNING"])}, "level": "INFO"}
    if kind == 4:
        return "dump_settings.json", {"common_dump_settings": {"dump_mode": 0, "path": "/tmp/ms_dump",
                                                               "net_name": "Net", "iteration": "0|5-8",
                                                               "saved_data": "tensor", "input_output": 0,
                                                               "kernels": [], "support_device": [0, 1, 2, 3]}}
    if kind == 5:
        return "tsconfig.json", {"compilerOptions": {"target": "es2020", "strict": True, "outDir": "dist"},
                                 "include": ["src"]}
    if kind == 6:
        return "records.json", [{"id": i, "text": f"sample {i}", "score": rng.random()}
                                for i in range(rng.randint(3, 60))]
    return "metrics.json", {"epoch": rng.randint(0, 99), "loss": [rng.random() for _ in range(rng.randint(5, 100))],
                            "accuracy": rng.random()}


def generate_tree(folder: Path, count: int, others: int, seed: int = 20240602) -> list[str]:
    """A project tree in ``folder``: ``count`` configs and ``others`` other
    JSON files over nested folders, a .gitignore, and folders the walk must
    prune (a hidden one, a virtual environment, an ignored one), each with
    configs. Returns the configs' paths (those ``probe lint .`` must find)."""
    rng = random.Random(seed)
    dump_root = str(folder / "dumps")
    total = count + others
    config_at = set(rng.sample(range(total), count))
    paths: list[str] = []
    for index in range(total):
        sub = folder / f"part{index % 20:02d}" / f"exp{(index // 20) % 25:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        if index in config_at:
            paths.append(write_generated(sub / f"msprobe_{index:05d}.json", rng, dump_root, len(paths)))
        else:
            name, data = other_json(rng, index)
            (sub / f"{index:05d}_{name}").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (folder / ".gitignore").write_text("outputs/\n*.log\n", encoding="utf-8")
    for pruned in (folder / "outputs", folder / ".cache", folder / "venv-test"):
        pruned.mkdir()
        for index in range(20):
            (pruned / f"c{index}.json").write_text(json.dumps(make_config(rng, dump_root, index)), encoding="utf-8")
    (folder / "venv-test" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    return paths


def tool(name: str, given: str | None) -> str:
    """The executable: given, else beside this Python, else on PATH."""
    if given:
        return given
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if not found:
        sys.exit(f"lint_bench: {name} not found; pass --{name}")
    return found


def timed(argv: list[str], cwd: str) -> float:
    """Wall time of one run of ``argv`` (output discarded)."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


#: a small dump (2 step/rank folders, 4 records) for ``probe report``'s start-up
SMALL_DUMP = Path(__file__).resolve().parents[1] / "tests" / "data" / "report" / "ours"


def startup(probe: str, runs: int, folder: Path, importtime: bool = False) -> dict[str, float]:
    """Start-up medians (seconds) of ``probe lint`` (isolated and not) on
    one small clean config and of ``probe report`` on an empty folder and
    on :data:`SMALL_DUMP` (text), interleaved with a bare interpreter;
    prints them side by side."""
    config = folder / "startup" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(folder / "dumps"), "level": "L1",
                                  "rank": [], "step": [], "overflow_check": {"overflow_nums": 3}}, indent=4) + "\n",
                      encoding="utf-8")
    (folder / "startup" / "dump").mkdir()
    # Two projects: a pyproject.toml as most have (no [tool.probe-lint]) and one with the table.
    projects = {"other tools": '[project]\nname = "train"\n\n[tool.ruff]\nline-length = 100\n',
                "[tool.probe-lint]": '[project]\nname = "train"\n\n[tool.probe-lint]\nignore = ["PL206"]\n'}
    for number, text in enumerate(projects.values()):
        (folder / "startup" / f"project{number}").mkdir()
        (folder / "startup" / f"project{number}" / "pyproject.toml").write_text(text, encoding="utf-8")
        (folder / "startup" / f"project{number}" / "config.json").write_text(config.read_text(), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    here = config.parent
    cases = {"bare interpreter": ([sys.executable, "-c", "pass"], here),
             "probe lint --isolated": ([probe, "lint", "--isolated", str(config)], here),
             "probe lint": ([probe, "lint", str(config)], here),
             **{f"probe lint, {what}": ([probe, "lint", "config.json"], here / f"project{number}")
                for number, what in enumerate(projects)},
             "probe report (start)": ([probe, "report", str(folder / "startup" / "dump")], here),
             "probe report (small)": ([probe, "report", str(SMALL_DUMP)], here)}
    times: dict[str, list[float]] = {label: [] for label in cases}
    for argv, cwd in cases.values():  # warm-up: the page cache and the bytecode cache
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for run in range(runs):
        order = list(cases.items())
        if run % 2:
            order.reverse()
        for label, (argv, cwd) in order:
            start = time.perf_counter()
            subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in times.items()}
    bare = medians["bare interpreter"]
    print(f"start-up (median of {runs} interleaved cold runs; one small clean config):")
    for label, median in medians.items():
        print(f"  {label:<40} {median * 1000:7.1f} ms   x{median / bare:4.1f} a bare interpreter")
    if importtime:
        proc = subprocess.run([sys.executable, "-X", "importtime", probe, "lint", "--isolated", str(config)],
                              env=env, capture_output=True, text=True)
        rows = []
        for line in proc.stderr.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                self_us, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
                rows.append((int(self_us), int(cumulative), name))
        total = sum(r[0] for r in rows) / 1000
        print(f"  most expensive imports of probe lint --isolated (self/cumulative, of {total:.1f} ms):")
        for self_us, cumulative, name in sorted(rows, reverse=True)[:12]:
            print(f"    {self_us / 1000:5.1f} {cumulative / 1000:6.1f} ms  {name}")
    return medians


def compare(label: str, probe_argv: list[str], other_argv: list[str], runs: int, cwd: str) -> float:
    """Interleaved medians of both commands; prints them and returns the
    ratio probe / check-jsonschema."""
    timed(probe_argv, cwd)  # warm the page cache and the .pyc files of both
    timed(other_argv, cwd)
    probe_times: list[float] = []
    other_times: list[float] = []
    for run in range(runs):
        pair = [(probe_argv, probe_times), (other_argv, other_times)]
        if run % 2:
            pair.reverse()
        for argv, sink in pair:
            sink.append(timed(argv, cwd))
    probe_median = statistics.median(probe_times)
    other_median = statistics.median(other_times)
    ratio = probe_median / other_median
    print(f"{label}: probe lint {probe_median:.3f} s, check-jsonschema {other_median:.3f} s, "
          f"ratio {ratio:.2f} (median of {runs} interleaved cold runs)")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="cold runs per tool and case (>= 10)")
    parser.add_argument("--files", type=int, default=1000, help="configs in the batch case")
    parser.add_argument("--others", type=int, help="other JSON files in the tree case (default 10 x --files)")
    parser.add_argument("--check-fs", action="store_true", help="also run the filesystem rules PL406-PL408")
    parser.add_argument("--probe", help="the probe executable")
    parser.add_argument("--check-jsonschema", dest="cjs", help="the check-jsonschema executable")
    parser.add_argument("--startup-only", action="store_true", help="measure the start-up only")
    parser.add_argument("--importtime", action="store_true", help="also list the most expensive imports")
    args = parser.parse_args(argv)
    if args.runs < 10:
        parser.error("--runs must be at least 10")
    probe = tool("probe", args.probe)
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as tmp:
        folder = Path(tmp)
        startup(probe, args.runs, folder, importtime=args.importtime)
        if args.startup_only:
            return 0
    cjs = tool("check-jsonschema", args.cjs)
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as tmp:
        folder = Path(tmp)
        single = folder / "single" / "config.json"
        single.parent.mkdir()
        config = make_config(random.Random(1), str(folder / "dumps"), 0)
        config.update({"task": "overflow_check", "level": "L1", "overflow_check": {"overflow_nums": 3}})
        single.write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
        batch = folder / "batch"
        batch.mkdir()
        paths = generate(batch, args.files)
        env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
        print(f"lint_bench: {env_note}; probe={probe}; check-jsonschema={cjs}")
        lint = [probe, "lint"] + (["--check-fs"] if args.check_fs else [])
        print(f"lint_bench: {' '.join(lint[1:])} (all rules{', filesystem rules too' if args.check_fs else ''})")
        one = compare("one config", [*lint, str(single)],
                      [cjs, "--schemafile", str(SCHEMA), str(single)], args.runs, tmp)
        many = compare(f"{len(paths)} configs", [*lint, *paths],
                       [cjs, "--schemafile", str(SCHEMA), *paths], args.runs, tmp)
        tree = folder / "tree"
        tree.mkdir()
        others = args.others if args.others is not None else 10 * args.files
        tree_paths = generate_tree(tree, args.files, others)
        found = subprocess.run([probe, "lint", ".", "--show-files"], cwd=tree, capture_output=True, text=True)
        kept = sorted(line.split()[1] for line in found.stdout.splitlines() if line.startswith("lint "))
        expected = sorted(os.path.relpath(p, tree) for p in tree_paths)
        if kept != expected:
            sys.exit(f"lint_bench: probe lint . found {len(kept)} files, not the {len(expected)} configs")
        walk = compare(f"probe lint . over {len(tree_paths)} configs + {others} other JSON files",
                       [*lint, "."], [cjs, "--schemafile", str(SCHEMA), *tree_paths], args.runs, str(tree))
    verdict = "PASS" if max(one, many, walk) <= 1.0 else "FAIL"
    print(f"ratios: one config {one:.2f}, {len(paths)} configs {many:.2f}, folder walk {walk:.2f} "
          f"(target <= 1.0): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
