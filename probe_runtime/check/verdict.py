"""Finiteness, origin and statistics of the tensors of one API call.

This module decides whether an entry overflowed; it knows nothing of how
the tensors were caught (no patching, no hooks). It only needs to turn a
tensor into a host array, which it does through :func:`to_host` (MindSpore
tensors through ``asnumpy``; bfloat16 is cast to float32 first because
numpy has no bfloat16).

Rules (SPEC 4):

* An entry overflows when a *floating* or *complex* tensor among its
  inputs or outputs holds inf or nan (a complex value: either part).
  Integer and bool tensors never count; empty tensors never count;
  objects that are not tensors are ignored. (Complex tensors did not
  count once: a fresh user's ``ops.fft`` made a complex inf and the
  ``ops.real`` that copied it out was called the origin.)
* The entry is an *origin* when every floating input is finite and some
  floating output is not; otherwise it *carries* an overflow on.
* Statistics (Max, Min, Mean, Norm) are computed in float32, or float64
  for float64 tensors, and only for entries that are recorded. A finite
  float16 tensor whose L2 norm exceeds 65504 is finite: only the values
  themselves are tested, never derived quantities.

A dtype is never judged by its string: a layer such as MSAdapter's
``mindtorch`` changes what ``str(dtype)`` reads for the whole process
(``'mindspore.float16'``), which once made every tensor look non-floating
and every check pass. :func:`dtype_label` names a MindSpore dtype from the
dtype object itself (:data:`FLOATING_DTYPES` by identity with MindSpore's
own ``mindspore.float16``..., else its class and item size).

Calling :func:`to_host` on a tensor that the device has not finished waits
for it (a device sync); callers batch their calls (see ``queue.py``).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from ..hooks.guard import GUARD

#: MindSpore's floating dtypes: attribute of ``mindspore`` -> the name the
#: tool gives it (MindSpore's own spelling, what ``str`` reads in a process
#: no layer has changed; MindSpore 2.7 to 2.10).
FLOATING_DTYPES = {"float16": "Float16", "float32": "Float32", "float64": "Float64", "bfloat16": "BFloat16",
                   "float8_e4m3fn": "Float8E4M3FN", "float8_e5m2": "Float8E5M2", "hifloat8": "HiFloat8"}
#: dtype names (:func:`dtype_label`) treated as floating point. The
#: lower-case and ``Float8_*`` spellings are for tensor-likes whose ``dtype``
#: is already a name (host copies, other frameworks' stand-ins); ``Float8``
#: is a one-byte floating dtype of a MindSpore release not listed above.
FLOAT_DTYPES = frozenset(set(FLOATING_DTYPES.values()) | {
    "Float8_e4m3fn", "Float8_e5m2", "Float8", "float16", "float32", "float64", "bfloat16"})
#: complex dtype names: judged by their values like the floating ones (no statistics, no gradient reads)
COMPLEX_DTYPES = frozenset({"Complex64", "Complex128", "complex64", "complex128"})
#: the dtypes whose tensors can hold inf/nan, judged by :meth:`HostTensor.finite` and :meth:`HostCache.finite`
JUDGED_DTYPES = FLOAT_DTYPES | COMPLEX_DTYPES
#: dtypes numpy cannot hold directly; cast to float32 on the device first.
CAST_TO_FLOAT32 = frozenset({"BFloat16", "bfloat16", "Float8E4M3FN", "Float8E5M2", "Float8_e4m3fn", "Float8_e5m2",
                             "HiFloat8", "Float8"})
#: elements tested at a time by :meth:`HostTensor.finite` (a 1 MiB bool mask)
FINITE_CHUNK = 1 << 20


@dataclass
class HostTensor:
    """A tensor copied to the host.

    Attributes:
        dtype: the original dtype name, e.g. ``"Float16"``, ``"BFloat16"``.
        shape: the original shape (tuple of int).
        array: numpy array, float32 for bfloat16/float8 sources, else the
            tensor's own dtype; None when it could not be read.
    """

    dtype: str
    shape: tuple
    array: Optional[np.ndarray]

    @property
    def floating(self) -> bool:
        """True for floating dtypes (the only ones that can overflow)."""
        return self.dtype in FLOAT_DTYPES

    @property
    def empty(self) -> bool:
        """True when the tensor has no element."""
        return self.array is None or self.array.size == 0

    def finite(self) -> bool:
        """False when a floating or complex, non-empty tensor holds inf or nan.

        Other or empty tensors are always "finite". Exact for every
        dtype: a derived quantity only ever proves finiteness (a finite
        sum of squares, :func:`_finite_values`), and whatever it cannot
        prove is decided by ``numpy.isfinite`` on the values themselves.
        Warning-free, and in chunks of ``FINITE_CHUNK`` elements so any
        temporary stays small (1 MiB of mask) whatever the tensor's size.
        """
        array = self.array
        if self.dtype not in JUDGED_DTYPES or array is None:  # an unreadable tensor is "empty"
            return True
        size = array.size
        if not size:
            return True
        flat = array.reshape(-1)
        test = _finite_half if flat.dtype == np.float16 else _finite_values
        if size <= FINITE_CHUNK:  # one chunk: no slice made
            return test(flat)
        for begin in range(0, size, FINITE_CHUNK):
            if not test(flat[begin:begin + FINITE_CHUNK]):
                return False
        return True


def _finite_values(flat: np.ndarray) -> bool:
    """No inf/nan in a 1-D floating array.

    First the sum of squares (``flat @ flat``, one BLAS dot product, no
    temporary): every square is >= 0, +inf for an infinite value and nan
    for a nan, and a sum of non-negative terms cannot cancel an infinite
    one, so a finite result proves every value finite. Only a non-finite
    result (an inf/nan, or finite values above about 1.8e19 in float32,
    whose squares overflow) goes on to ``numpy.isfinite`` on the values,
    which decides. About half the time of ``numpy.isfinite(...).all()``
    on float32/float64 arrays of 64 to 262,144 values (measured with
    ``timeit`` on the benchmark machine), which makes its bool mask.
    """
    if flat.dtype in _DOT_DTYPES and math.isfinite(flat.dot(flat)):
        return True
    return bool(np.isfinite(flat).all())


#: dtypes whose sum of squares :func:`_finite_values` tries first (numpy's BLAS dot)
_DOT_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


#: float16 bits: sign cleared (``0x7FFF``), and exponent all ones (``0x7C00``,
#: IEEE 754 binary16) for inf and nan
_HALF_MAGNITUDE, _HALF_EXPONENT = np.uint16(0x7FFF), 0x7C00


def _finite_half(flat: np.ndarray) -> bool:
    """No inf/nan in a 1-D float16 array, read from its bits: inf and nan
    are exactly the values whose exponent bits are all ones, i.e. whose
    magnitude bits are ``>= 0x7C00``. Same verdict as ``numpy.isfinite``
    (tested against it), which numpy computes for float16 element by
    element through float32, many times slower (``docs/runtime-design.md``)."""
    magnitude = np.bitwise_and(flat.view(np.uint16), _HALF_MAGNITUDE, dtype=np.uint16)
    return int(magnitude.max()) < _HALF_EXPONENT


LOGGER = logging.getLogger("probe_runtime")
_TENSOR_TYPES: dict[type, bool] = {}
_UNREADABLE_LOGGED: set = set()


def _unreadable(klass: type, what: str, err: BaseException, turn_off: bool = True) -> None:
    """A tensor type the tool cannot handle: logged once per type; with
    ``turn_off`` objects of that type are not treated as tensors any more
    (never checked, never counted)."""
    if turn_off:
        _TENSOR_TYPES[klass] = False
    if klass not in _UNREADABLE_LOGGED:
        _UNREADABLE_LOGGED.add(klass)
        LOGGER.error("probe_runtime: cannot read the %s of a %s.%s (%s: %s); %s; training goes on", what,
                     klass.__module__, klass.__qualname__, type(err).__name__, err,
                     "that type is no longer checked" if turn_off else "such values count as finite")


def framework_error(err: BaseException) -> bool:
    """True for an error MindSpore's runtime raised (its messages carry a
    ``C++ Call Stack`` section)."""
    return isinstance(err, (RuntimeError, TypeError, ValueError)) and "C++ Call Stack" in str(err)


def surfaced(err: BaseException) -> bool:
    """True for an error :func:`dtype_name` re-raised: MindSpore's runtime
    raised it while the tool only *read* a tensor's dtype, so it is an
    earlier operator's failure surfacing (with asynchronous execution a
    missing kernel, say, is reported at the next read of any tensor). It
    belongs to the user's program and is raised to it, as it would be
    without the tool. Errors of the tool's own operators are not marked."""
    return bool(getattr(err, "_probe_surfaced", False))


