"""Finiteness probes of Parameters, taken when a call uses them.

An entry is judged when the queue is resolved, but a Parameter may be
updated in place before that (an optimizer compiled with
``mindspore.jit``). So when a call (L1) or a Cell (L0) uses Parameters,
their finiteness at that moment is kept as a *probe*, a one-element
float32 tensor that is judged with the entry like any other tensor:

* :func:`probe_now`: decided on the host at once (a synchronous window:
  the read stalls no pipeline, and is cheaper than launching an operator);
* :func:`launch_sum`: a float32 sum (of the values scaled down, so that
  finite ones cannot overflow it) launched on the device without waiting
  (non-finite when the Parameter holds inf/nan), read only with the batch
  (a trainable Parameter's -inf read as nan: :class:`TrainableSum`).

A Parameter a Cell may write in place (an L0 ``BatchNorm``'s moving
statistics) is kept as a :func:`snapshot` instead: its values (a host copy
in a synchronous window, else a device copy), judged and dumped like any
tensor.

Example::

    probe = probe_now(weight) if synchronous else launch_sum(weight)
    HostCache().finite(probe)      # False when weight held inf/nan at the call
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..hooks.precision import cast_by_mixed_precision, outside_mixed_precision
from .verdict import to_host


class HostVerdict:
    """A one-element float32 stand-in for a tensor whose finiteness was
    already decided on the host: 0.0 when finite, -inf when its only
    non-finite values are -inf (a mask kept in a Parameter, which the
    by-design rules treat as a -inf made outside), nan otherwise. What
    :func:`probe_now` returns, judged like any tensor."""

    dtype = "Float32"
    shape = (1,)

    def __init__(self, finite: bool, minus_inf_only: bool = False) -> None:
        value = 0.0 if finite else -np.inf if minus_inf_only else np.nan
        self._array = np.array([value], np.float32)

    def asnumpy(self) -> np.ndarray:
        return self._array


def probe_now(tensor: Any) -> HostVerdict:
    """The finiteness of ``tensor``'s values now, decided on the host, and,
    for a frozen Parameter (``requires_grad`` False: no optimizer writes
    it, so a -inf there is a mask by design), whether its non-finite values
    are -inf only. A trainable Parameter an update filled with -inf stays
    plain "not finite". Keeps no reference to the tensor or its values."""
    host = to_host(tensor)
    if host.finite():
        return HostVerdict(True)
    if getattr(tensor, "requires_grad", True) is not False or host.array is None:
        return HostVerdict(False)
    flat = host.array.reshape(-1)
    return HostVerdict(False, not bool(np.isnan(flat).any()) and not bool(np.isposinf(flat).any()))


class HostCopy:
    """A tensor's values copied to the host (what :func:`snapshot` returns
    in a synchronous window): judged, described and dumped like the tensor
    (``dtype`` its dtype name, ``shape``, ``asnumpy()`` the copy; bfloat16
    and float8 values are held as float32, as :func:`~.verdict.to_host`
    reads them)."""

    def __init__(self, dtype: str, shape: tuple, array: Optional[np.ndarray]) -> None:
        self.dtype = dtype
        self.shape = shape
        self._array = array

    def asnumpy(self) -> Optional[np.ndarray]:
        return self._array

    def astype(self, _dtype: Any) -> "HostCopy":
        """Already float32 where :func:`~.verdict.to_host` would cast."""
        return self


_COPY: Any = None


def snapshot(tensor: Any, synchronous: bool) -> Any:
    """``tensor``'s values now, kept apart from it (a later in-place write
    does not change them): a :class:`HostCopy` in a synchronous window (the
    read stalls no pipeline), else a copy made on the device
    (``mindspore.ops.deepcopy``, no wait, at the tensor's own dtype also
    inside a Cell given a precision), read with the batch."""
    if synchronous:
        host = to_host(tensor)
        return HostCopy(host.dtype, host.shape, None if host.array is None else host.array.copy())
    global _COPY
    if _COPY is None:
        from mindspore import ops

        _COPY = ops.deepcopy
    copy = _COPY(tensor)
    if cast_by_mixed_precision((tensor,), (copy,)):  # inside a Cell given a precision: its values as they are
        copy = outside_mixed_precision(_COPY, tensor)
    return copy


_SUM: Optional[tuple] = None


def launch_sum(tensor: Any) -> Any:
    """The float32 sum of ``tensor``'s values scaled down by a power of two,
    launched on the device without waiting (a one-element tensor):
    non-finite exactly when ``tensor`` holds inf/nan. The scale (2**-64;
    2**-960 for float64, applied before its cast to float32) keeps the
    largest finite value near 1.8e19, so the sum of fewer than 1e19 finite
    values cannot overflow (a helper's finding: two weights of 3e38 summed
    to inf, and a Parameter that never held inf/nan was recorded as one
    that did), while inf, -inf and nan stay what they are (a power of two
    is exact; values it takes below float32's range become 0, still
    finite). In float32 also inside a Cell given a precision
    (``to_float``), whose float16 would make the sum of a finite Parameter
    inf.

    Through one ``Cast``, one ``Mul`` and one ``ReduceSum`` primitive made
    once (a ``Tensor.sum(dtype=...)`` per call kept memory for good with
    the asynchronous pipeline: ``docs/runtime-design.md``)."""
    global _SUM
    if _SUM is None:
        import mindspore
        from mindspore import Tensor, ops

        _SUM = (ops.Cast(), ops.Mul(), ops.ReduceSum(), mindspore.float32, mindspore.float64,
                Tensor(2.0 ** -64, mindspore.float32), Tensor(2.0 ** -960, mindspore.float64))
    cast, mul, reduce_sum, float32, float64, scale32, scale64 = _SUM

    def scaled_sum() -> Any:
        if tensor.dtype == float64:
            return reduce_sum(cast(mul(tensor, scale64), float32))
        return reduce_sum(mul(cast(tensor, float32), scale32))

    total = scaled_sum()
    if total.dtype is not float32:  # inside a Cell given a precision (to_float): summed in float16, not float32
        total = outside_mixed_precision(scaled_sum)
    if getattr(tensor, "requires_grad", True) is not False:
        return TrainableSum(total)  # its -inf is no mask (as probe_now decides), though its sum says -inf as one's
    return total


class TrainableSum:
    """:func:`launch_sum` of a trainable Parameter: the one-element sum on
    the device, read as nan when it is -inf. Only a frozen Parameter's
    -inf is a mask by design (:func:`probe_now`); a sum of -inf does not
    tell the two apart, and a trainable Parameter an update filled with
    -inf was judged a mask on the asynchronous path (no record: a false
    all-clear). Read only with the batch, as the sum itself."""

    dtype = "Float32"
    shape = (1,)

    def __init__(self, total: Any) -> None:
        self.total = total  # the float32 sum, on the device

    def asnumpy(self) -> np.ndarray:
        value = np.asarray(self.total.asnumpy(), np.float32).reshape(1)
        return np.where(np.isneginf(value), np.float32(np.nan), value)
