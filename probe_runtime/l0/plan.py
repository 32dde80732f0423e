"""Which Cells of a model L0 hooks: the plan, built once per model.

:func:`plan_cells` walks the model given to ``start()`` (a Cell, or a
list/tuple of Cells) and returns one :class:`Target` per sub-Cell (the
models themselves are not recorded, as in msprobe), named
``Cell.<path>.<Class>`` (``Cell.<i>.<path>.<Class>`` for a list). Cells
inside one whose ``construct`` is compiled with ``mindspore.jit`` run as a
graph, so they are left out and listed for a warning
(:func:`jit_warning`). In a plain ``nn.SequentialCell`` each Cell is
linked to the one before it (``Target.follows``), so one gradient hook
serves both sides of the boundary.

Example::

    targets, jit_cells = plan_cells(net)
    [t.prefix for t in targets]      # ["Cell.fc1.Dense", "Cell.act.ReLU", "Cell.fc2.Dense"]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..check.names import register_module
from ..check.writable import writable_module_state, writable_parameters
from ..errors import UsageError
from ..hooks.collectives import is_reducer_cell


@dataclass
class Target:
    """One Cell to hook.

    Attributes:
        cell: the Cell.
        path: its path in the model (``fc1``, ``block.attn``).
        prefix: its entry prefix, ``Cell.<path>.<Class>``.
        params: its own Parameters (short name -> Parameter); for a Cell
            compiled with ``mindspore.jit``, also those of the Cells inside
            it (path relative to it, ``dense.weight`` -> Parameter): L0 does
            not see those Cells, so their weights are inputs of this call,
            and one that already held inf/nan keeps its output from being
            called an origin (a fresh user's finding: a compiled Cell was
            ORIGIN in a step whose own ``outside`` record said its weights
            held nan before the call).
        bprop: it has a custom ``bprop`` (its forward hook is set directly).
        follows: the hooked Cell just before this one in a plain
            ``nn.SequentialCell`` (its output is this Cell's only input and
            nothing else uses it).
        sequence: ``id`` of that ``nn.SequentialCell`` (the call must be
            made from it).
        written: the own Parameters its forward may write in place (short
            name -> Parameter; :func:`writable_parameters`: a
            ``BatchNorm``'s moving statistics; for a Module, its buffers
            too: :func:`writable_module_state`), read after each call.
    """

    cell: Any
    path: str
    prefix: str
    params: dict
    bprop: bool
    follows: Optional["Target"] = None
    sequence: int = 0
    written: dict = field(default_factory=dict)
    #: keys of ``params`` that belong to Cells inside a compiled Cell: probed and dumped with its
    #: call, no gradient hook (their gradients come out of the compiled region's backward)
    hidden: frozenset = frozenset()
    #: its ``construct`` (``forward``) is a layer of MindSpore's or mindtorch's own (:func:`library_layer`)
    library: bool = False


#: where the layers MindSpore and mindtorch define live (``construct.__module__``): ``nn.Dense``,
#: ``nn.Conv2d``, ``nn.LayerNorm``, a loss, a container; not ``mindspore.nn.probability`` (a distribution's
#: ``log_prob`` is -inf outside its support by design), nor the wrappers (``nn.WithLossCell``, amp's)
LIBRARY_LAYERS = ("mindspore.nn.layer.", "mindspore.nn.loss.", "mindtorch.nn.modules.", "torch.nn.modules.",
                  "msadapter.pytorch.nn.modules.")


#: the layers whose operation makes -inf by design at L1 (``log_softmax``: ``check.by_design.MAKERS``): a
#: LogSoftmax over logits masked with ``finfo(float16).min`` gives -inf there, a mask a loss then skips (a
#: review's finding: it was an ORIGIN in every clean step)
LIBRARY_MAKERS = frozenset({"LogSoftmax"})


def library_layer(cell: Any, modules: bool = False) -> bool:
    """``cell``'s ``construct`` (a Module's ``forward`` with ``modules``)
    is the one a MindSpore or mindtorch layer defines (:data:`LIBRARY_LAYERS`;
    a subclass of ``nn.Dense`` that does not override it counts; not
    :data:`LIBRARY_MAKERS`): such a
    layer writes no -inf on purpose, so a -inf-only output it returns from
    finite inputs and Parameters is an overflow, never taken for a mask
    (``check.by_design``; a hunt's finding: a float16 ``nn.Linear``
    overflowing to -inf before a ReLU was taken for a mask at L0 and the
    run got an all-clear)."""
    if type(cell).__name__ in LIBRARY_MAKERS:
        return False
    method = getattr(type(cell), "forward" if modules else "construct", None)
    return str(getattr(method, "__module__", "") or "").startswith(LIBRARY_LAYERS)


def models(model: Any, modules: bool = False) -> list[tuple[str, Any]]:
    """``(index prefix, Cell)`` for each model given to ``start()``: ``""``
    for one Cell, ``"<i>."`` for each Cell of a list/tuple. ``modules``:
    PyTorch code on MindSpore (MSAdapter): the models are ``torch.nn.Module``
    objects of the layer instead.

    Raises:
        UsageError: ``model`` is None (``start()`` without a model), or not
            a Cell (a Module) or a list/tuple of them.
    """
    if model is None:
        what = ("Modules of a model: call debugger.start(model) with the network (a torch.nn.Module or a list/tuple "
                "of Modules)" if modules else "Cells of a model: call debugger.start(model) with the network (a "
                "mindspore.nn.Cell or a list/tuple of Cells)")
        raise UsageError(f"level L0 checks the {what}, not debugger.start()")
    if modules:
        import sys

        kind: Any = sys.modules["torch"].nn.Module
        what = "Modules: debugger.start(model) needs a torch.nn.Module or a list/tuple of Modules"
    else:
        from mindspore import nn

        kind = nn.Cell
        what = "Cells: debugger.start(model) needs a mindspore.nn.Cell or a list/tuple of Cells"
    if isinstance(model, (list, tuple)):
        pairs = [(f"{i}.", m) for i, m in enumerate(model)]
    else:
        pairs = [("", model)]
    for _, m in pairs:
        if not isinstance(m, kind):
            raise UsageError(f"level L0 hooks {what}, not {type(m).__name__}")
    return pairs


def own_parameters(cell: Any, modules: bool = False) -> dict:
    """A Cell's (a Module's) own Parameters, short name -> Parameter."""
    if modules:
        return dict(cell.named_parameters(recurse=False))
    return {key.split(".")[-1]: value for key, value in cell.parameters_dict(recurse=False).items()}


def is_jit_compiled(cell: Any) -> bool:
    """True when ``cell.construct`` is wrapped by ``mindspore.jit`` (ast or
    bytecode capture), on the class or the instance."""
    construct = getattr(cell, "construct", None)
    function = getattr(construct, "__func__", construct)
    return bool(getattr(function, "__wrapped_by_jit__", False))


#: the Cells ``Cell.recompute()`` adds under the Cell it is called on (``_recompute_cell`` and its
#: ``wrap_cell``, around that Cell's own ``construct``; ``mindspore/common/recompute.py``, 2.7 and 2.10)
RECOMPUTE_WRAPPERS = frozenset({"_RecomputeCell", "_WrapCell"})


def is_recompute_wrapper(cell: Any) -> bool:
    """``cell`` is one of the Cells MindSpore's ``Cell.recompute()`` puts
    around a Cell's own ``construct``. Not hooked: each call of theirs is
    the call of the Cell that asked for recomputation, whose own entry
    names it (hooked, the overflow made in that Cell's code was put on
    ``Cell.blk._recompute_cell.wrap_cell._WrapCell``, MindSpore's Cell,
    not the user's ``Cell.blk.Block``: a fresh user's finding)."""
    klass = type(cell)
    return klass.__name__ in RECOMPUTE_WRAPPERS and klass.__module__.startswith("mindspore.")


def plan_cells(model: Any, modules: bool = False) -> tuple[list[Target], list[tuple[str, Any, list[str]]]]:
    """The Cells to hook in ``model`` and the compiled Cells that hide
    others: ``(targets, [(path, compiled Cell, paths not seen inside)])``.
    ``modules``: the model is a ``torch.nn.Module`` of the MSAdapter layer:
    its sub-Modules in ``named_modules()`` order, named
    ``Module.<path>.<Class>`` as msprobe names them.

    Raises:
        UsageError: ``model`` is not a Cell (Module) or a list/tuple of them.
    """
    if modules:
        return _plan_modules(model), []
    targets: list[Target] = []
    jit_cells: list[tuple[str, Any, list[str]]] = []  # (path, cell, paths not seen inside)
    for index_prefix, root in models(model):
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
            if is_reducer_cell(cell):  # its call is one collective call, intercepted as such (not a Cell entry)
                continue
            if is_recompute_wrapper(cell):  # MindSpore's own: the Cell that called recompute() is the user's entry
                continue
            params = {key.split(".")[-1]: value for key, value in cell.parameters_dict(recurse=False).items()}
            written = writable_parameters(cell, params)
            compiled = is_jit_compiled(cell)
            hidden = compiled_inner_parameters(cell, params) if compiled else {}
            targets.append(Target(cell, path, f"Cell.{index_prefix}{path}.{type(cell).__name__}", {**params, **hidden},
                                  bool(getattr(cell, "has_bprop", False)), written=written,
                                  hidden=frozenset(hidden), library=library_layer(cell)))
            if compiled:
                jit_here.append((path, []))
                jit_cells.append((index_prefix + path, cell, jit_here[-1][1]))
    link_sequential(model, targets)
    return targets, jit_cells


def compiled_inner_parameters(cell: Any, own: dict) -> dict:
    """The Parameters of the Cells inside ``cell`` (compiled with
    ``mindspore.jit``), keyed by their path relative to it
    (``dense.weight``), each once and none of ``own``."""
    seen = {id(p) for p in own.values()}
    out = {}
    for name, param in cell.parameters_and_names():
        if id(param) not in seen and "." in name:
            seen.add(id(param))
            out[name] = param
    return out


def _plan_modules(model: Any) -> list[Target]:
    """:func:`plan_cells` for ``torch.nn.Module`` models (no jit, no custom
    bprop). A normalisation Module's forward writes its running statistics
    (buffers) and, on mindtorch's CPU kernel, its weight and bias in place:
    those are its ``written`` state (:func:`writable_module_state`). The
    models' Parameters and buffers are named by their ``named_parameters()``
    names, relative to the model (``check.names.register_module``): their
    own ``name`` is a UUID on this layer."""
    targets: list[Target] = []
    for index_prefix, root in models(model, modules=True):
        register_module(root, index_prefix)
        for path, module in root.named_modules():
            if module is root:
                continue
            params = own_parameters(module, modules=True)
            targets.append(Target(module, path, f"Module.{index_prefix}{path}.{type(module).__name__}",
                                  params, False, written=writable_module_state(module, params),
                                  library=library_layer(module, modules=True)))
    return targets


def jit_warning(jit_cells: list[tuple[str, Any, list[str]]]) -> str:
    """The warning for the compiled Cells :func:`plan_cells` found: what is
    checked of each and what is not seen inside it."""
    parts = []
    for path, cell, inside in jit_cells:
        is_root = not path or path.isdigit()
        label = f"model {path}" if path.isdigit() else (path or "the model itself")
        seen = "nothing inside is checked" if is_root else "its own inputs and outputs are checked"
        hidden = f"; not seen: {', '.join(inside[:8])}{' ...' if len(inside) > 8 else ''}" if inside else ""
        parts.append(f"{label} ({type(cell).__name__}: {seen}{hidden})")
    return ("probe_runtime: L0 cannot see inside Cells compiled with mindspore.jit (they run as a graph): "
            + "; ".join(parts))


def link_sequential(model: Any, targets: list) -> None:
    """Set ``follows`` on each target whose enclosing Cell is a plain
    ``nn.SequentialCell`` (its own ``construct``, which hands each Cell's
    output to the next one only) and whose predecessor there is a target
    too (not compiled, no custom ``bprop``)."""
    from mindspore import nn

    by_cell = {id(t.cell): t for t in targets}
    roots = [m for _, m in models(model)]
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
