"""L1 (API level) interception for MindSpore PyNative.

What is patched while installed (everything is put back by
:meth:`ApiInterceptor.uninstall`):

* the public functions of ``mindspore.ops`` (``Functional.<name>``),
  ``mindspore.mint`` (``Mint.<name>``) and ``mindspore.mint.nn.functional``
  (``MintFunctional.<name>``). One function object can sit in several
  namespaces (``ops.exp is mint.exp``); each namespace gets its own wrapper,
  so the name says which one the user called;
* the public methods and the arithmetic/indexing operators of
  ``mindspore.Tensor`` (``Tensor.<name>``), set on the Python class, so
  ``a * b`` is seen as ``Tensor.__mul__``;
* every Primitive call (``Primitive.<Class>``), caught where it runs: the
  generated ``pyboost_<op>`` functions and ``_run_op`` in the module globals
  that call them, plus ``__call__`` of the few classes that run neither
  (see :meth:`ApiInterceptor._patch_primitives`): this is what sees the
  primitives inside ``nn.Dense``, ``nn.ReLU``, ``nn.Softmax``,
  ``nn.LayerNorm`` and calls made through names imported before
  ``install()``.

A re-entrancy guard (per thread) lets only the outermost intercepted call
be handed on: ``ops.exp`` calling the ``Exp`` primitive, ``__rmul__``
calling ``mul`` and the tool's own operations are not seen. Code compiled
by ``mindspore.jit`` runs as a graph and is not seen; while a jit function
is being traced the wrappers pass straight through.

Backward: when MindSpore is recording for a gradient
(``_pynative_executor.grad_flag()``), the positional tensor inputs of a
call (not of in-place calls) are passed through one ``ops.HookBackward``,
whose hook receives the gradients with respect to those inputs (this API's
own contribution), and the tensor outputs through a second one, for the
gradients with respect to the outputs (the caller gets the second one's
outputs). Both hooks return None, so gradients are unchanged; they only
keep references (see ``monitor.py`` for when those are checked).

Not ``Tensor.register_hook`` (about 10 us against 80-170 us a hook, even on
a zero-copy view of each input for the call's own contribution): tried and
dropped, because a tensor carrying a Python hook breaks ``mindspore.jit``
functions it flows into, hooks on tensors that need no gradient raise,
views of inputs lose in-place updates made through them and change the
order gradients are summed in (last-bit differences), and second-order
gradients came out zero. ``HookBackward`` keeps the hook in the autograd
graph, not on the tensor the user gets.

Cost: each ``HookBackward`` makes MindSpore drain its asynchronous
PyNative pipeline in the forward pass (measured 1.6-1.8 ms per hook on the
2 benchmark cores), which is why checked windows run synchronously on CPU
(``execution.py``); synchronously it costs 80-170 us, forward and backward.
With the host checks (``monitor.py``) the hooks are most of what L1 costs
(``benchmarks/README.md``). Patching itself is cheap: two module class
swaps, about 400 attributes of ``Tensor``, ~600 module globals and 90
Primitive classes (about 1.2 ms per ``start()``/``stop()`` pair).
Parameters among a call's inputs are judged on their values at first use in
a window: a float32 sum launched (no wait), or in a synchronous window a
host check at once, held by the call (``ApiCall.param_sums``).

This module only catches calls and hands tensors on to a sink (see
:class:`Sink`); it decides nothing about overflow and reads no values
(except that host check of Parameters).
"""
from __future__ import annotations

import functools
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Sequence

from .detection import framework_error, is_floating, is_tensor, iter_tensors, probe_now, surfaced