#: id(dtype) -> (dtype, name): the dtype kept so its id cannot be reused
_DTYPE_LABELS: dict[int, tuple[Any, str]] = {}
#: at most this many dtype objects are remembered (MindSpore's are
#: singletons: a dozen in practice)
_DTYPE_LABELS_MAX = 512
#: MindSpore dtype class name -> the prefix of its name (the item size in
#: bits follows); ``Bool`` has no size in its name
_NUMBER_CLASSES = {"Float": "Float", "BFloat": "BFloat", "Int": "Int", "UInt": "UInt", "Complex": "Complex"}


def dtype_label(dtype: Any) -> str:
    """The name of a dtype, decided from the object, never from its string.

    A MindSpore dtype (its class comes from a ``mindspore`` module) is
    named by identity with MindSpore's own floating dtypes
    (:data:`FLOATING_DTYPES`: ``mindspore.float16`` -> ``"Float16"``), else
    by its class and item size (``Int32``, ``UInt8``, ``Complex64``,
    ``Bool``; a one-byte float not listed is ``"Float8"``). A string is
    its own name (host copies carry one); anything else, from no MindSpore
    module, is ``str(dtype)``. Remembered per dtype object.

    Example::

        dtype_label(mindspore.float16)    # "Float16", whatever str() reads
        dtype_label(mindspore.int64)      # "Int64"
    """
    if type(dtype) is str:
        return dtype
    key = id(dtype)
    hit = _DTYPE_LABELS.get(key)
    if hit is not None and hit[0] is dtype:
        return hit[1]
    if not (type(dtype).__module__ or "").startswith("mindspore"):
        return str(dtype)
    name = _mindspore_label(dtype)
    if len(_DTYPE_LABELS) < _DTYPE_LABELS_MAX:
        _DTYPE_LABELS[key] = (dtype, name)
    return name


