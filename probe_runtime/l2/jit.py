"""``mindspore.jit`` regions under L1 and L0 (PyNative, CPU backend): the
kernel inside a region that made its inf/nan, named by a replay under
MindSpore's kernel dump.

At L1 and L0 a ``@jit`` function (or a Cell whose ``construct`` is
compiled) runs as one graph: no API call or Cell hook inside it is seen,
and an overflow it makes shows up later, in whatever takes its result (a
backward call fed the inf gradient can look like the origin). While a
window is open, :class:`JitRegions` wraps every call of a compiled
region (``_JitExecutor.__call__``, :mod:`.private`): when its inputs are
finite and a floating output holds inf/nan, the same call runs once more
with MindSpore's dump on, and :func:`~.scan.scan` names the first kernel
whose inputs were finite and output not, with its source line. Its
records (and those of the kernels that carried it on inside the region)
go into the step's folder with ``inside`` naming the region,
``Jit.<function>.<index>.forward``, before the level's own records of
that step.

The replay runs the region a second time, so a region that writes
Parameters in place is never replayed: an optimizer's compiled
``construct`` returns no floating tensor, and a region whose compiled
graph (its ``.ir``, written by MindSpore's dump at compile time: the
graphs whose source lines fall inside the region's function) holds an
in-place kernel (``Assign*``, ``Apply*``, ``Adam`` ...), such as a whole
``@jit`` training step with its optimizer, is said once and left alone
(:func:`writes_parameters`); so is one whose graph is not found.

Example::

    regions = JitRegions(state, records, switch, scratch=folder, library_roots=roots, on_error=log)
    regions.open()             # start()
    loss = jit_loss(pred, y)   # inf from finite inputs: replayed, the kernel recorded
    regions.close()            # stop()
"""
from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import sys
from typing import Any, Callable, Optional

import numpy as np

from probe_format.layout import OUTSIDE

from ..check.by_design import only_negative_infinity
from ..check.verdict import HostCache, is_floating, iter_tensors
from ..hooks.reach import reachable_parameters
from ..state import RunState
from .dump_config import NET_NAME
from .graph import caller_where, mask_like, nonfinite_outputs, wait_for
from .private import DumpSwitch, jit_executor, jit_trace_module
from .records import KernelRecords
from .scan import random_kernels, scan
from .snapshot import by_design

LOGGER = logging.getLogger("probe_runtime")


def _is_optimizer(obj: Any) -> bool:
    """``obj`` is a ``mindspore.nn.Optimizer``."""
    try:
        from mindspore import nn

        return isinstance(obj, nn.Optimizer)
    except Exception:  # pragma: no cover
        return False


def _no_nan_or_inf(values: Any) -> bool:
    """No floating tensor among ``values`` (nested) holds NaN or +inf: each
    is finite or holds -inf only (a mask passed to the region, by design: a
    hunt found such a region never replayed, its overflow named nowhere;
    the replay's scan judges each kernel, so a kernel fed the mask is no
    origin)."""
    cache = HostCache()
    return all(cache.finite(t) or only_negative_infinity(t, cache)
               for t in iter_tensors(list(values) if isinstance(values, (tuple, list)) else [values])
               if is_floating(t))


class _TracedRun:
    """Stands for a ``_JitExecutor`` of a ``jit(capture_mode="trace")``
    call: ``fn`` the traced function (None when not found), ``obj`` None;
    ``__name__`` from the name MindSpore gives the trace
    (``module.function#id#[file:line]``) when the function is not known."""

    def __init__(self, function: Any, trace_name: str) -> None:
        if function is None:
            function = _Named(trace_name.split("#", 1)[0].rsplit(".", 1)[-1] or "region")
        self.fn = function
        self.obj = None


class _Named:
    """A stand-in function with a name only."""

    def __init__(self, name: str) -> None:
        self.__name__ = name