#: Tensor operators intercepted besides the public methods.
TENSOR_OPERATORS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
    "__rmatmul__", "__neg__", "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__",
    "__xor__", "__rxor__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__getitem__", "__setitem__", "__lt__", "__le__", "__gt__", "__ge__",
)
#: Tensor attributes that are not computations (or that the tool uses).
TENSOR_SKIP = frozenset({
    "asnumpy", "numpy", "tolist", "item", "itemset", "init_data", "set_data", "assign_value",
    "register_hook", "data_sync", "asnumpy_of_slice_persistent_data", "slice_num_of_persistent_data",
    "slice_shape_of_persistent_data", "is_persistent_data", "has_init", "is_init", "init_flag",
    "dim", "ndimension", "numel", "nelement", "size", "is_floating_point", "is_complex", "is_signed",
    "is_contiguous", "stride", "storage_offset", "data_ptr", "untyped_storage", "storage",
    "flush_from_cache", "offload", "offload_file_path", "move_to", "set_const_arg", "from_numpy",
    "set_dtype", "param_info", "index_of_parent_", "parent_tensor_", "requires_grad_", "delete_",
    "set_", "to_", "is_neg", "device", "virtual_flag", "adapter_flag", "get_bytes", "retain_grad",
    "register_forward_hook", "set_init_flag", "contiguous", "_offload", "_load", "assign_value_cpp",
    "hooks",  # the tensor's hook list; MindSpore 2.7's mindspore.jit reads it on every argument
})
#: Tensor methods that change the tensor in place without being computations
#: (``assign_value_cpp`` is what ``set_data``/``assign_value`` run).
TENSOR_MUTATORS = ("set_data", "assign_value", "assign_value_cpp")
#: functions that run user callbacks or build functions (not computations).
FUNCTION_SKIP = frozenset({
    "grad", "value_and_grad", "vmap", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "derivative",
    "constexpr", "primitive", "prim_attr_register", "custom_info_register", "kernel", "ms_kernel",
    "while_loop", "scan", "fori_loop", "cond", "switch_case", "stop_gradient", "depend", "print_",
    "typeof", "isinstance_", "is_tensor", "shard", "recompute", "get_vm_impl_fn", "clear_auto_generate",
    "deprecated", "custom_vmap", "hyper_map", "vm_impl_registry", "shape", "rank", "dtype", "size",
    "is_floating_point", "is_complex", "numel", "tensor_dot", "dyn_shape",
})
#: Primitive classes not intercepted (the tool's own hooks, graph plumbing).
PRIMITIVE_SKIP = frozenset({
    "HookBackward", "CellBackwardHook", "Depend", "Print", "Load", "UpdateState", "MakeTuple",
    "TupleGetItem", "Shape", "DType", "Rank", "Size", "StopGradient", "Partial", "Switch",
})
#: classes of primitives made by name (``Primitive("typeof")``): such an
#: entry is named by the operator (``prim.name``), not by the class.
GENERIC_PRIMITIVES = frozenset({"Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck"})
#: functional names that change their first arguments in place.
FUNCTION_INPLACE = frozenset({"assign", "assign_add", "assign_sub"})

_MS_ROOT = None
_MISSING = object()  # the attribute was inherited, not the owner's own
_TOOL_ROOT = os.path.dirname(os.path.abspath(__file__))


def mindspore_root() -> str:
    """Folder of the installed mindspore package (frames from it are not
    the user's code)."""
    global _MS_ROOT
    if _MS_ROOT is None:
        import mindspore

        _MS_ROOT = os.path.dirname(os.path.abspath(mindspore.__file__))
    return _MS_ROOT


@dataclass(eq=False)
class ApiCall:
    """One intercepted call, as handed to the sink.

    Attributes:
        api: ``"Functional.exp"``, ``"Tensor.__mul__"``, ``"Primitive.MatMul"``...
        index: call index of ``api`` in the current step.
        args, kwargs: the inputs as they were before the call (for in-place
            calls, device-side copies of the floating tensors made before it).
        output: the result (set after the call).
        frames: ``(file, line, function)`` of the Python frames that made the
            call, innermost first (at most 32).
        inplace: the call changes its inputs.
        grad_outputs: gradients w.r.t. the outputs (backward), in arrival order.
        grad_inputs: gradients w.r.t. the floating inputs (backward).
        expects_input_grads: an input hook was attached.
        step: the step the call was made in (set by the sink).
        param_sums: ``id(Parameter)`` -> its float32 sum launched when the
            call was made (the inputs' finiteness is judged on those).
        params_at_start: those Parameters were probed before anything in
            the window could have changed them (no backward pass, optimizer
            or in-place write yet): their values are those of ``start()``.
    """

    api: str
    index: int
    args: tuple
    kwargs: dict
    frames: tuple
    inplace: bool = False
    output: Any = None
    grad_outputs: list = field(default_factory=list)
    grad_inputs: list = field(default_factory=list)
    expects_input_grads: bool = False
    step: int = 0
    backward_queued: bool = False
    param_sums: Optional[dict] = None
    params_at_start: bool = False

    @property
    def name(self) -> str:
        """The forward entry name, e.g. ``Functional.exp.0.forward``."""
        return f"{self.api}.{self.index}.forward"

    @property
    def backward_name(self) -> str:
        """The backward entry name, e.g. ``Functional.exp.0.backward``."""
        return f"{self.api}.{self.index}.backward"


