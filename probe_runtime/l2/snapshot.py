"""The state a compiled step changes, copied to reused host buffers
before the step and put back before its replay.

A compiled training step (a ``TrainOneStepCell``, the network of
``Model.train``) updates its Parameters and the optimizer's state (moments,
``global_step``) in place; all of them are Parameters of the Cell called.
:class:`StateSnapshot` copies them into host buffers allocated once (the
same buffers every step) and writes them back with ``ops.assign``: after a
compiled graph ran, ``Parameter.set_data`` no longer reaches the graph's
copy (measured on MindSpore 2.7.0 and 2.10.0, CPU).

Example::

    snapshot = StateSnapshot(train_cell)
    snapshot.take()
    loss = train_cell(x, y)
    if snapshot.nonfinite():      # ["fc1.weight", ...]: Parameters holding inf/nan now
        snapshot.restore()        # the values before the step
"""
from __future__ import annotations

from typing import Any

import numpy as np


class StateSnapshot:
    """Host copies of the floating Parameters of ``cell`` (and every
    Parameter, integer ones too, so a step counter is put back).

    Args:
        cell: a ``mindspore.nn.Cell``.

    Attributes:
        skipped: names of Parameters that cannot be copied to the host
            (a dtype numpy lacks, such as bfloat16); not restored.
    """

    def __init__(self, cell: Any) -> None:
        self._entries: list[tuple[str, Any, np.ndarray]] = []
        self.skipped: list[str] = []
        for name, parameter in cell.parameters_and_names():
            try:
                host = parameter.asnumpy()
            except Exception:
                self.skipped.append(name)
                continue
            self._entries.append((name, parameter, np.empty_like(host)))

    def __len__(self) -> int:
        return len(self._entries)

    def parameters(self) -> list[tuple[str, Any]]:
        """(name, Parameter) of each Parameter copied."""
        return [(name, parameter) for name, parameter, _ in self._entries]

    def take(self) -> None:
        """Copy every Parameter's current value into its buffer."""
        for _, parameter, buffer in self._entries:
            np.copyto(buffer, parameter.asnumpy())

    def nonfinite(self) -> list[str]:
        """Names of the floating Parameters holding inf/nan now."""
        found = []
        for name, parameter, buffer in self._entries:
            if buffer.dtype.kind == "f" and not np.isfinite(parameter.asnumpy()).all():
                found.append(name)
        return found

    def taken_nonfinite(self) -> list[str]:
        """Names of the Parameters that held inf/nan when :meth:`take` ran."""
        return [name for name, _, buffer in self._entries
                if buffer.dtype.kind == "f" and not np.isfinite(buffer).all()]

    def restore(self) -> None:
        """Put the values of the last :meth:`take` back (``ops.assign``)."""
        from mindspore import Tensor, ops

        for _, parameter, buffer in self._entries:
            ops.assign(parameter, Tensor(buffer.copy()))
