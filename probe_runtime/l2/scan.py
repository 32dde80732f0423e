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
  its float16 overflow shows in the Cast the backend inserted after it,
  but one whose output nothing dumped takes (a float16 ``Exp`` the step
  returns) holds it itself: values float16 cannot hold in such an output
  count as inf there (:func:`float16_overflow`);
* kernels are ordered by the timestamp in their file names (the dump is
  synchronous), over every graph of the step;
* in-place kernels (the optimizer's ``Apply*``, ``Assign*``, ``Adam`` ...)
  are written after they ran, so the inputs they update show the updated
  values: one counts as the origin when no kernel before it held inf/nan,
  or when the inputs it does not update were finite and no earlier
  in-place kernel that held inf/nan can have written those it does
  (:func:`inplace_origin`);
* ``Parameter.*`` files are the Parameters after the step, not kernels: skipped;
* a kernel in a graph loop (``while``) is written once per run, under one
  name: each run is a :class:`Kernel` of its own (its files told apart by
  their timestamps), judged alone;
* some inputs are not written: a value carried around a loop (the loop's
  ``h`` in ``h = h * 10``, a tensor or a float scalar), a step argument a
  loop's graph takes, a non-tensor argument (``ReduceSum``'s axis, a
  tuple). The ``.ir`` gives each kernel's input types (the line after its
  node: ``(<Tensor[Float32], (2, 4)>, <Tuple[], TupleShape()>, <Bool,
  NoShape>, ...)``); an unwritten input counts only when its type can hold
  inf/nan (a floating tensor or scalar, or a tuple of them), or when the
  ``.ir`` does not list the kernel (:func:`input_kinds`). A kernel with
  such an input is the origin only when nothing before it held inf/nan and
  the step's arguments and Parameters were finite (its unwritten input was
  made by a kernel before it, or given to the step); otherwise where the
  overflow started is not known (:attr:`Kernel.unread`). A -inf mask among
  the step's arguments counts too: a loop's graph may take it unwritten and
  turn it into +inf (``h - mask``), and L1 records the call that turns a
  -inf from outside into NaN/+inf as carried, not as the origin;
* a kernel of the gradient computation is not always named
  ``Gradients/...``: a ``while`` loop's backward body is a graph of its
  own, whose expanded kernels are named as the forward body's
  (``Expand/_Muls/Mul-op1``); its ``.ir`` marks it ``# Corresponding
  forward node candidate:`` (:func:`gradient_marks`, :attr:`Kernel.backward`);
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
from typing import Iterable, Iterator, Optional

import numpy as np

#: a dump file name; the full name is greedy: it may hold dots ("layers.0")
FILE_PATTERN = re.compile(r"^(?P<op>[^.]+)\.(?P<scope>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<stamp>\d+)\."
                          r"(?P<io>input|output)\.(?P<slot>\d+)\.(?P<format>[^.]+)\.(?P<dtype>[^.]+)\.npy$")
#: kernels that update a Parameter in place (their files show values after the update)
INPLACE_PREFIXES = ("Apply", "Assign", "SparseApply", "FusedSparse")
INPLACE_NAMES = frozenset({"Adam", "AdamWeightDecay", "SGD", "Lamb", "ScatterUpdate", "ScatterAdd",
                           "ScatterNdUpdate", "ScatterNdAdd"})