class Sink(Protocol):
    """What the interception hands calls to (``monitor.Monitor``)."""

    live: bool

    def next_index(self, api: str) -> int:
        """Call index of ``api`` in the current step."""

    def before_mutation(self, tensors: list) -> None:
        """``tensors`` are about to be changed in place."""

    def before_update(self) -> None:
        """An optimizer is about to update Parameters in place."""

    def on_forward(self, call: ApiCall) -> None:
        """A call finished; ``call.output`` is set."""

    def on_grad_outputs(self, call: ApiCall, grads: list) -> None:
        """Gradients w.r.t. the call's outputs (list of tensors)."""

    def on_grad_inputs(self, call: ApiCall, grads: list) -> None:
        """Gradients w.r.t. the call's floating inputs (list of tensors)."""

    def on_error(self, where: str, err: BaseException) -> None:
        """An exception inside the tool (never raised to the user)."""


class _Guard(threading.local):
    depth = 0


_guard = _Guard()


def inside_tool() -> bool:
    """True while an intercepted call (or the tool itself) is running on
    this thread: calls made now are not handed on."""
    return _guard.depth > 0


class tool_section:
    """Context manager: calls made inside are not intercepted (used by the
    tool's own device work: casts, copies, ``asnumpy``)."""

    def __enter__(self) -> None:
        _guard.depth += 1

    def __exit__(self, *exc: Any) -> None:
        _guard.depth -= 1


def through_hook(hook_backward: Any, hook: Callable[..., None], items: Sequence[Any],
                 positions: list[int], boxes: Optional[list] = None) -> list:
    """``items`` (a list copy) with the tensors at ``positions`` passed
    through one ``hook_backward(...)`` (``mindspore.ops.HookBackward``): in
    the backward pass ``hook`` receives the gradients w.r.t. them. Values
    are unchanged; the call waits once for the PyNative pipeline (see the
    module docstring). Shared by the L1 wrappers and the L0 Cell hooks.

    ``hook`` is reached through a one-item list appended to ``boxes``: the
    owner empties those lists when its window closes (:func:`release`).
    MindSpore keeps a ``HookBackward`` node alive as long as a tensor of its
    autograd graph lives when no gradient ever ran through it (the first
    Cell's input, fed with data): a loss the user keeps would otherwise keep
    the hook, its entry and every tensor the entry holds."""
    box = [hook]

    def hook_fn(*grads: Any) -> None:
        if box:
            box[0](*grads)

    if boxes is not None:
        boxes.append(box)
    hooked = hook_backward(hook_fn)(*[items[i] for i in positions])
    if not isinstance(hooked, (tuple, list)):
        hooked = (hooked,)
    out = list(items)
    for i, tensor in zip(positions, hooked):
        out[i] = tensor
    return out


def release(boxes: list) -> None:
    """Cut the hooks made through :func:`through_hook` with ``boxes`` off
    from what they refer to (they do nothing from now on)."""
    for box in boxes:
        box.clear()
    boxes.clear()


def capture_frames(frame: Any, limit: int = 32) -> tuple:
    """``(file, line, function)`` for ``frame`` and its callers, innermost
    first, skipping this package's own frames."""
    out: list[tuple] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        if not code.co_filename.startswith(_TOOL_ROOT):
            out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(out)


_SUM: Optional[tuple] = None


def launch_sum(tensor: Any) -> Any:
    """The float32 sum of ``tensor``, launched on the device without waiting
    (a one-element tensor): non-finite when ``tensor`` holds inf/nan.

    Through one ``Cast`` and one ``ReduceSum`` primitive made once: with the
    asynchronous pipeline ``Tensor.sum(dtype=...)`` kept about 2.3 KB per
    call in MindSpore 2.10 for good (measured over 1,200 steps; the
    primitives made once keep nothing). Shared by L1 and L0."""
    global _SUM
    if _SUM is None:
        import mindspore
        from mindspore import ops

        _SUM = (ops.Cast(), ops.ReduceSum(), mindspore.float32)
    cast, reduce_sum, float32 = _SUM
    return reduce_sum(cast(tensor, float32))


def _jit_tracing() -> bool:
    """True while MindSpore traces code under ``mindspore.jit`` (left alone).
    The module moved to ``mindspore.graph`` in 2.9; the old name still works
    there but warns on import, so the new one is tried first."""
    try:
        try:
            from mindspore.graph.jit_context import jit_context
        except ImportError:
            from mindspore.common.jit_context import jit_context

        return jit_context() is not None
    except Exception:  # pragma: no cover - older MindSpore
        return False


