"""Level L2 on the CPU backend: every compiled step checked, an
overflowing one run again with MindSpore's kernel dump on.

While a window is open (``start()`` to ``stop()``), a call of a Cell from
Python (in GRAPH_MODE, one run of its compiled graph: a
``TrainOneStepCell`` in a loop, the network ``Model.train`` runs) goes
through :meth:`GraphChecks.call`:

1. the Cell's Parameters and optimizer state are copied to reused host
   buffers (:class:`~.snapshot.StateSnapshot`);
2. the step runs as it would without the tool;
3. its outputs and Parameters are tested for inf/nan; when all are finite
   that is all (training is bit-identical to a run without the tool);
4. otherwise the state is put back, MindSpore's dump is turned on
   (:mod:`.private`), the same step runs again with the same arguments, the
   dump is turned off, and :func:`~.scan.scan` names the first kernel whose
   inputs were finite and output not, and those that carried it on;
   :class:`~.records.KernelRecords` writes them. The step's own result is
   returned and the state it left put back: the step counts once, as
   without the tool (only random kernels drew once more).

Example::

    checks = GraphChecks(state, records, switch, scratch="/tmp/probe_l2_x", library_roots=roots)
    checks.open()              # start()
    loss = train_net(x, y)     # checked; replayed under the dump when it overflows
    checks.close()             # stop()
"""
from __future__ import annotations

import atexit
import glob
import logging
import os
import shutil
import sys
import weakref
from types import FrameType
from typing import Any, Callable, Optional, Sequence

import numpy as np

from probe_format.layout import OUTSIDE

from ..check.verdict import is_tensor, to_host
from ..hooks.frames import shown_path
from ..state import RunState
from .dump_config import NET_NAME
from .private import DumpSwitch
from .records import KernelRecords
from .scan import random_kernels, scan
from .snapshot import StateSnapshot, construct_parameters, foreign_parameters

LOGGER = logging.getLogger("probe_runtime")


def labelled_tensors(result: Any, label: str = "output") -> list[tuple[str, Any]]:
    """``(label, tensor)`` of each tensor in ``result`` (a tensor, or
    tuples, lists and dicts of them, nested): ``output``, ``output 1``,
    ``output 'score'``."""
    if isinstance(result, (tuple, list)):
        found: list[tuple[str, Any]] = []
        for i, item in enumerate(result):
            found += labelled_tensors(item, f"{label} {i}")
        return found
    if isinstance(result, dict):
        found = []
        for key, item in result.items():
            found += labelled_tensors(item, f"{label} {key!r}")
        return found
    return [(label, result)] if is_tensor(result) else []


def nonfinite_outputs(result: Any, label: str = "output") -> list[str]:
    """Labels of the floating tensors in ``result`` (a tensor, or tuples,
    lists and dicts of them, nested) that hold inf/nan: ``output``,
    ``output 1``, ``output 'score'``. Every tensor is read on the host
    (:func:`~probe_runtime.check.verdict.to_host`: bfloat16 and float8 cast
    to float32 first; one that cannot be read counts as finite)."""
    return [name for name, tensor in labelled_tensors(result, label) if not to_host(tensor).finite()]


def nan_or_plus_inf(result: Any, label: str = "output") -> list[str]:
    """Labels of the tensors in ``result`` (as :func:`nonfinite_outputs`)
    that hold NaN or +inf: a tensor whose non-finite values are -inf only
    (a mask, by design) is not among them."""
    found = []
    for name, tensor in labelled_tensors(result, label):
        host = to_host(tensor)
        if host.finite() or host.array is None:
            continue
        flat = host.array.reshape(-1)
        if bool(np.isnan(flat).any()) or bool(np.isposinf(flat).any()):
            found.append(name)
    return found


def mask_like(result: Any) -> bool:
    """Every tensor of ``result`` holding inf/nan holds -inf only, beside
    finite values (at least one tensor does): what a mask maker returns
    (logits with invalid actions filled with -inf). A tensor that is -inf
    everywhere (a scalar loss of ``log(0)``) is no mask."""
    seen = False
    for _, tensor in labelled_tensors(result):
        host = to_host(tensor)
        if host.finite() or host.array is None:
            continue
        flat = host.array.reshape(-1)
        if bool(np.isnan(flat).any()) or bool(np.isposinf(flat).any()) or bool(np.isneginf(flat).all()):
            return False
        seen = True
    return seen


