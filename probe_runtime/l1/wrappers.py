"""The L1 wrappers, and what runs inside them for the outermost call.

Each ``wrap_*`` method of :class:`Wrappers` returns the wrapper of one
original (a function, a Tensor method, a Primitive's ``__call__``, a
generated ``pyboost_<op>`` function, ``_run_op``). A wrapper passes the
call straight through unless it is the outermost intercepted call on this
thread (:data:`~probe_runtime.hooks.guard.GUARD`) while ``sink.live``; then
:meth:`Wrappers._handle` runs it under the guard and hands an
:class:`~.calls.ApiCall` to the sink: before the call, in-place targets are
announced (``sink.before_mutation``) and copied, Parameters are probed and,
under grad, the tensor inputs pass through one ``HookBackward``; after it,
the tensor outputs through another, then ``sink.on_forward``. The calls
made inside the outermost one append themselves to ``GUARD.nested`` (no
hook, no read); those whose result is not the outer call's own result go
with its entry (``ApiCall.nested``), judged when its inputs and result are
finite. A fault in a wrapper is logged through the sink and never reaches
the caller.

Example::

    wrappers = Wrappers(checker)
    wrappers.bind()                      # imports MindSpore's HookBackward, deepcopy ...
    exp = wrappers.wrap_function("Functional.exp", ops.exp, inplace=False)
    exp(x)                               # the result of ops.exp(x); checker.on_forward(ApiCall)
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Iterable, Optional

from ..check.by_design import KEEP_VALUES, api_word
from ..check.names import layer_parameter_type
from ..check.probes import launch_sum, probe_now
from ..check.verdict import framework_error, is_floating, is_parameter, is_tensor, iter_tensors, surfaced
from ..hooks.backward import HookMaker, data_positions, hook_gradients, release
from ..hooks.collectives import REDUCER_FORM, Form, collective_form, describe
from ..hooks.frames import capture_frames
from ..hooks.guard import GUARD, jit_tracing, mutation_wrapper
from .calls import ApiCall, Sink
from .namespaces import WRITES_FIRST_ONLY
from .primitives import call_arity, primitive_api, side_effect

#: what a nested call's wrapper appends to ``GUARD.nested``: ``(kind, api or
#: primitive, args, kwargs, result)``; a ``PYBOOST`` entry's args still hold
#: the primitive's attributes after its arguments (cut by ``call_arity``)
FUNCTION, PRIMITIVE, PYBOOST = 0, 1, 2

#: where MindSpore runs a recomputed Cell's forward pass again, in the backward pass
#: (``mindspore/common/recompute.py``): ``_RecomputeCell.bprop`` (``Cell.recompute()``, and
#: ``mindspore.recompute`` with ``use_reentrant=True``, 2.7 and 2.10) and ``_RecomputeHandle.recompute``
#: (``use_reentrant=False``, 2.10)
RECOMPUTE_METHODS = (("_RecomputeCell", "bprop"), ("_RecomputeHandle", "recompute"))


def recompute_methods() -> list[tuple[type, str]]:
    """``(class, method name)`` of :data:`RECOMPUTE_METHODS` that this
    MindSpore has (none when ``mindspore.common.recompute`` was never
    imported: nothing can recompute then)."""
    module = sys.modules.get("mindspore.common.recompute")
    found = []
    for klass_name, attr in RECOMPUTE_METHODS:
        klass = getattr(module, klass_name, None)
        if isinstance(klass, type) and callable(vars(klass).get(attr)):
            found.append((klass, attr))
    return found


class Wrappers:
    """Builds the L1 wrappers of one interceptor and handles their calls.

    Args:
        sink: receives every outermost call while ``sink.live`` is true.

    Attributes:
        synchronous: the window runs synchronously: Parameters are checked
            on the host at first use (else a float32 sum is launched).
        params_changed: something may have changed Parameters since
            ``start()`` (a backward pass, an update, an in-place write).
        broken: APIs whose wrapper failed: called straight through from then on.
        enclosing: at L0, returns the hooked Cell's call running now (the
            ``parent`` of each call), else None.
        nested_gradient: returns True while a gradient computation runs
            inside another's forward pass (grad of grad): the backward
            hooks are left out there (the forward checks stay), because
            MindSpore 2.7.0 cannot differentiate through ``HookBackward``
            twice ("Bprop cut run must in the following format: dout").
    """

    def __init__(self, sink: Sink, *, enclosing: Optional[Callable[[], Any]] = None,
                 nested_gradient: Optional[Callable[[], bool]] = None) -> None:
        self.sink = sink
        self._hook_backward: Any = None
        self._deepcopy: Any = None
        self._executor: Any = None
        self._parameter_type: Any = None
        #: id(Parameter) -> (Parameter, float32 sum launched at its first use since the last change)
        self._probes: dict = {}
        #: id -> tensor: outputs of this window's calls made from data alone (no Parameter among their
        #: inputs' sources): set apart from weights in a call's input hook (``hooks.backward.data_positions``)
        self._data: dict = {}
        self.synchronous = False
        self.params_changed = False
        #: > 0 while MindSpore recomputes a Cell's forward pass in the backward pass (:meth:`wrap_recompute`)
        self.recomputing = 0
        self._boxes: list = []  # what this window's HookBackward hooks refer to (see through_hook)
        self.broken: set[str] = set()
        self._fault_causes: set[str] = set()
        self.enclosing = enclosing
        self.nested_gradient: Callable[[], bool] = nested_gradient or (lambda: False)

    def bind(self) -> None:
        """Look up what the wrappers call in MindSpore (``HookBackward``,
        ``deepcopy``, ``Parameter``, the PyNative executor); once, before
        the first wrapper runs."""
        import mindspore
        from mindspore import ops

        self._hook_backward = HookMaker(ops.HookBackward, mindspore.__version__)
        self._deepcopy = ops.deepcopy
        layer = layer_parameter_type()  # MSAdapter: mindtorch's Parameter is no mindspore.Parameter
        self._parameter_type = mindspore.Parameter if layer is None else (mindspore.Parameter, layer)
        try:
            from mindspore.graph.api import _pynative_executor  # MindSpore >= 2.9
        except Exception:
            try:
                from mindspore.common.api import _pynative_executor
            except Exception:  # pragma: no cover
                _pynative_executor = None
        self._executor = _pynative_executor

    def open_window(self) -> None:
        """A ``start()`` window opens: no Parameter probed, none changed yet."""
        self._probes = {}
        self._data = {}
        self.params_changed = False
        self.recomputing = 0

    def close_window(self) -> None:
        """The window closed: this window's backward hooks do nothing any more."""
        release(self._boxes)
        self._data = {}

    def wrap_function(self, api: str, original: Callable, inplace: bool,
                      writes: Optional[tuple] = None) -> Callable:
        """Wrapper of a function or Tensor method, handed on as ``api``
        (``Functional.exp``, ``Tensor.__mul__``); ``inplace``: it changes
        its inputs; ``writes``: it writes some of them besides returning a
        result of its own (``namespaces.TORCH_WRITES``)."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if GUARD.depth:
                nested = GUARD.nested
                if nested is None:
                    return original(*args, **kwargs)
                output = original(*args, **kwargs)
                nested.append((FUNCTION, api, args, kwargs, output))
                return output
            if not sink.live:
                return original(*args, **kwargs)
            return handle(api, original, inplace, args, kwargs, sys._getframe(1), writes=writes)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_primitive(self, original: Callable) -> Callable:
        """Wrapper of a Primitive class's own ``__call__``: named after the
        instance (:func:`~.primitives.primitive_api`)."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, *args: Any, **kwargs: Any) -> Any:
            if GUARD.depth:
                nested = GUARD.nested
                if nested is None:
                    return original(prim, *args, **kwargs)
                output = original(prim, *args, **kwargs)
                nested.append((PRIMITIVE, prim, args, kwargs, output))
                return output
            if not sink.live:
                return original(prim, *args, **kwargs)
            api = primitive_api(prim)
            if api is None:
                return original(prim, *args, **kwargs)
            return handle(api, functools.partial(original, prim), side_effect(prim), args, kwargs,
                          sys._getframe(1), collective_form(prim), prim)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_pyboost(self, original: Callable) -> Callable:
        """Wrapper of a generated ``pyboost_<op>(prim, args)`` function: the
        call is named after ``prim``'s class. ``args`` holds the arguments
        of the class's ``__call__`` followed by the primitive's attributes
        (``MatMul``: input, mat2, transpose_a, transpose_b); the entry
        records the arguments only, as msprobe does (:func:`call_arity`),
        and the attributes are passed on untouched."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, args: Any, *rest: Any) -> Any:
            if GUARD.depth:
                nested = GUARD.nested
                if nested is None or rest:
                    return original(prim, args, *rest)
                output = original(prim, args)
                nested.append((PYBOOST, prim, args, None, output))
                return output
            if not sink.live or rest or not isinstance(args, (list, tuple)):
                return original(prim, args, *rest)
            api = primitive_api(prim)
            if api is None:
                return original(prim, args)
            count = call_arity(type(prim))
            given, extra = tuple(args[:count]), list(args[count:])
            return handle(api, lambda *items: original(prim, list(items) + extra),
                          side_effect(prim), given, {}, sys._getframe(1), collective_form(prim), prim)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_run_op(self, original: Callable) -> Callable:
        """Wrapper of ``mindspore.ops.primitive._run_op(prim, name, args)``,
        what ``Primitive.__call__`` runs: named after ``prim``'s class."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, op_name: Any, args: Any) -> Any:
            if GUARD.depth:
                nested = GUARD.nested
                if nested is None:
                    return original(prim, op_name, args)
                output = original(prim, op_name, args)
                nested.append((PRIMITIVE, prim, args, None, output))
                return output
            if not sink.live or not isinstance(args, (list, tuple)):
                return original(prim, op_name, args)
            api = primitive_api(prim)
            if api is None:
                return original(prim, op_name, args)
            return handle(api, lambda *items: original(prim, op_name, items), side_effect(prim),
                          tuple(args), {}, sys._getframe(1), collective_form(prim), prim)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_recompute(self, original: Callable) -> Callable:
        """Wrapper of the method MindSpore runs a recomputed Cell's
        forward pass again with, in the backward pass (``Cell.recompute()``,
        ``mindspore.recompute``: :data:`RECOMPUTE_METHODS`): the calls made
        while it runs are marked ``recomputed`` (a repeat of forward calls
        already judged, never an origin: ``check.queue``)."""
        wrappers = self

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            wrappers.recomputing += 1
            try:
                return original(*args, **kwargs)
            finally:
                wrappers.recomputing -= 1

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_reducer(self, original: Callable) -> Callable:
        """Wrapper of the ``__call__`` of a gradient reducer Cell
        (``nn.DistributedGradReducer``: ``hooks.collectives.REDUCER_CELLS``),
        whose AllReduces run inside compiled code: its whole call is one
        collective call, named ``<Class>.AllReduce``."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(cell: Any, *args: Any, **kwargs: Any) -> Any:
            if GUARD.depth or not sink.live:
                return original(cell, *args, **kwargs)
            return handle(f"{type(cell).__name__}.AllReduce", functools.partial(original, cell), False, args,
                          kwargs, sys._getframe(1), REDUCER_FORM, cell)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def wrap_mutator(self, original: Callable, read: bool = False) -> Callable:
        """Wrapper of a Tensor method that changes the tensor in place
        without computing (``set_data``), or hands out memory it can be
        changed through (``asnumpy``): the sink resolves what may see that
        memory first (:func:`~probe_runtime.hooks.guard.mutation_wrapper`;
        ``read``: it hands the values to the host); no entry is made."""
        return mutation_wrapper(self.sink, original, read)

    def _handle(self, api: str, original: Callable, inplace: bool, args: tuple, kwargs: dict, frame: Any,
                form: Optional[Form] = None, prim: Any = None, writes: Optional[tuple] = None) -> Any:
        """The outermost call: hand it on, run it under the guard. ``form``:
        the call is a collective (``prim`` its primitive or reducer Cell):
        it is counted in its group even when its API is turned off, and
        only what it writes into is treated as changed in place.
        ``writes``: the call may write some of its arguments
        (:func:`written_arguments`); those it writes this time are copied
        and judged after it as :meth:`_copy_inputs` does."""
        sink = self.sink
        GUARD.depth += 1
        try:
            collective = None if form is None else self._collective(form, prim, args)
            if api in self.broken:
                return original(*args, **kwargs)
            call = None
            call_args = args
            backward = False
            try:
                if jit_tracing():
                    return original(*args, **kwargs)
                call = ApiCall(api, sink.next_index(api), args, kwargs, capture_frames(frame), inplace)
                if self.recomputing:
                    call.recomputed = True
                if self.enclosing is not None:
                    call.parent, call.cells = self.enclosing(), True
                if collective is not None:
                    call.collective = collective
                    inplace = call.inplace = inplace or bool(collective.form.written)
                if inplace and collective is not None:  # only its buffers change; only its own inputs are copied
                    self.forget_probes()
                    targets = [args[i] for i in collective.form.written if i < len(args)]
                    sink.before_mutation([t for t in iter_tensors(targets)])
                    copied = collective.form.copied
                    call.args = tuple(self._deepcopy(a) if i in copied and is_floating(a) else a
                                      for i, a in enumerate(args))
                elif writes is not None and (targets := written_arguments(writes, args, kwargs)):
                    self._copy_written(call, args, kwargs, targets)
                    if self._grad_flag() and not self.nested_gradient():  # never a written argument
                        backward = True
                        keys = {key for key, _, _ in targets}
                        call_args = self._hook_inputs(call, args, hooked=[i for i in range(len(args))
                                                                          if i not in keys])
                elif inplace:
                    self._copy_inputs(call, args, kwargs)
                    if api.rpartition(".")[2] in WRITES_FIRST_ONLY and self._grad_flag() \
                            and not self.nested_gradient():  # index_add: differentiable, a result of its own
                        backward = True
                        call_args = self._hook_inputs(call, args, hooked=range(1, len(args)))
                else:
                    self._probe_parameters(call, args)
                    if self._grad_flag() and not self.nested_gradient():
                        backward = True
                        call_args = self._hook_inputs(call, args)
            except Exception as err:
                if surfaced(err):
                    raise  # the user's own error surfacing here (asynchronous execution): theirs to see
                self._fault(api, "before the call", err)
                call = None
                call_args = args
            if call is None:
                return original(*call_args, **kwargs)
            nested: list = []
            GUARD.nested = nested  # the calls made inside this one append themselves (see the wrappers)
            try:
                output = original(*call_args, **kwargs)
            finally:
                GUARD.nested = None
            try:
                call.output = output
                if nested:
                    call.nested = self._nested_calls(call, nested, output, writes is not None)
                if collective is not None and collective.form.written:
                    collective.written = [args[i] for i in collective.form.written if i < len(args)]
                if backward:
                    hooked = self._hook_outputs(call, output)
                    if hooked is not None:  # what the caller gets; one host copy serves both
                        output = call.output = hooked
                    if call.from_data and not kwargs:  # computed from data alone: its outputs are data too
                        for tensor in iter_tensors(output):
                            self._data[id(tensor)] = tensor
                sink.on_forward(call)
            except Exception as err:
                self._fault(api, "after the call", err)
            return output
        finally:
            GUARD.depth -= 1

    def _copy_inputs(self, call: ApiCall, args: tuple, kwargs: dict) -> None:
        """Before an in-place call: resolve what may see the memory it
        writes (``sink.before_mutation``), then keep device copies of its
        floating positional inputs as the entry's inputs (the values before
        the call). Each Parameter among them is also kept in
        ``call.written``, judged after the call with the outputs: a call
        that writes inf/nan into a Parameter in place (a training
        ``BatchNorm``'s moving statistics, ``Assign``) is the origin even
        when its own result is finite."""
        at_start = not self.params_changed
        self.forget_probes()
        self.sink.before_mutation([a for a in args if is_tensor(a)] + [v for v in kwargs.values() if is_tensor(v)])
        copies = []
        written = []
        originals = {}
        for position, item in enumerate(args):
            if is_floating(item):
                copy = self._deepcopy(item)
                if is_parameter(item):  # named when a record needs it (check.provenance.written_name)
                    written.append((f"input_args[{position}]", copy, item, item))
                originals[id(copy)] = item
                item = copy
            copies.append(item)
        call.args = tuple(copies)
        call.originals = originals or None
        if written:
            call.written = written
            call.params_at_start = at_start

    def _copy_written(self, call: ApiCall, args: tuple, kwargs: dict, targets: list) -> None:
        """:meth:`_copy_inputs` for a call that writes the arguments
        ``targets`` (``(position or keyword, label, tensor)``) only: those
        are announced and copied (the entry's inputs are their values
        before the call) and kept in ``call.written``, Parameters or not (a
        ``BatchNorm``'s running statistics are buffers), judged after it."""
        at_start = not self.params_changed
        self.forget_probes()
        self.sink.before_mutation([tensor for _, _, tensor in targets])
        copies: dict = {}
        written = []
        for key, label, tensor in targets:
            if is_floating(tensor):
                copy = copies[key] = self._deepcopy(tensor)
                written.append((label, copy, tensor, tensor))
        call.args = tuple(copies.get(i, a) for i, a in enumerate(args))
        call.kwargs = {k: copies.get(k, v) for k, v in kwargs.items()}
        if written:
            call.written = written
            call.params_at_start = at_start

    def _nested_calls(self, outer: ApiCall, nested: list, output: Any, writes: bool = False) -> Optional[list]:
        """The calls made inside ``outer`` (``nested``: what the wrappers
        appended, in the order the calls finished) whose result is not
        ``outer``'s own result, as ``ApiCall`` entries with ``inside`` set
        to ``outer``'s name (a string: no reference cycle keeps the tensors
        alive) and no index yet; None when there is none. Most intercepted
        calls run one primitive that makes their result (``Tensor.__mul__``
        runs ``Mul``): that result is judged with ``outer`` and not kept twice.
        A function and the primitive inside it that made the same result
        keep the primitive (it finished first). ``writes``: ``outer`` writes
        some of its arguments (``namespaces.TORCH_WRITES``): a result made
        inside it and handed to a later call inside it is left out, as that
        kernel may write it (mindtorch's ``F.batch_norm`` makes a zeros
        ``bias`` for ``bias=None``, and on CPU the kernel writes nan there
        for a batch of one): judged after ``outer``, it would show what the
        kernel wrote, not what its maker made (a fresh review got
        ``Primitive.Zeros.0.forward`` as the origin). What the kernel leaves
        in such a temporary nobody reads; what reaches ``outer``'s result is
        judged with ``outer``. An ``outer`` that only moves, keeps or writes
        values (``by_design.KEEP_VALUES``: ``masked_fill``, ``__setitem__``,
        casts) keeps none: what it makes inside is the value it writes
        (``masked_fill(mask, -1e9)`` in float16 casts -1e9 to -inf first),
        which matters only where it reaches ``outer``'s result, judged with
        ``outer``; with an all-False mask nothing is written, and a hunt
        found such a cast recorded as an overflow in every step."""
        if len(nested) == 1 and nested[0][4] is output:
            return None
        if api_word(outer.api) in KEEP_VALUES:
            return None
        own = {id(t) for t in iter_tensors(output)}
        handed: set = set()
        if writes:  # the results a later call inside outer got as arguments
            for position, entry in enumerate(nested):
                later = {id(t) for item in nested[position + 1:] for t in iter_tensors((item[2], item[3]))}
                if any(id(t) in later for t in iter_tensors(entry[4])):
                    handed.add(position)
        kept = []
        last = None
        for position, (kind, target, args, kwargs, result) in enumerate(nested):
            if result is last or position in handed:
                continue
            last = result
            tensors = list(iter_tensors(result))
            if not tensors or all(id(t) in own for t in tensors):
                continue
            if kind == FUNCTION:
                api = target
            else:
                api = primitive_api(target)
                if api is None:
                    continue
                if kind == PYBOOST:
                    args, kwargs = tuple(args[:call_arity(type(target))]), {}
            kept.append(ApiCall(api, -1, tuple(args), dict(kwargs or {}), outer.frames, output=result,
                                inside=outer.name, parent=outer.parent, cells=outer.cells))
        return kept or None

    def _collective(self, form: Form, prim: Any, args: tuple) -> Any:
        """What a collective call says (``hooks.collectives.describe``), with
        its index in its group counted by the sink; None under jit tracing
        (the call is traced, not run) or when it cannot be read (logged)."""
        try:
            if jit_tracing():
                return None
            collective = describe(form, prim, args)
            collective.index = self.sink.collective_index(collective)
            return collective
        except Exception as err:
            self.sink.on_error("while reading a collective call", err)
            return None

    def _fault(self, api: str, where: str, err: BaseException) -> None:
        """An exception inside the wrapper of ``api``: that API is called
        straight through from now on (turned off); each cause is logged
        once, naming the first API it hit. An error of MindSpore's runtime
        (:func:`~probe_runtime.check.verdict.framework_error`: with asynchronous execution
        often an earlier operator's failure surfacing in the tool's code)
        leaves only that call unchecked: turning the API off for good would
        blind the detector for the rest of the run over the user's error."""
        if framework_error(err):
            self.sink.on_error(f"in the L1 wrapper of {api} {where} (that call is not checked)", err)
            return
        self.broken.add(api)
        cause = f"{type(err).__name__}: {err}"
        if cause not in self._fault_causes:
            self._fault_causes.add(cause)
            self.sink.on_error(f"in the L1 wrapper of {api} {where} (that API is no longer checked; "
                               f"others that fail so are turned off too)", err)

    def _probe_parameters(self, call: ApiCall, args: tuple) -> None:
        """Parameters among ``args``: launch (no wait) a float32 sum of each
        at its first use in the window, so the entry is judged on the
        weights it saw even when they change before it is resolved through
        something the tool cannot see (an optimizer whose ``construct`` is
        compiled with ``mindspore.jit``, as ``nn.SGD``'s is). One reduction
        per Parameter and window, launched again after an in-place call or
        a backward pass (what comes before an optimizer step); the entry
        holds the one-element result (``call.param_sums``). In a
        synchronous window (``synchronous``) the values are checked on the
        host at once instead (:func:`~probe_runtime.check.probes.probe_now`)."""
        kind = self._parameter_type
        sums = None
        for a in args:
            if isinstance(a, kind):
                probe = self._probes.get(id(a))
                if probe is None or probe[0] is not a:
                    probe = (a, probe_now(a) if self.synchronous else launch_sum(a))
                    self._probes[id(a)] = probe
                if sums is None:
                    sums = {}
                sums[id(a)] = probe[1]
        if sums is not None:
            call.param_sums = sums
            call.params_at_start = not self.params_changed

    def forget_probes(self) -> None:
        """Parameters may change from now on (a backward pass ran, an
        optimizer or an in-place call is about to run)."""
        self.params_changed = True
        if self._probes:
            self._probes = {}

    def _grad_flag(self) -> bool:
        """True while MindSpore records the forward pass for a gradient."""
        executor = self._executor
        return bool(executor is not None and executor.grad_flag())

    def _hook_inputs(self, call: ApiCall, args: tuple, hooked: Optional[Iterable[int]] = None) -> tuple:
        """The arguments with their tensors passed through ``HookBackward``:
        one hook over all of them, or two when some are data (a leaf that
        is not a Parameter, or what this window's calls made from data
        alone: :func:`data_positions`); ``call.grad_inputs`` then holds
        None for data whose gradient MindSpore never computed (written as
        null). Sets ``call.from_data`` when every tensor input is data.
        ``hooked``: the positions that may be hooked (default all): not
        those of arguments the call writes in place (``index_add``'s first,
        ``batch_norm``'s statistics and weights), as a hooked copy would
        take the write; the gradients are those of the other tensor inputs."""
        # chosen by type, not dtype: the first dtype read of a fresh output
        # waits for the device (integer tensors pass through harmlessly)
        allowed = None if hooked is None else set(hooked)
        positions = [i for i, a in enumerate(args) if is_tensor(a) and (allowed is None or i in allowed)]
        if not positions:
            call.from_data = True  # ones, zeros, arange: made from no tensor
            return args
        sink = self.sink

        def on_fault(err: BaseException) -> None:
            self._fault(call.api, "in the backward input hook", err)

        data = data_positions(args, positions, self._data)
        call.from_data = len(data) == len(positions)
        apart = data if len(data) < len(positions) else []
        if not apart:
            def deliver(grads: tuple) -> None:
                self.forget_probes()
                sink.on_grad_inputs(call, list(iter_tensors(grads)))

            new_args = hook_gradients(self._hook_backward, args, positions, self._boxes, deliver, on_fault)
            call.expects_input_grads = True
            return tuple(new_args)
        main = [k for k, i in enumerate(positions) if i not in apart]
        aside = [k for k, i in enumerate(positions) if i in apart]
        slots: list = [None] * len(positions)  # the gradients w.r.t. the tensor inputs, in order
        delivered: list = []

        def deliver_part(part: list[int], grads: tuple) -> None:
            """The first part to come hands the slots on; the second fills
            them in (both come in one backward pass, before any check)."""
            got = list(iter_tensors(grads))
            if len(got) != len(part):
                return
            for k, grad in zip(part, got):
                slots[k] = grad
            if not delivered:
                delivered.append(True)
                self.forget_probes()
                sink.on_grad_inputs(call, slots)
            elif len(call.grad_inputs) == len(slots):
                for k, grad in zip(part, got):
                    call.grad_inputs[k] = grad

        new_args = hook_gradients(self._hook_backward, args, [positions[k] for k in main], self._boxes,
                                  lambda grads: deliver_part(main, grads), on_fault)
        new_args = hook_gradients(self._hook_backward, new_args, apart, self._boxes,
                                  lambda grads: deliver_part(aside, grads), on_fault)
        call.expects_input_grads = True
        return tuple(new_args)

    def _hook_outputs(self, call: ApiCall, output: Any) -> Any:
        """The output with its tensors (a tensor, or the top level of a plain
        tuple/list) passed through one ``HookBackward`` whose hook gets the
        gradients w.r.t. them; None when there is nothing to hook.

        Not ``Tensor.register_hook``: on a fresh output it waits for the
        device as well, and then once per tensor instead of once per call.
        Tensors are chosen by type, not dtype: the first dtype read of a
        fresh output waits too. Other containers (named tuples ...) keep
        ``register_hook`` on their floating items.
        """
        sink = self.sink

        def deliver(grads: tuple) -> None:
            sink.on_grad_outputs(call, list(iter_tensors(grads)))

        def on_fault(err: BaseException) -> None:
            self._fault(call.api, "in the backward output hook", err)

        def output_hook(*grads: Any) -> None:  # for register_hook on other containers' items
            try:
                deliver(grads)
            except Exception as err:
                on_fault(err)

        kind = type(output)
        if kind is tuple or kind is list:
            items = output
        elif is_tensor(output):
            items = (output,)
        else:
            if isinstance(output, (tuple, list)):
                for item in output:
                    if is_floating(item):
                        item.register_hook(lambda grad: output_hook(grad))
            return None
        positions = [i for i, item in enumerate(items) if is_tensor(item)]
        if not positions:
            return None
        new_items = hook_gradients(self._hook_backward, items, positions, self._boxes, deliver, on_fault)
        if kind is not tuple and kind is not list:
            return new_items[0]
        return kind(new_items)


def written_arguments(writes: tuple, args: tuple, kwargs: dict) -> list:
    """The tensor arguments a call of a function that writes some of them
    (``writes``: an entry of ``namespaces.TORCH_WRITES``) writes this time,
    as ``(position or keyword, dump.json label, tensor)``; [] when its flag
    (``training``) is off or absent. A flag that is not a plain bool or int
    counts as on."""
    names, written, flag = writes

    def argument(name: str) -> tuple[Any, str, Any]:
        position = names.index(name)
        if position < len(args):
            return position, f"input_args[{position}]", args[position]
        if name in kwargs:
            return name, f"input_kwargs.{name}", kwargs[name]
        return None, "", None

    on = argument(flag)[2]
    if on is None or (isinstance(on, (bool, int)) and not on):
        return []
    found = []
    for name in names:
        if name in written:
            key, label, tensor = argument(name)
            if key is not None and is_tensor(tensor):
                found.append((key, label, tensor))
    return found
