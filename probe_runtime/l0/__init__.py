"""L0 (Cell level): the sub-Cells of a model, hooked and handed to the checker.

``CellHooks.install(model)`` hooks every sub-Cell of the model given to
``start()``: a forward entry per Cell call, a backward entry per call
(through ``ops.HookBackward``) and a ``parameters_grad`` entry per Cell
and step. No hook reads a tensor or waits for the device; an error in a
hook never reaches the training.

Modules: :mod:`.cell_hooks` (``CellHooks``: installs and removes the
hooks), :mod:`.plan` (which Cells, built once per model), :mod:`.calls`
(the entries: ``CellCall``, ``TopCall``, ``ParamGradCall``),
:mod:`.mutations` (in-place writes between the Cells resolve the pending
checks first) and :mod:`.state_sweep` (the state no Cell check reads). For users:
``docs/l0.md``; the design and its costs: ``docs/runtime-design.md``.
"""
