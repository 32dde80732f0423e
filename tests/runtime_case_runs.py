"""Run runtime cases (folders with config.json and run.py) one after the
other in this process, under the checks mode of ``PROBE_CHECKS``, and
write what each recorded as JSON.

Usage: ``python tests/runtime_case_runs.py OUT.json WORK_DIR CASE_DIR...``

Each case runs as its ``run.py`` would (``runpy``, ``sys.argv`` = the
script and a copy of its config whose dump_path is under WORK_DIR, in a
fresh current folder). One process for all the cases (MindSpore starts
once): the comparison of checks modes in ``tests/runtime/test_runtime_auto.py``
runs it once per mode. OUT.json: ``{case: {"error": str or null, "dump":
dump_path, "steps": {step folder: [overflow.json items]}}}``.
"""
from __future__ import annotations

import gc
import json
import os
import runpy
import sys
import traceback
from pathlib import Path


def run_one(case: Path, work: Path) -> dict:
    folder = work / f"{case.parent.name}-{case.name}"
    folder.mkdir(parents=True)
    config = json.loads((case / "config.json").read_text())
    config["dump_path"] = str(folder / "dump")
    path = folder / "config.json"
    path.write_text(json.dumps(config, indent=4))
    os.chmod(path, 0o640)
    here = os.getcwd()
    argv = sys.argv
    error = None
    os.chdir(folder)
    sys.argv = [str(case / "run.py"), str(path)]
    try:
        runpy.run_path(str(case / "run.py"), run_name="__main__")
    except BaseException:  # a case that fails is reported, the others still run
        error = traceback.format_exc()[-2000:]
    finally:
        sys.argv = argv
        os.chdir(here)
        _finish_debuggers()
    steps = {}
    for index in sorted((folder / "dump").glob("step*/rank*/overflow.json")):
        steps[index.parent.parent.name] = json.loads(index.read_text())
    return {"error": error, "dump": str(folder / "dump"), "steps": steps}


def _finish_debuggers() -> None:
    """What interpreter exit would do for each debugger a case made (its
    window closed, its patches off), so the next case starts clean."""
    from probe_runtime import PrecisionDebugger

    for obj in gc.get_objects():
        if type(obj) is PrecisionDebugger:  # type(): a dead weak proxy raises on isinstance
            obj.finish()


def main(argv: list[str]) -> int:
    out, work, cases = Path(argv[0]), Path(argv[1]), [Path(c) for c in argv[2:]]
    results = {f"{c.parent.parent.name}/{c.name}": run_one(c, work) for c in cases}
    out.write_text(json.dumps(results, indent=1, allow_nan=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
