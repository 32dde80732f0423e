"""L0 (Cell level): the sub-Cells of a model, hooked and handed to the checker.

Modules: :mod:`.cell_hooks` (``CellHooks``: installs and removes the
hooks), :mod:`.plan` (which Cells, built once per model) and :mod:`.calls`
(the entries: ``CellCall``, ``TopCall``, ``ParamGradCall``).

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
  output) to the checker's pending queue and, under grad, passes the
  floating outputs through one more ``ops.HookBackward`` for the gradients
  w.r.t. the outputs (``Tensor.register_hook`` on a fresh output waits for
  the asynchronous pipeline, about 2 ms here, and a tensor carrying a Python
  hook breaks ``mindspore.jit`` code it flows into: see
  ``l1/__init__.py``). Tensors
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
the checker (see ``check/queue.py`` for what is checked when); nothing in a hook
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
