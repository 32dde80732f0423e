"""The overflow dump layout: folder and file names, the keys of
``overflow.json`` records and their kinds, dump.json's keys.

probe_runtime's writer writes with these names and ``probe report`` reads
with them; docs/report-format.md describes the layout for people. The
statistics files follow msprobe's format (mindstudio-probe 8.x, "dump.json
file description" in its MindSpore dump docs); ``overflow.json`` is this
project's own index of the overflowing entries (versioned:
:mod:`probe_format.records`).

Layout::

    DUMP_PATH/[graph|pynative/]step{N}/rank{R}/   (``rank`` alone: not distributed)
        dump.json        {"task", "level", "framework", "dump_data_dir", "data": {entry name: statistics}}
        stack.json       {"0": [[entry name], [stack lines]], ...}
        construct.json   {entry name: parent Cell entry or null}   ({} at L1)
        overflow.json    [record, ...] in detection order
        dump_tensor_data/{entry name}.{input|output}.{n}.npy
"""
from __future__ import annotations

import re
from typing import Optional

# -- files -------------------------------------------------------------------------------

DUMP_FILE = "dump.json"
STACK_FILE = "stack.json"
CONSTRUCT_FILE = "construct.json"
OVERFLOW_FILE = "overflow.json"
TENSOR_DATA_DIR = "dump_tensor_data"
#: msprobe puts mindspore.jit parts of a run under ``graph/`` and the rest under ``pynative/``
MODE_DIRS = ("graph", "pynative")

#: as msprobe writes them (``f"step{step}"``): ASCII digits without leading zeros, nothing after
#: them (a hunt's finding: ``step001`` and ``step1``, or a fullwidth ``step０``, were one step)
STEP_PATTERN = re.compile(r"step(0|[1-9][0-9]*)\Z", re.ASCII)
#: ``rank`` alone (no number) is the folder of a job that was not distributed
RANK_PATTERN = re.compile(r"rank(0|[1-9][0-9]*)?\Z", re.ASCII)

# -- overflow.json: one record per overflowing entry (or sentinel finding) ---------------

NAME = "name"            #: the dump.json key, e.g. ``Functional.exp.0.forward``
ORIGIN = "origin"        #: true: inputs finite, output not (the overflow started there)
WHERE = "where"          #: the user's ``file:line`` that made the call, or null
KIND = "kind"            #: one of KINDS
#: the dump format's version the record was written in (``"1.0"``; absent before versioning):
#: :data:`probe_format.records.FORMAT_VERSION`
VERSION = "format_version"
STEP = "step"            #: the step number
RANK = "rank"            #: the rank, or null when not distributed
ENTERED = "entered"      #: where a carried overflow came in (the ENTERED_* keys), first record of a step
MESSAGE = "message"      #: a sentence for people (records that name no call, communication records)
NONFINITE = "nonfinite"  #: records that name no call: labels of what held inf/nan
REPLAY = "replay"        #: auto checks: found by running the gradient computation at this file:line again
COLLECTIVE = "collective"  #: collective calls: the COLLECTIVE_* keys
#: a call made inside another intercepted call (L1): that outer call's entry name, e.g.
#: ``Functional.clip_by_global_norm.0.forward``. The outer call's inputs and result were finite (it is
#: not in dump.json): it masked the overflow this call made
INSIDE = "inside"
#: the names of the Parameters the call (L1) or Cell (L0) wrote inf/nan into in place (finite before
#: it, not after), e.g. ``["bn.moving_variance"]``; dump.json's entry has their values after the call
#: under WRITTEN_ENTRY
WRITTEN = "written"

# record kinds (``kind``)
FORWARD = "forward"
BACKWARD = "backward"
PARAMETERS_GRAD = "parameters_grad"
SENTINEL = "sentinel"              #: inf/nan seen by sentinel checks: no call named, no dump.json entry
COMMUNICATION = "communication"    #: a collective call whose local inputs were finite and output not
#: a gradient computation (or the optimizer) received inf/nan that no checked call or Cell explains: the
#: overflow lies outside what the level checks (L0: the loss code outside the model); no dump.json entry
OUTSIDE = "outside"
#: Parameters held inf/nan right after an optimizer step whose gradients were finite; no dump.json entry
UPDATE = "update"
KINDS = (FORWARD, BACKWARD, PARAMETERS_GRAD, SENTINEL, COMMUNICATION, OUTSIDE, UPDATE)
#: kinds of records that name no call (no dump.json entry; ``name`` is the kind itself; ``message`` and
#: ``nonfinite`` say what held inf/nan and where)
NOTE_KINDS = (SENTINEL, OUTSIDE, UPDATE)
#: the ``name`` of a sentinel record
SENTINEL_NAME = "sentinel"

