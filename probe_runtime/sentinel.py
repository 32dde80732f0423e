"""Sentinel checks: a cheap per-step watch that turns on exact checks.

Exact checks (the default; ``interception.py`` at L1, ``cells.py`` at L0)
judge every input and output of every call, forward and backward, and cost
1.3-2.4x a float32 step on the CPU benchmark models even in a synchronous
process (``benchmarks/runtime_parts.py``: the forward path alone, with no
backward entry at all, is still 1.35-1.42x on the MLP and the transformer
block). A detector left on for a whole run has to cost almost nothing until
something overflows, so ``checks="sentinel"`` (or ``PROBE_CHECKS=sentinel``)
does this instead, in every checked step until it finds something:

* nothing is intercepted and no Cell is hooked; while the window is open
  two MindSpore functions are wrapped (module globals, no class touched):
  ``_pynative_func_grad_forward`` and ``_pynative_func_grad_backward`` of
  ``mindspore.ops.composite.base`` (and the copies other MindSpore modules
  imported), which every PyNative gradient computation runs through:
  ``mindspore.grad``, ``value_and_grad``, ``GradOperation``, ``vjp`` and
  the ``TrainOneStepCell`` family. The first returns the forward output of
  the function being differentiated (the loss, and its auxiliary outputs),
  the second the gradients;
* the wrappers keep references to those tensors (no copy, no read, no
  wait for the device) and, when the window closes (``stop()``, ``step()``
  or interpreter exit), they are judged once. On the CPU backend every
  floating one is copied to the host and tested for inf/nan
  (``detection.HostCache``): for the benchmark models, one loss and 6-24
  gradients a step, and that copy is most of what sentinel checks cost.
  On other backends copying every gradient to the host each step would
  move the whole model's size over the bus, so they are reduced on the
  device first with ``mindspore.amp.all_finite`` (the ``AllFinite``
  kernel on Ascend): one boolean comes back, and only when it says
  something is not finite are the tensors read on the host, to name
  which (a failure of that path falls back to the host read);
* when one is not finite, one record of kind ``sentinel`` goes to that
  step's ``overflow.json`` (no ``dump.json`` entry: no call was recorded)
  naming which outputs and which Parameters' gradients held inf/nan and the
  user's line that asked for the gradients, and from the next checked step
  on the configured level runs with exact checks (for good).

What it does not see: overflow that reaches neither the differentiated
function's output nor a gradient (an inf masked by ``ReLU``, ``max`` or a
``where``; forward-only windows, such as evaluation, which compute no
gradient: said once in the log), and in the step where it fires it names no
call: the first overflowing call is named from the next checked step on,
when the overflow happens again (a loss-scale overflow usually does; a
one-off bad batch may not). Values are read when the window closes, so a
gradient the script changes in place before that (an unscale with
``mul_``) is judged after the change. Exact checks remain the default.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from .detection import HostCache, is_floating, iter_tensors
from .interception import capture_frames, inside_tool, restore, tool_section, _MISSING

#: the MindSpore functions every PyNative gradient computation runs through
FORWARD, BACKWARD = "_pynative_func_grad_forward", "_pynative_func_grad_backward"
CHECKS = ("exact", "sentinel")


class Held:
    """What one gradient computation returned, kept until the window closes.

    Attributes:
        kind: ``"output"`` (the differentiated function's forward output) or
            ``"gradient"``.
        tensors: (label, tensor) pairs: ``"forward output 0"``, ``"gradient of
            <Parameter name>"`` or ``"gradient w.r.t. input 0"``.
        frames: the caller's frames (``interception.capture_frames``).
    """

    def __init__(self, kind: str, tensors: list[tuple[str, Any]], frames: tuple) -> None:
        self.kind = kind
        self.tensors = tensors
        self.frames = frames


def label_gradients(out: Any, weights: Any) -> list[tuple[str, Any]]:
    """(label, tensor) for each tensor of a gradient result (no dtype is
    read here: the first dtype read of a fresh tensor waits for the device).

    ``out`` is what ``_pynative_func_grad_backward`` returned: a tensor, a
    tuple of them, or (gradients w.r.t. inputs, gradients w.r.t.
    ``weights``). When ``weights`` (Parameters, or None) are given, the
    last ``len(weights)`` tensors of the flattened result are theirs, in
    order (MindSpore's layout); the others are w.r.t. the inputs.
    """
    tensors = list(iter_tensors(out))
    params = [w for w in (weights if isinstance(weights, (list, tuple)) else
                          (list(weights) if weights is not None and hasattr(weights, "__iter__") else []))]
    first = len(tensors) - len(params) if params and len(params) <= len(tensors) else len(tensors)
    labelled = []
    for i, t in enumerate(tensors):
        if i >= first:
            labelled.append((f"gradient of {getattr(params[i - first], 'name', i - first)}", t))
        else:
            labelled.append((f"gradient w.r.t. input {i}", t))
    return labelled


class GradSentinel:
    """Wraps MindSpore's gradient entry points while installed and holds
    what they return (see the module docstring).

    Args:
        on_error: called with (where, exception) for a fault inside the
            tool (the wrapped call's result is returned all the same).
        on_device: reduce on the device first (``mindspore.amp.all_finite``)
            and read on the host only when something is not finite; for
            backends other than CPU.
    """

    def __init__(self, on_error: Callable[[str, BaseException], None], *, on_device: bool = False) -> None:
        self.on_error = on_error
        self.on_device = on_device
        self.held: list[Held] = []
        self._saved: list[tuple[Any, str, Any]] = []
        self._plan: Optional[list[tuple[Any, str, Callable]]] = None

    @property
    def installed(self) -> bool:
        """True while the wrappers are in place."""
        return bool(self._saved)

    def _build_plan(self) -> list[tuple[Any, str, Callable]]:
        from mindspore.ops.composite import base

        plan: list[tuple[Any, str, Callable]] = []
        for attr, wrap in ((FORWARD, self._wrap_forward), (BACKWARD, self._wrap_backward)):
            original = vars(base).get(attr)
            if not callable(original):  # pragma: no cover - another MindSpore layout
                raise RuntimeError(f"mindspore.ops.composite.base.{attr} not found: sentinel checks need it "
                                   "(use exact checks with this MindSpore)")
            wrapper = wrap(original)
            for name, module in list(sys.modules.items()):
                if name.startswith("mindspore") and module is not None and vars(module).get(attr) is original:
                    plan.append((module, attr, wrapper))
        return plan

    def install(self) -> None:
        """Put the wrappers in place (two module globals per MindSpore
        module that holds them; no class is touched).

        Raises:
            RuntimeError: this MindSpore has no such functions.
        """
        if self._saved:
            return
        if self._plan is None:
            self._plan = self._build_plan()
        for owner, attr, wrapper in self._plan:
            self._saved.append((owner, attr, vars(owner).get(attr, _MISSING)))
            setattr(owner, attr, wrapper)

    def uninstall(self) -> None:
        """Put the originals back (safe to call twice)."""
        saved, self._saved = self._saved, []
        restore(saved)

    def _wrap_forward(self, original: Callable) -> Callable:
        def forward(fn: Any, *args: Any, **kwargs: Any) -> Any:
            outputs = original(fn, *args, **kwargs)
            if not inside_tool():
                try:
                    tensors = [(f"forward output {i}", t) for i, t in enumerate(iter_tensors(outputs))]
                    self.held.append(Held("output", tensors, capture_frames(sys._getframe(1))))
                except Exception as err:
                    self.on_error("in the sentinel's forward wrapper", err)
            return outputs

        forward.__probe_original__ = original  # type: ignore[attr-defined]
        return forward

    def _wrap_backward(self, original: Callable) -> Callable:
        def backward(fn: Any, grad_op: Any, weights: Any, *rest: Any) -> Any:
            out = original(fn, grad_op, weights, *rest)
            if not inside_tool():
                try:
                    self.held.append(Held("gradient", label_gradients(out, weights),
                                          capture_frames(sys._getframe(1))))
                except Exception as err:
                    self.on_error("in the sentinel's backward wrapper", err)
            return out

        backward.__probe_original__ = original  # type: ignore[attr-defined]
        return backward

    def resolve(self) -> Optional[dict]:
        """Read everything held (one host read per distinct tensor), forget
        it, and return what was not finite, or None.

        Returns:
            None, or ``{"nonfinite": [labels], "frames": frames of the first
            computation that held one, "computations": how many were
            checked}``.
        """
        held, self.held = self.held, []
        if not held:
            return None
        section = tool_section()
        section.__enter__()
        try:
            if self.on_device and self._all_finite_on_device(held):
                return None
            cache = HostCache()
            bad: list[str] = []
            frames = None
            for item in held:
                for label, tensor in item.tensors:
                    if not cache.finite(tensor):
                        bad.append(label)
                        if frames is None:
                            frames = item.frames
        finally:
            section.__exit__()
        if not bad:
            return None
        return {"nonfinite": list(dict.fromkeys(bad)), "frames": frames or (), "computations": len(held)}

    def _all_finite_on_device(self, held: list[Held]) -> bool:
        """True when ``mindspore.amp.all_finite`` says every held floating
        tensor is finite (one boolean read back); False when it does not,
        or when that path fails (logged once; the host read decides)."""
        try:
            from mindspore import amp

            tensors = tuple(t for item in held for _, t in item.tensors if is_floating(t))
            return not tensors or bool(amp.all_finite(tensors).asnumpy())
        except Exception as err:
            self.on_device = False
            self.on_error("in the sentinel's device check (the host read is used from now on)", err)
            return False