def _mindspore_label(dtype: Any) -> str:
    """:func:`dtype_label` of a MindSpore dtype not seen yet."""
    import sys

    mindspore = sys.modules.get("mindspore")
    for attr, name in FLOATING_DTYPES.items():
        if mindspore is not None and getattr(mindspore, attr, None) is dtype:
            return name
    kind = type(dtype).__name__
    if kind == "Bool":
        return "Bool"
    prefix = _NUMBER_CLASSES.get(kind)
    try:
        bits = 8 * int(dtype.itemsize)
    except Exception:
        bits = 0
    if prefix is None or bits <= 0:
        return kind
    return f"{prefix}{bits}"


def dtype_name(tensor: Any) -> str:
    """The dtype name of a tensor (:func:`dtype_label` of its ``dtype``:
    ``Float16``...), never ``str(tensor.dtype)``; ``""`` (not floating) for
    a type whose dtype cannot be read, which is then no longer treated as a
    tensor.

    Raises:
        The error itself, marked (:func:`surfaced`), when MindSpore's
        runtime raised it (:func:`framework_error`).
    """
    try:
        return dtype_label(getattr(tensor, "dtype", ""))
    except Exception as err:
        if framework_error(err):
            try:
                err._probe_surfaced = True  # type: ignore[attr-defined]
            except Exception:  # pragma: no cover - an exception type without __dict__
                pass
            raise
        _unreadable(type(tensor), "dtype", err)
        return ""


