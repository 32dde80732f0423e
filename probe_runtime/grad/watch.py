"""The gradient-computation watch: every PyNative gradient computation,
judged when it returns.

While installed, :class:`GradWatch` wraps the MindSpore functions every
PyNative gradient computation runs through (``mindspore.grad``,
``value_and_grad``, ``GradOperation``, ``vjp``, ``TrainOneStepCell``): on
MindSpore 2.10 ``_pynative_func_grad_forward`` and
``_pynative_func_grad_backward`` of ``mindspore.ops.composite.base``; on 2.7,
which has neither, ``new_graph``, ``end_graph``, ``grad`` and ``grad_aux``
of the one PyNative executor object. When a computation returns its
gradients, the watch pairs them with the forward output of the same
function, judges them all at once (:meth:`GradWatch.judge`: on CPU a host
read of each tensor, elsewhere one ``mindspore.amp.all_finite`` reduction
and one boolean read first) and hands a :class:`Computation` (the function,
its inputs, weights, ``grad_op``, ``grad_position``, ``has_aux``, the
caller's frames and what was not finite) to ``on_computation`` before the
caller receives anything. Every checks mode uses it: exact checks to say
when no checked call explains an inf loss, sentinel checks to turn exact
checks on, auto checks to run the computation again (``probe_runtime.replay``).
Why and what it costs: ``docs/checks.md`` and ``docs/runtime-design.md``.

Example::

    watch = GradWatch(on_error)
    watch.on_computation = lambda c: print(c.nonfinite)   # e.g. ["forward output 0"]
    watch.begin_window()
    watch.install()
    loss, grads = grad_fn(x, y)          # judged when it returns
    watch.uninstall()
    watch.end_window()
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..check.names import parameter_name
from ..check.verdict import HostCache, is_floating, is_tensor, iter_tensors
from ..hooks.frames import capture_frames
from ..hooks.guard import inside_tool, tool_section
from ..hooks.patching import Patches

#: the MindSpore 2.10 functions every PyNative gradient computation runs through
FORWARD, BACKWARD = "_pynative_func_grad_forward", "_pynative_func_grad_backward"
#: MindSpore 2.7: the PyNative executor's methods wrapped instead (as instance attributes)
EXECUTOR_METHODS = ("check_run", "new_graph", "end_graph", "grad", "grad_aux")
#: complete computations of one window kept (their inputs only) so a replay can run them again in order
HOLD_CAP = 8


@dataclass(eq=False)
class Computation:
    """One gradient computation, as the watch saw it.

    Attributes:
        fn: the differentiated function or Cell.
        args, kwargs: its inputs (what the forward pass got; a sensitivity
            given with ``sens_param`` is in ``run_args`` only).
        output: the forward output (the loss, auxiliary outputs); released
            once the computation was judged.
        grad_op, weights, grad_position, has_aux, run_args: what the
            gradient entry point got (``run_args``: the inputs, keyword
            values and sensitivity as MindSpore passes them on).
        gradients: what it returned; released once judged.
        frames: the caller's frames when the gradients were returned
            (``hooks.frames.capture_frames``): the user's line.
        state: what ``GradWatch.capture`` returned before the forward pass
            ran (auto checks: the random state), or None.
        nested: it ran inside another gradient computation's forward pass.
        complete: the gradients were returned (False for a forward pass whose
            gradients never came, judged when the window closed).
        nonfinite: labels of what held inf/nan (``"forward output 0"``,
            ``"gradient of fc.weight"``, ``"gradient w.r.t. input 1"``).
        step: the step it ran in (set by the caller).
    """

    fn: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    output: Any = None
    grad_op: Any = None
    weights: Any = None
    grad_position: Any = None
    has_aux: Any = False
    run_args: tuple = ()
    gradients: Any = None
    frames: tuple = ()
    state: Any = None
    nested: bool = False
    complete: bool = False
    nonfinite: list = field(default_factory=list)
    step: int = 0

    def labelled(self) -> list[tuple[str, Any]]:
        """(label, tensor) for the forward output and the gradients."""
        out = [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(self.output))]
        if self.complete:
            out.extend(label_gradients(self.gradients, self.weights, self.grad_position))
        return out

    def auxiliary(self) -> list[tuple[str, Any]]:
        """(label, tensor) for its auxiliary outputs: forward output 1 on,
        when asked with ``has_aux=True`` (returned, not differentiated)."""
        if self.has_aux is not True:
            return []
        return [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(self.output)) if i > 0]

    def release(self) -> None:
        """Let go of the output and the gradients (the caller has them)."""
        self.output = self.gradients = None


def _weight_list(weights: Any) -> list:
    """The Parameters a gradient computation was asked for, as a list:
    None -> [], one Parameter -> [it] (never iterated: iterating a tensor
    slices it row by row), a list/tuple/ParameterTuple -> its items."""
    if weights is None or is_tensor(weights):
        return [] if weights is None else [weights]
    return list(weights) if isinstance(weights, (list, tuple)) else []


def _positions(grad_position: Any) -> Optional[list]:
    """``grad_position`` as a list of input positions, or None."""
    if isinstance(grad_position, int) and not isinstance(grad_position, bool):
        return [grad_position]
    if isinstance(grad_position, (list, tuple)) and all(isinstance(p, int) for p in grad_position):
        return list(grad_position)
    return None


def label_gradients(out: Any, weights: Any, grad_position: Any = None) -> list[tuple[str, Any]]:
    """(label, tensor) for each tensor of a gradient result (no dtype is
    read here: the first dtype read of a fresh tensor waits for the device).

    ``out`` is what the gradient entry point returned: the gradients w.r.t.
    the inputs at ``grad_position`` (a tensor for one position, else a
    tuple with one item per position, an item a tensor or a tuple for a
    tuple input), w.r.t. ``weights`` (a tuple in their order), or both as
    ``(inputs' part, weights' part)``. Labels: ``"gradient of <Parameter
    name>"``, ``"gradient w.r.t. input <position>"`` (``"... input 1 item
    0"`` inside a tuple input); when the layout is not one of these, the
    inputs' gradients are numbered in order.
    """
    params = _weight_list(weights)
    tensors = list(iter_tensors(out))
    n_weights = len(params) if params and len(params) <= len(tensors) else 0
    if n_weights == len(tensors):
        inputs_part: Any = ()
    elif n_weights and isinstance(out, tuple) and len(out) == 2 and len(list(iter_tensors(out[1]))) == n_weights:
        inputs_part = out[0]
    else:
        inputs_part, n_weights = out, 0
    positions = _positions(grad_position)
    labelled: list[tuple[str, Any]] = []
    if is_tensor(inputs_part):
        where = positions[0] if positions and len(positions) == 1 else 0
        labelled.append((f"gradient w.r.t. input {where}", inputs_part))
    elif isinstance(inputs_part, (tuple, list)):
        aligned = positions if positions and len(positions) == len(inputs_part) else None
        for k, item in enumerate(inputs_part):
            where = aligned[k] if aligned else k
            if is_tensor(item):
                labelled.append((f"gradient w.r.t. input {where}", item))
            else:
                labelled.extend((f"gradient w.r.t. input {where} item {j}", t)
                                for j, t in enumerate(iter_tensors(item)))
    for param, tensor in zip(params, tensors[len(tensors) - n_weights:] if n_weights else []):
        labelled.append((f"gradient of {parameter_name(param)}", tensor))
    return labelled


class GradWatch:
    """Wraps MindSpore's gradient entry points while installed and judges
    each gradient computation when it returns (see the module docstring).

    Args:
        on_error: called with (where, exception) for a fault inside the
            tool (the wrapped call's result is returned all the same).
        on_device: reduce on the device first (``mindspore.amp.all_finite``)
            and read on the host only when something is not finite; for
            backends other than CPU (on CPU the host read is cheaper:
            ``docs/runtime-design.md``).

    Attributes:
        on_computation: called with each :class:`Computation` once judged,
            before its caller gets the gradients (never raises into it).
        capture: called before each forward pass; what it returns is kept
            as ``Computation.state`` (None: nothing is captured).
        keep: keep the window's complete computations (:attr:`window`, at
            most ``HOLD_CAP``, their inputs only) for a replay.
        window: those computations, in order.
        computations: gradient computations seen in the window.
        findings: the window's computations that held inf/nan.
        finite: ``id(tensor) -> tensor`` for the gradients of the latest
            complete computation judged finite (an optimizer given those
            same tensors need not read them again).
        replaying: a replay runs: the wrappers pass everything through.
        originals: the wrapped MindSpore callables (``forward``/``backward``
            on 2.10; ``executor`` and the :data:`EXECUTOR_METHODS` on 2.7),
            once installed.
    """

    #: the installed watch: one at a time in a process (a second one's
    #: wrappers would wrap the first one's, and their removal would cross)
    _active: Optional["GradWatch"] = None

    def __init__(self, on_error: Callable[[str, BaseException], None], *, on_device: bool = False,
                 capture: Optional[Callable[[], Any]] = None) -> None:
        self.on_error = on_error
        self.on_device = on_device
        self.on_computation: Callable[[Computation], None] = lambda computation: None
        #: called with each outermost forward pass as it returns, before its backward pass
        #: (``output`` and ``frames`` set; never raises into the caller); None: nothing is called
        self.on_forward: Optional[Callable[[Computation], None]] = None
        self.capture: Optional[Callable[[], Any]] = capture
        self.keep = False
        self.window: list[Computation] = []
        self.computations = 0
        self.findings: list[Computation] = []
        self.finite: dict[int, Any] = {}
        #: while ``on_computation`` runs: the host reads the judgement of that computation just made
        #: (:meth:`_finish`), for a check batch resolved before anything else runs (None otherwise)
        self.reads: Optional[HostCache] = None
        self.replaying = False
        self.originals: dict[str, Any] = {}
        self._forwards: dict[int, Computation] = {}  # id(fn) -> its forward pass, until its gradients come
        self._starts: list[Any] = []  # 2.7: captured states of the forward passes begun (new_graph)
        self._state: Any = None  # 2.7: the state check_run captured for the next forward pass
        self._depth = 0  # forward passes running
        self._patches = Patches()
        self._plan: Optional[list[tuple[Any, str, Callable]]] = None

    @property
    def installed(self) -> bool:
        """True while the wrappers are in place."""
        return bool(self._patches)

    # -- window ------------------------------------------------------------------
    def begin_window(self, keep: bool = False) -> None:
        """A checked window opens: nothing seen yet."""
        self.keep = keep
        self.window, self.findings, self.computations, self.finite = [], [], 0, {}
        self._forwards, self._starts, self._depth, self._state = {}, [], 0, None

    def end_window(self) -> None:
        """The window closed: forward passes whose gradients never came (a
        ``vjp`` not called, on 2.7 a Cell run with ``set_grad()``) are judged
        now and handed on (``complete`` False); nothing is kept."""
        pending, self._forwards = list(self._forwards.values()), {}
        self.window, self._starts, self._depth, self.finite = [], [], 0, {}
        for computation in pending:
            self._finish(computation)

    def forget_finding(self, computation: Computation) -> None:
        """``computation`` returned no overflow after all (its only inf/nan
        is a -inf by design in an auxiliary output): it is no finding."""
        computation.nonfinite = []
        self.findings[:] = [c for c in self.findings if c is not computation]

    def complete_findings(self) -> list[Computation]:
        """The window's computations that held inf/nan, those whose
        gradients came first (all of them when none did)."""
        return [c for c in self.findings if c.complete] or list(self.findings)

    def add_finding(self, computation: Computation) -> None:
        """Count ``computation`` among the window's findings (its state
        turned inf/nan though its result was finite)."""
        self.findings.append(computation)

    def known_finite(self, tensor: Any) -> bool:
        """``tensor`` is one of the gradients of the latest complete
        computation judged finite (no need to read it again)."""
        return self.finite.get(id(tensor)) is tensor

    # -- plan -----------------------------------------------------------------------
    def _build_plan(self) -> list[tuple[Any, str, Callable]]:
        from mindspore.ops.composite import base

        if not callable(vars(base).get(FORWARD)):
            return self._executor_plan()
        plan: list[tuple[Any, str, Callable]] = []
        for attr, wrap, key in ((FORWARD, self._wrap_forward, "forward"), (BACKWARD, self._wrap_backward, "backward")):
            original = vars(base).get(attr)
            if not callable(original):  # pragma: no cover - another MindSpore layout
                raise RuntimeError(f"mindspore.ops.composite.base.{attr} not found: the gradient watch needs it "
                                   "(use exact checks with this MindSpore)")
            self.originals[key] = original
            wrapper = wrap(original, "grad")
            for name, module in list(sys.modules.items()):
                if name.startswith("mindspore") and module is not None and vars(module).get(attr) is original:
                    plan.append((module, attr, wrapper))
        return plan

    def _executor_plan(self) -> list[tuple[Any, str, Callable]]:
        """The wrappers for a MindSpore without the two gradient functions
        (2.7: ``GradOperation`` and ``_Grad`` run the forward pass and call
        the PyNative executor themselves): instance attributes over four
        methods of the one ``mindspore.common.api._pynative_executor``, which
        every module shares. ``check_run`` comes first in a gradient
        computation (the random state is captured there: once the grad flag
        is set, running an operator before ``new_graph`` fails on 2.7),
        ``new_graph(fn, *args)`` starts a forward pass (also of a Cell with
        ``set_grad()`` called outside a gradient computation),
        ``end_graph(fn, output, *args)`` ends it with its output, ``grad``
        and ``grad_aux(fn, grad_op, weights, grad_position, *args)`` return
        the gradients."""
        from mindspore.common import api

        executor = getattr(api, "_pynative_executor", None)
        self.originals["executor"] = executor
        plan: list[tuple[Any, str, Callable]] = []
        wraps = {"check_run": self._wrap_check_run, "new_graph": self._wrap_new_graph,
                 "end_graph": self._wrap_end_graph, "grad": lambda o: self._wrap_backward(o, "grad"),
                 "grad_aux": lambda o: self._wrap_backward(o, "grad_aux")}
        for attr in EXECUTOR_METHODS:
            original = getattr(executor, attr, None)
            if not callable(original):  # pragma: no cover - another MindSpore layout
                raise RuntimeError(f"neither mindspore.ops.composite.base.{FORWARD} nor "
                                   f"mindspore.common.api._pynative_executor.{attr} found: the gradient watch needs "
                                   "them (use exact checks with this MindSpore)")
            self.originals[attr] = original
            plan.append((executor, attr, wraps[attr](original)))
        return plan

    def install(self) -> None:
        """Put the wrappers in place (module globals on 2.10, executor
        instance attributes on 2.7; no class is touched).

        Raises:
            RuntimeError: this MindSpore has no such entry points, or another
                debugger's watch is installed.
        """
        if self._patches:
            return
        if GradWatch._active is not None and GradWatch._active is not self:
            raise RuntimeError("another PrecisionDebugger is already started in this process")
        if self._plan is None:
            self._plan = self._build_plan()
        self._patches.apply(self._plan)
        GradWatch._active = self

    def uninstall(self) -> None:
        """Put the originals back (safe to call twice)."""
        self._patches.remove()
        if GradWatch._active is self:
            GradWatch._active = None

    @property
    def depth(self) -> int:
        """How many watched forward passes are running now (2 and more: a
        gradient computation inside another's forward pass)."""
        return self._depth

    # -- wrappers -------------------------------------------------------------------
    def _passes(self) -> bool:
        return self.replaying or inside_tool()

    def _begin_forward(self) -> Any:
        """``capture()`` (None without one); never raises."""
        capture = self.capture
        if capture is None:
            return None
        try:
            with tool_section():
                return capture()
        except Exception as err:
            self.capture = None
            self.on_error("while capturing the random state (replays set none from now on)", err)
            return None

    def _wrap_forward(self, original: Callable, _entry: str) -> Callable:
        def forward(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if self._passes():
                return original(fn, *args, **kwargs)
            state = self._begin_forward()
            self._depth += 1
            try:
                outputs = original(fn, *args, **kwargs)
            finally:
                self._depth -= 1
            self._forward_done(fn, args, kwargs, outputs, state)
            return outputs

        forward.__probe_original__ = original  # type: ignore[attr-defined]
        return forward

    def _wrap_check_run(self, original: Callable) -> Callable:
        def check_run(*args: Any, **kwargs: Any) -> Any:
            if not self._passes():
                self._state = self._begin_forward()
            return original(*args, **kwargs)

        check_run.__probe_original__ = original  # type: ignore[attr-defined]
        return check_run

    def _wrap_new_graph(self, original: Callable) -> Callable:
        def new_graph(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._passes():
                state, self._state = self._state, None  # captured by check_run, when a gradient computation began
                self._starts.append(state)
                self._depth += 1
            return original(fn, *args, **kwargs)

        new_graph.__probe_original__ = original  # type: ignore[attr-defined]
        return new_graph

    def _wrap_end_graph(self, original: Callable) -> Callable:
        def end_graph(fn: Any, output: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(fn, output, *args, **kwargs)
            if not self._passes():
                state = self._starts.pop() if self._starts else None
                self._depth = max(self._depth - 1, 0)
                self._forward_done(fn, args, kwargs, output, state)
            return result

        end_graph.__probe_original__ = original  # type: ignore[attr-defined]
        return end_graph

    def _wrap_backward(self, original: Callable, entry: str) -> Callable:
        def backward(fn: Any, grad_op: Any, weights: Any, *rest: Any) -> Any:
            out = original(fn, grad_op, weights, *rest)
            if not self._passes():
                self._backward_done(fn, grad_op, weights, rest, out, entry, capture_frames(sys._getframe(1)))
            return out

        backward.__probe_original__ = original  # type: ignore[attr-defined]
        return backward

    def _forward_done(self, fn: Any, args: tuple, kwargs: dict, output: Any, state: Any) -> None:
        try:
            computation = Computation(fn, args, dict(kwargs), output, state=state, nested=self._depth > 0)
            self._forwards[id(fn)] = computation
            if self.on_forward is not None and not computation.nested:
                computation.frames = capture_frames(sys._getframe(2))
                self.on_forward(computation)
        except Exception as err:  # pragma: no cover - defensive
            self.on_error("in the gradient watch's forward wrapper", err)

    def _backward_done(self, fn: Any, grad_op: Any, weights: Any, rest: tuple, out: Any, entry: str,
                       frames: tuple) -> None:
        """The gradients of ``fn`` came back: pair them with its forward
        pass, judge, keep (for a replay) and hand on."""
        self._state = None
        try:
            computation = self._forwards.pop(id(fn), None)
            if computation is None or computation.fn is not fn:  # its forward pass ran before the window
                computation = Computation(fn)
            computation.grad_op, computation.weights = grad_op, weights
            computation.grad_position = rest[0] if rest else None
            if entry == "grad":  # 2.10: (grad_position, has_aux, *run_args); 2.7 grad: (grad_position, *run_args)
                two_ten = "backward" in self.originals
                computation.has_aux = rest[1] if two_ten and len(rest) > 1 else False
                computation.run_args = tuple(rest[2:] if two_ten else rest[1:])
            else:  # 2.7 grad_aux
                computation.has_aux, computation.run_args = True, tuple(rest[1:])
            computation.gradients, computation.frames, computation.complete = out, frames, True
            computation.nested = computation.nested or self._depth > 0
            self.computations += 1
            if self.keep:
                self.window.append(computation)
                del self.window[:-HOLD_CAP]
        except Exception as err:
            self.on_error("in the gradient watch's backward wrapper", err)
            return
        self._finish(computation)

    def _finish(self, computation: Computation) -> None:
        """Judge ``computation``, hand it on, let go of its results."""
        try:
            labelled = computation.labelled()
            reads = HostCache()
            computation.nonfinite = self.judge(labelled, reads)
            if computation.nonfinite:
                self.findings.append(computation)
            elif computation.complete:
                self.finite = {id(t): t for _, t in labelled}
            self.reads = reads
            self.on_computation(computation)
        except Exception as err:
            self.on_error("while judging a gradient computation", err)
        finally:
            self.reads = None
            computation.release()

    # -- judging ----------------------------------------------------------------------
    def judge(self, labelled: list[tuple[str, Any]], cache: Optional[HostCache] = None) -> list[str]:
        """The labels of the floating tensors among ``labelled`` ((label,
        tensor) pairs) that hold inf/nan, in order. With ``on_device``, one
        ``mindspore.amp.all_finite`` over them first (one boolean read; the
        host reads only when it says something is not finite, to name
        which); on CPU each tensor is read on the host (cheaper there),
        through ``cache`` when given (its reads serve later checks of the
        same stretch: :meth:`_finish`)."""
        return self.judge_each([tensor for _, tensor in labelled], lambda i: labelled[i][0], cache)

    def judge_each(self, tensors: list, label: Callable[[int], str], cache: Optional[HostCache] = None) -> list[str]:
        """:meth:`judge` of ``[(label(i), t) for i, t in enumerate(tensors)]``:
        every tensor is read as there, and only the labels of those holding
        inf/nan are made (a label may read a Parameter's ``name``, which
        waits for MindSpore's pipeline: the optimizer's Parameters and
        state are judged after every step, and are finite but in a step
        that overflows)."""
        section = tool_section()
        section.__enter__()
        try:
            if self.on_device and self._all_finite_on_device(tensors):
                return []
            if cache is None:
                cache = HostCache()
            finite = cache.finite
            return [label(i) for i in [i for i, tensor in enumerate(tensors) if not finite(tensor)]]
        finally:
            section.__exit__()

    def _all_finite_on_device(self, tensors: list) -> bool:
        """True when ``mindspore.amp.all_finite`` says every floating tensor
        of ``tensors`` is finite; False when it does not, or when that path
        fails (logged once; the host read decides from then on)."""
        try:
            from mindspore import amp

            floating = tuple(t for t in tensors if is_floating(t))
            return not floating or bool(amp.all_finite(floating).asnumpy())
        except Exception as err:
            self.on_device = False
            self.on_error("in the gradient watch's device check (the host read is used from now on)", err)
            return False

    def resolve(self) -> Optional[dict]:
        """What was not finite in the window's computations so far, for a
        sentinel record, or None.

        Returns:
            None, or ``{"nonfinite": [labels, first seen first], "frames":
            frames of the first computation that held one, "computations":
            how many were seen}``.
        """
        if not self.findings:
            return None
        labels = [label for c in self.findings for label in c.nonfinite]
        return {"nonfinite": list(dict.fromkeys(labels)), "frames": self.findings[0].frames,
                "computations": self.computations}