# ``entered``: {"entry", "input", "source", "parameter", "at_start", "message"}
ENTERED_ENTRY = "entry"            #: the entry whose input held inf/nan
ENTERED_INPUT = "input"            #: which input, e.g. ``input_args[0]``, or null
#: ``outside`` (made outside the checked window), ``parameter``, ``collective``, ``own-construct`` or
#: ``mixed-precision``
ENTERED_SOURCE = "source"
ENTERED_PARAMETER = "parameter"    #: the Parameter's name, or null
ENTERED_AT_START = "at_start"      #: the Parameter held inf/nan at start()
SOURCE_OUTSIDE = "outside"
SOURCE_PARAMETER = "parameter"
#: L0: a Cell's inf/nan came in through a collective call inside it (``entry`` names that call)
SOURCE_COLLECTIVE = "collective"
#: L0: the model given to ``start()`` made the inf/nan in its own ``construct``, between its sub-Cells,
#: from finite inputs (on that model's own record, or on the sub-Cell it handed the inf/nan to)
SOURCE_OWN_CONSTRUCT = "own-construct"
#: on an origin's record: an input finite in its own dtype that MindSpore cast, for the call (L1) or for the
#: operators of the Cell (L0), to the narrower precision of a Cell given one (``Cell.to_float``, amp_level
#: O2/O3/auto), which cannot hold it: the cast made it inf before the kernel ran (``input`` names it)
SOURCE_MIXED_PRECISION = "mixed-precision"


# -- dump.json (msprobe's format) --------------------------------------------------------

DATA = "data"                                #: dump.json's object of entries
# an entry's keys (msprobe's): a forward entry's inputs, keyword inputs, outputs and (a Cell's)
# Parameters; a backward entry's input (the gradients w.r.t. the outputs) and output
INPUT_ARGS = "input_args"
INPUT_KWARGS = "input_kwargs"
OUTPUT = "output"
INPUT = "input"
PARAMETERS = "parameters"
#: probe_runtime's key in a forward entry (not msprobe's): the values an in-place call left in the
#: Parameters it may write, after the call, keyed like their values before it (L1: ``input_args[4]``,
#: the position of the copy made before the call; L0: the Parameter's name under ``parameters``)
WRITTEN_ENTRY = "written"
STATS = ("Max", "Min", "Mean", "Norm")       #: per-tensor statistics; null where msprobe has none
DIRECTIONS = (FORWARD, BACKWARD, PARAMETERS_GRAD)  #: the last or second-to-last part of an entry name


def step_dir(step: int) -> str:
    """The folder name of a step: ``step_dir(3) == "step3"``."""
    return f"step{step}"


def rank_dir(rank: Optional[int]) -> str:
    """The folder name of a rank: ``rank_dir(1) == "rank1"``, ``rank_dir(None) == "rank"`` (not distributed)."""
    return "rank" if rank is None else f"rank{rank}"


def parse_step(name: str) -> tuple[bool, Optional[int]]:
    """(is a step folder name, its number): ``parse_step("step3") == (True, 3)``."""
    match = STEP_PATTERN.match(name)
    return (True, int(match.group(1))) if match else (False, None)


def parse_rank(name: str) -> tuple[bool, Optional[int]]:
    """(is a rank folder name, its number or None): ``parse_rank("rank") == (True, None)``."""
    match = RANK_PATTERN.match(name)
    if not match:
        return False, None
    return True, int(match.group(1)) if match.group(1) else None


#: a kernel's entry name (level L2), as msprobe's kernel dumps name kernels:
#: ``<Op>.<full name with scope>``, e.g. ``Exp.Default/network-WithLossCell/_backbone-Net/Exp-op0``
#: (``.<n>`` added when one step records the same kernel twice)
KERNEL_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\.[^\s]*/[^/\s]*-op\d+(\.\d+)?$")


def entry_kind(name: str) -> str:
    """What an entry name names: ``Cell``, ``Module`` (L0 in the MSAdapter
    scenario), ``kernel`` (level L2) or ``API``."""
    if name.startswith("Cell."):
        return "Cell"
    if name.startswith("Module."):
        return "Module"
    return "kernel" if KERNEL_PATTERN.match(name) else "API"


def direction_of(name: str) -> Optional[str]:
    """``forward``, ``backward`` or ``parameters_grad`` from an entry name
    (``Functional.exp.3.forward``, ``Cell.fc.Dense.backward.0``,
    ``Cell.fc.Dense.parameters_grad``; a kernel: ``backward`` when its
    full name starts with ``Gradients/``), else None."""
    if KERNEL_PATTERN.match(name):
        return "backward" if name.split(".", 1)[1].startswith("Gradients/") else "forward"
    parts = name.split(".")
    for part in reversed(parts[-2:]):
        if part in DIRECTIONS:
            return part
    return None