def is_tensor(obj: Any) -> bool:
    """True for objects that look like a framework tensor (``asnumpy``,
    ``dtype`` and ``shape``). numpy arrays are not tensors here.

    Decided once per type, on the class: reading ``dtype``/``shape`` on a
    MindSpore tensor costs microseconds each (they are properties)."""
    klass = type(obj)
    known = _TENSOR_TYPES.get(klass)
    if known is None:
        try:
            known = all(hasattr(klass, name) for name in ("asnumpy", "dtype", "shape"))
            if not known:  # attributes set on the instance only
                return hasattr(obj, "asnumpy") and hasattr(obj, "dtype") and hasattr(obj, "shape")
        except Exception as err:  # an attribute lookup that raises something else
            _unreadable(klass, "attributes", err)
            return False
        _TENSOR_TYPES[klass] = known
    return known


def is_floating(tensor: Any) -> bool:
    """True when ``tensor`` is a tensor of a floating dtype."""
    return is_tensor(tensor) and dtype_name(tensor) in FLOAT_DTYPES


#: (class, MindSpore base class name) -> whether the class derives from it
_MINDSPORE_BASES: dict[tuple[type, str, str], bool] = {}


def _derives(obj: Any, base: str, package: str = "mindspore") -> bool:
    """``obj``'s class derives from MindSpore's (``package``'s) class named
    ``base`` (decided once per class and name; no MindSpore import here)."""
    key = (type(obj), base, package)
    known = _MINDSPORE_BASES.get(key)
    if known is None:
        known = any(k.__name__ == base and (k.__module__ or "").startswith(package) for k in key[0].__mro__)
        _MINDSPORE_BASES[key] = known
    return known


def is_parameter(obj: Any) -> bool:
    """``obj`` is a ``mindspore.Parameter``, or a Parameter of the
    MSAdapter layer (mindtorch's ``torch.nn.Parameter``, a
    ``mindspore.Tensor`` of its own class)."""
    return _derives(obj, "Parameter") or _derives(obj, "Parameter", "mindtorch")


def is_mindspore_parameter(obj: Any) -> bool:
    """``obj`` is a ``mindspore.Parameter`` (not one of the MSAdapter layer)."""
    return _derives(obj, "Parameter")


def is_dtype(obj: Any) -> bool:
    """``obj`` is a MindSpore number dtype (``mindspore.float16``: its
    classes derive from ``mindspore._c_expression.typing.Number``)."""
    return _derives(obj, "Number")


def to_host(tensor: Any, name: Optional[str] = None) -> HostTensor:
    """Copy a tensor to the host (waits for the device).

    ``name``: its dtype name when the caller already read it.
    bfloat16 and float8 tensors are cast to float32 on the device first.
    Never raises: a tensor that cannot be read gives ``array=None``, which
    counts as finite (it is not evidence of an overflow).
    """
    if name is None:
        name = dtype_name(tensor)
    try:
        shape = tensor.shape
        if type(shape) is not tuple:
            shape = tuple(int(d) for d in shape)
    except Exception:  # pragma: no cover - odd tensor-likes
        shape = ()
    GUARD.depth += 1  # the tool's own cast and read: not handed on by a wrapper (l1, l0.mutations)
    try:
        source = tensor
        if name in CAST_TO_FLOAT32:
            import mindspore as ms  # only here: detection needs no hooking

            source = tensor.astype(ms.float32)
        array = source.asnumpy()
        if type(array) is not np.ndarray:
            array = np.asarray(array)
    except Exception as err:
        _unreadable(type(tensor), "values", err, turn_off=False)
        array = None
    finally:
        GUARD.depth -= 1
    return HostTensor(name, shape, array)


