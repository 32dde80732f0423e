"""L0 (Cell level) hooks for MindSpore PyNative.

``CellHooks.install(model)`` hooks every sub-Cell of ``model`` (a Cell, or a
list/tuple of Cells); the Cells passed in are not recorded themselves, only
their descendants, as in msprobe. Per Cell call:

* a forward pre-hook (``register_forward_pre_hook``) gives the call its
  index (``Cell.<path>.<Class>.forward.<index>``, counted per step), its
  parent (the Cell whose call is running: construct.json) and the user's
  frames; while MindSpore records for a gradient it passes the floating
  positional inputs through one ``ops.HookBackward`` whose hook receives the
  gradients w.r.t. those inputs; except when the Cell follows another in a
  plain ``nn.SequentialCell`` and gets exactly that Cell's (hooked) output:
  then the previous Cell's output hook hands the same gradient on to it
  (:meth:`CellHooks._fed_by_previous`), one ``HookBackward`` per boundary
  instead of two (each costs about 90 us in a synchronous process);
* a forward hook (``register_forward_hook``; for Cells with a custom
  ``bprop``, which that API refuses, the hook is put in the Cell's forward
  hook table directly, as msprobe does) hands the finished call (inputs,
  output) to the monitor's pending queue and, under grad, passes the
  floating outputs through one more ``ops.HookBackward`` for the gradients
  w.r.t. the outputs (``Tensor.register_hook`` on a fresh output waits for
  the asynchronous pipeline, about 2 ms here, and a tensor carrying a Python
  hook breaks ``mindspore.jit`` code it flows into: see
  ``interception.py``). Tensors
  are chosen by type, not dtype: the first ``dtype`` read of a fresh output
  waits for the device too (integer tensors pass through harmlessly);
* each Parameter a hooked Cell owns directly gets ``register_hook``: its
  gradient becomes part of ``Cell.<path>.<Class>.parameters_grad``;
* at ``install`` (each ``start()``) the sum (float32) of every such
  Parameter is launched on the device, without waiting: whether the weights
  the forward pass used were finite, read only when a Cell's output
  overflowed from finite inputs (and to name such a Parameter in
  overflow.json's ``entered``; an update made inside the window by code
  the tool does not see would change the weights before the check). One
  reduction per
  Parameter per checked step; in a synchronous window (CPU,
  ``execution.py``) the values are checked on the host then instead
  (``detection.probe_now``), which is cheaper than launching operators.
  After an optimizer step or ``Parameter.set_data`` inside the window
  (``forget_probes``, called by the debugger through
  ``l1.optimizer.OptimizerWatch``) each Cell's next call probes its
  Parameters again, so weights written after ``start()`` are judged as
  they were at that call.

Why not ``Cell.register_backward_hook``: it fires with (grad_input,
grad_output) but not which call of a Cell called several times it belongs
to; one ``HookBackward`` per call names the backward entry exactly. All
hooks return None, so values and gradients are unchanged.

No hook reads a tensor: each one only keeps references and hands them to
the monitor (see ``monitor.py`` for what is checked when); nothing in a hook
waits for the device. Forward entries
are queued when the Cell's forward hook fires, so inner Cells are queued
(and judged) before their parents; a backward entry is queued when the
gradients w.r.t. its inputs arrive, again inner Cells first; backward
entries whose inputs need no gradient (the first layer on data) and
parameter gradients are judged at the next resolution point (next forward
call, ``stop()``, ``step()``). A Cell whose descendant overflowed in the
same call is recorded as carrying the overflow, not as its origin.

Cells whose ``construct`` is compiled with ``mindspore.jit``
(``__wrapped_by_jit__``) run as a graph: their own inputs and outputs are
checked, the Cells inside them are not hooked (their hooks would not fire);
``install`` says so once on the ``probe_runtime`` logger.

Errors inside a hook never reach the training: the failing part (forward,
backward or parameter hooks) is logged once and turned off.
"""
from __future__ import annotations

import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from .check.probes import launch_sum, probe_now
from .check.verdict import framework_error, is_tensor, iter_tensors
from .hooks.backward import release, through_hook
from .hooks.frames import capture_frames

LOGGER = logging.getLogger("probe_runtime")


class UsageError(ValueError):
    """The debugger was called in a way that cannot work (e.g. ``start()``
    without a model at level L0). The message says how to call it."""