_SIDE_EFFECT: dict[type, bool] = {}


def _side_effect(prim: Any) -> bool:
    """The primitive changes its inputs in place (its ``side_effect_mem``
    attribute, e.g. ``Assign``, ``ApplyMomentum``); cached per class."""
    klass = type(prim)
    known = _SIDE_EFFECT.get(klass)
    if known is None:
        try:
            known = bool(getattr(prim, "attrs", {}).get("side_effect_mem", False))
        except Exception:
            known = False
        _SIDE_EFFECT[klass] = known
    return known


_PRIMITIVE_API: dict[type, Optional[str]] = {}


def primitive_api(prim: Any) -> Optional[str]:
    """The API name of a Primitive call, ``Primitive.<operator>``, or None
    for primitives that are not intercepted (:data:`PRIMITIVE_SKIP`).

    The operator is the class name (``MatMul``), as msprobe names them,
    except for primitives made by name from a generic class
    (:data:`GENERIC_PRIMITIVES`, e.g. ``ops.typeof`` is
    ``Primitive("typeof")``): those are named by their operator name
    (``prim.name``), never ``Primitive.Primitive``; names that are not
    computations (:data:`FUNCTION_SKIP`, e.g. ``typeof``) are not
    intercepted. Cached per class, except for the generic ones."""
    klass = type(prim)
    api = _PRIMITIVE_API.get(klass, _MISSING)
    if api is not _MISSING:
        return api  # type: ignore[return-value]
    name = klass.__name__
    if name in GENERIC_PRIMITIVES:
        op = getattr(prim, "name", None)
        if isinstance(op, str) and op:
            return None if op in PRIMITIVE_SKIP or op in FUNCTION_SKIP else f"Primitive.{op}"
    api = None if name in PRIMITIVE_SKIP else f"Primitive.{name}"
    _PRIMITIVE_API[klass] = api
    return api


_ARITY: dict[type, int] = {}


def _call_arity(klass: type) -> int:
    """How many positional arguments the ``__call__`` of a generated
    Primitive class takes (``self`` left out); cached per class. Large when
    it takes ``*args`` or cannot be read, so nothing is cut off."""
    count = _ARITY.get(klass)
    if count is None:
        call = getattr(klass, "__call__", None)
        code = getattr(call, "__code__", None)
        if code is None or code.co_flags & 0x04:  # CO_VARARGS
            count = 1 << 30
        else:
            count = max(code.co_argcount - 1, 0)
        _ARITY[klass] = count
    return count


def restore(saved: list) -> None:
    """Put back ``(owner, attr, original)`` patches in reverse order; an
    ``original`` of ``_MISSING`` (the attribute was inherited) is deleted.
    Never raises (an owner may be gone at interpreter exit)."""
    for owner, attr, original in reversed(saved):
        try:
            if original is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)
        except Exception:  # pragma: no cover - owner gone at exit
            pass


def _patched_module_class(base: type, table: dict[str, Callable]) -> type:
    """A subclass of the module type ``base`` whose attribute lookup returns
    ``table[name]`` (a wrapper) for the names in ``table``.

    A namespace such as ``mindspore.ops`` (~700 public functions) is patched
    by assigning this class to the module's ``__class__`` and put back by
    assigning ``base``: two assignments per window instead of ~1,400
    dictionary writes, which cost about 1.4 ms a step on the benchmark
    machine. Everything that reads the attribute (``ops.exp``, ``from
    mindspore.ops import exp`` made while patched, ``getattr``) gets the
    wrapper, as with a patched ``__dict__``; the module's ``__dict__`` itself
    is never changed. Module-level ``__getattr__`` fallbacks still work
    (the base lookup runs them).
    """
    base_lookup: Any = base.__getattribute__  # unbound: (module, name)
    get = table.get

    def __getattribute__(self: Any, name: str) -> Any:
        wrapper = get(name)
        if wrapper is not None:
            return wrapper
        return base_lookup(self, name)

    return type(f"Probe{base.__name__.capitalize()}", (base,), {"__getattribute__": __getattribute__})


