"""Running gradient computations again under exact checks, changing nothing
the training sees.

Auto checks (``checks="auto"``) watch only the gradient computations
(``probe_runtime.grad_watch``). When one returns inf/nan, :class:`Replayer`
runs it again at once, before its caller gets the gradients, with exact
checks switched on by the caller (``open_checks``/``close_checks``), so the
records name the calls as exact checks would have in that step. A replay
puts back everything it may have changed:

* the Parameters of every Cell the computations reach (the function or Cell
  differentiated, a bound method's Cell, what its closure, defaults and the
  globals it names hold, its inputs, the ``weights``, the model given to
  ``start``): copied on the device before the replay and assigned back
  after it, so BatchNorm's moving statistics and any Parameter an in-place
  op or a side-effect primitive writes are as the original computation
  left them;
* the random state: MindSpore's default generator (``get_rng_state``/
  ``set_rng_state``, where the release has them) and the op-seed table
  ``mindspore.set_seed`` resets (``mindspore.common.seed._KERNEL_SEED``),
  set to what the original computation started with (:func:`capture_state`
  runs before every forward pass) and, after the replay, to what it ended
  with; numpy's and Python's global random states are put back too;
* random primitives that keep their own state (CPU ``Dropout`` made by
  ``nn.Dropout``, ``UniformReal``...; MindSpore marks them
  ``side_effect_hidden``) run as fresh clones with the same seeds, so their
  own sequence is not advanced by the replay (the replay's masks then
  differ from the original's and it may not reproduce the inf/nan);
* ``requires_grad`` of a differentiated Cell and the executor's grad flag.

A replay never issues a collective: while it runs, the ``__call__`` of
every collective primitive class (and, in a job of several ranks, of
MindSpore's compiled-graph executor, whose graph may hold one) raises
:class:`ReplayRefused` before anything is sent, and the replay stops
there. What it cannot put back: Python state the function changes (a
counter in a Cell attribute), Parameters reached other than through a Cell
or a Parameter it holds. The design and its costs: ``docs/checks.md`` and
``docs/runtime-design.md``.

Example::

    replayer = Replayer(watch.originals, judge=watch.judge, on_error=log)
    outcome = replayer.run([computation], open_checks=start_exact, close_checks=stop_exact, model=net)
    outcome.nonfinite      # what the replayed computation returned that was not finite
"""
from __future__ import annotations

import functools
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from probe_format.collectives import COLLECTIVE_CLASS_WORDS

from ..hooks.guard import tool_section
from ..hooks.patching import Patches, subclasses
from ..hooks.reach import reachable_parameters

#: words in a Primitive class's name that make it a collective call: the format's table's
#: (``probe_format.collectives.COLLECTIVES``) and ``Barrier``, which moves no data but waits for every rank
COLLECTIVE_WORDS = COLLECTIVE_CLASS_WORDS + ("Barrier",)


class ReplayRefused(Exception):
    """Raised inside a replay before something it must never do (issue a
    collective); the replay stops and falls back."""


@dataclass
class State:
    """The random state a computation started or ended with
    (:func:`capture_state`): MindSpore's default generator, the op-seed
    table, and (``full``) numpy's and Python's global generators."""

    generator: Any = None
    seeds: Optional[dict] = None
    numpy: Any = None
    python: Any = None


def _seed_module() -> Any:
    # ``mindspore.common.seed`` is shadowed by the function ``mindspore.common.seed``: read the module itself
    return sys.modules.get("mindspore.common.seed")


def capture_state(full: bool = False) -> State:
    """The random state now: ``mindspore.get_rng_state()`` (when the release
    has it) and a copy of the op-seed table (a few entries); with ``full``
    also numpy's and Python's global generators (taken only around a
    replay: the per-computation capture stays at a few microseconds)."""
    import mindspore

    state = State()
    getter = getattr(mindspore, "get_rng_state", None)
    if callable(getter):
        state.generator = getter()
    module = _seed_module()
    table = getattr(module, "_KERNEL_SEED", None)
    if isinstance(table, dict):
        state.seeds = dict(table)
    if full:
        import numpy

        state.numpy = numpy.random.get_state()
        state.python = random.getstate()
    return state


