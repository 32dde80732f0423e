"""What L0 (Cell hooks), L1 (API wrappers) and the sentinel share.

* :mod:`.guard`: the per-thread re-entrancy guard (``tool_section``,
  ``inside_tool``);
* :mod:`.backward`: passing tensors through one ``ops.HookBackward`` to get
  their gradients (``through_hook``, ``release``; ``HookMaker`` reuses one
  instance while the process runs synchronously);
* :mod:`.frames`: the caller's frames and the user's ``file:line``;
* :mod:`.reach`: the Cells and Parameters a computation or a ``jit``
  region can reach (what a replay puts back, what a region may write);
* :mod:`.patching`: attribute patches applied and removed as one handle
  (``Patches``, ``MISSING``, ``patched_module_class``).

Nothing here knows an entry, a verdict or a level: this package imports no
other part of ``probe_runtime``.
"""