class ApiInterceptor:
    """Installs and removes the L1 patches.

    Args:
        sink: receives every outermost call while ``sink.live`` is true.
        namespaces: limit to some of ``"ops"``, ``"mint"``,
            ``"mint.nn.functional"``, ``"Tensor"``, ``"Primitive"`` (all by
            default).

    Only one interceptor can be installed at a time in a process.
    """

    _active: Optional["ApiInterceptor"] = None

    def __init__(self, sink: Sink, *, namespaces: Optional[tuple[str, ...]] = None) -> None:
        self.sink = sink
        self.namespaces = namespaces or ("ops", "mint", "mint.nn.functional", "Tensor", "Primitive")
        self._saved: list[tuple[Any, str, Any]] = []  # (owner, attr, original or _MISSING)
        self._plan: Optional[list[tuple[Any, str, Callable]]] = None  # (owner, attr, wrapper)
        self._hook_backward: Any = None
        self._deepcopy: Any = None
        self._executor: Any = None
        self._parameter_type: Any = None
        #: id(Parameter) -> (Parameter, float32 sum launched at its first use since the last change)
        self._probes: dict = {}
        #: the window runs synchronously: Parameters are checked on the host at first use
        self.synchronous = False
        #: something may have changed Parameters since start() (a backward pass, an update, an in-place write)
        self.params_changed = False
        self._boxes: list = []  # what this window's HookBackward hooks refer to (see through_hook)
        #: APIs whose wrapper failed: called straight through from then on
        self.broken: set[str] = set()
        self._fault_causes: set[str] = set()

    @property
    def installed(self) -> bool:
        """True while the patches are in place."""
        return bool(self._saved)

    # -- patching -----------------------------------------------------------------
    def _set(self, owner: Any, attr: str, wrapper: Callable) -> None:
        assert self._plan is not None  # only called while a plan is being built
        self._plan.append((owner, attr, wrapper))

    def install(self) -> int:
        """Patch every namespace; returns the number of patches (a module
        namespace counts one: its class is swapped, see
        :func:`_patched_module_class`).

        The wrappers are built on the first call and reused, so a
        ``start()`` per step costs only the attribute assignments.

        Raises:
            RuntimeError: when another interceptor is installed.
        """
        if self.installed:
            return len(self._saved)
        if ApiInterceptor._active is not None and ApiInterceptor._active is not self:
            raise RuntimeError("another PrecisionDebugger is already started in this process")
        if self._plan is None:
            self._plan = []
            self._build_plan()
        # about 1,100 attributes, set at every start() and put back at every
        # stop(): kept to plain lookups (a vars() per attribute doubled it)
        saved = self._saved
        append = saved.append
        missing = _MISSING
        for owner, attr, wrapper in self._plan:
            original = type(owner) if attr == "__class__" else owner.__dict__.get(attr, missing)
            try:
                setattr(owner, attr, wrapper)
            except (AttributeError, TypeError):
                continue
            append((owner, attr, original))
        self._probes = {}
        self.params_changed = False
        ApiInterceptor._active = self
        return len(saved)

    def _build_plan(self) -> None:
        import mindspore
        from mindspore import ops

        self._hook_backward = ops.HookBackward
        self._deepcopy = ops.deepcopy
        self._parameter_type = mindspore.Parameter
        try:
            from mindspore.graph.api import _pynative_executor  # MindSpore >= 2.9
        except Exception:
            try:
                from mindspore.common.api import _pynative_executor
            except Exception:  # pragma: no cover
                _pynative_executor = None
        self._executor = _pynative_executor
        modules = []
        if "ops" in self.namespaces:
            modules.append(("Functional", mindspore.ops))
        if "mint" in self.namespaces:
            modules.append(("Mint", mindspore.mint))
        if "mint.nn.functional" in self.namespaces:
            modules.append(("MintFunctional", mindspore.mint.nn.functional))
        for prefix, module in modules:
            table = {}
            for attr, value in list(vars(module).items()):
                if attr.startswith("_") or attr in FUNCTION_SKIP or isinstance(value, type):
                    continue
                if not callable(value) or type(value).__name__ not in ("function", "builtin_function_or_method"):
                    continue
                if hasattr(value, "__probe_original__"):
                    continue
                inplace = attr.endswith("_") or attr in FUNCTION_INPLACE or attr.startswith("scatter_")
                table[attr] = self._wrap(f"{prefix}.{attr}", value, inplace)
            if table:
                self._set(module, "__class__", _patched_module_class(type(module), table))
        if "Tensor" in self.namespaces:
            self._patch_tensor(mindspore.Tensor)
        if "Primitive" in self.namespaces:
            self._patch_primitives()

    def _patch_tensor(self, tensor_cls: type) -> None:
        names = set(TENSOR_OPERATORS)
        for attr in dir(tensor_cls):
            if attr.startswith("_") or attr in TENSOR_SKIP:
                continue
            names.add(attr)
        for attr in sorted(names):
            try:
                raw = None
                for klass in tensor_cls.__mro__:
                    if attr in vars(klass):
                        raw = vars(klass)[attr]
                        break
            except Exception:
                continue
            if raw is None or isinstance(raw, (property, staticmethod, classmethod)):
                continue
            if not callable(raw) or type(raw).__name__ not in ("function", "method_descriptor", "wrapper_descriptor",
                                                                "builtin_function_or_method"):
                continue
            method = getattr(tensor_cls, attr)
            inplace = (attr.endswith("_") and not attr.startswith("__")) or attr.startswith("__i") or attr == "__setitem__"
            self._set(tensor_cls, attr, self._wrap(f"Tensor.{attr}", method, inplace))
        for attr in TENSOR_MUTATORS:
            if hasattr(tensor_cls, attr):
                self._set(tensor_cls, attr, self._wrap_mutator(getattr(tensor_cls, attr)))

    def _patch_primitives(self) -> None:
        """Primitives are caught where they run, not class by class.

        Setting ``__call__`` on each of the ~1,200 Primitive classes at every
        ``start()`` and putting it back at every ``stop()`` invalidates
        Python's type caches down the whole class tree: it cost 5 ms of an
        8 ms MLP step on the benchmark machine (``Primitive.__call__`` alone
        about 1 ms). Instead, for each class that defines its own
        ``__call__``, by what that method runs:

        * a ``pyboost_<op>(prim, [args])`` function looked up in its
          module's globals (the generated ops, ~580 classes): that global is
          replaced (a module dict write, no type cache touched), one
          wrapper per function for every class that uses it;
        * ``super().__call__`` or ``_run_op(prim, name, args)`` (~190
          classes, and every class without a ``__call__`` of its own, which
          runs ``Primitive.__call__``): caught by replacing the global
          ``_run_op`` in each MindSpore module that imported it;
        * anything else (~90 classes, collective and inner ops): the class's
          ``__call__`` is patched as before;
        * ``constexpr``/``_primexpr`` helper classes (``ProxyOp``,
          ``CompileOp``: compile-time Python on constants) are left alone.

        The API name is ``Primitive.<class name of the instance>``, or the
        operator name for primitives made by name (:func:`primitive_api`).
        """
        from mindspore.ops import primitive as primitive_module
        from mindspore.ops.primitive import Primitive

        run_op = getattr(primitive_module, "_run_op", None)
        if callable(run_op):
            wrapper = self._wrap_run_op(run_op)
            for module_name, module in list(sys.modules.items()):
                if module_name.startswith("mindspore") and module is not None \
                        and vars(module).get("_run_op") is run_op:
                    self._set(module, "_run_op", wrapper)
        seen = set()
        stack = [Primitive]
        boosted: set[tuple[str, str]] = set()
        while stack:
            klass = stack.pop()
            if klass in seen:
                continue
            seen.add(klass)
            stack.extend(klass.__subclasses__())
            call = vars(klass).get("__call__")
            if call is None or klass.__name__ in PRIMITIVE_SKIP or klass.__name__ in ("ProxyOp", "CompileOp"):
                continue
            code = getattr(call, "__code__", None)
            if code is not None:
                names = [n for n in code.co_names if n.startswith("pyboost_")]
                owner = sys.modules.get(getattr(call, "__module__", "") or "")
                if len(names) == 1 and owner is not None and callable(vars(owner).get(names[0])):
                    if (owner.__name__, names[0]) not in boosted:
                        boosted.add((owner.__name__, names[0]))
                        self._set(owner, names[0], self._wrap_pyboost(vars(owner)[names[0]]))
                    continue
                if callable(run_op) and ("_run_op" in code.co_names or "super" in code.co_names
                                         or "__class__" in code.co_freevars):
                    continue  # ends in _run_op (patched above)
            self._set(klass, "__call__", self._wrap_primitive(call))

    def uninstall(self) -> None:
        """Put back every patched attribute (in reverse order). Safe to call
        twice, from an intercepted call, and at interpreter exit."""
        saved, self._saved = self._saved, []
        release(self._boxes)
        restore(saved)
        if ApiInterceptor._active is self:
            ApiInterceptor._active = None

    # -- wrappers -----------------------------------------------------------------
    def _wrap(self, api: str, original: Callable, inplace: bool) -> Callable:
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _guard.depth or not sink.live:
                return original(*args, **kwargs)
            return handle(api, original, inplace, args, kwargs, sys._getframe(1))

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def _wrap_primitive(self, original: Callable) -> Callable:
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, *args: Any, **kwargs: Any) -> Any:
            if _guard.depth or not sink.live:
                return original(prim, *args, **kwargs)
            api = primitive_api(prim)
            if api is None:
                return original(prim, *args, **kwargs)
            return handle(api, functools.partial(original, prim), _side_effect(prim), args, kwargs,
                          sys._getframe(1))

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def _wrap_pyboost(self, original: Callable) -> Callable:
        """Wrapper of a generated ``pyboost_<op>(prim, args)`` function: the
        call is named after ``prim``'s class. ``args`` holds the arguments
        of the class's ``__call__`` followed by the primitive's attributes
        (``MatMul``: input, mat2, transpose_a, transpose_b); the entry
        records the arguments only, as msprobe does (:func:`_call_arity`),
        and the attributes are passed on untouched."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, args: Any, *rest: Any) -> Any:
            if _guard.depth or not sink.live or rest or not isinstance(args, (list, tuple)):
                return original(prim, args, *rest)
            api = primitive_api(prim)
            if api is None:
                return original(prim, args)
            count = _call_arity(type(prim))
            given, extra = tuple(args[:count]), list(args[count:])
            return handle(api, lambda *items: original(prim, list(items) + extra),
                          _side_effect(prim), given, {}, sys._getframe(1))

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def _wrap_run_op(self, original: Callable) -> Callable:
        """Wrapper of ``mindspore.ops.primitive._run_op(prim, name, args)``,
        what ``Primitive.__call__`` runs: named after ``prim``'s class."""
        handle = self._handle
        sink = self.sink

        @functools.wraps(original)
        def wrapper(prim: Any, op_name: Any, args: Any) -> Any:
            if _guard.depth or not sink.live or not isinstance(args, (list, tuple)):
                return original(prim, op_name, args)
            api = primitive_api(prim)
            if api is None:
                return original(prim, op_name, args)
            return handle(api, lambda *items: original(prim, op_name, items), _side_effect(prim),
                          tuple(args), {}, sys._getframe(1))

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def _wrap_mutator(self, original: Callable) -> Callable:
        sink = self.sink

        @functools.wraps(original)
        def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if not _guard.depth and sink.live:
                _guard.depth += 1
                try:
                    sink.before_mutation([tensor])
                except Exception as err:
                    sink.on_error("before_mutation", err)
                finally:
                    _guard.depth -= 1
            return original(tensor, *args, **kwargs)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def _handle(self, api: str, original: Callable, inplace: bool, args: tuple, kwargs: dict, frame: Any) -> Any:
        """The outermost call: hand it on, run it under the guard."""
        sink = self.sink
        _guard.depth += 1
        try:
            if api in self.broken:
                return original(*args, **kwargs)
            call = None
            call_args = args
            backward = False
            try:
                if _jit_tracing():
                    return original(*args, **kwargs)
                call = ApiCall(api, sink.next_index(api), args, kwargs, capture_frames(frame), inplace)
                if inplace:
                    self.forget_probes()
                    call_args = args
                    sink.before_mutation([a for a in args if is_tensor(a)] + [v for v in kwargs.values() if is_tensor(v)])
                    call.args = tuple(self._deepcopy(a) if is_floating(a) else a for a in args)
                else:
                    self._probe_parameters(call, args)
                    if self._grad_flag():
                        backward = True
                        call_args = self._hook_inputs(call, args)
            except Exception as err:
                if surfaced(err):
                    raise  # the user's own error surfacing here (asynchronous execution): theirs to see
                self._fault(api, "before the call", err)
                call = None
                call_args = args
            output = original(*call_args, **kwargs)
            if call is not None:
                try:
                    call.output = output
                    if backward:
                        hooked = self._hook_outputs(call, output)
                        if hooked is not None:  # what the caller gets; one host copy serves both
                            output = call.output = hooked
                    sink.on_forward(call)
                except Exception as err:
                    self._fault(api, "after the call", err)
            return output
        finally:
            _guard.depth -= 1

    def _fault(self, api: str, where: str, err: BaseException) -> None:
        """An exception inside the wrapper of ``api``: that API is called
        straight through from now on (turned off); each cause is logged
        once, naming the first API it hit. An error of MindSpore's runtime
        (:func:`detection.framework_error`: with asynchronous execution
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
        host at once instead (:func:`detection.probe_now`)."""
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

    def _hook_inputs(self, call: ApiCall, args: tuple) -> tuple:
        # chosen by type, not dtype: the first dtype read of a fresh output
        # waits for the device (integer tensors pass through harmlessly)
        positions = [i for i, a in enumerate(args) if is_tensor(a)]
        if not positions:
            return args
        sink = self.sink

        def input_hook(*grads: Any) -> None:
            try:
                self.forget_probes()
                sink.on_grad_inputs(call, list(iter_tensors(grads)))
            except Exception as err:
                self._fault(call.api, "in the backward input hook", err)

        new_args = through_hook(self._hook_backward, input_hook, args, positions, self._boxes)
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

        def output_hook(*grads: Any) -> None:
            try:
                sink.on_grad_outputs(call, list(iter_tensors(grads)))
            except Exception as err:
                self._fault(call.api, "in the backward output hook", err)

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
        new_items = through_hook(self._hook_backward, output_hook, items, positions, self._boxes)
        if kind is not tuple and kind is not list:
            return new_items[0]
        return kind(new_items)