def _strictly_finite(values: list) -> bool:
    """No floating tensor among ``values`` (nested) holds inf/nan."""
    return not nonfinite_outputs(values)


class JitRegions:
    """Checks each compiled region called while a window is open (see the module).

    Args:
        state: the current step and ``overflow_nums``.
        records: writes the kernel records (into the level's step folders).
        switch: MindSpore's dump switch.
        scratch: the dump config's folder.
        library_roots: folders whose frames are not the user's.
        on_error: called with (where, exception) for a fault of the tool.
        on_record: called with the step when a record of a region was
            written (the checker's later entries of it are carried on).
        on_mask: called with (a :class:`RegionMaker`, the region's -inf
            outputs) when a region returned -inf only from finite inputs
            and Parameters: True when the checker deferred it as a mask
            maker (``check.by_design``; L1), which replays it only when its
            -inf reaches a judged result (:meth:`RegionMaker.record`).
    """

    def __init__(self, state: RunState, records: KernelRecords, switch: DumpSwitch, *, scratch: str,
                 library_roots: tuple[str, ...], on_error: Callable[[str, BaseException], None],
                 on_record: Callable[[int], None] = lambda step: None,
                 on_mask: Optional[Callable[[Any, list], bool]] = None) -> None:
        self.on_record = on_record
        self.on_mask = on_mask
        self.state = state
        self.records = records
        self.switch = switch
        self.scratch = scratch
        self.library_roots = library_roots
        self.on_error = on_error
        self.active = False
        self.replays = 0
        #: region calls checked in windows (the all-clear says what their check does not see)
        self.calls = 0
        self._skipped: set[str] = set()
        self._drew: set[str] = set()  # regions whose replay drew random numbers again (said once)
        self._executor: Any = None
        self._original: Optional[Callable] = None
        self._depth = 0
        self._counters: dict[str, int] = {}
        #: (id(function), id(its Cell)) -> (function, Cell or None, the floating Parameters they reach)
        self._reach: dict[tuple[int, int], tuple[Any, Any, list]] = {}
        #: capture_mode="trace": its module and original functions, and the calls begun and not ended
        self._trace_module: Any = None
        self._trace_originals: Optional[tuple[Callable, Callable]] = None
        self._traced: list[Optional[tuple]] = []

    def open(self) -> None:
        """Check the regions called from now on (``start()``)."""
        self.active = True
        if self._original is None:
            executor = jit_executor()
            original = executor.__call__
            regions = self

            def checked_call(run: Any, *args: Any, **kwargs: Any) -> Any:
                if regions._depth or not regions.active:
                    return original(run, *args, **kwargs)
                return regions.call(original, run, args, kwargs)

            checked_call.__wrapped__ = original  # type: ignore[attr-defined]
            self._executor, self._original = executor, original
            executor.__call__ = checked_call
        if self._trace_originals is None:
            self._install_trace()

    def _install_trace(self) -> None:
        """Wrap the begin and end of a ``jit(capture_mode="trace")`` call
        (:func:`~.private.jit_trace_module`): such a function does not go
        through ``_JitExecutor``, so a hunt's trace-mode region making
        -inf was reported as "made outside the checked window"."""
        module = jit_trace_module()
        if module is None:
            return
        begin, end = module._jit_trace_begin, module._jit_trace_end
        regions = self

        def traced_begin(fn_name: Any, *args: Any, **kwargs: Any) -> Any:
            if regions._depth or not regions.active:
                regions._traced.append(None)
                return begin(fn_name, *args, **kwargs)
            regions._traced.append(regions._trace_started(fn_name, args, kwargs))
            return begin(fn_name, *args, **kwargs)

        def traced_end(*outputs: Any, **kwargs: Any) -> Any:
            result = end(*outputs, **kwargs)
            started = regions._traced.pop() if regions._traced else None
            if started is not None:
                regions._trace_ended(started, result, begin, end, kwargs)
            return result

        traced_begin.__wrapped__ = begin  # type: ignore[attr-defined]
        traced_end.__wrapped__ = end  # type: ignore[attr-defined]
        self._trace_module, self._trace_originals = module, (begin, end)
        module._jit_trace_begin, module._jit_trace_end = traced_begin, traced_end

    def _trace_started(self, fn_name: Any, args: tuple, kwargs: dict) -> Optional[tuple]:
        """What a traced call's check needs, read before it runs: (its
        name, arguments, begin's keywords, a stand-in for its run, its
        Parameters, their finiteness, the masks among them); None when it
        is not checked. Never raises."""
        try:
            function = None
            frame: Any = sys._getframe(1)
            for _ in range(4):  # the trace wrapper (``jit_trace_wrap``), whose local ``fn`` is the function
                frame = frame.f_back
                if frame is None:
                    break
                if frame.f_code.co_name == "jit_trace_wrap":
                    found = frame.f_locals.get("fn")
                    function = found if getattr(found, "__code__", None) is not None else None
                    break
            run = _TracedRun(function, str(fn_name))
            watched = not self.state.exhausted and self.state.selected()
            if not watched:
                return None
            self.calls += 1
            params = self._parameters(run, args, {})
            masks: dict[int, np.ndarray] = {}
            before = self._finite(params, masks)
            return fn_name, args, kwargs, run, params, before, masks
        except Exception as err:
            self.on_error("checking a mindspore.jit region (capture_mode trace)", err)
            return None

    def _trace_ended(self, started: tuple, result: Any, begin: Callable, end: Callable, end_kwargs: dict) -> None:
        """Judge a traced call that returned ``result`` (:meth:`_judge`);
        its replay begins the same call again, which runs its compiled
        graph (compiled by now), and ends it. Never raises."""
        fn_name, args, kwargs, run, params, before, masks = started

        def again(_run: Any, *_args: Any, **_kwargs: Any) -> Any:
            begin(fn_name, *args, **kwargs)  # compiled: runs the graph
            return end(None, **end_kwargs)

        self._depth += 1
        try:
            self._judge(again, run, args, {}, result, params, before, masks, deferrable=False)
        except Exception as err:
            self.on_error("checking inside a mindspore.jit region (capture_mode trace)", err)
        finally:
            self._depth -= 1

    def close(self) -> None:
        """Stop checking and remove the patch (``stop()``: SPEC 4, nothing
        of the tool stays patched between windows)."""
        self.uninstall()

    def new_step(self) -> None:
        """Region indices start again at 0."""
        self._counters.clear()

    def uninstall(self) -> None:
        """Put ``_JitExecutor.__call__`` back, and the trace functions."""
        self.active = False
        if self._original is not None:
            self._executor.__call__ = self._original
            self._executor = self._original = None
        if self._trace_originals is not None:
            self._trace_module._jit_trace_begin, self._trace_module._jit_trace_end = self._trace_originals
            self._trace_module = self._trace_originals = None
            self._traced.clear()

    def region_name(self, run: Any) -> str:
        """``Jit.<function>.<index>.forward``, counted per step."""
        function = getattr(getattr(run, "fn", None), "__name__", "region")
        index = self._counters.get(function, 0)
        self._counters[function] = index + 1
        return f"Jit.{function}.{index}.forward"

    def call(self, original: Callable, run: Any, args: tuple, kwargs: dict) -> Any:
        """Run one compiled region, replayed under the dump when its
        inputs were finite and its result is not. The Parameters it can
        reach (:meth:`_parameters`) are read before and after it: a region
        that writes inf/nan into one (a whole ``@jit`` training step with
        its optimizer) gets a record in that step, and one that ran on
        Parameters already holding inf/nan is never said to have started
        the overflow."""
        self._depth += 1
        try:
            watched = not self.state.exhausted and self.state.selected()
            if watched and not _is_optimizer(getattr(run, "obj", None)):  # nn.SGD's compiled construct: not the user's
                self.calls += 1
            params = self._parameters(run, args, kwargs) if watched else []
            masks: dict[int, np.ndarray] = {}  # the by-design Parameters' values before it
            before = self._finite(params, masks)
            result = original(run, *args, **kwargs)
            if not watched:
                try:
                    self.region_name(run)
                except Exception as err:
                    self.on_error("checking inside a mindspore.jit region", err)
                return result
            self._judge(original, run, args, kwargs, result, params, before, masks)
            return result
        finally:
            self._depth -= 1

    def _judge(self, original: Callable, run: Any, args: tuple, kwargs: dict, result: Any, params: list,
               before: list[bool], masks: dict, deferrable: bool = True) -> None:
        """Judge one region call that returned ``result`` (``before``: its
        Parameters' finiteness before it, ``masks`` the by-design ones'
        values); replayed with ``original`` under the dump when its inputs
        were finite and its result is not, unless it returned a mask
        (:func:`~.graph.mask_like`: -inf only, beside finite values) and
        ``on_mask`` deferred it. ``deferrable`` False: never deferred (a
        ``capture_mode="trace"`` call, whose replay begins the trace again
        and is run at once). Never raises."""
        try:
            name = self.region_name(run)
            held = [p for p, ok in zip(params, before) if not ok]
            after = self._finite(params, before=masks)
            written = [p for p, ok, now in zip(params, before, after) if ok and not now]
            returned = nonfinite_outputs(result)
            if held and (returned or written):
                self._note(name, held, bool(returned), "ran on {} while they held inf/nan: the overflow started "
                           "before it (an earlier step's update?)")
                return
            if written:
                finite_in = _no_nan_or_inf(args) and _no_nan_or_inf(list(kwargs.values()))
                self._note(name, written, bool(returned), "wrote inf/nan into {}, finite when it started"
                           + (": the overflow started inside it" if finite_in else ""))
                return
            if not returned:
                return
            if not _no_nan_or_inf(args) or not _no_nan_or_inf(list(kwargs.values())):
                return
            if not _strictly_finite([*args, *kwargs.values(), *params]) and _no_nan_or_inf(result):
                return  # it was given a -inf mask (or reaches one) and returns -inf only: passed on
            if deferrable and self.on_mask is not None and mask_like(result):  # -inf beside finite values: a mask?
                cache = HostCache()
                made = [t for t in iter_tensors([result]) if is_floating(t) and not cache.finite(t)]
                if made and self.on_mask(RegionMaker(self, original, run, args, kwargs, name), made):
                    return  # deferred: replayed and recorded only when its -inf reaches a judged result
            self.replay(original, run, args, kwargs, name)
        except Exception as err:
            self.on_error("checking inside a mindspore.jit region", err)

    def _parameters(self, run: Any, args: tuple, kwargs: dict) -> list:
        """The floating Parameters a region can reach (its function's
        closure, defaults and globals, its Cell, its arguments:
        ``hooks.reach``), each once, ordered by name; [] for an optimizer's own compiled
        ``construct``, whose Parameters the optimizer watch reads around
        its step already. Kept per function and Cell."""
        function = getattr(run, "fn", None)
        owner = getattr(run, "obj", None) or getattr(function, "__self__", None)  # a Cell's compiled construct
        if owner is not None and _is_optimizer(owner):
            return []
        key = (id(function), id(owner))
        known = self._reach.get(key)
        if known is None or known[0] is not function or known[1] is not owner:
            try:
                roots = [function, *args, *kwargs.values()] + ([owner] if owner is not None else [])
                found = sorted((p for p in reachable_parameters(roots) if is_floating(p)),
                               key=lambda p: str(getattr(p, "name", "")))  # records in a stable order
            except Exception as err:
                self.on_error("finding the Parameters a mindspore.jit region reaches", err)
                found = []
            known = self._reach[key] = (function, owner, found)
        return known[2]

    @staticmethod
    def _finite(params: list, masks: Optional[dict] = None, before: Optional[dict] = None) -> list[bool]:
        """Each Parameter's finiteness now (a host read each); a frozen
        Parameter of -inf (a mask kept as one) counts as finite, by design
        (:func:`~.snapshot.by_design`). ``masks``: filled with a copy of
        each such Parameter's values, by ``id`` (read before a region);
        ``before``: those copies, read after it: its -inf is by design only
        where it held -inf before the region too (a hunt's finding: a
        frozen statistic a region's ``ops.assign`` overflowed from finite
        to -inf was taken for a mask, and the run called clean)."""
        if not params:
            return []
        cache = HostCache()
        out = []
        for parameter in params:
            finite = cache.finite(parameter)
            array = None if finite else cache.get(parameter).array
            designed = array is not None and by_design(parameter, array, before=None if before is None else
                                                       before.get(id(parameter), np.zeros(0)))
            if designed and masks is not None and array is not None:
                masks[id(parameter)] = np.array(array, copy=True)
            out.append(finite or designed)
        return out

    def _note(self, name: str, params: list, returned: bool, what: str) -> None:
        """A record of kind ``outside`` for region ``name`` naming
        ``params`` (and its output when ``returned`` held inf/nan), counted
        against ``overflow_nums``; ``what`` is the message's middle, ``{}``
        standing for the Parameters."""
        if not self.state.count_record():
            return
        self.on_record(self.state.step)
        labels = [f"Parameter {getattr(p, 'name', '?')}" for p in params]
        said = (f"returned inf/nan and {what}" if returned else what).format(", ".join(labels))
        self.records.note(OUTSIDE, ([f"output of {name}"] if returned else []) + labels,
                          caller_where(self.library_roots),
                          f"the mindspore.jit region {name} {said}; the calls and updates inside a compiled region "
                          "are not seen at L0/L1 (remove jit from it while debugging to see them)")

    def replay(self, original: Callable, run: Any, args: tuple, kwargs: dict, name: str,
               maker: bool = False) -> None:
        """Run the region again under the dump and write the kernels it
        names; a region that may write Parameters is not run again.
        ``maker``: a region deferred as a mask maker whose -inf reached a
        judged result (:class:`RegionMaker`): its inputs and Parameters
        were finite, so the first kernel holding inf/nan made it (its -inf
        input a constant of the graph: ``masked_fill(..., -inf)``), the
        origin."""
        function = getattr(run, "fn", None)
        writes = writes_parameters(self.scratch, function)
        if writes is not False:
            label = name.rsplit(".", 2)[0]
            why = ("writes Parameters in place (running it again would update them twice)" if writes else
                   "has no compiled graph in MindSpore's dump (compiled before PrecisionDebugger() was created?)")
            where = caller_where(self.library_roots)
            if label not in self._skipped:
                self._skipped.add(label)
                LOGGER.warning("probe_runtime: the mindspore.jit region %s at %s returned inf/nan from finite inputs; "
                               "it %s, so the kernel inside it is not named", label, where, why)
            # still a record: the step is never called clean (a fresh user got "no overflow found" here)
            if self.state.count_record():
                self.on_record(self.state.step)
                self.records.note(OUTSIDE, [f"output of {name}"], where,
                                  f"the mindspore.jit region {name} returned inf/nan from finite inputs: the overflow "
                                  f"started inside it; it {why}, so the kernel is not named (remove jit from it "
                                  "while debugging to see the call at level L1)")
            return
        self._clear()
        self.switch.on()
        try:
            wait_for(original(run, *args, **kwargs))
        finally:
            self.switch.off()
        self.replays += 1
        kernels = scan(self.scratch, self.library_roots)
        drawn = random_kernels(self.scratch)
        self._clear()
        if drawn and name.rsplit(".", 2)[0] not in self._drew:
            self._drew.add(name.rsplit(".", 2)[0])
            LOGGER.warning("probe_runtime: the replay of the mindspore.jit region %s ran its random kernels (%s) once "
                           "more: what it returned is unchanged, but the random numbers drawn after this step differ "
                           "from a run without the tool", name, ", ".join(drawn[:4]))
        if not kernels:
            # still a record: the step is never called clean (a fresh user got "no overflow found" when
            # MindSpore failed to write the replay's dump under load: "CreatePrefixPath failed")
            where = caller_where(self.library_roots)
            LOGGER.warning("probe_runtime: the mindspore.jit region %s at %s returned inf/nan from finite inputs; "
                           "MindSpore's dump of its replay names no kernel (see MindSpore's log above for a dump "
                           "error), so the kernel inside it is not named", name, where)
            if self.state.count_record():
                self.on_record(self.state.step)
                self.records.note(OUTSIDE, [f"output of {name}"], where,
                                  f"the mindspore.jit region {name} returned inf/nan from finite inputs: the overflow "
                                  "started inside it; MindSpore's dump of its replay named no kernel, so the kernel "
                                  "is not named (remove jit from it while debugging to see the call at level L1)")
            return
        if maker and not any(k.origin for k in kernels):
            kernels[0].origin = True
        self.state.count_record()
        self.on_record(self.state.step)
        self.records.write(kernels, inside=name)

    def _clear(self) -> None:
        for path in glob.glob(os.path.join(self.scratch, "rank_*", NET_NAME)):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)


