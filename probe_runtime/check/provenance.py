"""Provenance: whether an overflowing entry started the overflow, and
where the overflow came in when it did not.

An entry is an *origin* when its verdict says so (finite floating inputs,
a non-finite output: ``verdict.judge``) and nothing it depends on says
otherwise: no inner Cell of the same pass was the origin
(:func:`inner_origin`), a Cell's own Parameters were finite
(:func:`own_parameters_finite`), and the forward call a gradient is
computed from was clean (:func:`forward_clean`). For the first overflowing
entry of a step that is not an origin, :func:`entered` names the input it
came in through (``entered`` in overflow.json). The rules:
``docs/runtime-design.md``.

Everything here reads tensors only through the batch's ``HostCache`` and
changes nothing but the flags it documents on the entries.

Example::

    verdict = judge(inputs, outputs, cache)
    if verdict.overflow and not verdict.origin:
        entered("forward", call, cache)
        # {"entry": "Functional.add.0.forward", "input": "input_args[0]", "source": "outside", ...}
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from probe_format.layout import (BACKWARD, FORWARD, INPUT, INPUT_ARGS, INPUT_KWARGS, MESSAGE, PARAMETERS_GRAD,
                                 SOURCE_OUTSIDE, SOURCE_OWN_CONSTRUCT, SOURCE_PARAMETER)
from probe_format.records import entered_object

from .by_design import may_defer, only_negative_infinity
from .names import parameter_name
from .verdict import HostCache, is_parameter, is_tensor, iter_tensors


#: API -> how many leading outputs its verdict reads. Some MindSpore CPU
#: kernels return workspace for their backward as extra outputs that they
#: do not (always) write, so those hold whatever memory the pool handed out,
#: inf and nan included (seen with MindSpore 2.10 on CPU, differing from run
#: to run): ``BatchNorm`` in training (``batch_mean``, ``batch_variance``,
#: ``reserve_space_1/2`` after ``y``) and ``LSTM`` (``reserve`` and ``state``
#: after ``output``, ``h_n``, ``c_n``). Others return, beside their result,
#: a table that holds inf by design: ``ops.ctc_loss`` (``CTCLossV2``) returns
#: the loss and ``log_alpha``, the log-probabilities of the alignment
#: prefixes, which are ``-inf`` for every prefix no alignment reaches
#: (MindSpore's own docstring example shows them); the loss and its
#: gradients are what training sees, so only the loss is judged (issue 33).
#: Only the leading outputs decide the verdict; every output is still
#: dumped, as msprobe does.
JUDGED_OUTPUTS = {"Primitive.BatchNorm": 1, "Primitive.BatchNormExt": 1, "Primitive.SyncBatchNorm": 1,
                  "Primitive.LSTM": 3, "Functional.ctc_loss": 1, "Primitive.CTCLossV2": 1}


def judged_outputs(call: Any) -> Any:
    """The outputs a forward entry's verdict reads (see :data:`JUDGED_OUTPUTS`)."""
    count = JUDGED_OUTPUTS.get(getattr(call, "api", ""))
    output = call.output
    if count is not None and isinstance(output, (tuple, list)):
        return list(output[:count])
    return output


def entry_tensors(kind: str, call: Any) -> tuple[list, list]:
    """What the verdict of ``call``'s ``kind`` entry reads: (inputs,
    outputs). A forward entry: its arguments (and the probes of the
    Parameters among them, taken when the call was made) and its judged
    outputs (:data:`JUDGED_OUTPUTS`) with what it left in the Parameters it
    may have written in place (``written``); a backward entry: the gradients
    w.r.t. its outputs and those w.r.t. its inputs; a ``parameters_grad``
    entry: the gradients w.r.t. its Cell's outputs and its Parameters'
    gradients."""
    if kind == FORWARD:
        inputs: list = [call.args, call.kwargs]
        sums = getattr(call, "param_sums", None)
        if sums:  # Parameters: judged on their values when the call was made and now
            inputs.append(list(sums.values()))
        outputs: list = [judged_outputs(call)]
        written = getattr(call, "written", None)
        if written:  # Parameters the call may have written in place: what it left in them
            outputs.append([after for _, _, after, _ in written])
        return inputs, outputs
    if kind == BACKWARD:
        return list(call.grad_outputs), list(call.grad_inputs)
    # parameters_grad: against the gradients w.r.t. the Cell's outputs
    return [c.grad_outputs for c in call.owner_calls], list(call.grads.values())


