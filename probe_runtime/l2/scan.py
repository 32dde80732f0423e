"""Reads one replayed step's MindSpore dump and names the kernels whose
outputs held inf/nan: the first one whose inputs were finite (the origin)
and those that carried it on.

MindSpore's synchronous dump (CPU, ``saved_data`` ``"tensor"``) writes, under
its ``path``::

    rank_<R>/<net_name>/<graph id>/<iteration>/
        <Op>.<full name, '/' as '_'>.<task>.<stream>.<timestamp>.<input|output>.<n>.<format>.<dtype>.npy
    rank_<R>/execution_order/ms_execution_order_graph_<graph id>.csv   (full names, one a line)
    rank_<R>/graphs/ms_output_trace_code_graph_<graph id>.ir           (each kernel's full name and the
                                                                        source lines it came from)

(measured on MindSpore 2.7.0 and 2.10.0, CPU). What this module does about
that format's traps:

* a float16 kernel the CPU backend ran in float32 (MatMul) is written with
  a float16 header over float32 data: :func:`load_npy` reads the data by
  its size (read by its header, half of it looks like garbage, often inf);
* kernels are ordered by the timestamp in their file names (the dump is
  synchronous), over every graph of the step;
* in-place kernels (the optimizer's ``Apply*``, ``Assign*``, ``Adam`` ...)
  are written after they ran, so their inputs show the updated values: one
  counts as the origin when no kernel before it held inf/nan;
* ``Parameter.*`` files are the Parameters after the step, not kernels: skipped;
* a backward kernel's scope may name the wrong Cell; its source line (from
  the ``.ir``: the last frame outside MindSpore's own package) is right.

Example::

    kernels = scan(folder, library_roots=("/usr/lib/python3/site-packages/mindspore",))
    kernels[0].name     # "Exp.Default/network-WithLossCell/_backbone-Net/Exp-op0"
    kernels[0].origin   # True
"""
from __future__ import annotations

import csv
import glob
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

#: a dump file name; the full name is greedy: it may hold dots ("layers.0")
FILE_PATTERN = re.compile(r"^(?P<op>[^.]+)\.(?P<scope>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<stamp>\d+)\."
                          r"(?P<io>input|output)\.(?P<slot>\d+)\.(?P<format>[^.]+)\.(?P<dtype>[^.]+)\.npy$")
#: kernels that update a Parameter in place (their files show values after the update)
INPLACE_PREFIXES = ("Apply", "Assign", "SparseApply", "FusedSparse")
INPLACE_NAMES = frozenset({"Adam", "AdamWeightDecay", "SGD", "Lamb", "ScatterUpdate", "ScatterAdd",
                           "ScatterNdUpdate", "ScatterNdAdd"})
_FULLNAME = re.compile(r"#\s*Fullname with scope:\s*\((?P<name>[^)]*)\)")
_OP_NUMBER = re.compile(r"-op\d+$")
_IN_FILE = re.compile(r"#\s*In file (?P<file>.+?):(?P<line>\d+)(?:~\d+)?(?:,|/|$)")


@dataclass
class Kernel:
    """One kernel of the replayed step, as dumped.

    Attributes:
        op: the kernel type (``Exp``, ``MatMul``, ``Cast`` ...).
        full_name: its full name with scope
            (``Default/network-WithLossCell/_backbone-Net/Exp-op0``; the
            file name's form, ``/`` as ``_``, when no execution order says it).
        graph: the graph id.
        stamp: the earliest timestamp of its files (execution order).
        inputs, outputs: slot -> host array (float16 kernels run in float32:
            the float32 data).
        origin: its inputs were finite and an output not (or, in place,
            no kernel before it held inf/nan).
        nonfinite: an output (in place: any file) held inf/nan.
        where: the user's ``file:line`` it came from, or None.
    """

    op: str
    full_name: str
    graph: str
    stamp: int
    inputs: dict[int, np.ndarray] = field(default_factory=dict)
    outputs: dict[int, np.ndarray] = field(default_factory=dict)
    origin: bool = False
    nonfinite: bool = False
    where: Optional[str] = None

    @property
    def name(self) -> str:
        """The record's name, as msprobe's kernel dumps name kernels: ``<Op>.<full name>``."""
        return f"{self.op}.{self.full_name}"

    @property
    def backward(self) -> bool:
        """True for a kernel of the gradient graph (full name ``Gradients/...``)."""
        return self.full_name.startswith("Gradients/")

    @property
    def scope(self) -> str:
        """The Cell scope: the full name without the kernel (``Default/network-WithLossCell/_backbone-Net``)."""
        return self.full_name.rpartition("/")[0]

    @property
    def inplace(self) -> bool:
        """True for a kernel that updates a Parameter in place."""
        return self.op.startswith(INPLACE_PREFIXES) or self.op in INPLACE_NAMES