class RegionMaker:
    """A region call that returned -inf only from finite inputs and
    Parameters, deferred by the checker as a mask maker (L1: ``masked_fill``
    or ``where`` of -inf inside a ``@jit`` function, its mask consumed by a
    softmax after it). Nothing is replayed unless its -inf reaches a judged
    result: then :meth:`record` runs the region again under the dump (its
    arguments are held until the window closes) and writes its kernels.
    A helper's finding: such a region got a ``MaskedFill ... (carried)``
    record in every clean step.

    Attributes:
        name: the region's entry name (``Jit.make_mask.0.forward``).
        step: the step it ran in.
    """

    def __init__(self, regions: JitRegions, original: Callable, run: Any, args: tuple, kwargs: dict,
                 name: str) -> None:
        self.regions, self.original, self.run = regions, original, run
        self.args, self.kwargs, self.name = args, kwargs, name
        self.step = regions.state.step
        self.api = name

    def record(self) -> None:
        """Replay the region and write its records (as the step's origin). Never raises."""
        regions = self.regions
        regions._depth += 1
        try:
            regions.replay(self.original, self.run, self.args, self.kwargs, self.name, maker=True)
        except Exception as err:
            regions.on_error("checking inside a mindspore.jit region", err)
        finally:
            regions._depth -= 1


#: an in-place kernel in a graph's ``.ir`` (``%3(...) = ApplyMomentum(...)``, ``= PrimFunc_AssignAdd(``)
_INPLACE_IR = re.compile(r"= (?:PrimFunc_)?(?:Assign\w*|Apply\w+|SparseApply\w+|Adam\w*|SGD|Lamb|ScatterUpdate|"
                         r"ScatterAdd|ScatterNdUpdate|ScatterNdAdd)\(")


def writes_parameters(scratch: str, function: Any) -> Optional[bool]:
    """Whether the compiled graph of ``function`` holds an in-place
    kernel: the ``.ir`` files under ``scratch`` whose source lines fall in
    the function's lines are read. None when no such graph is found (or
    the function's source is unknown)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None] + [code.co_firstlineno]
    first, last = min(lines), max(lines)
    marker = re.compile(r"In file " + re.escape(code.co_filename) + r":(\d+)")
    found: Optional[bool] = None
    for path in glob.glob(os.path.join(scratch, "rank_*", "graphs", "*.ir")):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if not any(first <= int(m.group(1)) <= last for m in marker.finditer(text)):
            continue
        if _INPLACE_IR.search(text):
            return True
        found = False
    return found