#: in-place kernels: (how many inputs, the slots of those it updates: the Parameter and the optimizer
#: state it writes), from MindSpore's operator docs ("to be updated"); the other inputs are dumped as the
#: kernel read them
WRITTEN_SLOTS: dict[str, tuple[int, tuple[int, ...]]] = {
    "SGD": (6, (0, 3, 5)),  # parameters, gradient, learning_rate, accum, momentum, stat
    "ApplyMomentum": (5, (0, 1)),  # variable, accumulation, learning_rate, gradient, momentum
    "ApplyGradientDescent": (3, (0,)),  # var, alpha, delta
    "ApplyAdagrad": (4, (0, 1)),  # var, accum, lr, grad
    "Adam": (10, (0, 1, 2)),  # var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient
    "AdamWeightDecay": (9, (0, 1, 2)),  # var, m, v, lr, beta1, beta2, epsilon, decay, gradient
    "Assign": (2, (0,)), "AssignAdd": (2, (0,)), "AssignSub": (2, (0,)),  # variable, value
}
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
        run: which run of the kernel this is (0: the first; a kernel in a
            graph loop runs once per iteration).
        runs: how many runs of the kernel were dumped.
        nonfinite_runs: how many of them held inf/nan (set by :func:`classify`).
        unread: the input slots that may hold inf/nan (a floating type in
            the ``.ir``) MindSpore wrote no readable file for; without the
            kernel's types in the ``.ir``, every slot below the highest one
            written, and None when it wrote no input file.
        listed: its full name in its graph's execution order (and ``.ir``),
            found by :func:`align`; ``""`` when it cannot be told, None
            when there is no execution order.
        gradient: its graph's ``.ir`` lists it as made from a forward
            node (``# Corresponding forward node candidate:``): a kernel of
            the gradient computation whose name does not say so
            (:func:`gradient_names`).
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
    run: int = 0
    runs: int = 1
    nonfinite_runs: int = 0
    unread: Optional[list[int]] = field(default_factory=list)
    listed: Optional[str] = None
    gradient: bool = False
    #: output slots written with a float16 header over float32 data (the CPU ran the kernel in float32)
    widened: set[int] = field(default_factory=set)
    #: its inf/nan is values of such an output that float16 cannot hold (:func:`float16_overflow`)
    float16_overflow: bool = False

    @property
    def name(self) -> str:
        """The record's name, as msprobe's kernel dumps name kernels: ``<Op>.<full name>``."""
        return f"{self.op}.{self.full_name}"

    @property
    def backward(self) -> bool:
        """True for a kernel of the gradient graph: full name
        ``Gradients/...``, or one the ``.ir`` says was made from a forward
        node (:attr:`gradient`: the expanded ``Expand/_Muls/Mul-op1`` of a
        backward ``while`` loop)."""
        return self.gradient or self.full_name.startswith("Gradients/")

    @property
    def scope(self) -> str:
        """The Cell scope: the full name without the kernel (``Default/network-WithLossCell/_backbone-Net``)."""
        return self.full_name.rpartition("/")[0]

    @property
    def inplace(self) -> bool:
        """True for a kernel that updates a Parameter in place."""
        return self.op.startswith(INPLACE_PREFIXES) or self.op in INPLACE_NAMES

    @property
    def inputs_known(self) -> bool:
        """True when every input that may hold inf/nan was read (see
        :attr:`unread`)."""
        return self.unread is not None and not self.unread

    def unread_text(self) -> str:
        """What was not dumped of its inputs, for people (``input 0``,
        ``its inputs``)."""
        if self.unread is None:
            return "its inputs"
        return f"input{'s' if len(self.unread) > 1 else ''} {', '.join(str(s) for s in self.unread)}"


def load_npy(path: str) -> Optional[np.ndarray]:
    """The array in a MindSpore dump file, or None when it cannot be read.

    The data is read by its size: a float16 header over twice as many bytes
    as float16 needs holds float32 values (the CPU backend ran the kernel
    in float32 and wrote its declared dtype)."""
    return read_npy(path)[0]


def read_npy(path: str) -> tuple[Optional[np.ndarray], bool]:
    """:func:`load_npy`'s array, and whether its float16 header held
    float32 data (the kernel ran in float32)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            data = f.read()
    except (OSError, ValueError):
        return None, False
    if dtype.hasobject:
        return None, False
    count = int(np.prod(shape)) if shape else 1
    widened = dtype == np.float16 and len(data) == count * 4
    if widened:
        dtype = np.dtype(np.float32)
    if len(data) < count * dtype.itemsize:
        return None, False
    array = np.frombuffer(data, dtype=dtype, count=count)
    return array.reshape(shape, order="F" if fortran else "C"), widened


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


def align(kernels: list[Kernel], rank_folder: str) -> None:
    """Set :attr:`Kernel.listed` of the kernels of each graph that has an
    execution order CSV. The dump's file names number some kernels
    otherwise than the execution order and the ``.ir`` do (the float16
    Casts of an O2 backward pass, MindSpore 2.10: the file name's
    ``Grad_Cast/Cast-op5`` is the row ``Grad_Cast/Cast-op6``, and the
    ``.ir``'s ``Cast-op5`` is another Cast, in ``amp.py``), so a file name
    looked up in the ``.ir`` may give another kernel's line. Kernels of one
    scope and type (the full name without ``-opN``) keep their order in
    both (kernels of different scopes do not always, measured), so within
    such a group the dumped kernels, in the order they first ran, are the
    rows in order when there are as many of each; when there are not, a
    kernel keeps its file's name if it is a row, else ``listed`` is ``""``:
    not known (:func:`scan` gives it no line of its own)."""
    firsts: dict[str, dict[str, list[Kernel]]] = {}  # graph -> shape -> first runs, in execution order
    for kernel in kernels:
        if kernel.run == 0:
            firsts.setdefault(kernel.graph, {}).setdefault(_OP_NUMBER.sub("", kernel.full_name), []).append(kernel)
    listed: dict[tuple[str, str, str], str] = {}
    for graph, groups in firsts.items():
        path = os.path.join(rank_folder, "execution_order", f"ms_execution_order_graph_{graph}.csv")
        try:
            with open(path, encoding="utf-8", newline="") as f:
                rows = [row[0] for row in csv.reader(f) if row and "/" in row[0]]
        except OSError:
            continue
        by_shape: dict[str, list[str]] = {}
        for row in rows:
            by_shape.setdefault(_OP_NUMBER.sub("", row), []).append(row)
        for shape, dumped in groups.items():
            own = by_shape.get(shape)
            if not own:  # kernels the backend inserted, or another graph's: left to the file name
                continue
            names = own if len(own) == len(dumped) else [k.full_name if k.full_name in own else "" for k in dumped]
            for kernel, name in zip(dumped, names):
                listed[(graph, kernel.op, kernel.full_name)] = name
    for kernel in kernels:
        kernel.listed = listed.get((kernel.graph, kernel.op, kernel.full_name), kernel.listed)


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
#: an .ir node's types line: ``: (<input>, <input> ...) -> (<output>)``
_IR_TYPES = re.compile(r"^:\s*\((?P<inputs>.*)\)\s*->")
#: a type that can hold inf/nan: a floating dtype (``BFloat16`` too), a number of no known type
_FLOATING = re.compile(r"Float|Complex|Number|Any")


def _floating_slots(inputs: str) -> tuple[bool, ...]:
    """For each type in an .ir types list (``<Tensor[Float32], (2, 4)>,
    <Tuple[], TupleShape()>``): whether it can hold inf/nan."""
    found, depth, start = [], 0, 0
    for i, char in enumerate(inputs):
        if char == "<":
            start = i if depth == 0 else start
            depth += 1
        elif char == ">" and depth:
            depth -= 1
            if depth == 0:
                found.append(bool(_FLOATING.search(inputs[start:i])))
    return tuple(found)


def input_kinds(rank_folder: str) -> dict[str, dict[str, tuple[bool, ...]]]:
    """Graph id -> full name -> for each input slot of the kernel, whether
    its type can hold inf/nan, from the graphs' ``.ir`` files: a node's
    first types line (``(<Tensor[Float32], (2, 4)>, <Tuple[],
    TupleShape()>, <Bool, NoShape>, <Bool, NoShape>) -> ...``: ReduceSum,
    whose axis and flags cannot) before its ``Fullname with scope``."""
    kinds: dict[str, dict[str, tuple[bool, ...]]] = {}
    for path in sorted(glob.glob(os.path.join(rank_folder, "graphs", "*.ir"))):
        match = _IR_GRAPH.search(path)
        own = kinds.setdefault(match.group(1) if match else "", {})
        slots: Optional[tuple[bool, ...]] = None
        awaiting = False  # a node line was read, its types line not yet
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stripped = line.strip()
                if stripped.startswith("%") and " = " in stripped:
                    slots, awaiting = None, True
                elif awaiting and stripped.startswith(":"):
                    types = _IR_TYPES.match(stripped)
                    slots, awaiting = (_floating_slots(types.group("inputs")) if types else None), False
                elif slots is not None and (name := _FULLNAME.match(stripped)) is not None:
                    own.setdefault(name.group("name"), slots)
                    slots = None
    return kinds


def _kinds_of(kernel: Kernel, kinds: dict[str, dict[str, tuple[bool, ...]]]) -> Optional[tuple[bool, ...]]:
    """The input kinds (:func:`input_kinds`) of ``kernel``: under its
    execution order name (:func:`align`) in its own graph's ``.ir``, else
    in the one other ``.ir`` that lists it alike; None when not known."""
    name = kernel.full_name if kernel.listed is None else kernel.listed
    if not name:
        return None
    own = kinds.get(kernel.graph, {}).get(name)
    if own is not None:
        return own
    others = {found[name] for found in kinds.values() if name in found}
    return others.pop() if len(others) == 1 else None


#: the .ir's mark of a node made from a forward node by differentiation (its ``In file`` lines are that node's)
_FORWARD_NODE = "Corresponding forward node candidate"


def gradient_marks(rank_folder: str) -> dict[str, dict[str, bool]]:
    """Graph id -> each full name its ``.ir`` lists -> whether it marks
    the node as made from a forward node (``# Corresponding forward node
    candidate:`` among the comment lines after its ``Fullname with
    scope``): a kernel of the gradient computation. Its name need not
    start with ``Gradients/``: a ``while`` loop's backward body is a graph
    of its own, whose expanded kernels are named ``Expand/_Muls/Mul-op1``
    as the forward body's are (MindSpore 2.10, CPU)."""
    marks: dict[str, dict[str, bool]] = {}
    for path in sorted(glob.glob(os.path.join(rank_folder, "graphs", "*.ir"))):
        match = _IR_GRAPH.search(path)
        own = marks.setdefault(match.group(1) if match else "", {})
        for name, comment in _node_comments(path):
            if comment is None:
                own.setdefault(name, False)
            elif _FORWARD_NODE in comment:
                own[name] = True
    return marks


def _node_comments(path: str) -> Iterator[tuple[str, Optional[str]]]:
    """The comment lines of each node of an ``.ir`` file: ``(full name,
    None)`` at its ``# Fullname with scope: (...)`` line, then ``(full
    name, line)`` for each comment line after it (left-stripped), until a
    line that is not a comment ends the node's block."""
    current: Optional[str] = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stripped = line.lstrip()
            if not stripped.startswith("#"):
                current = None
                continue
            match = _FULLNAME.match(stripped)
            if match is not None:
                current = match.group("name")
                yield current, None
            elif current is not None:
                yield current, stripped


def mark_gradients(kernels: list[Kernel], rank_folder: str) -> None:
    """Set :attr:`Kernel.gradient` from :func:`gradient_marks`: under its
    execution order name (:func:`align`) in its own graph's ``.ir``, else
    in the other ``.ir`` files that list it, when they agree. A kernel
    whose name cannot be told (``listed`` ``""``) keeps what its name says."""
    marks = gradient_marks(rank_folder)
    for kernel in kernels:
        name = kernel.full_name if kernel.listed is None else kernel.listed
        if not name:
            continue
        own = marks.get(kernel.graph, {}).get(name)
        if own is None:
            others = {found[name] for found in marks.values() if name in found}
            own = others == {True}
        kernel.gradient = kernel.gradient or own


def source_lines(rank_folder: str, wanted: Iterable[str], library_roots: tuple[str, ...],
                 graph: Optional[str] = None, renumbered_too: bool = True) -> dict[str, str]:
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
    kernel took the line of the other graph's (a fresh user's finding).
    ``renumbered_too`` False: exact names only (names from the graph's own
    execution order, :func:`align`)."""
    wanted = set(wanted)
    unnumbered = {_OP_NUMBER.sub("", name): name for name in wanted} if renumbered_too else {}
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
        for name, comment in _node_comments(path):
            if comment is None:
                current = name if name in wanted and name not in found else None
                if current is None:
                    other = unnumbered.get(_OP_NUMBER.sub("", name))
                    current = f"?{other}" if other is not None and other not in renumbered else None
                continue
            frame = _IN_FILE.match(comment) if current is not None else None
            if current is None or frame is None:
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


def _agrees(floating: tuple[bool, ...], written: set[int], inputs: dict[int, np.ndarray]) -> bool:
    """True when input kinds from the ``.ir`` fit the input files written:
    a slot for each, and no floating file where the ``.ir`` has no floating type."""
    return all(slot < len(floating) for slot in written) and \
        all(floating[slot] or array.dtype.kind not in "fc" for slot, array in inputs.items())


def read_kernels(root: str) -> list[Kernel]:
    """Every run of every kernel dumped under ``root`` (the dump config's
    path), in execution order; ``Parameter.*`` files left out. A kernel
    that ran several times (in a graph loop) gives one :class:`Kernel` per
    run: its files, in timestamp order, start a new run at an input after
    an output, or at a slot the run already has. Each is matched to its
    execution order name (:func:`align`) and its inputs that may hold
    inf/nan but were not written are found (:attr:`Kernel.unread`)."""
    files: dict[tuple[str, str, str], list[tuple[int, bool, int, str]]] = {}
    rank_folders = sorted(glob.glob(os.path.join(root, "rank_*")))
    for rank_folder in rank_folders:
        names = full_names(rank_folder)
        for path in glob.glob(os.path.join(rank_folder, "*", "*", "*", "*.npy")):
            match = FILE_PATTERN.match(os.path.basename(path))
            if match is None or match.group("op") == "Parameter":
                continue
            graph = os.path.basename(os.path.dirname(os.path.dirname(path)))
            key = (graph, match.group("op"), unflatten(match.group("scope"), names))
            files.setdefault(key, []).append((int(match.group("stamp")), match.group("io") == "input",
                                              int(match.group("slot")), path))
    kernels: list[Kernel] = []
    written: list[tuple[Kernel, set[int]]] = []
    for (graph, op, full), items in files.items():
        runs: list[tuple[Kernel, set[int], set[int]]] = []  # each run, the input and output slots it has files for
        for stamp, is_input, slot, path in sorted(items):
            current = runs[-1] if runs else None
            if current is None or ((slot in current[1] or bool(current[2])) if is_input else slot in current[2]):
                current = (Kernel(op=op, full_name=full, graph=graph, stamp=stamp, run=len(runs)), set(), set())
                runs.append(current)
            kernel, in_slots, out_slots = current
            (in_slots if is_input else out_slots).add(slot)
            array, widened = read_npy(path)
            if array is not None:
                (kernel.inputs if is_input else kernel.outputs)[slot] = array
                if widened and not is_input:
                    kernel.widened.add(slot)
        for kernel, in_slots, _ in runs:
            kernel.runs = len(runs)
            kernels.append(kernel)
            written.append((kernel, in_slots))
    kernels.sort(key=lambda k: (k.stamp, k.graph, k.full_name))  # align() needs the execution order
    kinds: dict[str, dict[str, tuple[bool, ...]]] = {}
    for rank_folder in rank_folders:
        align(kernels, rank_folder)
        mark_gradients(kernels, rank_folder)
        for graph, found in input_kinds(rank_folder).items():
            kinds.setdefault(graph, {}).update(found)
    for kernel, in_slots in written:
        floating = _kinds_of(kernel, kinds)
        if floating is not None and not _agrees(floating, in_slots, kernel.inputs):
            floating = None  # another kernel's types
        if floating is not None:  # the .ir's types: only an input that can hold inf/nan counts
            kernel.unread = [slot for slot, can in enumerate(floating) if can and slot not in kernel.inputs]
        else:
            kernel.unread = None if not in_slots else \
                [slot for slot in range(max(in_slots) + 1) if slot not in kernel.inputs]
    return kernels


def classify(kernels: list[Kernel], given_finite: bool = True, updates_finite: bool = False) -> list[Kernel]:
    """The kernels that held inf/nan, in execution order, each marked
    origin or carried (see the module's docstring), each kernel once: of
    its runs (``kernels`` holds every run), the first origin run, else the
    first that held inf/nan (``nonfinite_runs`` counts them).

    ``given_finite``: the step's arguments and Parameters were finite, so
    an input MindSpore did not write (:attr:`Kernel.unread`: loop-carried
    or given, of a type that can hold inf/nan) was finite when no kernel
    before it held inf/nan; False (a -inf mask among the arguments too:
    it may reach such an input unwritten): such a kernel is never the
    origin. A kernel whose inputs were all read is judged by them alone.
    ``updates_finite``: the arguments and every Parameter, masks by design
    included, were finite at the step's start (what an in-place kernel
    after a flagged one is judged on: :func:`inplace_origin`)."""
    flagged: list[Kernel] = []
    for index, kernel in enumerate(kernels):
        outputs_finite = all(all_finite(a) for a in kernel.outputs.values())
        if outputs_finite and float16_overflow(kernel, kernels[index + 1:]):
            kernel.float16_overflow, outputs_finite = True, False
        inputs_finite = all(all_finite(a) for a in kernel.inputs.values())
        if kernel.inplace:
            if outputs_finite and inputs_finite:
                continue
            kernel.nonfinite, kernel.origin = True, not flagged or inplace_origin(kernel, flagged, updates_finite)
        elif not outputs_finite:
            # an input not written: finite only when everything that could have made it was
            known = kernel.inputs_known or (given_finite and not flagged)
            kernel.nonfinite, kernel.origin = True, inputs_finite and known
        else:
            continue
        flagged.append(kernel)
    chosen: dict[tuple[str, str, str], Kernel] = {}
    count: dict[tuple[str, str, str], int] = {}
    for kernel in flagged:
        key = (kernel.graph, kernel.op, kernel.full_name)
        count[key] = count.get(key, 0) + 1
        if key not in chosen or (kernel.origin and not chosen[key].origin):
            chosen[key] = kernel
    for key, kernel in chosen.items():
        kernel.nonfinite_runs = count[key]
    return sorted(chosen.values(), key=lambda k: (k.stamp, k.graph, k.full_name))


def inplace_origin(kernel: Kernel, flagged: list[Kernel], updates_finite: bool) -> bool:
    """An in-place kernel that held inf/nan after other kernels did
    (``flagged``) started an overflow of its own: what it read was finite.
    The inputs it does not write are dumped as it read them; those it writes
    (:data:`WRITTEN_SLOTS`: Parameters and optimizer state) are dumped as it
    left them, so their values before it are those of the step's start
    (finite when ``updates_finite``: a frozen Parameter's -inf mask counts,
    as a review found ``AssignAdd`` of such a prior, after a real overflow,
    called an origin) unless an earlier flagged in-place kernel
    wrote them. That is ruled out when each such kernel's written inputs
    (for any other flagged kernel, its outputs: it may write in place
    without being known to) differ in shape from this one's (a Parameter
    keeps its shape). False
    whenever that cannot be told (an operator not in the table, one of its
    inputs not dumped). A fresh user's finding: the second of two SGD kernels a
    learning rate of 1e38 overflowed, from a finite gradient and weight,
    was said to carry the first one's overflow."""
    known = WRITTEN_SLOTS.get(kernel.op)
    if known is None or not updates_finite or not kernel.inputs_known or \
            any(slot not in kernel.inputs for slot in range(known[0])):
        return False
    written = known[1]
    if not all(all_finite(values) for slot, values in kernel.inputs.items() if slot not in written):
        return False
    shapes = {kernel.inputs[slot].shape for slot in written}
    for earlier in flagged:
        if earlier.inplace:
            theirs = WRITTEN_SLOTS.get(earlier.op)
            if theirs is None or any(slot not in earlier.inputs or earlier.inputs[slot].shape in shapes
                                     for slot in theirs[1]):
                return False
        elif any(values.shape in shapes for values in earlier.outputs.values()):
            return False  # it may be an in-place kernel not known as one (mint's Inplace* ...)
    return True