def judged_result(cell: Any) -> bool:
    """What ``cell`` returns is judged as the loss or the gradients: it
    holds an optimizer (a ``TrainOneStepCell``: it returns the loss) or a
    loss function (a ``WithLossCell``), or is a ``ForwardValueAndGrad``.
    Its -inf is never taken for a mask."""
    from mindspore import nn

    kinds: tuple = tuple(k for k in (getattr(nn, "Optimizer", None), getattr(nn, "LossBase", None),
                                     getattr(nn, "WithLossCell", None), getattr(nn, "ForwardValueAndGrad", None),
                                     getattr(nn, "TrainOneStepCell", None)) if isinstance(k, type))
    try:
        cells = [c for _, c in cell.cells_and_names()]
    except Exception:
        cells = [cell]
    return any(isinstance(c, kinds) for c in cells)


def caller_where(library_roots: tuple[str, ...]) -> Optional[str]:
    """``file:line`` of the innermost frame outside ``library_roots``."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(library_roots) and not filename.startswith("<frozen"):
            line = frame.f_lineno  # None in code run by jit(capture_mode="bytecode")
            return f"{shown_path(filename)}:{line if line is not None else frame.f_code.co_firstlineno}"
        frame = frame.f_back
    return None


class GraphChecks:
    """Checks each compiled step run while installed (see the module).

    Args:
        state: the current step, rank and ``overflow_nums``.
        records: writes the kernel records.
        switch: MindSpore's dump switch.
        scratch: the dump config's folder (emptied after each scan).
        library_roots: folders whose frames are not the user's.
        on_exhausted: called once ``overflow_nums`` overflowing steps were recorded.
        on_error: called with (where, exception) for a fault of the tool;
            the step's result is still returned.
        on_note: called when a record that names no kernel was written (no
            all-clear may be said then).
        on_unchecked: called with the step when a window closes in which no
            Cell was called (nothing of it was checked).
        on_mask: called with (step, what) when a step was taken for one
            that returns a mask made by design (:meth:`taken_for_mask`): not
            recorded, said in the run's summary.

    Attributes:
        checked: compiled runs checked; replays: runs replayed under the dump.
    """

    def __init__(self, state: RunState, records: KernelRecords, switch: DumpSwitch, *, scratch: str,
                 library_roots: tuple[str, ...], on_exhausted: Callable[[], None],
                 on_error: Callable[[str, BaseException], None], on_note: Callable[[], None] = lambda: None,
                 on_unchecked: Optional[Callable[[int], None]] = None,
                 on_mask: Optional[Callable[[int, str], None]] = None) -> None:
        self.state = state
        self.records = records
        self.switch = switch
        self.scratch = scratch
        self.library_roots = library_roots
        self.on_exhausted = on_exhausted
        self.on_error = on_error
        self.on_note = on_note
        self.on_unchecked = on_unchecked
        self.on_mask = on_mask
        self.checked = 0
        self._at_open = 0
        self._exit_registered = False
        self.replays = 0
        self._snapshots: dict[int, tuple[Callable[[], Any], StateSnapshot, tuple]] = {}
        self._reach: dict[int, tuple[Callable[[], Any], list]] = {}
        self._judged: dict[int, tuple[Callable[[], Any], bool]] = {}
        self._noted: dict[str, int] = {}  # kind of note -> the step it was first said in
        #: id of a Parameter -> (a weak reference to it, the step after whose record it held inf/nan); a Parameter
        #: may be another Cell's too (an evaluation Cell sharing the trained one's)
        self._spoiled: dict[int, tuple[weakref.ref, int]] = {}
        #: id(Parameter) -> the step that turned it inf/nan while it only carried on an earlier recorded one
        self._spread: dict[int, int] = {}
        self._original: Optional[Callable] = None
        self._depth = 0
        #: a window is open: Cell calls are checked
        self.active = False

    # -- install -------------------------------------------------------------------------
    def open(self) -> None:
        """Check the compiled steps run from now on (``start()``): patch
        ``Cell.__call__`` (removed again at :meth:`close`, as every patch
        is at ``stop()``; setting and restoring that class attribute costs
        about 0.1 ms a step)."""
        self.active = True
        self._at_open = self.checked
        self.install()

    def close(self) -> None:
        """Stop checking (``stop()``): Cells run unchecked again. A window
        in which no Cell was called (a functional ``mindspore.jit`` training
        step, which L2 does not see) is told to ``on_unchecked``."""
        if self.active and self.checked == self._at_open and self.on_unchecked is not None:
            self.on_unchecked(self.state.step)
        self.remove()  # SPEC 4: nothing of the tool stays patched after stop()

    def install(self) -> None:
        """Route every call of a Cell from Python through :meth:`call`
        (while :attr:`active`)."""
        if self._original is not None:
            return
        from mindspore import nn

        original = nn.Cell.__call__
        checks = self

        def checked_call(cell: Any, *args: Any, **kwargs: Any) -> Any:
            if checks._depth or not checks.active:
                return original(cell, *args, **kwargs)
            return checks.call(original, cell, args, kwargs)

        checked_call.__wrapped__ = original  # type: ignore[attr-defined]
        self._original = original
        nn.Cell.__call__ = checked_call
        if not self._exit_registered:  # once: the patch comes and goes with each window
            self._exit_registered = True
            atexit.register(self.remove)

    def uninstall(self) -> None:
        """Stop checking and put ``Cell.__call__`` back (``overflow_nums``
        reached, exit)."""
        self.remove()

    def remove(self) -> None:
        """Put ``Cell.__call__`` back (registered for interpreter exit)."""
        self.active = False
        if self._original is None:
            return
        from mindspore import nn

        nn.Cell.__call__ = self._original
        self._original = None

    @property
    def installed(self) -> bool:
        return self._original is not None

    # -- one compiled step -----------------------------------------------------------------
    def snapshot(self, cell: Any, extra: Sequence[tuple[str, Any]] = ()) -> StateSnapshot:
        """The (reused) snapshot of ``cell``'s state and of the ``extra``
        Parameters (:func:`foreign_parameters`), new when they change."""
        held = self._snapshots.get(id(cell))
        key = tuple(id(parameter) for _, parameter in extra)
        snapshot = held[1] if held is not None and held[0]() is cell and held[2] == key else None
        if snapshot is None:  # a new Cell (or a collected one's id reused), or other foreign Parameters
            snapshot = StateSnapshot(cell, extra)
            self._snapshots[id(cell)] = (weakref.ref(cell), snapshot, key)
            if snapshot.skipped:
                LOGGER.warning("probe_runtime: level L2 cannot copy Parameters %s to the host (dtype): a replay "
                               "starts from their values after the step", ", ".join(snapshot.skipped[:4]))
        return snapshot

    def _reached(self, cell: Any) -> list:
        """:func:`construct_parameters` of ``cell``, walked once per Cell."""
        held = self._reach.get(id(cell))
        if held is None or held[0]() is not cell:
            held = self._reach[id(cell)] = (weakref.ref(cell), construct_parameters(cell))
        return held[1]

    def call(self, original: Callable, cell: Any, args: tuple, kwargs: dict) -> Any:
        """Run one compiled step of ``cell`` checked (see the module)."""
        self._depth += 1
        try:
            try:
                extra = foreign_parameters(cell, args, kwargs, self._reached(cell))
                snapshot = self.snapshot(cell, extra)
                snapshot.take()
            except Exception as err:
                self.on_error("before a compiled step", err)
                return original(cell, *args, **kwargs)
            result = original(cell, *args, **kwargs)
            self.checked += 1
            try:
                left = snapshot.nonfinite()
                outputs = nonfinite_outputs(result)
                found = outputs + [f"Parameter {n}" for n in left]
                if self._spoiled:
                    self._mend(snapshot, left)
                if not found or self.state.exhausted:
                    return result
                if outputs and not left and self.taken_for_mask(cell, args, kwargs, snapshot, result, outputs):
                    return result
                return self.replay(original, cell, args, kwargs, snapshot, found, result, left=left)
            except Exception as err:
                self.on_error("checking a compiled step", err)
                return result
        finally:
            self._depth -= 1

    def taken_for_mask(self, cell: Any, args: tuple, kwargs: dict, snapshot: StateSnapshot, result: Any,
                       outputs: list[str]) -> bool:
        """Whether a step whose Parameters stayed finite and whose
        ``outputs`` hold inf/nan returned a mask made by design, as L1 and
        L0 defer a mask maker (``check.by_design``): every non-finite
        output holds -inf only beside finite values (:func:`mask_like`),
        the arguments held no NaN or +inf (a -inf mask given to it may be
        passed on) and the Parameters were finite before it (but for
        frozen masks), and ``cell``'s result is not a loss or gradients
        (:func:`judged_result`: a ``TrainOneStepCell`` whose loss is -inf
        is recorded). Such a step is not replayed nor recorded: what takes
        its -inf after it (a softmax over the logits, outside the compiled
        step) is not seen at L2, so it is said once on stderr and in the
        run's summary (``on_mask``), which never calls the run clean
        without naming it. A hunt's finding: a policy Cell returning its
        logits masked with -inf got a MaskedFill record in step 0, and
        with ``overflow_nums`` 1 the real overflow of step 2 went
        unchecked."""
        held = self._judged.get(id(cell))
        if held is None or held[0]() is not cell:
            held = self._judged[id(cell)] = (weakref.ref(cell), judged_result(cell))
        if held[1] or not mask_like(result) or nan_or_plus_inf([*args, *kwargs.values()], "argument") or \
                snapshot.taken_nonfinite():
            return False
        where = caller_where(self.library_roots)
        what = f"the compiled step at {where} ({', '.join(outputs[:4])})"
        if f"mask {where}" not in self._noted:
            self._noted[f"mask {where}"] = self.state.step
            LOGGER.warning("probe_runtime: step %s: %s returned -inf only, beside finite values, with its Parameters "
                           "finite: taken for a mask made by design, not recorded (an overflow that gives -inf only "
                           "looks the same at level L2; the run's summary names the steps)", self.state.step, what)
        if self.on_mask is not None:
            self.on_mask(self.state.step, what)
        return True

    def replay(self, original: Callable, cell: Any, args: tuple, kwargs: dict, snapshot: StateSnapshot,
               found: list[str], result: Any, left: Optional[list[str]] = None) -> Any:
        """Run the step again under the dump and write what it names;
        returns ``result``, the step's own result, with the Parameters as
        the step left them (a replay that drew different random numbers,
        a dropout mask, would otherwise change training). ``left``: the
        Parameters holding inf/nan after the step (a later step that
        starts from them is said to carry this step's overflow on)."""
        where = caller_where(self.library_roots)
        before = snapshot.taken_nonfinite()
        if before:
            named = ", ".join(before[:4])
            since = self._spoiled_since(snapshot, before)
            if since is not None:  # this tool's record of an earlier step says where they became inf/nan
                spread = self._spread_in(snapshot, before)
                message = (f"Parameters {named} held inf/nan before the compiled step at {where}: since the "
                           f"overflow recorded in step {since} (see that step's records)")
                if spread:  # a review's finding: a new overflow of such a step looks the same and is not named
                    steps = ", ".join(map(str, sorted(spread)))
                    message += (f", or an overflow of step {steps}, which started from inf/nan Parameters, was "
                                "not checked kernel by kernel, and left more of them inf/nan")
                message += "; this step carried it on"
                self._spoil(snapshot, [n for n in left or () if n not in before], since=since)
            else:
                message = (f"Parameters {named} held inf/nan before the compiled step at {where}: the overflow "
                           "happened before this step, outside what was checked")
            self._note(f"before {since} {', '.join(before)}", [f"Parameter {n}" for n in before], where, message,
                       again=f"Parameters {named} held inf/nan again before the compiled step at {where}",
                       record_again=False)
            return result
        given_finite = not nonfinite_outputs([*args, *kwargs.values()])  # and the Parameters: `before` is empty
        came_in = nan_or_plus_inf(list(args), "argument") + nan_or_plus_inf(kwargs, "argument")
        entered = None
        if came_in:  # as L1 says of data holding inf/nan (a hunt's finding: "where it started is not known")
            entered = (came_in[0], f"non-finite input entered with the arguments of the compiled step at {where}: "
                                   f"{', '.join(came_in[:4])} held inf/nan on entry, made outside the checked step "
                                   "(the data, or code before the step)")
        after = StateSnapshot.like(snapshot)  # what the step left (its update, moving statistics, optimizer state)
        after.take()
        snapshot.restore()
        self._clear_scratch()
        self.switch.on()
        try:
            wait_for(original(cell, *args, **kwargs))
        finally:
            self.switch.off()
            after.restore()
        self.replays += 1
        kernels = scan(self.scratch, self.library_roots, given_finite=given_finite,
                       updates_finite=given_finite and snapshot.taken_finite())
        for kernel in kernels:  # every frame of its source in MindSpore (TrainOneStepCell's optimizer): the user's
            if kernel.where is not None and where is not None and kernel.where.startswith(self.library_roots):
                kernel.where = where  # line is the step's call, as L1 names such a call's caller
        drawn = random_kernels(self.scratch)
        dumped = bool(glob.glob(os.path.join(self.scratch, "rank_*", NET_NAME, "*", "*", "*.npy")))
        self._clear_scratch()
        if drawn and "random" not in self._noted:
            self._noted["random"] = self.state.step
            LOGGER.warning("probe_runtime: the replay of the compiled step at %s ran its random kernels (%s) once "
                           "more: the step's result and Parameters are kept, but the random numbers drawn after this "
                           "step differ from a run without the tool", where, ", ".join(drawn[:4]))
        if not kernels and entered is not None:
            self._note("given", found, where, entered[1],
                       again=f"the compiled step at {where} was given inf/nan again ({', '.join(came_in[:4])})")
            self._spoil(snapshot, left)
            return result
        if not kernels:
            outputs = ", ".join(found[:4])
            if drawn:
                why = (f"its random kernels ({', '.join(drawn[:4])}) drew other numbers in the replay, which did not "
                       "overflow: the overflow likely depends on what they drew")
            elif dumped:
                why = ("the replay did not overflow (a kernel that does not give the same result twice, or a "
                       "state the replay could not put back?)")
            else:
                why = ("MindSpore's dump of its replay is empty (was a graph compiled before PrecisionDebugger() "
                       "was created? the dump config must be set before the first compile; or MindSpore could not "
                       "write it: see its log)")
            self._note("replay", found, where,
                       f"the compiled step at {where} returned inf/nan ({outputs}), but MindSpore's dump of its replay "
                       f"holds no kernel with inf/nan: {why}",
                       again=f"the compiled step at {where} returned inf/nan ({outputs}) again, and again its replay "
                             f"named no kernel: {why}")
            self._spoil(snapshot, left)
            return result
        taker = None
        if entered is None and not given_finite:  # a -inf mask given to the step: no kernel made it
            entered, taker = mask_taken(kernels, labelled_tensors(list(args), "argument")
                                        + labelled_tensors(kwargs, "argument"), where)
        self.state.count_record()
        self.records.write(kernels, entered=entered, entered_at=taker)
        self._spoil(snapshot, left)
        if self.state.exhausted:
            self.on_exhausted()
        return result

    def _spoil(self, snapshot: StateSnapshot, left: Optional[list[str]], since: Optional[int] = None) -> None:
        """Remember this step, whose record was just written, for the
        Parameters ``left`` (of ``snapshot``'s Cell) it left holding
        inf/nan: the next step of any Cell that holds them starts from
        them. A replay runs only from finite Parameters, so this step is
        the latest that made them inf/nan (it replaces an earlier one).
        ``since``: this step only carried on the overflow recorded in that
        step, from Parameters it already held inf/nan in, and ``left`` are
        the ones it spread it to: they are that step's too (a hunt's
        finding: the step after said they were spoiled "before this step,
        outside what was checked")."""
        for name, parameter in snapshot.parameters():
            if name in (left or ()):
                self._spoiled[id(parameter)] = (weakref.ref(parameter), self.state.step if since is None else since)
                if since is None:
                    self._spread.pop(id(parameter), None)
                else:
                    self._spread[id(parameter)] = self.state.step

    def _spread_in(self, snapshot: StateSnapshot, names: list[str]) -> set[int]:
        """The steps that turned Parameters ``names`` inf/nan while only
        carrying an earlier recorded overflow on (:meth:`_spoil` with
        ``since``): an overflow of their own there would look the same."""
        return {self._spread[id(p)] for name, p in snapshot.parameters() if name in names and id(p) in self._spread}

    def _mend(self, snapshot: StateSnapshot, left: list[str]) -> None:
        """Forget the Parameters of ``snapshot``'s Cell that are finite
        after its step (all but ``left``)."""
        for name, parameter in snapshot.parameters():
            if name not in left:
                self._spoiled.pop(id(parameter), None)
                self._spread.pop(id(parameter), None)

    def _spoiled_since(self, snapshot: StateSnapshot, names: list[str]) -> Optional[int]:
        """The step whose record left Parameters ``names`` (of
        ``snapshot``'s Cell) holding inf/nan, the latest when they differ;
        None unless every one of them was left so by a recorded step."""
        steps = []
        for name, parameter in snapshot.parameters():
            if name in names:
                held = self._spoiled.get(id(parameter))
                if held is None or held[0]() is not parameter:
                    return None
                steps.append(held[1])
        return max(steps) if steps else None

    def _note(self, kind: str, labels: list[str], where: Optional[str], message: str, *, again: str,
              record_again: bool = True) -> None:
        """A record of kind ``outside`` (no kernel named; it does not count
        towards ``overflow_nums``) saying ``message``. A finding of the
        same ``kind`` seen again is never silent: with ``record_again`` a
        record saying ``again`` (a step that overflowed again), else
        ``again`` on stderr only (Parameters that stay inf/nan would get a
        record in every step)."""
        first = self._noted.get(kind)
        if first is None:
            self._noted[kind] = self.state.step
            self.records.note(OUTSIDE, labels, where, message)
            self.on_note()
        elif record_again:
            self.records.note(OUTSIDE, labels, where, f"{again} (as in step {first})")
            self.on_note()
        else:
            LOGGER.warning("probe_runtime: step %s: %s (said in step %s)", self.state.step, again, first)

    def _clear_scratch(self) -> None:
        """Remove the tensors MindSpore dumped; its graphs (``.ir``) and
        execution orders stay: they are written once, at compile time."""
        for path in glob.glob(os.path.join(self.scratch, "rank_*", NET_NAME)):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)


