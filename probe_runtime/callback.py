"""``OverflowCheckCallback``: the debugger around each step of ``Model.train``.

``mindspore.train.Model.train`` runs the steps itself, so the
``start()``/``stop()``/``step()`` calls go into a ``mindspore.train.Callback``
(msprobe's is ``MsprobeStep``; ``MsprobeStep`` here is the same class)::

    debugger = PrecisionDebugger(config_path="config.json")
    model = Model(net, loss_fn, optimizer)
    model.train(epochs, dataset, callbacks=[OverflowCheckCallback(debugger, model=net)],
                dataset_sink_mode=False)

At each step begin it calls ``debugger.start(model)``, at each step end
``debugger.stop()`` then ``debugger.step()``, and at train end ``stop()``
again. With ``dataset_sink_mode=True`` the steps run as one graph on the
device and no step callback sees inside them: nothing is checked then.
"""
from __future__ import annotations

from typing import Any, Optional

from mindspore.train import Callback

from .errors import UsageError


class OverflowCheckCallback(Callback):
    """Start, stop and step ``debugger`` around every training step.

    Args:
        debugger: a ``PrecisionDebugger``.
        model: level L0: the network whose Cells are checked (what
            ``debugger.start(model)`` gets; usually the ``net`` given to
            ``Model``). Level L1 does not need it.

    Raises:
        UsageError: level L0 without ``model`` (at construction, before
            training starts).
    """

    def __init__(self, debugger: Any, model: Optional[Any] = None) -> None:
        super().__init__()
        if getattr(debugger, "level", None) == "L0" and model is None:
            raise UsageError("level L0 checks the Cells of a model: pass it, "
                             "OverflowCheckCallback(debugger, model=net)")
        self.debugger = debugger
        self.model = model

    def on_train_step_begin(self, run_context: Any) -> None:
        self.debugger.start(self.model)

    def on_train_step_end(self, run_context: Any) -> None:
        self.debugger.stop()
        self.debugger.step()

    def on_train_end(self, run_context: Any) -> None:
        self.debugger.stop()


#: msprobe's name for the same callback (``msprobe.mindspore.MsprobeStep``).
MsprobeStep = OverflowCheckCallback
