"""The MindSpore dump configs of level L2: the CPU replay dump, and on
Ascend the overflow dump mindstudio-probe 8.1.2 configures.

MindSpore reads the file named by the ``MINDSPORE_DUMP_CONFIG``
environment variable when it compiles its first graph, so
:func:`install` must run before that (``PrecisionDebugger(...)`` does it).

CPU (:func:`cpu_config`): a synchronous (e2e) dump of every kernel's
inputs and outputs as ``.npy`` (``saved_data`` ``"tensor"``, the only
value the CPU backend accepts; ``op_debug_mode`` has no effect there), of
iteration 1 only, which :mod:`.private` turns on for one replayed step.
Its folder may not contain a ``.`` (MindSpore refuses it).

Ascend (:func:`ascend_config`): the fields msprobe 8.1.2's
``KernelGraphOverflowCheck`` writes: ``saved_data`` ``"full"``,
``op_debug_mode`` 3, 1 or 2 for ``check_mode`` ``all``, ``aicore`` or
``atomic``, ``support_device`` the config's ``rank`` (all eight devices
when empty), ``iteration`` ``"all"`` (the config's ``step`` is not used).
MindSpore then writes its own overflow dump under dump_path; this path is
not tested here (no Ascend device).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Any, Optional

from ..errors import UsageError
from .private import L2Unavailable

LOGGER = logging.getLogger("probe_runtime")
ENV = "MINDSPORE_DUMP_CONFIG"
#: the net_name of both configs (a folder of MindSpore's dump)
NET_NAME = "Net"
#: check_mode -> op_debug_mode, as msprobe 8.1.2 maps them (3: every overflow)
OP_DEBUG_MODES = {"all": 3, "aicore": 1, "atomic": 2}
ALL_DEVICES = list(range(8))
#: the file name msprobe 8.1.2 gives its config, in dump_path
ASCEND_FILE = "kernel_graph_overflow_check.json"


def _common(path: str, *, iteration: str, saved_data: str, op_debug_mode: int, devices: list) -> dict:
    return {"dump_mode": 0, "path": path, "net_name": NET_NAME, "iteration": iteration, "saved_data": saved_data,
            "input_output": 0, "kernels": [], "support_device": devices, "op_debug_mode": op_debug_mode,
            "file_format": "npy"}


def cpu_config(path: str, iteration: str) -> dict:
    """The dump config of the CPU replay: every kernel's inputs and outputs
    of iteration ``iteration`` as ``.npy`` under ``path`` (no ``.`` in it)."""
    return {"common_dump_settings": _common(path, iteration=iteration, saved_data="tensor", op_debug_mode=0,
                                            devices=ALL_DEVICES),
            "e2e_dump_settings": {"enable": True, "trans_flag": True}}


def ascend_config(dump_path: str, *, rank: Optional[list] = None, check_mode: str = "all") -> dict:
    """The dump config msprobe 8.1.2 writes for overflow_check at L2 in
    static graph (``common_dump_settings`` only), field by field.

    Args:
        dump_path: the config's dump_path.
        rank: the config's ``rank`` (ints; empty or None: all devices).
        check_mode: ``all``, ``aicore`` or ``atomic``.

    Raises:
        UsageError: ``check_mode`` is none of those (the lint refuses it first).
    """
    if check_mode not in OP_DEBUG_MODES:
        raise UsageError(f"check_mode must be one of {', '.join(OP_DEBUG_MODES)}, not {check_mode!r}")
    devices = list(rank) if rank else ALL_DEVICES
    return {"common_dump_settings": _common(dump_path, iteration="all", saved_data="full",
                                            op_debug_mode=OP_DEBUG_MODES[check_mode], devices=devices)}


def scratch_folder() -> str:
    """A new private folder for the CPU replay dump, with no ``.`` in its
    path (MindSpore refuses one).

    Raises:
        L2Unavailable: the temporary folder's path has a ``.`` (set
            ``TMPDIR`` to one without).
    """
    parent = tempfile.gettempdir()
    if "." in parent:
        raise L2Unavailable(f"level L2 needs a temporary folder without '.' in its path for MindSpore's dump, and "
                            f"{parent} has one: set TMPDIR to another folder")
    remove_stale(parent)
    return tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}_", dir=parent)


#: scratch folders are named ``probe_l2_<pid>_<random>``
SCRATCH_PREFIX = "probe_l2_"


def is_scratch_config(path: str) -> bool:
    """True when ``path`` (a ``MINDSPORE_DUMP_CONFIG`` value) is the config
    in a probe_runtime scratch folder: the replay dump of this process or,
    inherited through the environment, of the process that started it."""
    return os.path.basename(os.path.dirname(path)).startswith(SCRATCH_PREFIX)


def remove_stale(parent: str) -> list[str]:
    """Remove the scratch folders in ``parent`` that processes of this user
    which no longer run left behind (killed before interpreter exit, which
    removes a process's own); returns their paths. A folder whose process
    still runs, or that belongs to another user, is left alone."""
    import shutil

    removed = []
    for name in os.listdir(parent):
        number = name[len(SCRATCH_PREFIX):].split("_", 1)[0] if name.startswith(SCRATCH_PREFIX) else ""
        if not number.isdigit():
            continue
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
            if st.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
                continue
            os.kill(int(number), 0)
            continue  # that process still runs
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        except OSError:
            continue
    return removed


def install(config: dict, folder: str, file_name: str) -> str:
    """Write ``config`` to ``folder/file_name`` (0o640) and point
    ``MINDSPORE_DUMP_CONFIG`` at it; returns the file's path. A value the
    variable held before is replaced, with a warning unless it is a
    probe_runtime scratch config (:func:`is_scratch_config`)."""
    path = os.path.join(folder, file_name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
    previous = os.environ.get(ENV)
    if previous and previous != path and not is_scratch_config(previous):
        LOGGER.warning("probe_runtime: level L2 replaces %s=%s with its own dump config", ENV, previous)
    os.environ[ENV] = path
    os.environ.pop("MS_ACL_DUMP_CFG_PATH", None)  # as msprobe does: the ACL dump would take precedence
    return path


def check_mode_of(config: dict[str, Any]) -> str:
    """The config's ``overflow_check.check_mode`` (default ``all``)."""
    section = config.get("overflow_check") or {}
    return str(section.get("check_mode", "all"))


_PROCESS_SCRATCH: dict[str, str] = {}


def process_scratch() -> str:
    """The CPU replay dump's folder of this process, its config installed
    (:func:`install`) the first time: MindSpore reads the config once, at
    its first compile, so every debugger of a process shares the folder.
    Removed at interpreter exit.

    Raises:
        L2Unavailable: as :func:`scratch_folder`.
    """
    folder = _PROCESS_SCRATCH.get("path")
    if folder is None or not os.path.isdir(folder):
        import atexit
        import shutil

        folder = scratch_folder()
        _PROCESS_SCRATCH["path"] = folder
        install(cpu_config(folder, "1"), folder, "dump_config.json")
        atexit.register(shutil.rmtree, folder, True)
    return folder
