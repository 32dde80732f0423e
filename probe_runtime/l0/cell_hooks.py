"""The L0 hooks: one model's Cells, hooked for one ``start()`` window.

:class:`CellHooks` hooks every sub-Cell the plan names (:mod:`.plan`): a
forward pre-hook opens a :class:`~.calls.CellCall` (index, parent Cell,
the user's frames) and, under grad, passes the tensor inputs through one
``HookBackward`` for the gradients w.r.t. them; a forward hook hands the
finished call to the checker and passes the outputs through one more
``HookBackward``; each Parameter a Cell owns gets ``register_hook`` (its
``parameters_grad`` entry). The models given to ``start()`` are hooked
too, not recorded, for the top-Cell hint. No hook reads a tensor; a fault
in a hook is logged once through the sink and turns that part off, never
reaching the training. What is checked when, and why this way:
``docs/runtime-design.md`` and ``docs/l0.md``.

Example::

    hooks = CellHooks(checker)
    hooks.install(net)       # every sub-Cell of net now hands its calls to the checker
    loss = net(x)
    hooks.uninstall()
"""
from __future__ import annotations

import logging
import sys
import threading
import weakref
from typing import Any, Callable, Optional

from ..check.names import parameter_name
from ..check.probes import launch_sum, probe_now, snapshot
from ..check.verdict import framework_error, is_floating, is_parameter, is_tensor, iter_tensors
from ..hooks.backward import HookMaker, hook_gradients, register_grad_hook, release
from ..hooks.frames import capture_frames
from ..hooks.guard import jit_tracing
from ..hooks.patching import Patches
from .calls import CellCall, ParamGradCall, TopCall
from .mutations import MutationGuard
from .plan import Target, is_jit_compiled, jit_warning, models, own_parameters, plan_cells
from .state_sweep import StateSweep

LOGGER = logging.getLogger("probe_runtime")


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list = []
        self.top: Optional[TopCall] = None
        #: (target, the output it returned with its gradient hook, its call): the last Cell that finished
        self.last: Optional[tuple] = None
        self.top_cell: int = 0  # id of the model whose call is running (``top``)


#: elements of the largest Parameter a Cell is given as an argument that is copied before and after the call
#: (:meth:`CellHooks._before_arguments`): a loss scale, a counter, a small table; not a tied embedding table
ARGUMENT_COPY_LIMIT = 1 << 20


def _elements(tensor: Any) -> int:
    """How many elements ``tensor`` holds (0 when it does not say)."""
    try:
        return int(tensor.size)
    except Exception:
        return 0


