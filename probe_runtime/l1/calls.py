"""What the L1 wrappers hand on: one :class:`ApiCall` per outermost call,
to a :class:`Sink` (the checker, ``check.queue.Checker``).

Example::

    call = ApiCall("Functional.exp", 0, (x,), {}, frames)
    call.name            # "Functional.exp.0.forward"
    sink.on_forward(call)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol


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
        grad_inputs: gradients w.r.t. the tensor inputs (backward), in order;
            None for a data leaf whose gradient was never computed.
        expects_input_grads: an input hook was attached.
        from_data: its tensor inputs depend on no Parameter as far as the
            tool can tell (data, or made from data alone): its outputs are
            data too (``hooks.backward.data_positions``).
        step: the step the call was made in (set by the sink).
        param_sums: ``id(Parameter)`` -> its float32 sum launched when the
            call was made (the inputs' finiteness is judged on those).
        params_at_start: those Parameters were probed before anything in
            the window could have changed them (no backward pass, optimizer
            or in-place write yet): their values are those of ``start()``.
        nested: the calls made inside this one whose results are not its
            own result (each an ``ApiCall`` with ``inside`` set and no index
            yet), in the order they finished; None when there were none.
            Judged only when this call's inputs and result are finite.
        inside: for a nested call, the entry name of the outermost call it
            was made in (``Functional.clip_by_global_norm.0.forward``).
        written: the Parameters an in-place call may have written, as
            ``(key, before, after, name)``: ``key`` its position
            (``input_args[4]``), ``before`` the device copy made before the
            call, ``after`` the Parameter itself, ``name`` its name; judged
            with the outputs.
        collective: a collective call: what the records say of it
            (``hooks.collectives.CollectiveCall``), else None.
        parent: at L0, the hooked Cell's call this call was made in (its
            construct.json parent), else None.
        cells: the call was checked at L0 (only Cells and collectives are).
        recomputed: made while MindSpore ran a recomputed Cell's forward pass
            again in the backward pass (``Cell.recompute()``): it repeats a
            forward call of the same step.
        originals: an in-place call's copied inputs, ``id(copy)`` -> the
            tensor the code passed (``check.by_design.ByDesign.inherit``
            finds a deferred maker's tensor through it), else None.
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
    from_data: bool = False
    step: int = 0
    backward_queued: bool = False
    param_sums: Optional[dict] = None
    params_at_start: bool = False
    nested: Optional[list] = None
    inside: Optional[str] = None
    written: Optional[list] = None
    collective: Any = None
    parent: Any = None
    cells: bool = False
    recomputed: bool = False
    originals: Optional[dict] = None

    @property
    def name(self) -> str:
        """The forward entry name, e.g. ``Functional.exp.0.forward``."""
        return f"{self.api}.{self.index}.forward"

    @property
    def backward_name(self) -> str:
        """The backward entry name, e.g. ``Functional.exp.0.backward``."""
        return f"{self.api}.{self.index}.backward"


class Sink(Protocol):
    """What the L1 wrappers hand calls to (``check.queue.Checker``)."""

    live: bool

    def next_index(self, api: str) -> int:
        """Call index of ``api`` in the current step."""

    def collective_index(self, call: Any) -> int:
        """The per-group index of a collective call in the current step
        (``call``: a ``hooks.collectives.CollectiveCall``)."""

    def before_mutation(self, tensors: list) -> None:
        """``tensors`` are about to be changed in place."""

    def before_update(self) -> None:
        """An optimizer is about to update Parameters in place."""

    def read_on_host(self, tensors: list) -> None:
        """The user's code reads ``tensors``' values on the host (``asnumpy``)."""

    def on_forward(self, call: ApiCall) -> None:
        """A call finished; ``call.output`` is set."""

    def on_grad_outputs(self, call: ApiCall, grads: list) -> None:
        """Gradients w.r.t. the call's outputs (list of tensors)."""

    def on_grad_inputs(self, call: ApiCall, grads: list) -> None:
        """Gradients w.r.t. the call's floating inputs (list of tensors)."""

    def on_error(self, where: str, err: BaseException) -> None:
        """An exception inside the tool (never raised to the user)."""