def iter_tensors(obj: Any, depth: int = 0) -> Iterator[Any]:
    """Every tensor in ``obj`` (nested lists, tuples, dict values, at most
    4 levels deep), in order."""
    out: list = []
    _collect(obj, depth, out)
    return iter(out)


#: classes whose objects are never tensors and hold none (their objects take no attributes of their own, so
#: :func:`is_tensor` says False for each, but remembers nothing for the class): arguments such as ``None``,
#: an axis or a flag
_NEVER_TENSORS = frozenset({type(None), bool, int, float, str})


def _collect(obj: Any, depth: int, out: list) -> None:
    # a list built by plain calls: about twice as fast as nested generators
    klass = type(obj)
    if klass is tuple or klass is list:
        if depth < 4:
            for item in obj:
                _collect(item, depth + 1, out)
        return
    if klass is dict:  # a plain dict is never a tensor (is_tensor would ask it every time: no class to remember)
        if depth < 4:
            for item in obj.values():
                _collect(item, depth + 1, out)
        return
    if klass in _NEVER_TENSORS:
        return
    known = _TENSOR_TYPES.get(klass)
    if known if known is not None else is_tensor(obj):
        out.append(obj)
    elif depth < 4 and isinstance(obj, (list, tuple)):
        for item in obj:
            _collect(item, depth + 1, out)
    elif depth < 4 and isinstance(obj, dict):
        for item in obj.values():
            _collect(item, depth + 1, out)


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking one entry.

    Attributes:
        overflow: a floating input or output holds inf/nan.
        origin: every floating input is finite and some output is not.
    """

    overflow: bool
    origin: bool


#: the four verdicts (a ``Verdict`` is immutable: :func:`judge` hands out these instead of making one per entry)
_VERDICTS = {(overflow, origin): Verdict(overflow, origin) for overflow in (False, True) for origin in (False, True)}


class HostCache:
    """Copies each tensor to the host once per check batch (entries often
    share tensors: one call's output is the next one's input).

    Two tensor objects are one tensor here when they view the same memory
    the same way (:func:`storage_key`): the tensor a ``HookBackward`` hands
    back for a call's output and that output, or the gradient one hook
    receives and the one the next receives, are different Python objects
    over the same values, read once. Every read of a batch is made in one
    stretch with no user code in between, so such views hold the same
    values when they are read.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, HostTensor]] = {}
        self._finite: dict[int, tuple[Any, bool]] = {}
        self._storage: dict[tuple, tuple[Any, HostTensor]] = {}
        self._host_finite: dict[int, bool] = {}  # id of a HostTensor held in _items -> its finite()
        self._spans: dict[int, int] = {}  # first byte -> end of a finite contiguous read of this batch

    def get(self, tensor: Any) -> HostTensor:
        """The host copy of ``tensor`` (made on first use)."""
        key = id(tensor)
        hit = self._items.get(key)
        if hit is None or hit[0] is not tensor:
            hit = (tensor, self._read(tensor, dtype_name(tensor)))
            self._items[key] = hit
        return hit[1]

    def _read(self, tensor: Any, name: str, where: Any = False) -> HostTensor:
        """``to_host(tensor)``, or the copy already made of a tensor over the
        same memory in this batch (``where``: its :func:`storage_key` when
        the caller has it)."""
        if where is False:
            where = storage_key(tensor, name)
        if where is None:
            return to_host(tensor, name)
        hit = self._storage.get(where)
        if hit is None:
            hit = (tensor, to_host(tensor, name))  # the tensor is kept: its memory cannot be reused meanwhile
            self._storage[where] = hit
        return hit[1]

    def finite(self, tensor: Any) -> bool:
        """True unless ``tensor`` is floating and holds inf/nan; decided
        once per tensor (object, or memory viewed the same way) and batch
        (a non-floating tensor is never copied to the host). A view that
        is not contiguous (a transpose, a strided slice: reading one makes
        MindSpore copy it, about 170 us on CPU) is finite without a read
        when a contiguous tensor read in this batch covers every byte it
        views and was finite (:func:`view_span`). The hot path of every
        check: kept to plain dictionary lookups."""
        key = id(tensor)
        hit = self._finite.get(key)
        if hit is not None and hit[0] is tensor:
            return hit[1]
        name = dtype_name(tensor)
        if name not in JUDGED_DTYPES:
            ok = True
        else:
            host = self._items.get(key)
            if host is None or host[0] is not tensor:
                where = storage_key(tensor, name)
                if where is not None:
                    same = self._storage.get(where)
                    if same is not None:
                        known = self._host_finite.get(id(same[1]))
                        if known is not None:
                            # another tensor object over the same memory, viewed the same way, was judged in
                            # this batch (a hooked output and the output, a gradient the next hook gets
                            # again): its verdict, and its coverage of those bytes, hold for this one
                            self._items[key] = (tensor, same[1])
                            self._finite[key] = (tensor, known)
                            return known
                span = view_span(tensor, where)
                if span is not None and self._covered(span):
                    self._finite[key] = (tensor, True)
                    return True
                host = (tensor, self._read(tensor, name, where))
                self._items[key] = host
            else:
                where, span = None, None
            copy = host[1]
            known = self._host_finite.get(id(copy))
            ok = copy.finite() if known is None else known
            self._host_finite[id(copy)] = ok
            if ok and where is not None and span is None and copy.array is not None:
                self._cover(where[0], tensor, copy.array.size)
        self._finite[key] = (tensor, ok)
        return ok

    def _cover(self, begin: int, tensor: Any, count: int) -> None:
        """Note that the ``count`` elements of contiguous ``tensor`` from
        byte ``begin`` were read finite. Its own element size counts, not
        the host copy's (bfloat16 is read as float32, twice as wide)."""
        try:
            end = begin + count * int(tensor.itemsize)
        except Exception:
            return
        if self._spans.get(begin, begin) < end:
            self._spans[begin] = end

    def _covered(self, span: tuple[int, int]) -> bool:
        """A finite contiguous read of this batch covers bytes
        ``[span[0], span[1])``."""
        begin, end = span
        known = self._spans.get(begin)
        if known is not None and known >= end:
            return True
        return any(start <= begin and end <= stop for start, stop in self._spans.items())