def float16_overflow(kernel: Kernel, after: list[Kernel]) -> bool:
    """An output of ``kernel`` written as float16 over float32 data (the
    CPU backend ran it in float32, :attr:`Kernel.widened`) holds finite
    values float16 cannot hold, and no kernel dumped ``after`` it took them
    as an input: its float16 result is inf there (a float16 ``Exp`` of 12
    is 162755 in its file and inf in what the step returns). When a kernel
    after it took them (the Cast the backend inserted after a float16
    MatMul) that kernel holds the overflow, and this one is left alone. A
    helper's finding: such an ``Exp`` the step returned was never named,
    and the step's only record was the ``Add`` of a -inf mask it was given
    ("where the overflow started is not known")."""
    for slot in kernel.widened:
        values = kernel.outputs.get(slot)
        if values is None or not all_finite(values):
            continue
        with np.errstate(over="ignore"):
            if all_finite(values.astype(np.float16)):
                continue
        if not any(_same_values(values, given) for other in after for given in other.inputs.values()):
            return True
    return False


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


def scan(root: str, library_roots: tuple[str, ...], given_finite: bool = True,
         updates_finite: bool = False) -> list[Kernel]:
    """The kernels of the dump under ``root`` that held inf/nan, in
    execution order, with their source lines (``where``). A kernel no
    ``.ir`` lists (inserted by the backend after compiling, such as the
    Cast after a float16 MatMul), or whose file name is another kernel's
    in the ``.ir`` (:func:`align`), or that the ``.ir`` lists without a
    source line (a backend Cast), gets the line of the kernel that made its
    input inside its Cell scope, else none (:func:`_producer_line`).
    ``given_finite``, ``updates_finite``: as :func:`classify`'s."""
    kernels = read_kernels(root)
    flagged = classify(kernels, given_finite, updates_finite)
    if flagged:
        rank_folders = sorted(glob.glob(os.path.join(root, "rank_*")))
        lines: dict[str, dict[str, str]] = {}  # graph id -> full name -> file:line
        for graph in sorted({k.graph for k in kernels}):
            found = lines.setdefault(graph, {})
            # a kernel its file names otherwise than its graph's execution order: that order's name, in that
            # graph's .ir, exactly (its file's name there is another kernel's)
            listed = {k.listed for k in kernels if k.graph == graph and k.listed and k.listed != k.full_name}
            for rank_folder in rank_folders:
                found.update(source_lines(rank_folder, listed - set(found), library_roots, graph=graph,
                                          renumbered_too=False))
            wanted = {k.full_name for k in kernels if k.graph == graph and k.listed in (None, k.full_name)}
            for rank_folder in rank_folders:
                found.update(source_lines(rank_folder, wanted - set(found), library_roots, graph=graph))
            for rank_folder in rank_folders:  # not in its own graph's .ir
                if wanted - set(found):
                    found.update(source_lines(rank_folder, wanted - set(found), library_roots))
        for kernel in kernels:
            name = kernel.full_name if kernel.listed is None else kernel.listed
            kernel.where = lines[kernel.graph].get(name) if name else None
        own = [kernel.where for kernel in kernels]  # each kernel's own line, before any is given one
        for index, kernel in enumerate(kernels):
            if kernel.nonfinite and kernel.where is None:
                kernel.where = _producer_line(kernel, kernels[:index], own[:index])
    return flagged