def stale_parameters(call: Any, sums: dict, cache: HostCache) -> Iterator[str]:
    """The message for each Parameter that was finite when ``call`` used it
    and is not any more now that the call is checked: an update the tool
    did not see (not an ``nn.Optimizer``, not an intercepted in-place call,
    e.g. code compiled with ``mindspore.jit``). The entry is then judged
    carried (its dumped input is not finite), never an origin."""
    params = {id(a): a for a in iter_tensors([call.args]) if id(a) in sums}
    for key, probe in sums.items():
        param = params.get(key)
        if param is not None and cache.finite(probe) and not cache.finite(param):
            yield (f"probe_runtime: Parameter {parameter_name(param)} was changed by code the "
                   f"tool does not see between {call.name} and its check; that entry's statistics "
                   "describe the changed values (update Parameters through an optimizer or "
                   "Parameter.set_data, which resolve the checks first, or call stop() before)")


def masked_call(nested: list, cache: HostCache) -> Optional[Any]:
    """L1: the first of the calls made inside a call (``nested``: its
    ``ApiCall.nested``, in the order they finished) whose judged result
    holds inf/nan, or None. Asked only when the outer call's own inputs and
    result were finite: such a nested call made an overflow the outer call
    masked (``clip_norm / inf`` gives 0), recorded with ``inside`` naming
    it. Reads the nested results only (each tensor once per batch, through
    ``cache``)."""
    for inner in nested:
        outputs = judged_outputs(inner)
        if all_finite(outputs, cache):
            continue
        if may_defer(getattr(inner, "api", ""), False) and \
                all(cache.finite(t) or only_negative_infinity(t, cache) for t in iter_tensors(outputs)):
            continue  # -inf by design (a mask) that the outer call's finite result consumed (by_design)
        return inner
    return None


def written_nonfinite(call: Any, cache: HostCache) -> list[str]:
    """The names of the Parameters ``call`` wrote inf/nan into: finite
    before the call (``written``'s copy or snapshot), not after it."""
    return [written_name(name) for _, before, after, name in getattr(call, "written", None) or ()
            if cache.finite(before) and not cache.finite(after)]


def written_name(name: Any) -> str:
    """The name of a written Parameter: ``written``'s last item is its name
    or, where naming it costs a lookup (a layer Parameter or buffer an
    in-place L1 call wrote, :func:`~.names.parameter_name`), the tensor,
    named only when a record needs it."""
    return name if isinstance(name, str) else parameter_name(name, search=True)


def parameters_seen(call: Any) -> dict:
    """An L0 Cell call's own Parameters as the call found them: the
    snapshots taken before the call for those it may write in place
    (``written``), the Parameters themselves for the others."""
    parameters = getattr(call, "parameters", None) or {}
    written = getattr(call, "written", None)
    if not written:
        return parameters
    before = {key: snapshot for key, snapshot, _, _ in written}
    return {key: before.get(key, value) for key, value in parameters.items()}


# -- origin or carried ------------------------------------------------------------
def inner_origin(kind: str, call: Any) -> bool:
    """An L0 Cell entry whose inner Cell already was the origin (same pass)."""
    if kind == FORWARD:
        return getattr(call, "child_overflow", False)
    if kind == BACKWARD:
        return getattr(call, "child_backward_overflow", False)
    return False


def mark_parent(kind: str, call: Any) -> None:
    """Tell an L0 Cell entry's parent that the overflow started inside it."""
    parent = getattr(call, "parent", None)
    if parent is None:
        return
    if kind == FORWARD:
        parent.child_overflow = True
    elif kind == BACKWARD:
        parent.child_backward_overflow = True


def forward_clean(calls: Any, cache: HostCache) -> bool:
    """The forward calls a backward or ``parameters_grad`` entry is computed
    from had finite inputs and outputs (``forward_finite``, set when their
    forward entry was judged) and, for L0 Cells, finite own Parameters at
    ``start()`` (read only here, on an overflow) and a gradient hook on
    every tensor among their outputs: when one got none
    (``outputs_unhooked``: nested deeper than a container's top level), the
    gradient w.r.t. the outputs the origin test compares with is not all
    known, so the entry is not called an origin."""
    for call in calls:
        if not getattr(call, "forward_finite", True) or getattr(call, "outputs_unhooked", False):
            return False
        probe = getattr(call, "param_probe", None)
        if probe and not all(cache.finite(t) for t in probe):
            return False
    return True


def tied_gradient_nonfinite(call: Any, cache: HostCache) -> bool:
    """L0, a ``parameters_grad`` entry: another Cell of the step took one of
    its Parameters as an argument (``tied``: a tied weight, an embedding
    table handed to the output head) and that Cell's gradient w.r.t. its
    inputs holds inf/nan. The Parameter's gradient is the sum of both, so
    the entry carries what that Cell's backward made; a hunt found it
    called a second ORIGIN beside the head's backward."""
    for other in getattr(call, "tied", ()):
        if any(not cache.finite(t) for t in iter_tensors(getattr(other, "grad_inputs", None) or ())):
            return True
    return False


