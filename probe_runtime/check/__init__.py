"""The checker: entries queued, judged, traced to their origin and recorded.

Modules: :mod:`.queue` (``Checker``: the pending queue and its resolution
points), :mod:`.verdict` (finiteness, origin, statistics, host copies),
:mod:`.provenance` (origin or carried, and where an overflow came in),
:mod:`.probes` (Parameter probes) and :mod:`.records` (records handed to
the writer).

The interception hands every call on at once, but reading a tensor's values
waits for the device (about 2 ms here against about 50 us per op), so calls
are not checked one by one. Each call (and, later, its backward) goes into
a pending queue holding references to its tensors; the queue is resolved in
one batch (one wait for the device, then numpy on the host):

* after the 1st, 3rd, 7th, 15th ... call of a ``start()`` window: the
  batch doubles from 1 up to ``batch_cap`` (64) calls, so an overflow early
  in a step is on disk at once and a long step pays about
  ``log2(batch_cap) + calls / batch_cap`` waits. With ``carry_batch``
  (what ``PrecisionDebugger`` uses, both levels) the batch size is not
  reset by ``start()`` but keeps growing over the run: a wait inside the
  forward pass stalls the device (a reset per step cost L1 about 1.3-1.8x
  in step time on the benchmark models), so from the first few steps on a
  step is resolved every ``batch_cap`` calls and at ``stop()``. The queue
  holds references to the tensors of at most ``batch_cap`` calls (inputs,
  outputs, and the gradients of those that ran backward), plus what waits
  for a backward pass;
* before an intercepted call that changes a tensor in place (``add_``,
  ``Assign`` and other side-effect primitives, ``set_data``,
  ``assign_value``, ``__setitem__``) when a pending entry refers to that
  tensor, the tensor is a Parameter (pending entries may hold views of
  it), or the window is synchronous (a view cannot be told apart cheaply;
  resolving there costs no extra wait), so every entry is judged on the
  values it really saw (the in-place call's own inputs are copied on the
  device before it runs). In an asynchronous window (not CPU) a Parameter
  target costs one wait per such call: at L1 that includes every training
  ``BatchNorm`` (it updates its moving statistics in place). Not covered:
  at L0 the Tensor methods are not wrapped, so an in-place write by the
  model's own code to a tensor a pending Cell entry holds (other than the
  Parameter updates below) is not seen;
* before every optimizer call (``nn.Optimizer``, ``mindspore.mint.optim``)
  and ``Parameter.set_data`` (``l1.optimizer.OptimizerWatch``): an
  optimizer writes Parameters in place inside compiled code no wrapper sees,
  and pending entries may hold Parameters or views of them (``Tensor.view``
  of an LSTM's weights): resolved first, they are judged and described on
  the values of the call, not on the updated memory;
* at ``stop()``, ``step()`` and interpreter exit.

What is held: references to the tensors of at most ``batch_cap`` calls (and
the gradients of those waiting for a backward pass) until the next of these
points, never copies; host copies live only while one batch is resolved.
Verdicts and statistics therefore describe the values at the call as long
as nothing the tool does not see writes that memory before the next
resolution point (a Parameter found changed so is logged once, and the
entry is judged carried).

Where it came in: the first overflowing entry of a step that is not an
origin gets ``entered`` in overflow.json (:meth:`Monitor._entered`): the
non-finite input no checked call made (the data batch, a tensor made before
``start()``, code not checked; at L0 also a gradient w.r.t. a Cell's
outputs that the loss or other code outside every Cell made) or the
Parameter that already held inf/nan at ``start()``.

Backward entries are queued when their first gradient arrives and judged at
the next resolution point after their input gradients arrived (never inside
MindSpore's backward pass itself); a backward pass therefore lands on disk
at the next forward call, ``stop()`` or ``step()``.

L0 (Cell level, ``l0/``) uses the same queue: a Cell's forward entry is
queued when its forward hook fires (inner Cells before their parents), its
backward entry when the gradients w.r.t. its inputs arrive (inner Cells
first again); backward entries that never get input gradients (a Cell fed
only with data) and have output gradients are judged at ``stop()``/
``step()``, after the rest, latest-started Cell first. Parameter gradients
(``<Cell>.parameters_grad``) are queued when the first one of the Cell
arrives. A Cell entry is an origin only when no Cell called inside it was
an origin in the same pass (forward or backward): the innermost Cell that
produced the overflow is the origin, its parents carry it. A
``parameters_grad`` entry is an origin when the gradients w.r.t. the Cell's
outputs were finite. A Cell forward entry whose output overflowed from
finite inputs is not an origin either when the Cell's own Parameters held
inf/nan when it was called (probed at ``start()`` and again at each Cell's
next call after an optimizer step or ``Parameter.set_data`` in the window,
read only in that case) or hold it when the entry is checked. Cell forward records also describe those Parameters
(``parameters``) with the values they hold when the entry is resolved,
which is before any ``nn.Optimizer`` step or ``Parameter.set_data`` (see
the resolution points above).

Backward entries (both levels) and ``parameters_grad`` entries are origins
only when, besides the rules above, the forward call they are computed from
had finite inputs and outputs (and, for a Cell, finite own Parameters at
``start()``): NaN weights give NaN gradients from a finite incoming
gradient, and that overflow is carried, not started. The forward entry's
verdict is kept on the call (``forward_finite``) when it is judged, so
this costs no extra read. At L0 the models given to ``start()`` are not
recorded but their calls are queued too (``on_top``): when an overflow
starts in their own ``construct`` and in no hooked Cell, the logger says so
once (see ``_top_overflow``).

Each record found is written (see ``writer.py``) before the call that
resolved the batch returns to the training script. After ``overflow_nums``
records nothing more is queued and ``on_exhausted`` removes the patches.
Errors inside the tool are logged once each on the ``probe_runtime`` logger;
a write failure, or too many errors, turns detection off; training goes on.
"""