@dataclass(eq=False)
class CellCall:
    """One call of a hooked Cell (the monitor's forward and backward entry).

    Attributes:
        prefix: ``Cell.<path>.<Class>`` (``Cell.<i>.<path>.<Class>`` for a
            list of models).
        index: call index of ``prefix`` in the current step.
        parent: the enclosing hooked Cell's call, or None.
        args, kwargs, output: what the Cell got and returned.
        frames: the user's frames of the call, innermost first.
        parameters: the Cell's own Parameters (name -> Parameter).
        seq: start order within the window (backward order fallback).
        child_overflow: a descendant's forward entry overflowed in this call.
        child_backward_overflow: likewise for the backward entries.
    """

    prefix: str
    index: int
    parent: Optional["CellCall"]
    args: tuple
    kwargs: dict
    frames: tuple
    parameters: dict = field(default_factory=dict)
    seq: int = 0
    output: Any = None
    grad_outputs: list = field(default_factory=list)
    grad_inputs: list = field(default_factory=list)
    expects_input_grads: bool = False
    step: int = 0
    backward_queued: bool = False
    queue_on_inputs: bool = True
    awaiting: bool = False
    grad_mode: bool = False
    param_probe: Optional[list] = None
    #: ``param_probe`` was taken at ``start()`` (no update came before it in the window)
    params_at_start: bool = False
    child_overflow: bool = False
    child_backward_overflow: bool = False
    inplace: bool = False
    top: Optional["TopCall"] = None
    #: the next Cell's call in an ``nn.SequentialCell``, whose input gradient this call's output hook delivers
    feeds: Optional["CellCall"] = None

    @property
    def name(self) -> str:
        """``Cell.fc1.Dense.forward.0``."""
        return f"{self.prefix}.forward.{self.index}"

    @property
    def backward_name(self) -> str:
        """``Cell.fc1.Dense.backward.0``."""
        return f"{self.prefix}.backward.{self.index}"

    def parent_name(self, kind: str) -> Optional[str]:
        """The construct.json value of this call's ``kind`` entry."""
        if self.parent is None:
            return None
        return self.parent.name if kind == "forward" else self.parent.backward_name

    def ancestry(self, kind: str) -> dict:
        """construct.json links from this entry up to the top hooked Cell."""
        links: dict = {}
        node: Optional[CellCall] = self
        while node is not None:
            links[node.name if kind == "forward" else node.backward_name] = node.parent_name(kind)
            node = node.parent
        return links


@dataclass(eq=False)
class TopCall:
    """One call of a model given to ``start()`` (not recorded: only used
    to say when an overflow starts in its own ``construct``, outside every
    sub-Cell; see ``Monitor._top_overflow``)."""

    class_name: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    output: Any = None
    child_origin: bool = False
    child_overflow: bool = False
    hinted: bool = False


@dataclass(eq=False)
class ParamGradCall:
    """The gradients of one Cell's own Parameters in one step
    (``Cell.<path>.<Class>.parameters_grad``).

    Attributes:
        grads: parameter short name (``weight``) -> gradient, arrival order.
        owner: the Cell's latest call in the step (gives ``where`` and the
            gradients w.r.t. its outputs that the origin test compares to).
        owner_calls: every call of the Cell in the step.
    """

    prefix: str
    owner: Optional[CellCall]
    owner_calls: list
    grads: dict = field(default_factory=dict)
    step: int = 0
    queued: bool = False

    @property
    def name(self) -> str:
        return f"{self.prefix}.parameters_grad"

    @property
    def frames(self) -> tuple:
        return self.owner.frames if self.owner is not None else ()

    def parent_name(self, kind: str) -> Optional[str]:
        """The Cell's own latest backward entry: where msprobe's graph
        builder places a ``parameters_grad`` node."""
        return self.owner.backward_name if self.owner is not None else None

    def ancestry(self, kind: str) -> dict:
        """construct.json links for a parameters_grad record: as in msprobe's
        own dumps, the ``parameters_grad`` entry itself is not a key of
        construct.json; the Cell's latest backward entry and its enclosing
        Cells' backward entries are (msprobe's visualization attaches
        ``<Cell>.parameters_grad`` under ``<Cell>.backward.<highest n>``)."""
        return self.owner.ancestry("backward") if self.owner is not None else {}


def is_jit_compiled(cell: Any) -> bool:
    """True when ``cell.construct`` is wrapped by ``mindspore.jit`` (ast or
    bytecode capture), on the class or the instance."""
    construct = getattr(cell, "construct", None)
    function = getattr(construct, "__func__", construct)
    return bool(getattr(function, "__wrapped_by_jit__", False))