class CellHooks:
    """Installs and removes the L0 hooks on one model.

    Args:
        sink: the checker (``live``, ``next_index``, ``on_forward``,
            ``on_grad_outputs``, ``on_grad_inputs``, ``on_param_grad``,
            ``on_error``).
        nested_gradient: returns True while a gradient computation runs
            inside another's forward pass: no backward hooks there (as
            ``l1.wrappers.Wrappers.nested_gradient``).
        modules: the models are ``torch.nn.Module`` objects of the
            MSAdapter layer (``Module.<path>.<Class>`` entries, hooked with
            the layer's own ``register_forward_pre_hook`` and
            ``register_forward_hook``; gradients through MindSpore's
            ``HookBackward``, which the layer's autograd is).
    """

    def __init__(self, sink: Any, *, nested_gradient: Optional[Callable[[], bool]] = None,
                 modules: bool = False) -> None:
        self.sink = sink
        #: the models are ``torch.nn.Module`` objects (PyTorch code on MindSpore, MSAdapter)
        self.modules = modules
        self._handles: list = []
        self._plan_for: Any = None
        self._plan: list[Target] = []
        self._local = _Local()
        self._seq = 0
        self._param_calls: dict[str, ParamGradCall] = {}
        self._calls_by_prefix: dict[str, list] = {}
        self.broken: set[str] = set()
        self._warned_jit: set[int] = set()
        self._hook_backward: Any = None  # mindspore.ops.HookBackward, imported at start()
        self._executor: Any = None
        #: prefix -> (finiteness probes of the Cell's own Parameters, taken at ``start()``?)
        self._probes: dict[str, tuple[list, bool]] = {}
        #: prefix of a model given to ``start()`` -> probes of its own Parameters (taken at its first call in
        #: the window and again at its first call after each update)
        self._top_probes: dict[str, list] = {}
        self._tops: list[TopCall] = []  # the window's calls of the models given to start() (TopCall.peers)
        #: Parameters may have changed since ``start()`` (an optimizer step or ``Parameter.set_data``)
        self.params_changed = False
        #: the window runs synchronously: Parameters are checked on the host at install
        self.synchronous = False
        self._boxes: list = []  # what this window's HookBackward hooks refer to (see through_hook)
        self.nested_gradient: Callable[[], bool] = nested_gradient or (lambda: False)
        self._cells: dict[str, Any] = {}  # prefix -> Cell, for the window
        #: prefix -> {name: snapshot}: the latest values of the Parameters a Cell may write in place
        #: (``Target.written``), taken at ``start()``, after each of its calls and after an update
        self._written: dict[str, dict] = {}
        #: what install() hooked, to hook it again after a mindspore.jit call (:meth:`_guard_jit_calls`)
        self._targets: list[Target] = []
        self._model: Any = None
        self._suspended = False
        self._jit_patch = Patches()
        #: the state no Cell check reads, probed at start() and when the window closes
        self.sweep = StateSweep()
        #: id of each Cell's own Parameter -> (prefix, short name, Parameter, its probe at start())
        self._start_probes: dict[int, tuple[str, str, Any, Any]] = {}
        #: id of a Parameter -> (it, its probe at start()): the Cells' own and the models' (both at install);
        #: what ``CellCall.start_values`` refers to
        self._starts: dict[int, tuple[Any, Any]] = {}
        #: in-place writes between the Cells resolve the pending checks first (:mod:`.mutations`)
        self.mutations = MutationGuard(sink)

    @property
    def installed(self) -> bool:
        """True while hooks are registered (or taken off for a ``mindspore.jit`` call)."""
        return bool(self._handles) or self._suspended

    # -- plan -----------------------------------------------------------------------
    def check_model(self, model: Any) -> None:
        """Raise :class:`~probe_runtime.errors.UsageError` unless ``model``
        is a Cell or a list/tuple of Cells (at every ``start()``, checked
        step or not)."""
        models(model, self.modules)

    def plan(self, model: Any) -> list[Target]:
        """The Cells to hook in ``model`` (built once per model object;
        a list/tuple of models is walked again at each ``install``)."""
        ref = self._plan_for
        if ref is not None and ref() is model:
            return self._plan
        targets, jit_cells = plan_cells(model, self.modules)
        if jit_cells and id(model) not in self._warned_jit:
            self._warned_jit.add(id(model))
            LOGGER.warning(jit_warning(jit_cells))
        try:
            self._plan_for = weakref.ref(model)
        except TypeError:  # a list or tuple
            self._plan_for = None
        self._plan = targets
        return targets

    # -- install / uninstall -------------------------------------------------------
    def install(self, model: Any) -> int:
        """Hook every sub-Cell of ``model``; returns the number of Cells.

        Raises:
            UsageError: ``model`` is not a Cell or a list/tuple of Cells.
        """
        if self.installed:
            return len(self._plan)
        targets = self.plan(model)
        self._cells = {t.prefix: t.cell for t in targets}
        self._local.last = None
        if self._hook_backward is None:
            import mindspore
            from mindspore import ops

            self._hook_backward = HookMaker(ops.HookBackward, mindspore.__version__)
            try:
                from mindspore.graph.api import _pynative_executor  # MindSpore >= 2.9
            except Exception:
                from mindspore.common.api import _pynative_executor
            self._executor = _pynative_executor
        self._local.stack = []
        self._seq = 0
        self._probes = {}
        self._top_probes = {}
        self._tops = []  # a new list: the TopCalls of the last window keep theirs
        self._written = {}
        self.params_changed = False
        self._start_probes = {}
        self._starts = {}
        if "parameters" not in self.broken:
            for target in targets:  # the weights as the forward pass will see them
                if target.params or target.written:
                    probes = self._probe(target)
                    self._probes[target.prefix] = (probes, True)
                    for (name, param), probe in zip(target.params.items(), probes):
                        self._start_probes.setdefault(id(param), (target.prefix, name, param, probe))
                        self._starts.setdefault(id(param), (param, probe))
            self._probe_tops_at_start(model)
            self.sweep.begin(model, self.modules, self._probe_one)
        for target in targets:
            self._hook_cell(target)
        self._hook_tops(model)
        self._targets, self._model = targets, model
        self._guard_jit_calls()
        self.mutations.install()  # (mindtorch sets its torch methods on mindspore.Tensor itself: wrapped too)
        return len(targets)

    def _guard_jit_calls(self) -> None:
        """While the window is open, every call of a ``mindspore.jit``
        function (``mindspore.common.api._JitExecutor.__call__``) runs with
        this window's hooks taken off, and they are put back when it
        returns.

        A ``@jit`` function that calls a hooked Cell is compiled with the
        Cell's hook tables, and MindSpore's graph compiler cannot compile
        the hooks' Python (``Unsupported statement 'Try'``): the user's
        training failed. Inside a compiled region the hooks would not fire
        anyway (PL506 says so); the region's own inputs and outputs are
        checked where they meet PyNative code. A MindSpore without that
        class is left alone."""
        try:
            from mindspore.common import api

            executor = getattr(api, "_JitExecutor")
            original = executor.__call__
        except Exception:
            return
        hooks = self

        def call_unhooked(run: Any, *args: Any, **kwargs: Any) -> Any:
            if hooks._suspended or not hooks._handles:
                return original(run, *args, **kwargs)
            hooks._suspend()
            try:
                return original(run, *args, **kwargs)
            finally:
                hooks._resume()

        call_unhooked.__wrapped__ = original  # type: ignore[attr-defined]
        try:
            self._jit_patch.apply([(executor, "__call__", call_unhooked)])
        except Exception as err:  # pragma: no cover - a class that refuses the attribute
            self._fail("jit", err)

    def _suspend(self) -> None:
        """Take every hook off (a ``mindspore.jit`` call is about to run)."""
        handles, self._handles = self._handles, []
        self._suspended = True
        for handle in reversed(handles):
            try:
                handle.remove()
            except Exception:  # pragma: no cover
                pass

    def _resume(self) -> None:
        """Put the hooks back after a ``mindspore.jit`` call; a fault turns
        the part it hit off, as at install."""
        self._suspended = False
        for target in self._targets:
            self._hook_cell(target)
        self._hook_tops(self._model)

    def _probe(self, target: Target) -> list:
        """Finiteness probes of ``target``'s own Parameters, now: checked on
        the host in a synchronous window (no pipeline to stall), else a
        float32 sum each launched on the device, read only on an overflow.
        A Parameter the Cell may write in place (``Target.written``) gets a
        snapshot of its values instead, which is also the value its next
        call starts from."""
        if not target.written:
            return [self._probe_one(p) for p in target.params.values()]
        probes, state = [], {}
        for name, param in target.params.items():
            if name in target.written:
                probe = state[name] = snapshot(param, self.synchronous)
            else:
                probe = self._probe_one(param)
            probes.append(probe)
        for name, buffer in target.written.items():  # a Module's buffers (running statistics): no probe of their own
            if name not in state:
                state[name] = snapshot(buffer, self.synchronous)
        self._written[target.prefix] = state
        return probes

    def _probe_one(self, param: Any) -> Any:
        """One Parameter's finiteness probe: decided on the host in a
        synchronous window, else a float32 sum launched on the device."""
        return probe_now(param) if self.synchronous else launch_sum(param)

    def forget_probes(self) -> None:
        """Parameters are about to change in place (an optimizer step,
        ``Parameter.set_data``; ``l1.optimizer.OptimizerWatch``, after the
        queue was resolved): the probes taken at ``start()`` no longer say
        what the next forward calls use. Each hooked Cell's next call
        probes its Parameters again (:meth:`_probe_again`), once per update."""
        if self.installed:
            self.params_changed = True
            if self._local.top is not None:  # an update inside the model's call (its optimizer sub-Cell)
                self._local.top.updated = True
            self._probes = {}
            self._top_probes = {}
            self._written = {}

    def _probe_again(self, target: Target) -> Optional[tuple[list, bool]]:
        """The probes of ``target``'s Parameters for a call made after an
        update in the window (taken once per Cell and update)."""
        if not (target.params or target.written) or not self.params_changed or "parameters" in self.broken:
            return None
        try:
            probes = (self._probe(target), False)
        except Exception as err:
            self._fail("parameters", err)
            return None
        self._probes[target.prefix] = probes
        return probes

    def _top_probe(self, prefix: str, params: dict) -> Optional[list]:
        """Probes of the own Parameters (``params``) of the model given to
        ``start()`` named ``prefix``: its own ``construct`` uses them as
        inputs, so a Parameter that already held inf/nan keeps its output
        from being called an origin (``check.provenance.top_overflow``).
        Taken at its first call in the window and at its first call after
        each update (:meth:`forget_probes`), as a hooked Cell's are; None
        when it has no Parameters or the Parameter checks are off (a fault
        turns them off)."""
        if not params or "parameters" in self.broken:
            return None
        probes = self._top_probes.get(prefix)
        if probes is None:
            try:
                probes = [self._probe_one(p) for p in params.values()]
            except Exception as err:
                self._fail("parameters", err)
                return None
            self._top_probes[prefix] = probes
            for (name, param), probe in zip(params.items(), probes):  # (a leaf model given to start())
                self._start_probes.setdefault(id(param), (prefix, name, param, probe))
        return probes

    def _probe_tops_at_start(self, model: Any) -> None:
        """The values at ``start()`` of the own Parameters of the models
        given to it (``_starts``), probed now: the probe at a model's first
        call comes after whatever the loop did in between (a review's
        finding: a Parameter the loop set to inf with ``ops.assign`` between
        ``start()`` and that call was said to have held inf/nan at
        ``start()``). A fault turns the Parameter checks off."""
        try:
            for _, root in models(model, self.modules):
                for param in own_parameters(root, self.modules).values():
                    if id(param) not in self._starts:
                        self._starts[id(param)] = (param, self._probe_one(param))
        except Exception as err:
            self._fail("parameters", err)

    def _hook_tops(self, model: Any) -> None:
        """Hooks on the models themselves: their call and output, recorded
        only when the overflow starts in their own code (``TopCall``)."""
        if "top" in self.broken:
            return
        sink = self.sink
        local = self._local

        def make_pre_hook(prefix: str) -> Callable:
            def top_pre_hook(cell: Any, args: tuple, kwargs: Optional[dict] = None) -> None:
                if sink.live and "top" not in self.broken and not jit_tracing():
                    try:
                        params = own_parameters(cell, self.modules)
                        local.top = TopCall(type(cell).__name__, args, dict(kwargs) if kwargs else {}, prefix=prefix,
                                            index=sink.next_index(prefix),
                                            frames=capture_frames(sys._getframe(1)), params=params,
                                            params_at_start=not self.params_changed,
                                            param_probe=self._top_probe(prefix, params), peers=self._tops,
                                            cell=cell)
                        local.top.grad_mode = bool(self._executor.grad_flag())
                        local.top.start_values = self._starts
                        self._tops.append(local.top)
                        local.top_cell = id(cell)
                    except Exception as err:
                        self._fail("top", err)
            return top_pre_hook

        def top_forward_hook(cell: Any, args: tuple, output: Any) -> None:
            try:
                top, local.top = local.top, None
                if top is not None:
                    top.returned = True
                if top is not None and sink.live and "top" not in self.broken:
                    hooked = self._hook_top_outputs(top, output)
                    top.output = output  # as its construct returned it (the caller gets the hooked one, same values)
                    top.hooked = hooked
                    sink.on_top(top)
                    return hooked
            except Exception as err:
                self._fail("top", err)
            return None

        try:
            for index_prefix, root in models(model, self.modules):
                if is_jit_compiled(root):
                    continue
                prefix = f"{'Module' if self.modules else 'Cell'}.{index_prefix}{type(root).__name__}"
                self._handles.append(_register_pre_hook(root, make_pre_hook(prefix)))
                if getattr(root, "has_bprop", False):
                    self._handles.append(force_forward_hook(root, top_forward_hook))
                else:
                    self._handles.append(root.register_forward_hook(top_forward_hook))
        except Exception as err:
            self._fail("top", err)

    def _hook_top_outputs(self, top: TopCall, output: Any) -> Any:
        """In a gradient computation, the model's output with its tensors
        (top level of a tuple) passed through one ``HookBackward`` whose
        hook keeps the gradients w.r.t. them on ``top.grad_outputs``; None
        when nothing is hooked. Why: a sub-Cell whose output gradient is
        inf/nan while the model's is finite got it from the model's own
        backward code between its sub-Cells (``sqrt``'s backward at 0), not
        from the loss; without this gradient both were possible and the
        record said so (issue 33)."""
        if "backward" in self.broken or not self._executor.grad_flag() or self.nested_gradient():
            return None
        single = not isinstance(output, tuple)
        items = (output,) if single else output
        if any(not is_tensor(item) and next(iter_tensors(item), None) is not None for item in items):
            top.outputs_unhooked = True
        if not single and same_kind(output, list(output)) is None:
            top.outputs_unhooked = top.outputs_unhooked or any(is_tensor(item) for item in items)
            return None
        positions = [i for i, item in enumerate(items) if is_tensor(item)]
        if not positions:
            return None

        def deliver(grads: tuple) -> None:
            if "backward" not in self.broken:
                top.grad_outputs.extend(iter_tensors(grads))

        new_items = hook_gradients(self._hook_backward, items, positions, self._boxes, deliver,
                                   lambda err: self._fail("backward", err))
        return new_items[0] if single else same_kind(output, new_items)

    def _hook_cell(self, target: Target) -> None:
        cell = target.cell
        if "forward" not in self.broken:
            self._handles.append(_register_pre_hook(cell, self._make_pre_hook(target)))
            forward_hook = self._make_forward_hook(target)
            if target.bprop:
                self._handles.append(force_forward_hook(cell, forward_hook))
            else:
                self._handles.append(cell.register_forward_hook(forward_hook))
        if "parameters" not in self.broken:
            for param_name, param in target.params.items():
                if getattr(param, "requires_grad", False) and param_name not in target.hidden:
                    self._handles.append(register_grad_hook(param, self._make_param_hook(target, param_name)))

    def uninstall(self) -> None:
        """Remove every hook (safe to call twice and at interpreter exit)."""
        self.mutations.uninstall()
        self._jit_patch.remove()
        self._suspended = False
        self._targets, self._model = [], None
        handles, self._handles = self._handles, []
        release(self._boxes)
        for handle in reversed(handles):
            try:
                handle.remove()
            except Exception:  # pragma: no cover - interpreter exit
                pass
        self._local.stack = []
        self._local.top = None
        self._local.last = None  # the last Cell call and its output: not kept past the window
        self._cells = {}

    def trainables_written(self, cache: Any) -> list[tuple[str, str]]:
        """``(name, owner)`` of the trainable Parameters of the window's
        Cells that were finite at ``start()`` and hold inf/nan now: read
        when an exact window that computed gradients but ran no optimizer
        step closes unexplained (a hand-written update such as
        ``p.copy_(p - lr * p.grad)``, or gradients accumulated outside the
        Cells that overflowed): a hunt found "no overflow found" with the
        weights -inf. One host read per trainable Parameter then, none
        otherwise."""
        found = []
        for prefix, name, param, probe in self._start_probes.values():
            if getattr(param, "requires_grad", True) is False or not cache.finite(probe):
                continue
            if not cache.finite(param):
                found.append((parameter_name(param, name), prefix))
        return found

    def holding(self) -> bool:
        """The call of a model given to ``start()`` running now (on this
        thread) holds sub-Cell entries back (``TopCall.stash``): its own
        ``construct`` made an inf/nan a sub-Cell got, and its record, the
        origin, is written when it returns."""
        top = self._local.top
        return top is not None and top.stash is not None and not top.released

    def current_call(self) -> Optional[CellCall]:
        """The hooked Cell's call running now on this thread (the innermost), or None."""
        stack = self._local.stack
        return stack[-1] if stack else None

    def new_step(self) -> None:
        """Forget the per-step parameter-gradient entries."""
        self._param_calls = {}
        self._calls_by_prefix = {}

    def _fail(self, part: str, err: BaseException) -> None:
        """Turn ``part`` off for good (logged once through the sink). An
        error of MindSpore's runtime (``check.verdict.framework_error``: often
        an earlier operator's failure surfacing) is logged and leaves only
        that call unchecked, as at L1."""
        if framework_error(err):
            self.sink.on_error(f"in the L0 {part} hooks (that call is not checked)", err)
            return
        if part not in self.broken:
            self.broken.add(part)
            if part == "forward":
                self.broken.add("backward")
            self.sink.on_error(f"in the L0 {part} hooks (turned off)", err)

    # -- hooks ----------------------------------------------------------------------
    def _make_pre_hook(self, target: Target):
        sink = self.sink
        local = self._local
        prefix = target.prefix

        def pre_hook(cell: Any, args: tuple, kwargs: Optional[dict] = None) -> Any:
            if not sink.live or "forward" in self.broken or jit_tracing():
                return None  # traced by mindspore.jit: a HookBackward there breaks the graph's gradient
            try:
                stack = local.stack
                parent = stack[-1] if stack else None
                call = CellCall(prefix, sink.next_index(prefix), parent, args, dict(kwargs) if kwargs else {},
                                capture_frames(sys._getframe(1)), target.params, cell=cell)
                call.params_at_start = not self.params_changed  # a Parameter argument: as it was at start()?
                if target.library:
                    call.library = True
                call.parameter_args = [a for a in args if is_parameter(a)]  # a tied weight (the hooks copy args)
                call.start_values = self._starts
                probes = self._probes.get(prefix) or self._probe_again(target)
                if probes is not None:
                    call.param_probe, call.params_at_start = probes
                    if target.written:
                        self._before_write(target, call)
                if (call.parameter_args or kwargs and any(is_parameter(v) for v in kwargs.values()) or
                        any(isinstance(a, (tuple, list)) for a in args)) and \
                        "parameters" not in self.broken:
                    self._before_arguments(target, call, args, kwargs)
                call.top = local.top
                self._seq += 1
                call.seq = self._seq
                stack.append(call)
                self._calls_by_prefix.setdefault(prefix, []).append(call)
                if "backward" not in self.broken and self._executor.grad_flag() and not self.nested_gradient():
                    call.grad_mode = True
                    if self._fed_by_previous(target, call, args, kwargs):
                        return None
                    return self._hook_inputs(call, args, kwargs)
            except Exception as err:
                self._fail("forward", err)
            return None

        return pre_hook

    def _make_forward_hook(self, target: Target):
        sink = self.sink
        local = self._local
        prefix = target.prefix

        def forward_hook(cell: Any, args: tuple, output: Any) -> Any:
            if "forward" in self.broken or jit_tracing():
                return None
            try:
                stack = local.stack
                call = None
                for position in range(len(stack) - 1, -1, -1):  # skip calls that raised
                    if stack[position].prefix == prefix:
                        call = stack[position]
                        del stack[position:]
                        break
                if call is None or not sink.live:
                    return None
                call.args = args
                call.output = output
                if call.written is not None:
                    self._after_write(target, call)
                if call.argument_snapshots:
                    self._after_arguments(call)
                hooked = None
                if call.grad_mode and "backward" not in self.broken:
                    try:
                        hooked = self._hook_outputs(call, output)
                        if hooked is not None:  # what the next Cell gets: one host copy serves both
                            call.output = hooked
                            local.last = (target, hooked, call)
                    except Exception as err:
                        self._fail("backward", err)
                sink.on_forward(call)
                return hooked
            except Exception as err:
                self._fail("forward", err)
            return None

        return forward_hook

    def _before_write(self, target: Target, call: CellCall) -> None:
        """A call of a Cell that may write its own Parameters in place
        (``Target.written``): the values they hold now (the latest
        snapshots) stand for them in the call's probes and ``parameters``;
        :meth:`_after_write` adds what the call leaves in them."""
        before = self._written.get(target.prefix)
        if before is None:
            return
        call.written = [(name, before[name], None, parameter_name(param, name))
                        for name, param in target.written.items()]
        call.param_probe = [before.get(name, probe) for name, probe in zip(target.params, call.param_probe or ())]

    def _after_write(self, target: Target, call: CellCall) -> None:
        """After the call: a snapshot of each Parameter it may have written,
        judged with its outputs (inf/nan written from finite values makes
        the Cell the origin even when its outputs are finite) and the value
        its next call starts from. A fault turns the Parameter checks off."""
        try:
            after = {name: snapshot(param, self.synchronous) for name, param in target.written.items()}
        except Exception as err:
            call.written = None
            self._fail("parameters", err)
            return
        call.written = [(name, before, after[name], full) for name, before, _, full in call.written or ()]
        self._written[target.prefix] = after

    def _before_arguments(self, target: Target, call: CellCall, args: tuple, kwargs: Optional[dict]) -> None:
        """The floating Parameters among the call's arguments that are not
        the Cell's own: a snapshot of each is taken now (a host copy in a
        synchronous window, else a device copy) and stands for it in the
        entry (:meth:`_after_arguments`), which is then judged and dumped
        on the value the Cell got, not on what its own code writes into it
        (a tester's finding: ``DynamicLossScaleUpdateCell`` assigns the new
        loss scale to the Parameter it is given; when ``2**120 * 2**8``
        overflowed there, the inf was dumped as the Cell's input, and the
        Cell that made it was said to carry a Parameter that "already held
        inf/nan at start()"). Plain tensors get nothing, and neither does a
        layer of MindSpore's or mindtorch's own (``Target.library``: the
        inner Cell an ``nn.LSTM`` hands its weights to reads them, writes
        none; a copy of those weights at every call would cost what the
        rest of the call does). Neither snapshot is taken for the value at
        ``start()`` of a Parameter no probe took then: code no Cell check
        sees may have written it in between (``held_at_start``). A
        Parameter of more than :data:`ARGUMENT_COPY_LIMIT`
        elements is read as it is too (a review's finding: a tied
        embedding table handed to the output Cell, as MindFormers' models
        do, cost two copies of 38 ms a call for a 154 MB table; a loss
        scale or a step counter is one element). The Parameters directly
        inside a tuple or list argument (a ``ParameterTuple`` of shadow
        weights an EMA Cell updates) are copied too, keyed
        ``(position, index)``, while they hold at most
        :data:`ARGUMENT_COPY_LIMIT` elements together; beyond that they are
        read as they are (a review's finding: such a Cell writing inf/nan
        into a shadow was not named). A fault turns the Parameter checks
        off."""
        own = {id(p) for p in target.params.values()}
        found: list[tuple[Any, str, Any]] = [(i, f"input_args[{i}]", a) for i, a in enumerate(args)]
        if kwargs:
            found += [(k, f"input_kwargs.{k}", v) for k, v in kwargs.items()]
        inner = [((key, j), f"{label}[{j}]", item) for key, label, value in found
                 if isinstance(value, (tuple, list)) for j, item in enumerate(value) if is_parameter(item)]
        if inner and sum(_elements(item) for _, _, item in inner) <= ARGUMENT_COPY_LIMIT:
            found += inner
        taken: dict[int, Any] = {}
        snapshots = []
        try:
            for key, label, param in found:
                if not is_parameter(param) or id(param) in own or not is_floating(param):
                    continue
                if target.library or _elements(param) > ARGUMENT_COPY_LIMIT:  # read as it is, as before
                    continue
                before = taken.get(id(param))
                if before is None:
                    before = taken[id(param)] = snapshot(param, self.synchronous)
                snapshots.append((key, label, param, before))
        except Exception as err:
            self._fail("parameters", err)
            return
        call.argument_snapshots = snapshots or None

    def _after_arguments(self, call: CellCall) -> None:
        """After the call: a snapshot of each Parameter argument
        :meth:`_before_arguments` took, kept in ``call.written`` with the
        one taken before, as L1 keeps a Parameter an in-place call got: it
        is judged with the outputs (inf/nan written into it from finite
        values makes the Cell the origin, its record naming the
        Parameter) and dumped under ``written``, and the snapshot taken
        before stands for the argument in ``args``/``kwargs`` (its
        ``input_args`` statistics). A fault turns the Parameter checks off
        (the entry keeps the Parameter itself)."""
        taken, call.argument_snapshots = call.argument_snapshots or [], None
        try:
            after = [snapshot(param, self.synchronous) for _, _, param, _ in taken]
        except Exception as err:
            self._fail("parameters", err)
            return
        args, kwargs = list(call.args), dict(call.kwargs)
        for key, _, _, before in taken:
            index = None
            if isinstance(key, tuple):  # inside a tuple or list argument
                key, index = key
            holder: Any = args if isinstance(key, int) else kwargs
            if (key < len(args)) if isinstance(key, int) else (key in kwargs):
                if index is None:
                    holder[key] = before
                elif isinstance(holder[key], (tuple, list)) and index < len(holder[key]):
                    items = list(holder[key])
                    items[index] = before
                    holder[key] = tuple(items)
        call.args, call.kwargs = tuple(args), kwargs
        # the Parameter behind each snapshot (``check.by_design.trainable_among``: a trainable one's -inf is no mask)
        call.given = list(call.given) + [(param, before) for _, _, param, before in taken]
        call.written = list(call.written or []) + [(label, before, later, param)
                                                   for (_, label, param, before), later in zip(taken, after)]

    def _fed_by_previous(self, target: Target, call: CellCall, args: tuple, kwargs: Optional[dict] = None) -> bool:
        """In a plain ``nn.SequentialCell`` a Cell's only input is the
        output the Cell before it returned, which nothing else uses: the
        gradient w.r.t. that output (its hook) *is* this Cell's input
        gradient, bit for bit. This call then gets no ``HookBackward`` of
        its own (one hook per Cell boundary instead of two); the previous
        call's output hook hands the gradient on to it
        (``CellCall.feeds``). Only when ``args`` is that one tensor object
        itself and neither Cell has hooks besides the tool's (which could
        use or replace it); anything else is hooked as usual."""
        local = self._local
        last, local.last = local.last, None
        previous = target.follows
        if previous is None or last is None or last[0] is not previous or len(args) != 1 or kwargs:
            return False
        parent = call.parent
        if parent is not None:
            enclosing = self._cells.get(parent.prefix)
            if enclosing is None or id(enclosing) != target.sequence:
                return False
        elif local.top is None or local.top_cell != target.sequence:
            return False
        if args[0] is not last[1] or not is_tensor(args[0]) or last[2].feeds is not None:
            return False
        own_hooks = (len(getattr(target.cell, "_forward_pre_hook", ())),
                     len(getattr(previous.cell, "_forward_hook", ())))
        if own_hooks != (1, 1):
            return False
        last[2].feeds = call
        call.expects_input_grads = True
        return True

    def _hook_inputs(self, call: CellCall, args: tuple, kwargs: Optional[dict] = None) -> Optional[tuple]:
        """The call's tensor inputs, positional and keyword, passed through
        one ``HookBackward``: ``(new_args, new_kwargs)`` as a pre-hook
        registered ``with_kwargs`` returns them, or None when there is no
        tensor among them. Tensors inside a list, tuple or dict argument
        get none (the container is the caller's own object, which the Cell
        may keep or change): the enclosing Cell's call, or the model's for a
        Cell called in it, is marked ``unhooked_child``, so a gradient that
        overflowed there is never said to come from outside the checked
        Cells or from the enclosing code."""
        names = [name for name, value in (kwargs or {}).items() if is_tensor(value)]
        items = list(args) + [kwargs[name] for name in names] if kwargs else list(args)
        owner: Any = call.parent if call.parent is not None else call.top  # the model, for a Cell called in it
        if owner is not None and any(isinstance(item, (list, tuple, dict)) and next(iter_tensors(item), None)
                                     is not None for item in list(args) + list((kwargs or {}).values())):
            owner.unhooked_child = True  # its tensors nested in a container get no gradient hook
        positions = [i for i, a in enumerate(items) if is_tensor(a)]
        if not positions:
            return None
        sink = self.sink

        def deliver(grads: tuple) -> None:
            if "backward" not in self.broken:
                tensors = list(iter_tensors(grads))
                sink.on_grad_inputs(call, tensors)
                self._note_gradients(call, tensors)

        new_items = hook_gradients(self._hook_backward, items, positions, self._boxes, deliver,
                                   lambda err: self._fail("backward", err))
        call.expects_input_grads = True
        call.given = [(items[i], new_items[i]) for i in positions]  # a -inf by design is known by the tensor given
        new_kwargs = dict(kwargs or {})
        new_kwargs.update(zip(names, new_items[len(args):]))
        if names:
            call.kwargs = dict(new_kwargs)
        return tuple(new_items[:len(args)]), new_kwargs

    def _hook_outputs(self, call: CellCall, output: Any) -> Any:
        """The output with its floating tensors (top level of a tuple,
        rebuilt as the same kind of tuple: a namedtuple stays one) passed
        through one ``HookBackward``; None when there is nothing to hook or
        the tuple's class cannot be rebuilt.

        A tensor left without a hook (in a list or dict output, whose
        identity the caller may rely on, nested deeper than a tuple's top
        level, or in a tuple that cannot be rebuilt) sets
        ``call.outputs_unhooked``: the gradient w.r.t. the outputs is then
        not all known, and the call's backward and ``parameters_grad``
        entries are never an origin (``check.provenance.forward_clean``)."""
        single = not isinstance(output, tuple)
        items = (output,) if single else output
        if any(not is_tensor(item) and next(iter_tensors(item), None) is not None for item in items):
            call.outputs_unhooked = True
        if not single and same_kind(output, list(output)) is None:
            call.outputs_unhooked = call.outputs_unhooked or any(is_tensor(item) for item in items)
            return None
        positions = [i for i, item in enumerate(items) if is_tensor(item)]
        if not positions:
            return None
        sink = self.sink

        def deliver(grads: tuple) -> None:
            if "backward" not in self.broken:
                tensors = list(iter_tensors(grads))
                if call.feeds is not None:  # the next Cell's input gradient (see _fed_by_previous)
                    sink.on_grad_inputs(call.feeds, list(tensors))
                call.grad_in_top = call.top is not None and not call.top.returned
                sink.on_grad_outputs(call, tensors)
                self._note_gradients(call, tensors)

        new_items = hook_gradients(self._hook_backward, items, positions, self._boxes, deliver,
                                   lambda err: self._fail("backward", err))
        return new_items[0] if single else same_kind(output, new_items)

    def _make_param_hook(self, target: Target, param_name: str):
        sink = self.sink
        prefix = target.prefix
        param = target.params[param_name]

        def param_hook(grad: Any) -> None:
            if not sink.live or "parameters" in self.broken:
                return None
            try:
                entry = self._param_calls.get(prefix)
                if entry is None or entry.queued and param_name in entry.grads:
                    calls = self._calls_by_prefix.get(prefix, [])
                    entry = ParamGradCall(prefix, calls[-1] if calls else None, calls)
                    self._param_calls[prefix] = entry
                entry.grads[param_name] = grad
                entry.tied.extend(self._tied_calls(prefix, param, entry.tied))
                sink.on_param_grad(entry)
                self._note_gradients(entry.owner, [grad])
            except Exception as err:
                self._fail("parameters", err)
            return None

        return param_hook

    def _note_gradients(self, call: Optional[CellCall], grads: list) -> None:
        """Gradients of ``call`` arrived before the call of the model given
        to ``start()`` it ran in returned: a gradient computation inside
        that model's own ``construct`` (``nn.TrainOneStepCell``'s
        ``GradOperation`` over its network). Kept on the model's call with
        the ``seq`` of the latest Cell call (``TopCall.gradients``): the
        sub-Cells called after them may get them, and inf/nan among them is
        not the model's own code's."""
        top = call.top if call is not None else None
        if top is not None and not top.returned and grads:
            top.gradients.append((self._seq, grads))

    def _tied_calls(self, prefix: str, param: Any, known: list) -> list:
        """The calls of the step of Cells other than ``prefix`` that took
        ``param`` itself as an argument (a tied weight: a language model's
        embedding table handed to its output head), not in ``known``."""
        found = []
        for other, calls in self._calls_by_prefix.items():
            if other == prefix:
                continue
            for call in calls:
                if call not in known and any(t is param for t in call.parameter_args):
                    found.append(call)
        return found