def own_parameters_finite(call: Any, cache: HostCache) -> tuple[bool, Optional[str]]:
    """L0, read only when a Cell's output overflowed from finite inputs:
    whether its own Parameters were finite when it was called (the probes
    taken at ``start()`` or, after an update in the window, at the call)
    and still are (what its record dumps under ``parameters``), with a
    message to log once when a Parameter found finite at the call is not
    now (changed by code the tool does not see; the entry is then carried,
    never an origin)."""
    probes = getattr(call, "param_probe", None) or ()
    if not all(cache.finite(t) for t in probes):
        return False, None
    for name, param in parameters_seen(call).items():
        if not cache.finite(param):
            if probes:
                return False, (f"probe_runtime: Parameter {getattr(param, 'name', name)} was changed by code "
                               f"the tool does not see, after its last probe and before {call.name} was "
                               "checked; that entry's statistics describe the changed values and it is not "
                               "taken as an origin (update Parameters through an optimizer or "
                               "Parameter.set_data, which the tool sees, or call stop() before)")
            return False, None
    return True, None


# -- where the overflow came in ----------------------------------------------------
def entered(kind: str, call: Any, cache: HostCache) -> Optional[dict]:
    """Where the first overflow of a step came in, when its first
    overflowing entry is not an origin: the first non-finite input of
    that entry (at L0 of the outermost enclosing Cell that also got it
    on entry) and what it was: a tensor no checked call produced (the
    data batch, a tensor made before ``start()``, code not checked) or
    a Parameter (non-finite at ``start()`` when no backward pass,
    update or in-place write came before its probe). At L0 a Cell whose
    inputs were finite names its own Parameter that held inf/nan at
    ``start()``. Runs once per step, on its first overflow only: the
    reads (the enclosing Cells' inputs, the Parameter probes) share the
    batch's host copies. At L0 a backward or ``parameters_grad`` entry
    names the gradient w.r.t. the outputs that came in from outside
    (:func:`_gradient_entered`). None for L1 ``parameters_grad``
    entries or when nothing is found."""
    cell = hasattr(call, "ancestry")
    unit, outside = ("Cell", "the checked Cells") if cell else ("call", "the checked window")
    if getattr(call, "cells", False):  # a collective call checked at L0: the rest of the window is not
        outside = "the checked Cells"
    node, maker = call, None
    if kind == FORWARD:
        if cell and not all_finite((call.args, call.kwargs), cache):
            while node.parent is not None and not all_finite((node.parent.args, node.parent.kwargs), cache):
                node = node.parent
            maker = node.parent  # its inputs were finite: its own code made what ``node`` got
        name = node.name
        labelled = labelled_tensors(INPUT_ARGS, node.args) + labelled_tensors(INPUT_KWARGS, node.kwargs)
    elif kind == BACKWARD and not cell:
        name = call.backward_name
        labelled = labelled_tensors(INPUT, call.grad_outputs)
        if not getattr(call, "cells", False):  # an L0 collective keeps "the checked Cells"
            # a gradient no checked backward made: code outside the window, a jit region's backward (fresh
            # users' findings), or the sum MindSpore's autograd forms of the gradients of a tensor used more
            # than once (float16 40000 + 40000), which no API call does, or a Cell's own bprop returning a
            # tensor it made without a checked call (Tensor(np.full(shape, inf)): a hunt's finding)
            outside = ("the checked calls (by code outside the window, by the backward of a mindspore.jit "
                       "region, whose inside is not hooked, by a Cell's own bprop returning a tensor no checked "
                       "call made, or by MindSpore adding up the gradients of a tensor used more than once)")
    elif cell and kind in (BACKWARD, PARAMETERS_GRAD):
        return _gradient_entered(call.owner_calls if kind == PARAMETERS_GRAD else (call,), cache)
    else:
        return None
    sums = getattr(node, "param_sums", None) or {}
    copies = {id(before): parameter for _, before, _, parameter in getattr(node, "written", None) or ()}
    inside = getattr(node, "inside", None)
    if inside is not None:  # a nested call: its input was made inside the outer call by code not intercepted
        outside = f"the checked calls, inside {inside} (a constant or code no checked call ran)"
    for label, tensor in labelled:
        probe = sums.get(id(tensor))
        if probe is not None:
            bad_then = not cache.finite(probe)
            if not bad_then and cache.finite(tensor):
                continue
        elif cache.finite(tensor):
            continue
        else:
            bad_then = True
        if is_parameter(tensor) or id(tensor) in copies:  # an in-place call's input is its copy of the Parameter
            held = copies.get(id(tensor), tensor)
            parameter = written_name(held) if id(tensor) in copies else parameter_name(tensor)
            before_update = bool(getattr(node, "params_at_start", False)) and bad_then
            return _parameter_entry(name, label, parameter, held_at_start(node, held, cache) if before_update else None,
                                    before_update)
        if maker is not None:  # L0: made inside an enclosing Cell from finite inputs
            return _own_parameter(maker, cache, f"{label} of {name}")
        top = getattr(node, "top", None) if cell else None
        if top is not None and all_finite((top.args, top.kwargs), cache) and \
                not gradients_nonfinite(top, node.seq, cache):  # L0: the model's own construct made it
            held = _top_parameter(top, cache, f"{label} of {name}")
            if held is not None:  # unless one of its own Parameters already held inf/nan
                return held
            method, unit = own_code(top)
            return entered_object(name, input=label, source=SOURCE_OWN_CONSTRUCT,
                                  message=f"inf/nan started in {top.class_name}.{method} itself, between its "
                                          f"{unit}s: its inputs were finite and it handed {label} of {name} "
                                          f"inf/nan (code that is not a {unit}, such as a mask or a scale built "
                                          "there); use level L1 to see the API")
        return entered_object(name, input=label, source=SOURCE_OUTSIDE,
                              message=f"non-finite input entered at the first checked {unit}: {label} of {name}, "
                                      f"made outside {outside}" + _mask_note(cell, tensor, node, cache))
    if kind == FORWARD and cell:  # inputs finite: the Cell's own Parameters, probed at start()
        return _own_parameter(node, cache, None, ancestors=False)
    return None