def restore_state(state: Optional[State]) -> None:
    """Set the random state to ``state`` (what it holds; None: nothing)."""
    if state is None:
        return
    import mindspore

    if state.generator is not None and callable(getattr(mindspore, "set_rng_state", None)):
        mindspore.set_rng_state(state.generator)
    table = getattr(_seed_module(), "_KERNEL_SEED", None)
    if state.seeds is not None and isinstance(table, dict):
        table.clear()
        table.update(state.seeds)
    if state.numpy is not None:
        import numpy

        numpy.random.set_state(state.numpy)
    if state.python is not None:
        random.setstate(state.python)


@dataclass
class Outcome:
    """What a replay did.

    Attributes:
        nonfinite: labels of what the last replayed computation returned
            that held inf/nan (it reproduced the overflow when not empty).
        excused: labels of what it returned holding inf/nan that the
            checks found to be no overflow (a -inf made by design, returned
            as an auxiliary output): not in ``nonfinite``.
        refused: what it stopped before (``"the collective AllReduce"``), else None.
        error: an error it raised (the replay is then incomplete), else None.
        replayed: how many computations ran again.
    """

    nonfinite: list = field(default_factory=list)
    excused: list = field(default_factory=list)
    refused: Optional[str] = None
    error: Optional[str] = None
    replayed: int = 0