def view_span(tensor: Any, where: Optional[tuple]) -> Optional[tuple[int, int]]:
    """The bytes ``[first, last + 1)`` a tensor that is not contiguous
    views (``where``: its :func:`storage_key`); None for a contiguous
    tensor, or when that cannot be told. Strides are in elements, as
    ``mindspore.Tensor.stride()`` gives them."""
    if where is None:
        return None
    try:
        if tensor.is_contiguous():
            return None
        address, shape, strides, _ = where
        if any(size == 0 for size in shape) or any(step < 0 for step in strides):
            return None
        last = sum((size - 1) * step for size, step in zip(shape, strides))
        return address, address + (last + 1) * int(tensor.itemsize)
    except Exception:
        return None


def storage_key(tensor: Any, name: str) -> Optional[tuple]:
    """Where ``tensor``'s values live and how it views them: ``(address of
    its first element, shape, strides, dtype name)``, equal for two tensors
    exactly when they show the same values in the same order (a
    ``mindspore.Tensor``: ``data_ptr()``, ``stride()``). None for anything
    else (host stand-ins, a tensor-like without them, a tensor with no
    memory yet, address 0), and on MindSpore releases before 2.10, whose
    ``data_ptr()`` logs an error for a tensor made on the host and gives 0
    (:func:`storage_keys_usable`): such objects are read by identity only.
    Never raises."""
    if not storage_keys_usable():
        return None
    try:
        address = tensor.data_ptr()
        if not address:
            return None
        return (address, tuple(tensor.shape), tuple(tensor.stride()), name)
    except Exception:
        return None


