"""Names of ``mindspore.Tensor`` methods, as data: the operators, what is
no computation, what writes the tensor in place or shares its memory.

Shared by L1's interceptor (:mod:`probe_runtime.l1.namespaces` re-exports
them) and L0's in-place guard (:mod:`probe_runtime.l0.mutations`), which
must not import each other.
"""
from __future__ import annotations

#: Tensor operators intercepted besides the public methods.
TENSOR_OPERATORS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
    "__rmatmul__", "__neg__", "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__",
    "__xor__", "__rxor__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__getitem__", "__setitem__", "__lt__", "__le__", "__gt__", "__ge__",
)
#: the operators among those that write the tensor in place (``__iadd__`` ..., ``__setitem__``; not
#: ``__invert__``, which a review found treated as one)
IN_PLACE_OPERATORS = tuple(a for a in TENSOR_OPERATORS if a.startswith("__i") and a != "__invert__") + ("__setitem__",)
#: Tensor attributes that are not computations (or that the tool uses).
TENSOR_SKIP = frozenset({
    "asnumpy", "numpy", "tolist", "item", "itemset", "init_data", "set_data", "assign_value",
    "register_hook", "data_sync", "asnumpy_of_slice_persistent_data", "slice_num_of_persistent_data",
    "slice_shape_of_persistent_data", "is_persistent_data", "has_init", "is_init", "init_flag",
    "dim", "ndimension", "numel", "nelement", "size", "is_floating_point", "is_complex", "is_signed",
    "is_contiguous", "stride", "storage_offset", "data_ptr", "untyped_storage", "storage",
    "flush_from_cache", "offload", "offload_file_path", "move_to", "set_const_arg", "from_numpy",
    "set_dtype", "param_info", "index_of_parent_", "parent_tensor_", "requires_grad_", "delete_",
    "set_", "to_", "is_neg", "device", "virtual_flag", "adapter_flag", "get_bytes", "retain_grad",
    "register_forward_hook", "set_init_flag", "contiguous", "_offload", "_load", "assign_value_cpp",
    "hooks",  # the tensor's hook list; MindSpore 2.7's mindspore.jit reads it on every argument
})
#: Tensor methods that change the tensor in place without being computations
#: (``assign_value_cpp`` is what ``set_data``/``assign_value`` run).
TENSOR_MUTATORS = ("set_data", "assign_value", "assign_value_cpp")
#: Tensor methods whose result shares the tensor's memory and can be written
#: through: ``asnumpy`` (``numpy`` and ``__array__`` call it) gives an array
#: over the same storage (MindSpore's docs of ``Tensor.asnumpy``; writable on
#: CPU). A hunt's finding: ``np.nan_to_num(t.asnumpy(), copy=False)`` after an
#: ``exp`` that overflowed hid the inf from the pending check, an all-clear.
TENSOR_SHARED_READS = ("asnumpy",)
#: functional (and Tensor method) names that change their first arguments
#: in place. ``index_add``: ``ops.index_add`` takes a Parameter to add into
#: (MindSpore's docs), and on the CPU backend of 2.7 and 2.10
#: ``ops.index_add``, ``mint.index_add`` and ``Tensor.index_add`` all write
#: into their input (its ``IndexAdd`` primitive has ``side_effect_mem``): a
#: fresh user's inf written there was blamed on the call that made the input.
FUNCTION_INPLACE = frozenset({"assign", "assign_add", "assign_sub", "index_add"})


def in_place_methods(tensor_cls: type) -> list[str]:
    """The names of ``tensor_cls``'s methods (``mindspore.Tensor``) that
    write the tensor in place or share its memory, by the rules L1 uses:
    the in-place operators (``__setitem__``, ``__iadd__`` ...), public
    methods ending in ``_`` that are not bookkeeping (:data:`TENSOR_SKIP`),
    the functions of :data:`FUNCTION_INPLACE` as methods, the mutators and
    ``asnumpy``. Sorted, each once."""
    names = set(IN_PLACE_OPERATORS)
    names.update(a for a in dir(tensor_cls) if not a.startswith("_") and a.endswith("_") and a not in TENSOR_SKIP)
    names.update(a for a in FUNCTION_INPLACE if hasattr(tensor_cls, a))
    names.update(TENSOR_MUTATORS + TENSOR_SHARED_READS)
    return sorted(a for a in names if callable(getattr(tensor_cls, a, None)))
