"""Shared set-up of the probe_runtime tests: a config file and a process
environment free of launcher variables."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

LAUNCHER_VARIABLES = ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "MS_WORKER_NUM", "PROBE_CONFIG")


def isolate(monkeypatch: Any, folder: Path) -> None:
    """Run in ``folder`` with no launcher variables and no PROBE_CONFIG, so
    the debugger sees a single process (rank folder ``rank``)."""
    monkeypatch.chdir(folder)
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def write_runtime_config(folder: Path, *, level: str = "L1", nums: int = -1, dump: Optional[Path] = None,
                         **changes: Any) -> Path:
    """``folder/config.json``: an overflow_check config (dump_path
    ``folder/dump`` unless ``dump``), owner-only writable as msprobe wants;
    ``changes`` replace top-level keys (a whole ``overflow_check`` section
    included)."""
    config = {"task": "overflow_check", "dump_path": str(dump or folder / "dump"), "rank": [], "step": [],
              "level": level, "overflow_check": {"overflow_nums": nums}}
    config.update(changes)
    path = folder / "config.json"
    path.write_text(json.dumps(config, indent=4))
    os.chmod(path, 0o640)
    return path