@dataclass
class _Target:
    cell: Any
    path: str
    prefix: str
    params: dict
    bprop: bool
    #: the hooked Cell just before this one in a plain ``nn.SequentialCell``
    #: (its output is this Cell's only input and nothing else uses it)
    follows: Optional["_Target"] = None
    #: ``id`` of that ``nn.SequentialCell`` (the call must be made from it)
    sequence: int = 0


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list = []
        self.top: Optional[TopCall] = None
        #: (target, the output it returned with its gradient hook, its call): the last Cell that finished
        self.last: Optional[tuple] = None
        self.top_cell: int = 0  # id of the model whose call is running (``top``)


class CellHooks:
    """Installs and removes the L0 hooks on one model.

    Args:
        sink: the monitor (``live``, ``next_index``, ``on_forward``,
            ``on_grad_outputs``, ``on_grad_inputs``, ``on_param_grad``,
            ``on_error``).
    """

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self._handles: list = []
        self._plan_for: Any = None
        self._plan: list[_Target] = []
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
        #: Parameters may have changed since ``start()`` (an optimizer step or ``Parameter.set_data``)
        self.params_changed = False
        #: the window runs synchronously: Parameters are checked on the host at install
        self.synchronous = False
        self._boxes: list = []  # what this window's HookBackward hooks refer to (see through_hook)
        self._cells: dict[str, Any] = {}  # prefix -> Cell, for the window

    @property
    def installed(self) -> bool:
        """True while hooks are registered."""
        return bool(self._handles)

    # -- plan -----------------------------------------------------------------------
    @staticmethod
    def _models(model: Any) -> list[tuple[str, Any]]:
        from mindspore import nn

        if isinstance(model, (list, tuple)):
            pairs = [(f"{i}.", m) for i, m in enumerate(model)]
        else:
            pairs = [("", model)]
        for _, m in pairs:
            if not isinstance(m, nn.Cell):
                raise UsageError(f"level L0 hooks Cells: debugger.start(model) needs a mindspore.nn.Cell or a "
                                 f"list/tuple of Cells, not {type(m).__name__}")
        return pairs

    def plan(self, model: Any) -> list[_Target]:
        """The Cells to hook in ``model`` (built once per model object;
        a list/tuple of models is walked again at each ``install``)."""
        ref = self._plan_for
        if ref is not None and ref() is model:
            return self._plan
        targets: list[_Target] = []
        jit_cells: list[tuple[str, Any, list[str]]] = []  # (path, cell, paths not seen inside)
        for index_prefix, root in self._models(model):
            if is_jit_compiled(root):
                inside = [index_prefix + path for path, cell in root.cells_and_names() if cell is not root]
                jit_cells.append((index_prefix.rstrip("."), root, inside))
                continue
            jit_here: list[tuple[str, list[str]]] = []
            for path, cell in root.cells_and_names():
                if cell is root:
                    continue
                outer = next((item for item in jit_here if path.startswith(item[0] + ".")), None)
                if outer is not None:
                    outer[1].append(index_prefix + path)
                    continue
                params = {key.split(".")[-1]: value for key, value in cell.parameters_dict(recurse=False).items()}
                targets.append(_Target(cell, path, f"Cell.{index_prefix}{path}.{type(cell).__name__}", params,
                                       bool(getattr(cell, "has_bprop", False))))
                if is_jit_compiled(cell):
                    jit_here.append((path, []))
                    jit_cells.append((index_prefix + path, cell, jit_here[-1][1]))
        self._warn_jit(model, jit_cells)
        _link_sequential(model, targets)
        try:
            import weakref

            self._plan_for = weakref.ref(model)
        except TypeError:  # a list or tuple
            self._plan_for = None
        self._plan = targets
        return targets

    def _warn_jit(self, model: Any, jit_cells: list) -> None:
        if not jit_cells or id(model) in self._warned_jit:
            return
        self._warned_jit.add(id(model))
        parts = []
        for path, cell, inside in jit_cells:
            is_root = not path or path.isdigit()
            label = f"model {path}" if path.isdigit() else (path or "the model itself")
            seen = "nothing inside is checked" if is_root else "its own inputs and outputs are checked"
            hidden = f"; not seen: {', '.join(inside[:8])}{' ...' if len(inside) > 8 else ''}" if inside else ""
            parts.append(f"{label} ({type(cell).__name__}: {seen}{hidden})")
        LOGGER.warning("probe_runtime: L0 cannot see inside Cells compiled with mindspore.jit (they run as a "
                       "graph): %s", "; ".join(parts))

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
            from mindspore import ops

            self._hook_backward = ops.HookBackward
            try:
                from mindspore.graph.api import _pynative_executor  # MindSpore >= 2.9
            except Exception:
                from mindspore.common.api import _pynative_executor
            self._executor = _pynative_executor
        self._local.stack = []
        self._seq = 0
        self._probes = {}
        self.params_changed = False
        if "parameters" not in self.broken:
            for target in targets:  # the weights as the forward pass will see them
                if target.params:
                    self._probes[target.prefix] = (self._probe(target), True)
        for target in targets:
            self._hook_cell(target)
        self._hook_tops(model)
        return len(targets)

    def _probe(self, target: _Target) -> list:
        """Finiteness probes of ``target``'s own Parameters, now: checked on
        the host in a synchronous window (no pipeline to stall), else a
        float32 sum each launched on the device, read only on an overflow."""
        if self.synchronous:
            return [probe_now(p) for p in target.params.values()]
        return [launch_sum(p) for p in target.params.values()]

    def forget_probes(self) -> None:
        """Parameters are about to change in place (an optimizer step,
        ``Parameter.set_data``; ``l1.optimizer.OptimizerWatch``, after the
        queue was resolved): the probes taken at ``start()`` no longer say
        what the next forward calls use. Each hooked Cell's next call
        probes its Parameters again (:meth:`_probe_again`), once per update."""
        if self.installed:
            self.params_changed = True
            self._probes = {}

    def _probe_again(self, target: _Target) -> Optional[tuple[list, bool]]:
        """The probes of ``target``'s Parameters for a call made after an
        update in the window (taken once per Cell and update)."""
        if not target.params or not self.params_changed or "parameters" in self.broken:
            return None
        try:
            probes = (self._probe(target), False)
        except Exception as err:
            self._fail("parameters", err)
            return None
        self._probes[target.prefix] = probes
        return probes

    def _hook_tops(self, model: Any) -> None:
        """Hooks on the models themselves (not recorded): their call and
        output, for the hint when an overflow starts in their own code."""
        if "top" in self.broken:
            return
        sink = self.sink
        local = self._local

        def top_pre_hook(cell: Any, args: tuple) -> None:
            if sink.live and "top" not in self.broken:
                local.top = TopCall(type(cell).__name__, args)
                local.top_cell = id(cell)

        def top_forward_hook(cell: Any, args: tuple, output: Any) -> None:
            try:
                top, local.top = local.top, None
                if top is not None and sink.live and "top" not in self.broken:
                    top.output = output
                    sink.on_top(top)
            except Exception as err:
                self._fail("top", err)

        try:
            for _, root in self._models(model):
                if is_jit_compiled(root):
                    continue
                self._handles.append(root.register_forward_pre_hook(top_pre_hook))
                if getattr(root, "has_bprop", False):
                    self._handles.append(_force_forward_hook(root, top_forward_hook))
                else:
                    self._handles.append(root.register_forward_hook(top_forward_hook))
        except Exception as err:
            self._fail("top", err)

    def _hook_cell(self, target: _Target) -> None:
        cell = target.cell
        if "forward" not in self.broken:
            self._handles.append(cell.register_forward_pre_hook(self._make_pre_hook(target)))
            forward_hook = self._make_forward_hook(target)
            if target.bprop:
                self._handles.append(_force_forward_hook(cell, forward_hook))
            else:
                self._handles.append(cell.register_forward_hook(forward_hook))
        if "parameters" not in self.broken:
            for param_name, param in target.params.items():
                if getattr(param, "requires_grad", False):
                    self._handles.append(param.register_hook(self._make_param_hook(target, param_name)))

    def uninstall(self) -> None:
        """Remove every hook (safe to call twice and at interpreter exit)."""
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

    def new_step(self) -> None:
        """Forget the per-step parameter-gradient entries."""
        self._param_calls = {}
        self._calls_by_prefix = {}

    def _fail(self, part: str, err: BaseException) -> None:
        """Turn ``part`` off for good (logged once through the sink). An
        error of MindSpore's runtime (``detection.framework_error``: often
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
    def _make_pre_hook(self, target: _Target):
        sink = self.sink
        local = self._local
        prefix = target.prefix

        def pre_hook(cell: Any, args: tuple) -> Any:
            if not sink.live or "forward" in self.broken:
                return None
            try:
                stack = local.stack
                parent = stack[-1] if stack else None
                call = CellCall(prefix, sink.next_index(prefix), parent, args, {}, capture_frames(sys._getframe(1)),
                                target.params)
                probes = self._probes.get(prefix) or self._probe_again(target)
                if probes is not None:
                    call.param_probe, call.params_at_start = probes
                call.top = local.top
                self._seq += 1
                call.seq = self._seq
                stack.append(call)
                self._calls_by_prefix.setdefault(prefix, []).append(call)
                if "backward" not in self.broken and self._executor.grad_flag():
                    call.grad_mode = True
                    if self._fed_by_previous(target, call, args):
                        return None
                    return self._hook_inputs(call, args)
            except Exception as err:
                self._fail("forward", err)
            return None

        return pre_hook

    def _make_forward_hook(self, target: _Target):
        sink = self.sink
        local = self._local
        prefix = target.prefix

        def forward_hook(cell: Any, args: tuple, output: Any) -> Any:
            if "forward" in self.broken:
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

    def _fed_by_previous(self, target: _Target, call: CellCall, args: tuple) -> bool:
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
        if previous is None or last is None or last[0] is not previous or len(args) != 1:
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
        if len(getattr(target.cell, "_forward_pre_hook", ())) != 1 or len(getattr(previous.cell, "_forward_hook", ())) != 1:
            return False
        last[2].feeds = call
        call.expects_input_grads = True
        return True

    def _hook_inputs(self, call: CellCall, args: tuple) -> Optional[tuple]:
        positions = [i for i, a in enumerate(args) if is_tensor(a)]
        if not positions:
            return None
        sink = self.sink

        def input_hook(*grads: Any) -> None:
            try:
                if "backward" not in self.broken:
                    sink.on_grad_inputs(call, list(iter_tensors(grads)))
            except Exception as err:
                self._fail("backward", err)

        new_args = through_hook(self._hook_backward, input_hook, args, positions, self._boxes)
        call.expects_input_grads = True
        return tuple(new_args)

    def _hook_outputs(self, call: CellCall, output: Any) -> Any:
        """The output with its floating tensors (top level of a tuple) passed
        through one ``HookBackward``; None when there is nothing to hook."""
        single = not isinstance(output, tuple)
        items = (output,) if single else output
        positions = [i for i, item in enumerate(items) if is_tensor(item)]
        if not positions:
            return None
        sink = self.sink

        def output_hook(*grads: Any) -> None:
            try:
                if "backward" not in self.broken:
                    tensors = list(iter_tensors(grads))
                    if call.feeds is not None:  # the next Cell's input gradient (see _fed_by_previous)
                        sink.on_grad_inputs(call.feeds, list(tensors))
                    sink.on_grad_outputs(call, tensors)
            except Exception as err:
                self._fail("backward", err)

        new_items = through_hook(self._hook_backward, output_hook, items, positions, self._boxes)
        return new_items[0] if single else tuple(new_items)

    def _make_param_hook(self, target: _Target, param_name: str):
        sink = self.sink
        prefix = target.prefix

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
                sink.on_param_grad(entry)
            except Exception as err:
                self._fail("parameters", err)
            return None

        return param_hook


def _link_sequential(model: Any, targets: list) -> None:
    """Set ``follows`` on each target whose enclosing Cell is a plain
    ``nn.SequentialCell`` (its own ``construct``, which hands each Cell's
    output to the next one only) and whose predecessor there is a target
    too (not compiled, no custom ``bprop``)."""
    from mindspore import nn

    by_cell = {id(t.cell): t for t in targets}
    roots = [m for _, m in CellHooks._models(model)]
    seen: set[int] = set()
    for cell in roots + [t.cell for t in targets]:
        if id(cell) in seen or not isinstance(cell, nn.SequentialCell):
            continue
        seen.add(id(cell))
        if type(cell).construct is not nn.SequentialCell.construct or is_jit_compiled(cell):
            continue
        members = list(getattr(cell, "cell_list", ()))
        for before, after in zip(members, members[1:]):
            first, second = by_cell.get(id(before)), by_cell.get(id(after))
            if first is None or second is None or first.bprop or second.bprop or is_jit_compiled(before) \
                    or is_jit_compiled(after) or before is after:
                continue
            second.follows, second.sequence = first, id(cell)


def _force_forward_hook(cell: Any, hook: Any) -> Any:
    """Put ``hook`` in the forward-hook table of a Cell with a custom
    ``bprop`` (``register_forward_hook`` refuses those and returns a dead
    handle); returns a handle whose ``remove()`` takes it out again."""
    from mindspore.common.hook_handle import HookHandle

    table = cell._forward_hook
    handle = HookHandle(table)
    table[handle.handle_id] = hook
    return handle