def labelled_tensors(label: str, obj: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """(dump.json position, tensor) of every tensor in ``obj``, in order:
    ``input_args[0]``, ``input_args[1][0]``, ``input_kwargs.mask``."""
    if is_tensor(obj):
        return [(label, obj)]
    out: list[tuple[str, Any]] = []
    if depth > 4:
        return out
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            out.extend(labelled_tensors(f"{label}[{i}]", item, depth + 1))
    elif isinstance(obj, dict):
        for key, item in obj.items():
            out.extend(labelled_tensors(f"{label}.{key}", item, depth + 1))
    return out


def _own_parameter(cell_call: Any, cache: HostCache, reached: Optional[str], ancestors: bool = True) -> Optional[dict]:
    """L0: the first Parameter of ``cell_call``'s Cell (then of its enclosing
    Cells, with ``ancestors``) that held inf/nan at ``start()`` or, when an
    update in the window came before the call, at the call (its probe was
    taken again then: ``params_at_start`` false), as an ``entered``
    description (``reached``: the input it became, e.g. the
    flattened weights an ``nn.LSTM`` hands its inner Cell); None when they
    were all finite (the Cell's own code then made the value: it is judged
    an origin). The model given to ``start()`` is not hooked and has no
    probes: its own Parameters are read as they are when it is judged
    (before any optimizer step of the window)."""
    node = cell_call
    while node is not None:
        # the model given to start() has no probes (it is not hooked): its Parameters are read as they are
        values = node.param_probe if node.param_probe is not None else list(node.parameters.values())
        for param, value in zip(node.parameters.values(), values):
            if not cache.finite(value):
                before_update = bool(getattr(node, "params_at_start", True))
                entry = _parameter_entry(node.name, None, parameter_name(param),
                                         held_at_start(node, param, cache) if before_update else None, before_update)
                if reached:
                    entry[MESSAGE] += f" (it reached {reached})"
                return entry
        node = node.parent if ancestors else None
    return None


def _mask_note(cell: bool, tensor: Any, node: Any, cache: HostCache) -> str:
    """L0: what to add when the input that came in holds -inf only (a mask
    made by design, which L0 cannot tell from an overflow), no input holds
    NaN or +inf, and the Cell's output holds NaN or +inf, which the -inf
    alone does not explain: that may have started inside the Cell. ""
    otherwise (and on any fault)."""
    try:
        if not cell or not only_negative_infinity(tensor, cache):
            return ""
        if not all(cache.finite(t) or only_negative_infinity(t, cache) for t in iter_tensors((node.args, node.kwargs))):
            return ""  # NaN or +inf came in with another input: nothing says it started inside
        made = [t for t in iter_tensors(node.output) if not cache.finite(t)]
        if not made or all(only_negative_infinity(t, cache) for t in made):
            return ""
    except Exception:
        return ""
    return ("; it holds -inf only (a mask made by design?) while the output holds NaN or +inf, which may have "
            f"started inside {node.name}: level L1 names the call")


def top_parameters_finite(top: Any, cache: HostCache) -> bool:
    """L0: the own Parameters of the model given to ``start()`` (``top``, a
    ``TopCall``) were finite when it was called (its probes) and are now:
    its own ``construct`` uses them as inputs, so when one is not, an
    overflow in that ``construct`` is carried, never an origin. A frozen
    Parameter (``requires_grad=False``, which no optimizer updates) whose
    only non-finite values are -inf is a mask made by design (a causal
    mask) and counts as finite, now and in its probe (which holds no sign:
    a frozen mask was one at the call too); a trainable one holding -inf
    was written so by an update. One finite at the call that an update
    the tool saw during the call wrote (``top.updated``: a step Cell's
    optimizer writing what its own code scaled to inf) counts as finite:
    its value now is a result, not an input."""
    probes = getattr(top, "param_probe", None) or [None] * len(top.params)
    for param, probe in zip(top.params.values(), probes):
        if (probe is None or cache.finite(probe)) and (cache.finite(param) or
                                                       (probe is not None and getattr(top, "updated", False))):
            continue
        if getattr(param, "requires_grad", True) or not only_negative_infinity(param, cache):
            return False
    return True


def _top_parameter(top: Any, cache: HostCache, reached: str) -> Optional[dict]:
    """L0: the ``entered`` description of the first own Parameter of the
    model given to ``start()`` that held inf/nan when it was called (or
    holds it now), as :func:`_own_parameter` gives it for a Cell; None when
    they were all finite or it has none."""
    if not top.params or not top.prefix or top_parameters_finite(top, cache):
        return None
    call = top.as_cell_call("")
    found = _own_parameter(call, cache, reached, ancestors=False)
    if found is None:  # finite at the call, not now: its own code wrote it (read as it is now)
        call.param_probe, call.params_at_start = None, False
        found = _own_parameter(call, cache, reached, ancestors=False)
    return found


def _gradient_entered(calls: Any, cache: HostCache) -> Optional[dict]:
    """L0: where a non-finite gradient w.r.t. a Cell's outputs came in, for
    a step whose first overflowing entry is a backward or
    ``parameters_grad`` entry fed with it (``calls``: the Cell calls it is
    computed from). The outermost enclosing Cell whose output gradient was
    not finite either is named (its ``input`` in dump.json's backward
    entry): the gradient came from code outside every checked Cell, the
    loss when that Cell's output is the model's output. None when the
    gradients w.r.t. the outputs were finite, or when an enclosing Cell got
    finite ones (its own backward code made the value: it is the origin)."""
    node = next((c for c in calls if not all_finite(c.grad_outputs, cache)), None)
    if node is None:
        return None
    while node.parent is not None and not all_finite(node.parent.grad_outputs, cache):
        node = node.parent
    if node.parent is not None:
        return None
    top = getattr(node, "top", None)
    if getattr(top, "unhooked_child", False):  # a Cell in the model took tensors with no hook: it may have made it
        return None
    if _top_made(top, cache) or _consumer_made(top, node, cache):  # backward_maker names the model, the loss Cell
        return None
    label = next((lab for lab, t in labelled_tensors(INPUT, node.grad_outputs) if not cache.finite(t)), INPUT)
    name = node.backward_name
    produced = [] if top is None else list(iter_tensors(top.output))
    # the model's output: the loss made it, unless part of that output got no hook (a dict or list), so the
    # gradient w.r.t. it is not known and the model's own code may have made it (a fresh user's finding)
    if top is not None and not getattr(top, "outputs_unhooked", False) and \
            any(t is o for t in iter_tensors(node.output) for o in produced):
        what = (f"(the gradient w.r.t. the model's output, {top.class_name}), made outside the checked Cells: by "
                "the loss or other code that used the model's output")
    else:
        what = ("(the gradient w.r.t. that Cell's output), made outside the checked Cells: by the loss or other "
                "code after the model, or by the model's own code between its sub-Cells")
    return entered_object(name, input=label, source=SOURCE_OUTSIDE,
                          message=f"non-finite gradient entered at the first checked Cell: {label} of {name} {what}")


def backward_maker(calls: Any, cache: HostCache) -> Optional[tuple[Any, Any]]:
    """L0: the enclosing Cell whose own code made a non-finite gradient in
    the backward pass, for a step whose first overflowing entry is a
    backward or ``parameters_grad`` entry fed with it (``calls``: the Cell
    calls it is computed from, as for :func:`_gradient_entered`).

    Walking up from the call whose gradient w.r.t. its outputs was not
    finite, through enclosing Cells whose output gradients were not finite
    either, the first enclosing Cell whose output gradient arrived finite
    made the value with code of its own between its sub-Cells (``sqrt``'s
    backward at 0, a float16 gradient sum): a sub-Cell whose own backward
    made it would be an origin judged before it. Its own backward entry
    may come after the carried ones, or never be judged non-finite (a
    Cell fed with data gets no input gradient), so the caller records it
    first. Returns ``(maker, handed)``: that Cell's call and the call of
    its sub-Cell (or deeper) it handed the gradient to; None when there
    is none (the gradient came from outside every checked Cell)."""
    node = next((c for c in calls if c.grad_outputs and not all_finite(c.grad_outputs, cache)), None)
    if node is None:
        return None
    while node.parent is not None and not all_finite(node.parent.grad_outputs, cache):
        node = node.parent
    maker = node.parent
    if maker is None and _top_made(getattr(node, "top", None), cache):
        maker = node.top.backward_call()  # the model given to start(), whose output gradient was finite
    elif maker is None and (consumer := _consumer_made(getattr(node, "top", None), node, cache)) is not None:
        maker = consumer.backward_call()  # a loss Cell given to start() with the model took its output
    if maker is None or not maker.grad_outputs:  # its output gradient never arrived: nothing to compare
        return None
    if getattr(maker, "unhooked_child", False):  # a sub-Cell whose inputs got no hook may have made it: not known
        return None
    if getattr(maker, "outputs_unhooked", False):
        return None  # a tensor among its outputs got no hook: the gradient that came in is not all known
    return maker, node


def _top_made(top: Any, cache: HostCache) -> bool:
    """L0: the model given to ``start()`` (a ``TopCall``, or None) got a
    finite gradient w.r.t. its outputs, all of them hooked, and is named
    (``prefix``): a sub-Cell of it, with no enclosing hooked Cell, that got
    an inf/nan one got it from the model's own backward code."""
    return (top is not None and bool(top.prefix) and bool(top.grad_outputs) and not top.outputs_unhooked
            and not top.unhooked_child and all_finite(top.grad_outputs, cache))


def _consumer_made(top: Any, node: Any, cache: HostCache) -> Optional[Any]:
    """L0, ``start([net, loss_cell])``: the call of another model given to
    ``start()`` in the same step (``TopCall.peers``) that took ``top``'s
    output as an argument (the object the caller got) and whose own output
    gradient was finite, when the gradient w.r.t. ``top``'s output, which
    ``node`` (a sub-Cell returning it) got, was not: that model's own
    backward code made it (a fresh user's finding: the loss Cell's
    ``sqrt`` at 0 was said to come from outside the checked Cells). None
    otherwise."""
    if top is None or not top.grad_outputs or top.outputs_unhooked or all_finite(top.grad_outputs, cache):
        return None
    given = [t for t in iter_tensors(top.hooked if top.hooked is not None else top.output)]
    if not any(t is o for t in iter_tensors(node.output) for o in iter_tensors(top.output)):
        return None
    for other in top.peers:
        if other is top or other.step != top.step or not _top_made(other, cache):
            continue
        if any(a is g for a in iter_tensors([other.args, other.kwargs]) for g in given):
            return other
    return None


def own_backward_message(maker: Any, handed: Any) -> str:
    """The record's message for :func:`backward_maker`'s Cell."""
    method, unit = own_code(maker)
    return (f"inf/nan started in {maker.prefix.rsplit('.', 1)[-1]}.{method} itself, in the backward pass between "
            f"its {unit}s: the gradient w.r.t. its output was finite and the one it handed "
            f"{handed.backward_name} was not (code that is not a {unit}, such as the backward of sqrt at 0); use "
            "level L1 to see the API")


def held_at_start(node: Any, param: Any, cache: HostCache) -> Optional[bool]:
    """Whether ``param`` held inf/nan at ``start()``: True when its value
    then is known and not finite, False when it is known and finite, None
    when it was not read then. At L0 the value at ``start()`` is the
    window's ``start_values`` entry (its probe at ``start()``: a hooked
    Cell's own Parameters and the models' are probed then): a Parameter that
    is not the model's, first seen as a Cell's argument, has none, since
    code no Cell check sees (the user's loop, the model's own
    ``construct``) may have written it after ``start()`` (a review's
    finding: a temperature the user overflowed with ``ops.assign`` was
    said to have held inf at ``start()``). An entry without
    ``start_values`` (L1, whose probe of a Parameter at its first use
    before any update is its value at ``start()``: every write to it is a
    checked call) is True."""
    starts = getattr(node, "start_values", None)
    if starts is None:
        return True
    found = starts.get(id(param))
    if found is None or found[0] is not param:
        return None
    return not cache.finite(found[1])


#: what writes a Parameter that no L0 record names as the writer
UNSEEN_WRITERS = ("code no Cell check sees, such as the training loop or a Cell's own construct, or a Cell given it "
                  "as an argument, whose writes L0 sees only into a Parameter argument of at most 1,048,576 elements, "
                  "not nested deeper than one tuple")


def _parameter_entry(name: str, label: Optional[str], parameter: str, at_start: Optional[bool],
                     before_update: bool) -> dict:
    """The ``entered`` description of a Parameter that held inf/nan when
    first used by ``label`` of ``name``: ``at_start`` as
    :func:`held_at_start` gives it, ``before_update`` False when an update
    in the window (a backward pass, an optimizer step, an in-place write)
    came before that use."""
    used = f"{label} of {name}" if label else name
    if not before_update:
        message = (f"Parameter {parameter} held inf/nan when first used after an update in the window, by {used} "
                   "(a backward pass, an optimizer step or an in-place write came before, so it may have been "
                   "finite at start())")
    elif at_start:
        message = f"Parameter {parameter} already held inf/nan at start(); first used by {used}"
    elif at_start is None:
        message = (f"Parameter {parameter} held inf/nan when first used, by {used}; it is not the model's, so its "
                   f"value at start() was not read, and something may have written it since ({UNSEEN_WRITERS}); "
                   "use level L1 to see the API")
    else:
        message = (f"Parameter {parameter} was finite at start() and held inf/nan when first used, by {used}: "
                   f"something wrote it in between ({UNSEEN_WRITERS}); use level L1 to see the API")
    return entered_object(name, input=label, source=SOURCE_PARAMETER, parameter=parameter, at_start=bool(at_start),
                          message=message)


def all_finite(obj: Any, cache: HostCache) -> bool:
    """Every floating tensor in ``obj`` is finite (host copies shared through ``cache``)."""
    return all(cache.finite(t) for t in iter_tensors(obj))


# -- L0: an overflow in the top Cell's own code ------------------------------------
def top_overflow(call: Any, top: Any, raw_origin: bool, cache: HostCache) -> bool:
    """An L0 forward entry inside a call of the top Cell overflowed: True
    when the logger should now say the overflow started in the top Cell's
    own code (:func:`top_hint`; at most once per top call). A carried entry
    (its inputs were not finite) with no origin before it in that call got
    them from the top Cell's own code when no enclosing hooked Cell got
    finite inputs (else that Cell made them itself) and the top Cell's own
    inputs were finite: its arguments, its own Parameters
    (:func:`top_parameters_finite`; when one held inf/nan, the entry's
    ``entered`` names it) and the gradients a computation inside it gave
    its sub-Cells before the call (:func:`gradients_nonfinite`: a
    ``TrainOneStepCell`` hands its optimizer the gradients its sub-Cells'
    backward made or carried). Reads only on an overflow."""
    if raw_origin:
        top.child_origin = True
        return False
    top.child_overflow = True
    if top.child_origin or top.hinted:
        return False
    node = call.parent
    while node is not None:
        if all_finite((node.args, node.kwargs), cache):
            return False  # that Cell's own code made them (it is the origin)
        node = node.parent
    top.hinted = True
    # its own Parameters are inputs of its construct too: one that held inf/nan brought it (said by ``entered``),
    # and so are the gradients a computation over its sub-Cells gave it before this call (a TrainOneStepCell's)
    return all_finite((top.args, top.kwargs), cache) and top_parameters_finite(top, cache) and \
        not gradients_nonfinite(top, call.seq, cache)


def enclosing_maker(call: Any, cache: HostCache) -> Any:
    """An L0 forward entry got inf/nan (its inputs were not finite): the
    nearest enclosing Cell call (``call.parent`` upwards, a ``CellCall``) whose
    inputs and own Parameters were finite and in which nothing came in
    through a collective or started in another sub-Cell, i.e. the Cell
    whose own ``construct`` made the inf/nan between its sub-Cells (an
    origin, whatever was recorded before it in the step); None when there
    is none (the model given to ``start()`` is judged by
    :func:`top_overflow`). Reads only on an overflow."""
    node = getattr(call, "parent", None)
    while node is not None:
        if all_finite((node.args, node.kwargs), cache):
            if getattr(node, "received_inside", None) is not None or getattr(node, "started_inside", False) \
                    or node.child_overflow:
                return None
            probes = node.param_probe or ()
            if all(cache.finite(t) for t in probes) and all_finite(list(node.parameters.values()), cache):
                return node
            return None
        node = node.parent
    return None


def top_made_gradient(kind: str, call: Any, cache: HostCache) -> Any:
    """An L0 backward or ``parameters_grad`` entry carried an overflow in
    the gradient w.r.t. the outputs, and it is the step's first: the call
    of the model given to ``start()`` (a ``TopCall``) whose own
    ``construct`` asked for that gradient with inf/nan in it (a step Cell
    handing ``GradOperation(sens_param=True)`` a sensitivity it scaled to
    inf), when the outermost Cell call enclosing the entry got a
    non-finite gradient w.r.t. its outputs while that model's call ran
    (``CellCall.grad_in_top``) and the model's arguments and own
    Parameters were finite; else None. Reads only on an overflow."""
    node = call.owner if kind == PARAMETERS_GRAD else call
    while node is not None and node.parent is not None:
        node = node.parent
    top = getattr(node, "top", None)
    if top is None or not top.prefix or top.released or not getattr(node, "grad_in_top", False):
        return None
    if all_finite(node.grad_outputs, cache) or not all_finite((top.args, top.kwargs), cache):
        return None
    return top if top_parameters_finite(top, cache) else None


def top_output_overflowed(top: Any, cache: HostCache) -> bool:
    """After every entry inside the top Cell's call: True (once) when its
    output is not finite although its inputs were, no hooked Cell in it
    overflowed and no gradient computed inside it over its sub-Cells held
    inf/nan (:func:`gradients_nonfinite`: a step Cell returning them)."""
    if top.child_overflow or top.child_origin or top.hinted:
        return False
    if not all_finite(top.output, cache) and all_finite((top.args, top.kwargs), cache) and \
            not gradients_nonfinite(top, None, cache):
        top.hinted = True
        return True
    return False


def top_input_overflowed(top: Any, cache: HostCache) -> bool:
    """After every entry inside the top Cell's call: True (once) when its
    inputs held inf/nan, so did its output, and no hooked Cell in it
    overflowed (a leaf model, such as one ``nn.Dense`` given to
    ``start()``): the model is where the overflow came in (a NaN in the
    batch), and it is recorded, carried. A model with sub-Cells leaves that
    to the first of them that got the inf/nan."""
    if top.child_overflow or top.child_origin or top.hinted:
        return False
    if not all_finite(top.output, cache) and not all_finite((top.args, top.kwargs), cache):
        top.hinted = True
        return True
    return False


def gradients_nonfinite(top: Any, before: Optional[int], cache: HostCache) -> bool:
    """L0: a gradient computation inside the own ``construct`` of the model
    given to ``start()`` (``top``, a ``TopCall``: ``nn.TrainOneStepCell``'s
    ``GradOperation`` over its network) gave its sub-Cells' calls gradients
    holding inf/nan (``TopCall.gradients``), before the Cell call whose
    ``seq`` is ``before`` (None: at any time in the model's call). The
    gradients it hands on (to its ``grad_reducer``, its optimizer) or
    returns then carry what the sub-Cells' backward made or carried: its
    own code did not make that. Reads only on an overflow."""
    return any((before is None or seq < before) and not all_finite(grads, cache)
               for seq, grads in getattr(top, "gradients", ()))


def own_construct_message(top: Any) -> str:
    """The record's message when a model's own ``construct`` made the
    overflow (its output not finite, its inputs finite, no sub-Cell in it
    overflowed)."""
    return (f"inf/nan started in {top.class_name}.construct itself, not in a sub-Cell: its inputs were finite "
            "and its output is not (code that is not a sub-Cell made it); use level L1 to see the API")


def own_code(top: Any) -> tuple[str, str]:
    """(the method that holds a model's own code, what its parts are
    called): ``("construct", "sub-Cell")``, or ``("forward", "sub-Module")``
    for a ``torch.nn.Module`` of the MSAdapter layer (prefix ``Module.``)."""
    if str(getattr(top, "prefix", "")).startswith("Module."):
        return "forward", "sub-Module"
    return "construct", "sub-Cell"


def own_construct_between_message(top: Any) -> str:
    """The model's own record's message when its ``construct`` made the
    inf/nan between its sub-Cells (a sub-Cell got it from finite inputs)."""
    method, unit = own_code(top)
    return (f"inf/nan started in {top.class_name}.{method} itself, between its {unit}s: its inputs were finite "
            f"and it handed a {unit} inf/nan (code that is not a {unit}, such as a mask or a scale built there); "
            "use level L1 to see the API")


def top_hint(top: Any) -> str:
    """The warning that an overflow started in the top Cell's own code."""
    method, unit = own_code(top)
    return (f"probe_runtime: overflow inside {top.class_name}.{method} itself (not in a {unit}): "
            "use level L1 to see the API")