def load_npy(path: str) -> Optional[np.ndarray]:
    """The array in a MindSpore dump file, or None when it cannot be read.

    The data is read by its size: a float16 header over twice as many bytes
    as float16 needs holds float32 values (the CPU backend ran the kernel
    in float32 and wrote its declared dtype)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            data = f.read()
    except (OSError, ValueError):
        return None
    if dtype.hasobject:
        return None
    count = int(np.prod(shape)) if shape else 1
    if dtype == np.float16 and len(data) == count * 4:
        dtype = np.dtype(np.float32)
    if len(data) < count * dtype.itemsize:
        return None
    array = np.frombuffer(data, dtype=dtype, count=count)
    return array.reshape(shape, order="F" if fortran else "C")


def all_finite(array: np.ndarray) -> bool:
    """True when ``array`` holds no inf/nan (non-float arrays always)."""
    if array.dtype.kind not in "fc":
        return True
    return bool(np.isfinite(array).all())


def full_names(rank_folder: str) -> dict[str, str]:
    """``/``-as-``_`` name -> full name, from every execution order CSV;
    the Cell scopes (every ``/``-prefix of a full name) are in it too, for
    :func:`unflatten`."""
    names: dict[str, str] = {}
    for path in glob.glob(os.path.join(rank_folder, "execution_order", "ms_execution_order_graph_*.csv")):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                if row and "/" in row[0]:
                    names.setdefault(row[0].replace("/", "_"), row[0])
                    parts = row[0].split("/")
                    for end in range(1, len(parts)):
                        scope = "/".join(parts[:end])
                        names.setdefault(scope.replace("/", "_"), scope)
    return names


def unflatten(flat: str, names: dict[str, str]) -> str:
    """The full name of a kernel file's ``/``-as-``_`` name: looked up, or
    for a kernel no execution order lists (one the backend inserted after
    compiling, such as a float16 Cast) its longest known Cell scope plus
    the rest (``Grad_<Op>_`` read as ``Grad_<Op>/``)."""
    if flat in names:
        return names[flat]
    best = ""
    for scope in names:
        if len(scope) > len(best) and flat.startswith(scope + "_"):
            best = scope
    if not best:
        return flat
    rest = flat[len(best) + 1:]
    grad = re.match(r"^(Grad_[A-Za-z0-9]+)_(.+)$", rest)
    return names[best] + "/" + (f"{grad.group(1)}/{grad.group(2)}" if grad else rest)


_IR_GRAPH = re.compile(r"_graph_(\d+)\.ir$")


def source_lines(rank_folder: str, wanted: Iterable[str], library_roots: tuple[str, ...],
                 graph: Optional[str] = None) -> dict[str, str]:
    """Full name -> the user's ``file:line`` for the kernels in ``wanted``,
    from the graphs' ``.ir`` files: the last ``In file`` frame outside
    ``library_roots`` (the last frame of all when every one is inside, as
    for an optimizer's kernels). A kernel listed under another ``-opN``
    only (a region compiled again numbers its kernels anew) gets the user
    line of one listed so. Kernels found in no ``.ir`` are left out.

    ``graph``: the id of the graph the kernels ran in (their dump folder);
    only that graph's ``.ir`` (``..._graph_<id>.ir``) is read when there is
    one (:func:`scan` then looks in every ``.ir`` for those it holds
    not). Two compiled Cells or ``@jit`` regions name their kernels alike
    (``Default/Mul-op0`` in each): looked up across every graph, a
    kernel took the line of the other graph's (a fresh user's finding)."""
    wanted = set(wanted)
    unnumbered = {_OP_NUMBER.sub("", name): name for name in wanted}
    found: dict[str, str] = {}
    library: dict[str, str] = {}
    # kernels listed under another -opN (numbers change between compiles: a region compiled again)
    renumbered: dict[str, str] = {}
    paths = sorted(glob.glob(os.path.join(rank_folder, "graphs", "*.ir")))
    if graph is not None:
        own = [path for path in paths if (m := _IR_GRAPH.search(path)) is not None and m.group(1) == graph]
        paths = own or paths
    for path in paths:
        current: Optional[str] = None
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stripped = line.lstrip()
                if not stripped.startswith("#"):
                    current = None
                    continue
                match = _FULLNAME.match(stripped)
                if match:
                    name = match.group("name")
                    current = name if name in wanted and name not in found else None
                    if current is None:
                        other = unnumbered.get(_OP_NUMBER.sub("", name))
                        current = f"?{other}" if other is not None and other not in renumbered else None
                    continue
                if current is None:
                    continue
                frame = _IN_FILE.match(stripped)
                if frame is None:
                    continue
                line_of = f"{frame.group('file')}:{frame.group('line')}"
                if current.startswith("?"):
                    if not os.path.abspath(frame.group("file")).startswith(library_roots):
                        renumbered[current[1:]] = line_of
                elif os.path.abspath(frame.group("file")).startswith(library_roots):
                    library[current] = line_of
                else:
                    found[current] = line_of  # the last user frame wins (the innermost call)
        if wanted <= set(found):
            break
    return {**renumbered, **library, **found}


def read_kernels(root: str) -> list[Kernel]:
    """Every kernel dumped under ``root`` (the dump config's path), in
    execution order; ``Parameter.*`` files left out."""
    kernels: dict[tuple[str, str, str], Kernel] = {}
    for rank_folder in sorted(glob.glob(os.path.join(root, "rank_*"))):
        names = full_names(rank_folder)
        for path in glob.glob(os.path.join(rank_folder, "*", "*", "*", "*.npy")):
            match = FILE_PATTERN.match(os.path.basename(path))
            if match is None or match.group("op") == "Parameter":
                continue
            graph = os.path.basename(os.path.dirname(os.path.dirname(path)))
            full = unflatten(match.group("scope"), names)
            key = (graph, match.group("op"), full)
            stamp = int(match.group("stamp"))
            kernel = kernels.get(key)
            if kernel is None:
                kernel = kernels[key] = Kernel(op=match.group("op"), full_name=full, graph=graph, stamp=stamp)
            kernel.stamp = min(kernel.stamp, stamp)
            array = load_npy(path)
            if array is not None:
                side = kernel.inputs if match.group("io") == "input" else kernel.outputs
                side[int(match.group("slot"))] = array
    return sorted(kernels.values(), key=lambda k: (k.stamp, k.graph, k.full_name))


def classify(kernels: list[Kernel]) -> list[Kernel]:
    """The kernels that held inf/nan, in execution order, each marked
    origin or carried (see the module's docstring)."""
    flagged: list[Kernel] = []
    for kernel in kernels:
        outputs_finite = all(all_finite(a) for a in kernel.outputs.values())
        inputs_finite = all(all_finite(a) for a in kernel.inputs.values())
        if kernel.inplace:
            if outputs_finite and inputs_finite:
                continue
            kernel.nonfinite, kernel.origin = True, not flagged
        elif not outputs_finite:
            kernel.nonfinite, kernel.origin = True, inputs_finite
        else:
            continue
        flagged.append(kernel)
    return flagged


#: kernels that draw random numbers (their own state or the generator's): a replay draws again
RANDOM_PREFIXES = ("Dropout", "Random", "Uniform", "StandardNormal", "StandardLaplace", "Multinomial",
                   "Randperm", "Bernoulli", "Gamma", "Poisson", "RandInt", "Randn", "RandExt", "RandLike",
                   "NormalExt", "NormalFloat", "NormalTensor", "InplaceNormal", "InplaceUniform",
                   "InplaceRandom", "TruncatedNormal", "ParameterizedTruncatedNormal", "LogNormal")


def random_kernels(root: str) -> list[str]:
    """The operator names (``Dropout``, ``UniformReal`` ...) of the random
    kernels dumped under ``root``, each once, sorted: what a replay of the
    step drew from the random state a second time."""
    found = set()
    for path in glob.glob(os.path.join(root, "rank_*", "*", "*", "*", "*.npy")):
        match = FILE_PATTERN.match(os.path.basename(path))
        if match is not None and match.group("op").startswith(RANDOM_PREFIXES):
            found.add(match.group("op"))
    return sorted(found)


def scan(root: str, library_roots: tuple[str, ...]) -> list[Kernel]:
    """The kernels of the dump under ``root`` that held inf/nan, in
    execution order, with their source lines (``where``). A kernel no
    ``.ir`` lists (inserted by the backend after compiling, such as the
    Cast after a float16 MatMul) gets the line of the nearest kernel
    before it that has one."""
    kernels = read_kernels(root)
    flagged = classify(kernels)
    if flagged:
        lines: dict[str, dict[str, str]] = {}  # graph id -> full name -> file:line
        for graph in sorted({k.graph for k in kernels}):
            wanted = {k.full_name for k in kernels if k.graph == graph}
            found = lines.setdefault(graph, {})
            for rank_folder in sorted(glob.glob(os.path.join(root, "rank_*"))):
                found.update(source_lines(rank_folder, wanted - set(found), library_roots, graph=graph))
            for rank_folder in sorted(glob.glob(os.path.join(root, "rank_*"))):  # not in its own graph's .ir
                if wanted - set(found):
                    found.update(source_lines(rank_folder, wanted - set(found), library_roots))
        last: Optional[str] = None
        for kernel in kernels:
            kernel.where = lines[kernel.graph].get(kernel.full_name) or (last if kernel.nonfinite else None)
            last = kernel.where or last
    return flagged