class Replayer:
    """Runs gradient computations again (see the module docstring).

    Args:
        originals: the gradient entry points as MindSpore has them
            (``GradWatch.originals``): ``forward`` and ``backward`` on 2.10;
            ``executor`` and its ``new_graph``, ``end_graph``, ``grad``,
            ``grad_aux`` on 2.7.
        judge: (label, tensor) pairs -> labels of those not finite
            (``GradWatch.judge``).
        distributed: the process is one rank of several: compiled graphs are
            refused too during a replay (they may hold a collective).
        excuse: ``(computation, labels)`` -> the labels among ``labels``
            (what the last replayed computation returned holding inf/nan)
            that the checks find no overflow (``Windows.excuse_auxiliary``),
            called before the checks close; None: none is.
    """

    def __init__(self, originals: dict, judge: Callable[[list], list], *, distributed: bool = False,
                 excuse: Optional[Callable[[Any, list], list]] = None) -> None:
        self.originals = originals
        self.judge = judge
        self.distributed = distributed
        self.excuse = excuse
        self._guard_plan: Optional[list] = None

    def run(self, computations: list, *, open_checks: Callable[[], None], close_checks: Callable[[], None],
            model: Any = None, start_values: Optional[list] = None) -> Outcome:
        """Run ``computations`` (``grad_watch.Computation``, complete, in
        their original order; the last is the one that overflowed) again
        between ``open_checks()`` and ``close_checks()``, then put back the
        Parameters, the random state and the flags they changed.
        ``start_values``: (Parameter, copy) pairs set before the replay runs
        (the state Parameters as the window started, ``state_watch``), put
        back afterwards with the rest. Never
        raises (a failure is in ``Outcome.error``), except that
        ``KeyboardInterrupt``/``SystemExit`` are raised again once
        everything was put back."""
        outcome = Outcome()
        after = capture_state(full=True)
        roots: list = [model]
        for c in computations:
            roots.extend((c.fn, c.weights, c.args, c.kwargs, c.run_args))
        with tool_section():
            saved = [(p, _copy(p)) for p in reachable_parameters(roots)]
            if start_values:
                from mindspore import ops

                known = {id(p) for p, _ in saved}
                saved.extend((p, _copy(p)) for p, _ in start_values if id(p) not in known)
                for param, value in start_values:
                    ops.assign(param, value)
        flags = self._flags(computations)
        guards = Patches()
        clones: dict[int, Any] = {}
        try:
            open_checks()
            guards.apply(self._guards(clones))  # over the checks' own patches of the same classes
            for computation in computations:
                with tool_section():  # set_rng_state writes Parameters: not an update the checks should see
                    restore_state(computation.state)
                output, gradients = self._once(computation)
                outcome.replayed += 1
            last = computations[-1]
            last.output, last.gradients = output, gradients
            try:
                outcome.nonfinite = self.judge(last.labelled())
                if outcome.nonfinite and self.excuse is not None:
                    outcome.excused = self.excuse(last, outcome.nonfinite)
                    outcome.nonfinite = [label for label in outcome.nonfinite if label not in outcome.excused]
            finally:
                last.release()
        except ReplayRefused as err:
            self._unwind(err.__traceback__)
            outcome.refused = str(err)
        except Exception as err:
            self._unwind(err.__traceback__)
            outcome.error = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        finally:
            guards.remove()
            try:
                close_checks()
            finally:
                self._put_back(flags, saved, after)
        return outcome

    # -- one computation ----------------------------------------------------------------
    def _once(self, c: Any) -> tuple[Any, Any]:
        """The forward pass and the gradients of ``c``, as its gradient
        entry point ran them: (forward output, gradients). The forward pass
        is what ``_pynative_func_grad_forward`` (2.10) and
        ``GradOperation._pynative_forward_run`` (2.7) do, without their
        check for a forward pass already run, and with the function's graph
        closed when it raises (:meth:`_unwind` closes the Cells')."""
        from mindspore import Tensor

        originals, fn = self.originals, c.fn
        executor = _executor(originals)
        new_graph = originals.get("new_graph", executor.new_graph)
        end_graph = originals.get("end_graph", executor.end_graph)
        if isinstance(fn, (types.FunctionType, types.MethodType)):
            executor.set_grad_flag(True)
            new_graph(fn, *c.args, **c.kwargs)
            try:
                output = fn(*c.args, **c.kwargs)
            except BaseException:
                end_graph(fn, Tensor(0.0), *c.args, **c.kwargs)  # what the executor opened for it, closed
                raise
            end_graph(fn, output, *c.args, **c.kwargs)
        else:
            fn.requires_grad = True
            output = fn(*c.args, **c.kwargs)
        if "backward" in originals:  # MindSpore 2.10
            return output, originals["backward"](fn, c.grad_op, c.weights, c.grad_position, c.has_aux, *c.run_args)
        entry = originals["grad_aux" if c.has_aux else "grad"]
        return output, entry(fn, c.grad_op, c.weights, c.grad_position, *c.run_args)

    def _unwind(self, tb: Any) -> None:
        """A replay raised inside the differentiated code: close what the
        Cells it interrupted had opened in the executor (their
        ``_call_pre_process``: the top Cell's graph, a mixed-precision type
        pushed, the dynamic-shape switch), innermost first, as their
        ``_call_post_process`` would have; MindSpore leaves them open when
        a Cell raises, and later PyNative calls of the process would fail.
        Never raises."""
        try:
            from mindspore import Tensor, nn
            from mindspore._c_expression import MixedPrecisionType

            executor = _executor(self.originals)
            interrupted = []
            while tb is not None:
                frame = tb.tb_frame
                cell = frame.f_locals.get("self") if frame.f_code.co_name == "_complex_call" else None
                if isinstance(cell, nn.Cell):
                    interrupted.append((cell, frame.f_locals.get("args", ()), frame.f_locals.get("kwargs", {})))
                tb = tb.tb_next
            for cell, args, kwargs in reversed(interrupted):
                if cell.requires_grad and getattr(cell, "is_top_cell", False):
                    executor.end_graph(cell, Tensor(0.0), *args, **kwargs)
                    cell.is_top_cell = False
                elif getattr(cell, "_dynamic_shape_inputs", None) is not None:
                    executor.set_cell_use_dynamic_shape_process(False)
                if getattr(cell, "mixed_precision_type", None) is not None:
                    executor.set_mixed_precision_type(MixedPrecisionType.NOTSET, False)
        except Exception:  # pragma: no cover - another layout: nothing more can be done
            pass

    # -- what is put back -----------------------------------------------------------------
    def _flags(self, computations: list) -> list:
        """(restore callable) for the flags a forward pass sets: each
        differentiated Cell's ``requires_grad`` and the grad flag."""
        out = []
        for c in computations:
            if hasattr(c.fn, "requires_grad") and not isinstance(c.fn, (types.FunctionType, types.MethodType)):
                value = c.fn.requires_grad
                out.append(functools.partial(setattr, c.fn, "requires_grad", value))
        executor = _executor(self.originals)
        if executor is not None:
            try:
                flag = bool(executor.grad_flag())
                out.append(functools.partial(executor.set_grad_flag, flag))
            except Exception:  # pragma: no cover - another layout
                pass
        return out

    def _put_back(self, flags: list, saved: list, after: State) -> None:
        with tool_section():
            for restore in flags:
                restore()
            if saved:
                from mindspore import ops

                for param, copy in saved:
                    ops.assign(param, copy)
            restore_state(after)

    # -- guards ------------------------------------------------------------------------
    def _guards(self, clones: dict) -> list:
        """The patches a replay runs under: random primitives run as clones
        (``Primitive.__call__``), collectives (and, when distributed, the
        compiled-graph executor) refuse."""
        from mindspore.ops.primitive import Primitive

        plan = [(Primitive, "__call__", _cloning_call(Primitive.__call__, clones))]
        if self._guard_plan is None:
            self._guard_plan = [(klass, "__call__", _refusal(klass.__call__, f"the collective {klass.__name__}"))
                                for klass in collective_classes()]
            if self.distributed:
                self._guard_plan.extend((klass, "__call__", _refusal(klass.__call__, "a compiled graph "
                                         "(mindspore.jit, which may hold a collective) in a job of several ranks"))
                                        for klass in _graph_executors())
        return plan + self._guard_plan