#: a backward kernel's ``Grad_<Op>`` scope part (the forward operation it differentiates)
_GRAD_PART = re.compile(r"/Grad_[A-Za-z0-9]+$")
#: how many kernels before one with no line of its own are searched for the one that made its input
PRODUCER_REACH = 64


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` hold the same values (inf/nan where the other does)."""
    if a.shape != b.shape:
        return False
    floating = a.dtype.kind in "fc" and b.dtype.kind in "fc"
    return bool(np.array_equal(a, b, equal_nan=floating))


def _producer_line(kernel: Kernel, before: list[Kernel], lines: list[Optional[str]]) -> Optional[str]:
    """The line of a kernel with no line of its own (one the backend
    inserted after compiling, such as the Cast after a float16 MatMul, or
    one its ``.ir`` lists without a source line, as ``is_backend_cast``
    Casts): the own line of the kernel that made its input (an output of
    it holds the same values), when that kernel lies inside its Cell scope
    (a ``Grad_<Op>`` part left out; a bare ``Default`` or ``Expand/...``
    scope says nothing): the backend inserted it for that kernel. Else
    None: never the line of whatever kernel ran before it (an optimizer's
    Cast was given the line of the gradient kernel before it)."""
    scope = _GRAD_PART.sub("", kernel.scope)
    if "/" not in scope or scope.startswith("Expand/") or not kernel.inputs:
        return None
    start = max(0, len(before) - PRODUCER_REACH)
    for other, line in zip(reversed(before[start:]), reversed(lines[start:])):
        if line is None or not other.full_name.startswith(scope + "/"):
            continue
        if any(_same_values(out, given) for out in other.outputs.values() for given in kernel.inputs.values()):
            return line
    return None