_STORAGE_KEYS: Optional[bool] = None


def storage_keys_usable() -> bool:
    """MindSpore 2.10 or later (decided once): ``Tensor.data_ptr()`` gives
    an address for every tensor without logging. On 2.7.0 a tensor made
    from a numpy array has no device address until an operator uses it,
    and ``data_ptr()`` logs ``Tensor device address is null`` and returns
    0."""
    global _STORAGE_KEYS
    if _STORAGE_KEYS is None:
        try:
            import mindspore
            from packaging.version import Version

            _STORAGE_KEYS = Version(mindspore.__version__) >= Version("2.10")
        except Exception:
            _STORAGE_KEYS = False
    return _STORAGE_KEYS


def judge(inputs: Iterable[Any], outputs: Iterable[Any], cache: Optional[HostCache] = None) -> Verdict:
    """Check one entry's floating tensors.

    Args:
        inputs: the tensors (or nested containers) the entry consumed: the
            call's arguments for a forward entry, the gradients w.r.t. its
            outputs for a backward entry.
        outputs: what the entry produced (results, or the gradients w.r.t.
            its inputs).
        cache: shares host copies between entries of one batch.
    Returns:
        A Verdict. Waits for the device when a tensor is not ready.
    """
    cache = cache or HostCache()
    inputs_finite = _all_finite(inputs, cache.finite)
    outputs_finite = _all_finite(outputs, cache.finite)
    overflow = not (inputs_finite and outputs_finite)
    return _VERDICTS[overflow, overflow and inputs_finite and not outputs_finite]


def _all_finite(items: Iterable[Any], finite: Any) -> bool:
    """``finite(t)`` for every tensor in ``items`` (nested as
    :func:`iter_tensors` walks them), in order, stopping at the first that
    is not: what ``all(finite(t) for t in iter_tensors(list(items)))``
    gives, without a generator per entry (the hot path of a batch)."""
    tensors: list = []
    _collect(items if type(items) is list else list(items), 0, tensors)
    for tensor in tensors:
        if not finite(tensor):
            return False
    return True


def _number(value: Any) -> Any:
    """A numpy scalar as a Python number (inf/nan kept as floats)."""
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    return float(value)


def statistics(host: HostTensor) -> dict:
    """Max, Min, Mean and Norm (L2) of a host tensor, as msprobe writes them.

    Floating data is widened to float32 (float64 stays float64) so a finite
    float16 tensor gets a finite norm even above 65504. Values are Python
    floats; inf/nan stay as float inf/nan (the writer emits them as bare
    ``Infinity``/``NaN``). Empty or unreadable tensors: all four None. Bool
    tensors: Max/Min as bools, Mean/Norm None. Integer tensors: computed in
    float64 for Mean/Norm.
    """
    array = host.array
    if array is None or array.size == 0:
        return {"Max": None, "Min": None, "Mean": None, "Norm": None}
    if array.dtype == np.bool_:
        return {"Max": bool(array.max()), "Min": bool(array.min()), "Mean": None, "Norm": None}
    if array.dtype.kind == "c":
        return {"Max": None, "Min": None, "Mean": None, "Norm": None}
    if array.dtype.kind == "f":
        wide = array.astype(np.float64 if array.dtype == np.float64 else np.float32, copy=False)
    else:
        wide = array.astype(np.float64)
    flat = wide.ravel()
    with np.errstate(all="ignore"):
        result = {
            "Max": _number(flat.max()),
            "Min": _number(flat.min()),
            "Mean": _number(flat.mean(dtype=np.float64)),
            "Norm": _number(np.sqrt(np.dot(flat.astype(np.float64), flat.astype(np.float64)))),
        }
    if array.dtype.kind in "iu":
        result["Max"], result["Min"] = int(array.max()), int(array.min())
    return result