def _copy(param: Any) -> Any:
    from mindspore import ops

    return ops.deepcopy(param)


def _executor(originals: dict) -> Any:
    if "executor" in originals:
        return originals["executor"]
    try:
        from mindspore.graph.api import _pynative_executor  # MindSpore >= 2.9
    except Exception:
        try:
            from mindspore.common.api import _pynative_executor
        except Exception:  # pragma: no cover
            return None
    return _pynative_executor


def _cloning_call(original: Callable, clones: dict) -> Callable:
    """``Primitive.__call__`` that runs a random primitive with its own
    state (``side_effect_hidden``) as a clone made once per replay."""

    def __call__(prim: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            hidden = prim.attrs.get("side_effect_hidden", False)
        except Exception:
            hidden = False
        if hidden:
            clone = clones.get(id(prim))
            if clone is None:
                clone = clones[id(prim)] = (prim, prim._clone())
            prim = clone[1]
        return original(prim, *args, **kwargs)

    return __call__


def _refusal(original: Callable, why: str) -> Callable:
    def __call__(*args: Any, **kwargs: Any) -> Any:
        raise ReplayRefused(why)

    __call__.__probe_original__ = original  # type: ignore[attr-defined]
    return __call__


def collective_classes() -> list:
    """The Primitive classes that issue a collective: those defined in
    ``mindspore.ops.operations.comm_ops``, the generated ``DistComm*`` and
    ``InnerComm*`` ones (``mindspore.communication.comm_func``,
    ``mindspore.mint.distributed``), and any whose name holds one of
    :data:`COLLECTIVE_WORDS` (fused ``MatmulAllReduce...``)."""
    from mindspore.ops.primitive import Primitive

    import mindspore.ops.operations.comm_ops  # noqa: F401 - loads the classes
    return [klass for klass in subclasses(Primitive)
            if klass.__module__.endswith("comm_ops") or klass.__name__.startswith(("DistComm", "InnerComm"))
            or any(word in klass.__name__ for word in COLLECTIVE_WORDS)]


def _graph_executors() -> list:
    """MindSpore's compiled-graph executor class (``_JitExecutor``)."""
    out = []
    for name in ("mindspore.graph.api", "mindspore.common.api"):
        module = sys.modules.get(name)
        klass = getattr(module, "_JitExecutor", None)
        if klass is not None and klass not in out:
            out.append(klass)
    return out