def mask_taken(kernels: list, arguments: list[tuple[str, Any]],
               where: Optional[str]) -> tuple[Optional[tuple[str, str]], Any]:
    """(which argument, what it says) and the first carried kernel among
    ``kernels`` (a replay's, :func:`~.scan.scan`) that took a -inf-only
    argument of the step as one of its inputs (the same values: a mask
    given to the step), or (None, None). That kernel passed on a -inf made
    outside the step: its record's ``entered`` says so, as for NaN in the
    data. A helper's finding: the ``Add`` of such a mask was the step's
    first record, and ``probe report`` said where the overflow started was
    not known."""
    masks = []
    for label, tensor in arguments:
        host = to_host(tensor)
        if host.array is not None and not host.finite() and \
                not (np.isnan(host.array).any() or np.isposinf(host.array).any()):
            masks.append((label, host.array))
    for kernel in kernels:
        if kernel.origin:
            continue
        for label, array in masks:
            if any(given.shape == array.shape and np.array_equal(given, array) for given in kernel.inputs.values()):
                return (label, f"non-finite input entered with the arguments of the compiled step at {where}: "
                               f"{label} held -inf on entry (a mask?), made outside the checked step; this kernel "
                               "took it, it did not make it"), kernel
    return None, None


def wait_for(result: Any) -> None:
    """Wait until the kernels that made ``result`` ran (a host read of each
    tensor in it, :func:`nonfinite_outputs`): a replay's result is not read
    otherwise, and in an asynchronous process its kernels, and their dump,
    would still be queued when the dump is switched off and scanned (a
    fresh user's replays named no kernel at random). Never raises."""
    nonfinite_outputs(result)