class OptimizerWatch:
    """Resolves pending checks before Parameters are updated in place.

    An optimizer step changes Parameters in place, usually inside a
    ``construct`` compiled with ``mindspore.jit`` (``nn.SGD``, ``nn.Adam``),
    which no wrapper sees; ``Parameter.set_data`` (its own method, not
    ``Tensor.set_data``, which L1 wraps) replaces a Parameter's values from
    Python. Pending entries hold references, not copies: an entry whose
    tensor is a Parameter, or a view of one (``Tensor.view`` on an LSTM's
    weights), would otherwise be judged, and described, on the updated
    memory. So while installed, ``__call__`` of ``nn.Optimizer`` and of
    ``mindspore.experimental.optim.Optimizer`` (what ``mindspore.mint.optim``
    optimizers derive from; set on those base classes, which every optimizer
    Cell inherits) and ``Parameter.set_data`` first call ``sink.before_update()`` and then
    ``on_update`` (Parameters may differ from now on). Both are put back by
    :meth:`uninstall`; at both levels. Nothing is copied or held: the queue
    is resolved early, once per update, instead of at the next batch or
    ``stop()``.

    Args:
        sink: has ``live``, ``before_update()`` and ``on_error``.
        on_update: called after ``before_update`` (e.g. forget the Parameter
            probes of the window).
    """

    def __init__(self, sink: Any, on_update: Callable[[], None] = lambda: None) -> None:
        self.sink = sink
        self.on_update = on_update
        self._saved: list[tuple[Any, str, Any]] = []  # (owner, attr, original or _MISSING)

    @property
    def installed(self) -> bool:
        """True while the patches are in place."""
        return bool(self._saved)

    def install(self) -> None:
        """Patch ``nn.Optimizer.__call__`` and ``Parameter.set_data`` (no-op
        when already installed)."""
        if self._saved:
            return
        import mindspore
        from mindspore import nn

        targets = [(nn.Optimizer, "__call__"), (mindspore.Parameter, "set_data")]
        try:  # the optimizers of mindspore.mint.optim (torch-style) derive from this one, not nn.Optimizer
            from mindspore.experimental.optim import Optimizer as TorchStyleOptimizer

            targets.append((TorchStyleOptimizer, "__call__"))
        except Exception:  # pragma: no cover - other MindSpore versions
            pass
        for owner, attr in targets:
            original = getattr(owner, attr, None)
            if original is None:  # pragma: no cover - other MindSpore layouts
                continue
            saved = owner.__dict__.get(attr, _MISSING)
            setattr(owner, attr, self._wrap(original, attr))
            self._saved.append((owner, attr, saved))

    def _wrap(self, original: Callable, what: str) -> Callable:
        sink, on_update = self.sink, self.on_update

        @functools.wraps(original)
        def wrapper(owner: Any, *args: Any, **kwargs: Any) -> Any:
            if not _guard.depth and sink.live:
                _guard.depth += 1
                try:
                    sink.before_update()
                    on_update()
                except Exception as err:
                    sink.on_error(f"before a Parameter update ({what})", err)
                finally:
                    _guard.depth -= 1
            return original(owner, *args, **kwargs)

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def uninstall(self) -> None:
        """Put the patched attributes back (safe to call twice)."""
        saved, self._saved = self._saved, []
        restore(saved)
