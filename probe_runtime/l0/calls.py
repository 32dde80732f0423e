"""The entries L0 hands to the checker: one per Cell call, per model call
and per Cell's Parameter gradients in a step.

Example::

    call = CellCall("Cell.fc1.Dense", 0, None, (x,), {}, frames)
    call.name            # "Cell.fc1.Dense.forward.0"
    call.backward_name   # "Cell.fc1.Dense.backward.0"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(eq=False)
class CellCall:
    """One call of a hooked Cell (the checker's forward and backward entry).

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
        written: the own Parameters the Cell may write in place
            (``Target.written``), as ``(name, before, after, full name)``
            with snapshots of their values before and after the call
            (``check.probes.snapshot``); judged with the outputs, and the
            ``before`` values stand for them under ``parameters``. After
            the call, also each Parameter it got as an argument (not its
            own), as L1 keeps a Parameter an in-place call got:
            ``(dump.json label, before, after, the Parameter)``, its
            ``before`` snapshot standing for it in ``args``/``kwargs``.
        argument_snapshots: while the call runs, the floating Parameters
            among its arguments that are not its own (a loss scale handed
            to ``DynamicLossScaleUpdateCell``, a tied embedding table; none
            for a layer of MindSpore's or mindtorch's own), as ``(position
            or keyword, dump.json label, Parameter, snapshot taken before
            the call)``; moved into ``written`` when it returns.
        start_values: the window's values of Parameters at ``start()``
            (``id`` -> ``(Parameter, probe)``, shared by the window's
            calls): only a Parameter found non-finite there is said to
            have held inf/nan at ``start()``, one found finite to have
            been written after it, one absent not to have been read then
            (``check.provenance.held_at_start``).
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
    written: Optional[list] = None
    #: a model given to ``start()`` whose own ``construct`` made the overflow: the record's message
    own_construct: Optional[str] = None
    #: its backward entry was recorded as the origin before the carried entries its own code fed
    own_backward_recorded: bool = False
    #: a sub-Cell call in it took tensors inside a list, tuple or dict, which get no gradient hook: that
    #: sub-Cell's own backward cannot be told from this Cell's own code (``check.provenance.backward_maker``)
    unhooked_child: bool = False
    #: the Parameters among its positional arguments (a tied weight handed to it), as given, before any hook
    parameter_args: list = field(default_factory=list)
    argument_snapshots: Optional[list] = None
    start_values: Optional[dict] = None
    #: a tensor among its outputs got no gradient hook (in a list or dict, nested deeper than a tuple's top
    #: level, or in a tuple whose class cannot be rebuilt): the gradient w.r.t. its outputs is not all known,
    #: so its backward and ``parameters_grad`` entries are never an origin (``check.provenance.forward_clean``)
    outputs_unhooked: bool = False
    #: the forward entries of sub-Cells held back, once one got inf/nan this Cell's own code made between its
    #: sub-Cells from finite inputs, until this call's own entry is judged (its record, the origin, comes first)
    stash: Optional[list] = None
    released: bool = False
    #: the gradient w.r.t. its outputs arrived while the call of the model given to ``start()`` it ran in was
    #: still running: a gradient computation inside that model's own ``construct`` asked for it
    grad_in_top: bool = False
    #: the deferred makers of a -inf by design that its sub-Cells returned (``check.by_design.tell_enclosing``)
    by_design_inside: Optional[list] = None
    #: its tensor inputs as the code passed them and as it got them through its gradient hook, ``(given,
    #: hooked)``: a -inf by design made by a Cell before it is known by the tensor given
    given: list = field(default_factory=list)
    #: the call of a model given to ``start()``, as an entry (:meth:`TopCall.as_cell_call`): never deferred
    is_model: bool = False
    #: the Cell is a layer of MindSpore's or mindtorch's own (``plan.library_layer``): never a mask maker
    library: bool = False
    #: the Cell itself: its precision (``Cell.to_float``) is read from it only when its record is written
    #: (``check.mixed_precision``)
    cell: Any = None

    @property
    def name(self) -> str:
        """``Cell.fc1.Dense.forward.0``."""
        return f"{self.prefix}.forward.{self.index}"

    @property
    def class_name(self) -> str:
        """``Dense`` (the last part of ``prefix``)."""
        return self.prefix.rsplit(".", 1)[-1]

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
    """One call of a model given to ``start()``. Read to say when an
    overflow starts in its own ``construct``, outside every sub-Cell (see
    ``check.provenance.top_overflow``), and recorded, as
    ``Cell.<Class>.forward.<n>`` (``Cell.<i>.<Class>`` for the i-th of a
    list), when its output is not finite though its inputs were and no
    sub-Cell in it overflowed (:meth:`as_cell_call`).

    Attributes:
        prefix: ``Cell.<Class>`` or ``Cell.<i>.<Class>``; "" when unnamed.
        index: call index of ``prefix`` in the step.
        frames: the user's frames of the call.
        params: the model's own Parameters (short name -> Parameter).
        param_probe: their finiteness probes, one per Parameter in
            ``params`` order, taken at the model's first call in the window
            and again at its first call after an update (``check.probes``);
            None when it has none or the Parameter checks are off.
        unhooked_child: a sub-Cell called directly in it took tensors inside
            a list, tuple or dict, which get no gradient hook: a gradient
            that overflowed there may have been made by that sub-Cell's
            backward, so it is not said to come from outside the checked
            Cells.
        gradients: the gradients of its sub-Cells' calls that arrived while
            it ran (a gradient computation in its own ``construct``, as
            ``nn.TrainOneStepCell``'s over its network), as ``(seq, grads)``
            with ``seq`` the ``CellCall.seq`` of the latest Cell call then:
            inf/nan among them reached what the sub-Cells called after
            them got and what it returned, which its own code did not make
            (``check.provenance.gradients_nonfinite``). References to the
            tensors the gradient entries hold anyway, never copies.
    """

    class_name: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    output: Any = None
    child_origin: bool = False
    child_overflow: bool = False
    hinted: bool = False
    prefix: str = ""
    index: int = 0
    frames: tuple = ()
    params: dict = field(default_factory=dict)
    #: no update (backward pass, optimizer step, in-place write) came before this call in the window
    params_at_start: bool = True
    param_probe: Optional[list] = None
    unhooked_child: bool = False
    step: int = 0
    #: the forward entries of sub-Cells held back, once one got inf/nan this model's own code made, until this
    #: call's own entry is judged (its record, the origin, comes first); None while nothing is held
    stash: Optional[list] = None
    released: bool = False
    gradients: list = field(default_factory=list)
    #: its call returned (gradients arriving later are not its own construct's)
    returned: bool = False
    #: an update the tool sees (an optimizer step, ``Parameter.set_data``) ran during its call: Parameters
    #: finite at its call and not now were written by it (a result, not an input)
    updated: bool = False
    #: the gradients w.r.t. its outputs (one ``HookBackward`` on them, in a gradient computation): finite while
    #: a sub-Cell got inf/nan ones, its own backward code between its sub-Cells made them
    #: (``check.provenance.backward_maker``); ``outputs_unhooked``: a tensor among its outputs got no hook
    grad_outputs: list = field(default_factory=list)
    outputs_unhooked: bool = False
    #: its backward entry, made once when its own backward code is named (``backward_call``)
    backward: Optional["CellCall"] = None
    #: the output as its caller got it (through the gradient hook), and the window's calls of the models given
    #: to ``start()`` (shared list): a loss Cell given with the model took that output (``start([net, loss])``)
    hooked: Any = None
    peers: list = field(default_factory=list)
    #: the deferred makers of a -inf by design that its sub-Cells returned (``check.by_design.settle_model``)
    by_design_inside: Optional[list] = None
    #: MindSpore recorded the call for a gradient (the model ran inside a gradient computation's forward pass)
    grad_mode: bool = False
    #: the model itself (its precision is read only when its record is written: ``check.mixed_precision``)
    cell: Any = None
    #: the window's values of Parameters at ``start()`` (``CellCall.start_values``)
    start_values: Optional[dict] = None

    def as_cell_call(self, message: Optional[str]) -> "CellCall":
        """This call as a Cell entry the checker judges and records, with
        ``message`` (why its own ``construct`` is the place to look) kept
        for the record's ``entered``."""
        call = CellCall(self.prefix, self.index, None, self.args, self.kwargs, self.frames, dict(self.params),
                        output=self.output, step=self.step, cell=self.cell)
        call.own_construct = message
        call.is_model = True
        call.params_at_start = self.params_at_start
        call.param_probe = self.param_probe
        call.start_values = self.start_values
        return call

    def backward_call(self) -> "CellCall":
        """Its backward entry (``Cell.<Class>.backward.<n>``), made once: the
        gradients w.r.t. its outputs, for the record that names its own
        backward code as the origin."""
        if self.backward is None:
            self.backward = self.as_cell_call(None)
            self.backward.grad_outputs = list(self.grad_outputs)
        return self.backward


@dataclass(eq=False)
class ParamGradCall:
    """The gradients of one Cell's own Parameters in one step
    (``Cell.<path>.<Class>.parameters_grad``).

    Attributes:
        grads: parameter short name (``weight``) -> gradient, arrival order.
        owner: the Cell's latest call in the step (gives ``where`` and the
            gradients w.r.t. its outputs that the origin test compares to).
        owner_calls: every call of the Cell in the step.
        tied: calls of other Cells in the step that took one of these
            Parameters as an argument (a tied weight): their gradients
            w.r.t. their inputs add up into the Parameter's gradient.
    """

    prefix: str
    owner: Optional[CellCall]
    owner_calls: list
    grads: dict = field(default_factory=dict)
    tied: list = field(default_factory=list)
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
