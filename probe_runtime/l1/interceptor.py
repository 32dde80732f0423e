"""Installing and removing the L1 patches (API level).

:class:`ApiInterceptor` plans the patches once (the public functions of
``mindspore.ops``, ``mindspore.mint`` and ``mindspore.mint.nn.functional``,
the methods and operators of ``mindspore.Tensor``, and every Primitive
call where it runs; :mod:`.namespaces` lists what is left alone), applies
them at each ``install()`` (``start()``) and removes them at
``uninstall()``. The wrappers themselves are built by :mod:`.wrappers`.

Example::

    interceptor = ApiInterceptor(checker)
    interceptor.install()        # ops.exp, Tensor.__mul__, Primitive calls ... now reach the checker
    loss = net(x)
    interceptor.uninstall()      # everything is as it was
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from ..hooks.collectives import FORMS, reducer_classes
from ..hooks.patching import Patches, Plan, patched_module_class, subclasses
from .calls import Sink
from .namespaces import (
    FUNCTION_INPLACE, FUNCTION_SKIP, FUNCTION_WRITES, IN_PLACE_OPERATORS, PRIMITIVE_SKIP, TENSOR_MUTATORS,
    TENSOR_OPERATORS,
    TENSOR_SHARED_READS, TENSOR_SKIP,
    TORCH_MODULES, TORCH_SKIP, TORCH_TENSOR_SKIP, TORCH_WRITES,
)
from .wrappers import Wrappers, recompute_methods


#: what L1 patches when PyTorch code runs on MindSpore (MSAdapter): the torch
#: namespaces, the Tensor methods (``torch.Tensor`` is ``mindspore.Tensor``
#: there) and the Primitive calls, which run nested inside the torch-level
#: calls (only one made outside any of them is an entry of its own)
MSADAPTER_NAMESPACES = ("torch", "torch.nn.functional", "Tensor", "Primitive")


class ApiInterceptor:
    """Installs and removes the L1 patches.

    Args:
        sink: receives every outermost call while ``sink.live`` is true.
        namespaces: limit to some of ``"ops"``, ``"mint"``,
            ``"mint.nn.functional"``, ``"Tensor"``, ``"Primitive"`` (all by
            default), or ``"Collective"``: only the collective calls
            (``hooks.collectives.FORMS`` and the gradient reducer Cells),
            what L0 intercepts. In the MSAdapter scenario
            (:data:`MSADAPTER_NAMESPACES`) ``"torch"`` and
            ``"torch.nn.functional"`` take the place of MindSpore's
            function namespaces (:data:`~.namespaces.TORCH_MODULES`).
        torch: PyTorch code runs on MindSpore: the default namespaces are
            :data:`MSADAPTER_NAMESPACES`.

    Only one interceptor can be installed at a time in a process.
    """

    _active: Optional["ApiInterceptor"] = None

    def __init__(self, sink: Sink, *, namespaces: Optional[tuple[str, ...]] = None,
                 enclosing: Optional[Callable[[], Any]] = None,
                 nested_gradient: Optional[Callable[[], bool]] = None, torch: bool = False) -> None:
        self.sink = sink
        default = MSADAPTER_NAMESPACES if torch else ("ops", "mint", "mint.nn.functional", "Tensor", "Primitive")
        self.namespaces = namespaces or default
        self.wrappers = Wrappers(sink, enclosing=enclosing, nested_gradient=nested_gradient)
        self._patches = Patches()
        self._plan: Optional[list[tuple[Any, str, Callable]]] = None  # (owner, attr, wrapper)
        self._prepared: Optional[Plan] = None  # the same, grouped for Patches.apply
        #: the patches stay in place between two windows (:meth:`park`), the wrappers handing every call on
        self.parked = False

    @property
    def installed(self) -> bool:
        """True while the patches are in place."""
        return bool(self._patches)

    @property
    def synchronous(self) -> bool:
        """The window runs synchronously: Parameters are checked on the host
        at first use (set by the debugger at each ``start()``)."""
        return self.wrappers.synchronous

    @synchronous.setter
    def synchronous(self, value: bool) -> None:
        self.wrappers.synchronous = value

    @property
    def broken(self) -> set[str]:
        """APIs whose wrapper failed: called straight through from then on."""
        return self.wrappers.broken

    def forget_probes(self) -> None:
        """Parameters may change from now on (an optimizer is about to run):
        each is probed again at its next use."""
        self.wrappers.forget_probes()

    # -- patching -----------------------------------------------------------------
    def _set(self, owner: Any, attr: str, wrapper: Callable) -> None:
        assert self._plan is not None  # only called while a plan is being built
        self._plan.append((owner, attr, wrapper))

    def install(self) -> int:
        """Patch every namespace; returns the number of patches (a module
        namespace counts one: its class is swapped, see
        :func:`patched_module_class`).

        The wrappers are built on the first call and reused, so a
        ``start()`` per step costs only the attribute assignments.

        Raises:
            RuntimeError: when another interceptor is installed.
        """
        if self.installed:
            if self.parked:
                self.parked = False
                self.wrappers.open_window()
            return len(self._patches)
        other = ApiInterceptor._active
        if other is not None and other is not self and other.parked:
            other.uninstall()  # another debugger's patches left in place between its windows
        if ApiInterceptor._active is not None and ApiInterceptor._active is not self:
            raise RuntimeError("another PrecisionDebugger is already started in this process")
        if self._prepared is None:
            self._plan = []
            self._build_plan()
            self._prepared = Plan(self._plan)
        count = self._patches.apply(self._prepared, skip_refused=True)
        self.wrappers.open_window()
        ApiInterceptor._active = self
        return count

    def _build_plan(self) -> None:
        import mindspore

        self.wrappers.bind()
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
                table[attr] = self.wrappers.wrap_function(f"{prefix}.{attr}", value, inplace,
                                                          FUNCTION_WRITES.get(attr))
            if table:
                self._set(module, "__class__", patched_module_class(type(module), table))
        for name, prefix in TORCH_MODULES:
            if name in self.namespaces:
                self._patch_torch_module(name, prefix)
        if "Tensor" in self.namespaces:
            self._patch_tensor(mindspore.Tensor)
        if "Primitive" in self.namespaces:
            self._patch_primitives()
        elif "Collective" in self.namespaces:
            self._patch_collectives()
        for klass, attr in recompute_methods():  # calls made there repeat forward calls judged before
            self._set(klass, attr, self.wrappers.wrap_recompute(vars(klass)[attr]))
        if "Primitive" in self.namespaces or "Collective" in self.namespaces:
            for klass in reducer_classes():  # their AllReduces run in compiled code: the Cell's call is the collective
                self._set(klass, "__call__", self.wrappers.wrap_reducer(klass.__call__))

    def _patch_torch_module(self, name: str, prefix: str) -> None:
        """Patch a torch namespace of the MSAdapter layer: every module
        object user or layer code reaches it through (:func:`torch_modules`),
        with the public functions of the layer's own module behind it
        (``Torch.exp``, ``Functional.linear``)."""
        modules = torch_modules(name)
        if not modules:
            return
        table: dict[str, Callable] = {}
        for attr, value in list(vars(modules[-1]).items()):
            if attr.startswith("_") or attr in FUNCTION_SKIP or attr in TORCH_SKIP or isinstance(value, type):
                continue
            if not callable(value) or type(value).__name__ not in ("function", "builtin_function_or_method"):
                continue
            if hasattr(value, "__probe_original__"):
                continue
            inplace = attr.endswith("_") or attr.startswith("inplace_")
            table[attr] = self.wrappers.wrap_function(f"{prefix}.{attr}", value, inplace, TORCH_WRITES.get(attr))
        if table:
            for module in modules:
                self._set(module, "__class__", patched_module_class(type(module), table))

    def _patch_tensor(self, tensor_cls: type) -> None:
        names = set(TENSOR_OPERATORS)
        torch = "torch" in self.namespaces
        for attr in dir(tensor_cls):
            if attr.startswith("_") or attr in TENSOR_SKIP or (torch and attr in TORCH_TENSOR_SKIP):
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
            inplace = ((attr.endswith("_") and not attr.startswith("__")) or attr in IN_PLACE_OPERATORS
                       or attr in FUNCTION_INPLACE)
            self._set(tensor_cls, attr, self.wrappers.wrap_function(f"Tensor.{attr}", method, inplace))
        for attr in TENSOR_MUTATORS + TENSOR_SHARED_READS:
            if hasattr(tensor_cls, attr):
                self._set(tensor_cls, attr, self.wrappers.wrap_mutator(getattr(tensor_cls, attr),
                                                                       read=attr in TENSOR_SHARED_READS))

    def _patch_primitives(self) -> None:
        """Primitives are caught where they run, not class by class.

        Setting ``__call__`` on every Primitive class at each ``start()``
        and ``stop()`` would invalidate Python's type caches down the whole
        class tree (what that cost: ``docs/runtime-design.md``). Instead,
        for each class that defines its own ``__call__``, by what that
        method runs:

        * a ``pyboost_<op>(prim, [args])`` function looked up in its
          module's globals (the generated ops): that global is replaced (a
          module dict write, no type cache touched), one wrapper per
          function for every class that uses it;
        * ``super().__call__`` or ``_run_op(prim, name, args)`` (and every
          class without a ``__call__`` of its own, which runs
          ``Primitive.__call__``): caught by replacing the global
          ``_run_op`` in each MindSpore module that imported it;
        * anything else (collective and inner ops): the class's
          ``__call__`` is patched;
        * ``constexpr``/``_primexpr`` helper classes (``ProxyOp``,
          ``CompileOp``: compile-time Python on constants) are left alone.

        The API name is ``Primitive.<class name of the instance>``, or the
        operator name for primitives made by name (:func:`primitive_api`).
        """
        from mindspore.ops import primitive as primitive_module
        from mindspore.ops.primitive import Primitive

        run_op = getattr(primitive_module, "_run_op", None)
        if callable(run_op):
            wrapper = self.wrappers.wrap_run_op(run_op)
            for module_name, module in list(sys.modules.items()):
                if module_name.startswith("mindspore") and module is not None \
                        and vars(module).get("_run_op") is run_op:
                    self._set(module, "_run_op", wrapper)
        boosted: set[tuple[str, str]] = set()
        for klass in subclasses(Primitive):
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
                        self._set(owner, names[0], self.wrappers.wrap_pyboost(vars(owner)[names[0]]))
                    continue
                if callable(run_op) and ("_run_op" in code.co_names or "super" in code.co_names
                                         or "__class__" in code.co_freevars):
                    continue  # ends in _run_op (patched above)
            self._set(klass, "__call__", self.wrappers.wrap_primitive(call))

    def _patch_collectives(self) -> None:
        """Only the collective primitives (``hooks.collectives.FORMS``): the
        ``pyboost_<op>`` global their ``__call__`` runs, else their class's
        ``__call__`` (a few leaf classes: setting it touches no other
        class's type cache)."""
        from mindspore.ops.primitive import Primitive

        for klass in subclasses(Primitive):
            if klass.__name__ not in FORMS:
                continue
            own = vars(klass).get("__call__")
            code = getattr(own, "__code__", None)
            if code is not None:
                names = [n for n in code.co_names if n.startswith("pyboost_")]
                owner = sys.modules.get(getattr(own, "__module__", "") or "")
                if len(names) == 1 and owner is not None and callable(vars(owner).get(names[0])):
                    self._set(owner, names[0], self.wrappers.wrap_pyboost(vars(owner)[names[0]]))
                    continue
            self._set(klass, "__call__", self.wrappers.wrap_primitive(klass.__call__))

    def park(self) -> None:
        """The window closes but the next one is expected soon (``stop()``
        or ``step()`` of a step that is checked): the patches stay in
        place, every wrapper hands its call straight on while
        ``sink.live`` is false, and the next :meth:`install` only opens the
        wrappers' window. :meth:`uninstall` removes them.

        Why: writing the ~1,070 attributes back at every ``stop()`` and
        again at every ``start()`` cost about 1.9 ms a step on the float32
        MLP of ``benchmarks/runtime_bench.py`` (a third of its plain step,
        synchronous), and each write to ``Tensor``'s type also empties
        Python's method caches for the training code that follows."""
        if self.installed:
            self.wrappers.close_window()
            self.parked = True

    def uninstall(self) -> None:
        """Put back every patched attribute (in reverse order). Safe to call
        twice, from an intercepted call, and at interpreter exit."""
        self.parked = False
        self.wrappers.close_window()
        self._patches.remove()
        if ApiInterceptor._active is self:
            ApiInterceptor._active = None


def torch_modules(name: str) -> list[Any]:
    """The module objects of the MSAdapter layer's namespace ``name``
    (``"torch"``, ``"torch.nn.functional"``), each once, the layer's own
    module last: what ``sys.modules`` holds under that name (mindtorch
    puts a proxy there that forwards attribute lookups to its own module),
    what attribute access from ``torch`` reaches, and the module the proxy
    forwards to (``mindtorch.nn.functional``, whose functions the layer's
    own Modules call). [] when ``torch`` is not loaded."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    found: list[Any] = []
    candidates: list[Any] = [sys.modules.get(name)]
    try:
        reached: Any = torch
        for part in name.split(".")[1:]:
            reached = getattr(reached, part)
        candidates.append(reached)
    except Exception:
        pass
    for module in list(candidates):
        target = getattr(getattr(getattr(module, "__spec__", None), "loader", None), "target_name", None)
        if isinstance(target, str) and sys.modules.get(target) is not None:
            candidates.append(sys.modules[target])
    for module in candidates:
        if module is not None and not any(module is seen for seen in found):
            found.append(module)
    # the layer's own module (the one with the functions in its __dict__) last
    found.sort(key=lambda m: len(vars(m)))
    return found
