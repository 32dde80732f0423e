"""Resolving pending checks before an optimizer updates Parameters (L0 and L1).

Example::

    watch = OptimizerWatch(checker, on_update=forget_probes)
    watch.install()       # nn.Optimizer.__call__ and Parameter.set_data resolve the queue first
    ...
    watch.uninstall()
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Optional

from ..hooks.frames import capture_frames
from ..hooks.guard import GUARD
from ..hooks.patching import Patches


class OptimizerWatch:
    """Resolves pending checks before Parameters are updated in place.

    An optimizer step changes Parameters in place, usually inside a
    ``construct`` compiled with ``mindspore.jit`` (``nn.SGD``, ``nn.Adam``),
    which no wrapper sees; ``Parameter.set_data`` (its own method, not
    ``Tensor.set_data``, which L1 wraps) replaces a Parameter's values from
    Python. Pending entries hold references, not copies: an entry whose
    tensor is a Parameter, or a view of one (``Tensor.view`` on an LSTM's
    weights), would otherwise be judged, and described, on the updated
    memory. So while installed, ``__call__`` of ``nn.Optimizer`` and of
    ``mindspore.experimental.optim.Optimizer`` (what ``mindspore.mint.optim``
    optimizers derive from; set on those base classes, which every optimizer
    Cell inherits) and ``Parameter.set_data`` first call ``sink.before_update()`` and then
    ``on_update`` (Parameters may differ from now on). Both are put back by
    :meth:`uninstall`; at both levels. Nothing is copied or held: the queue
    is resolved early, once per update, instead of at the next batch or
    ``stop()``.

    Args:
        sink: has ``live``, ``before_update()`` and ``on_error``.
        on_update: called after ``before_update`` (e.g. forget the Parameter
            probes of the window).
        before_step, after_step: called before an optimizer call (before
            ``before_update``) and once it returned, with the optimizer, its
            positional arguments (the gradients) and the caller's frames
            (the gradient watch judges the Parameters then); None: nothing
            is called. Never with the guard held: what they run is checked.
    """

    def __init__(self, sink: Any, on_update: Callable[[], None] = lambda: None,
                 before_step: Optional[Callable[[Any, tuple, tuple], None]] = None,
                 after_step: Optional[Callable[[Any, tuple, tuple], None]] = None) -> None:
        self.sink = sink
        self.on_update = on_update
        self.before_step = before_step
        self.after_step = after_step
        self._patches = Patches()

    @property
    def installed(self) -> bool:
        """True while the patches are in place."""
        return bool(self._patches)

    def install(self, set_data: bool = True) -> None:
        """Patch ``nn.Optimizer.__call__`` and (``set_data``)
        ``Parameter.set_data`` (no-op when already installed)."""
        if self._patches:
            return
        import mindspore
        from mindspore import nn

        targets = [(nn.Optimizer, "__call__")] + ([(mindspore.Parameter, "set_data")] if set_data else [])
        try:  # the optimizers of mindspore.mint.optim (torch-style) derive from this one, not nn.Optimizer
            from mindspore.experimental.optim import Optimizer as TorchStyleOptimizer

            targets.append((TorchStyleOptimizer, "__call__"))
        except Exception:  # pragma: no cover - other MindSpore versions
            pass
        for owner, attr in targets:
            original = getattr(owner, attr, None)
            if original is None:  # pragma: no cover - other MindSpore layouts
                continue
            self._patches.apply([(owner, attr, self._wrap(original, attr))])

    def _wrap(self, original: Callable, what: str) -> Callable:
        sink, on_update = self.sink, self.on_update
        before_step, after_step = (self.before_step, self.after_step) if what == "__call__" else (None, None)

        @functools.wraps(original)
        def wrapper(owner: Any, *args: Any, **kwargs: Any) -> Any:
            frames = None
            if before_step is not None and not GUARD.depth:
                frames = capture_frames(sys._getframe(1))
                try:
                    before_step(owner, args, frames)
                except Exception as err:
                    sink.on_error("before an optimizer step", err)
            if not GUARD.depth and sink.live:
                GUARD.depth += 1
                try:
                    sink.before_update()
                    on_update()
                except Exception as err:
                    sink.on_error(f"before a Parameter update ({what})", err)
                finally:
                    GUARD.depth -= 1
            result = original(owner, *args, **kwargs)
            if after_step is not None and not GUARD.depth:
                try:
                    after_step(owner, args, frames or capture_frames(sys._getframe(1)))
                except Exception as err:
                    sink.on_error("after an optimizer step", err)
            return result

        wrapper.__probe_original__ = original  # type: ignore[attr-defined]
        return wrapper

    def uninstall(self) -> None:
        """Put the patched attributes back (safe to call twice)."""
        self._patches.remove()