def force_forward_hook(cell: Any, hook: Any) -> Any:
    """Put ``hook`` in the forward-hook table of a Cell with a custom
    ``bprop`` (``register_forward_hook`` refuses those and returns a dead
    handle); returns a handle whose ``remove()`` takes it out again."""
    from mindspore.common.hook_handle import HookHandle

    table = cell._forward_hook
    handle = HookHandle(table)
    table[handle.handle_id] = hook
    return handle


def same_kind(original: tuple, items: list) -> Optional[tuple]:
    """``items`` as a tuple of ``original``'s class: a plain tuple, a
    namedtuple (``_make``), or another tuple subclass built from one
    iterable; None when that class cannot be built so. A fresh user's
    finding: a sub-Cell returning a namedtuple gave its parent a plain
    tuple under a gradient computation, and ``o.h`` then raised."""
    kind = type(original)
    if kind is tuple:
        return tuple(items)
    try:
        make = getattr(kind, "_make", None)
        rebuilt = make(items) if callable(make) else kind(items)
    except Exception:
        return None
    if type(rebuilt) is not kind or len(rebuilt) != len(items):
        return None
    own = getattr(original, "__dict__", None)
    if own:  # what a subclass's own __new__ set on the instance (``_make`` does not run it)
        try:
            rebuilt.__dict__.update(own)
        except Exception:
            return None
    return rebuilt


def _register_pre_hook(cell: Any, hook: Callable[..., Any]) -> Any:
    """``cell.register_forward_pre_hook(hook, with_kwargs=True)``: the hook
    sees the keyword arguments too (a fresh user's finding: an inf mask
    passed as ``mask=m`` was not an input of the Cell's entry, so the Cell
    was called its origin) and returns None or ``(args, kwargs)``. A Cell
    or Module of a layer whose method takes no ``with_kwargs`` gets the
    hook without them."""
    try:
        return cell.register_forward_pre_hook(hook, with_kwargs=True)
    except TypeError:
        def positional(owner: Any, args: tuple) -> Any:
            result = hook(owner, args, {})
            return None if result is None else result[0]

        return cell.register_forward_pre_hook(positional)
