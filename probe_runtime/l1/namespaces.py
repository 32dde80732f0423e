"""What L1 patches and what it leaves alone, as data.

The wrappers (:mod:`.interceptor`) patch the public functions of
``mindspore.ops``, ``mindspore.mint`` and ``mindspore.mint.nn.functional``,
the public methods and :data:`TENSOR_OPERATORS` of ``mindspore.Tensor`` and
every Primitive call, except the names below: what is not a computation,
what runs the user's own callbacks, and what the tool itself uses. (msprobe
keeps its list in ``mindspore/dump/hook_cell/support_wrap_ops.yaml``.)
"""
from __future__ import annotations

from ..hooks.tensor_names import (  # noqa: F401 (kept here for L1's users)
    FUNCTION_INPLACE, IN_PLACE_OPERATORS, TENSOR_MUTATORS, TENSOR_OPERATORS, TENSOR_SHARED_READS, TENSOR_SKIP,
)

#: functions that run user callbacks or build functions (not computations).
FUNCTION_SKIP = frozenset({
    "grad", "value_and_grad", "vmap", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "derivative",
    "constexpr", "primitive", "prim_attr_register", "custom_info_register", "kernel", "ms_kernel",
    "while_loop", "scan", "fori_loop", "cond", "switch_case", "stop_gradient", "depend", "print_",
    "typeof", "isinstance_", "is_tensor", "shard", "recompute", "get_vm_impl_fn", "clear_auto_generate",
    "deprecated", "custom_vmap", "hyper_map", "vm_impl_registry", "shape", "rank", "dtype", "size",
    "is_floating_point", "is_complex", "numel", "tensor_dot", "dyn_shape",
})
#: Primitive classes not intercepted (the tool's own hooks, graph plumbing).
PRIMITIVE_SKIP = frozenset({
    "HookBackward", "CellBackwardHook", "Depend", "Print", "Load", "UpdateState", "MakeTuple",
    "TupleGetItem", "Shape", "DType", "Rank", "Size", "StopGradient", "Partial", "Switch",
})
#: classes of primitives made by name (``Primitive("typeof")``): such an
#: entry is named by the operator (``prim.name``), not by the class.
GENERIC_PRIMITIVES = frozenset({"Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck"})
#: of those, the ones that are differentiable and return a new tensor besides
#: writing their first argument: their other inputs and their result still
#: get the backward hooks (never the first argument: a hooked copy of it
#: would take the write instead of the user's tensor)
WRITES_FIRST_ONLY = frozenset({"index_add"})
#: MindSpore functions that write some of their tensor arguments in place
#: besides returning a new result (the form of :data:`TORCH_WRITES`).
#: ``ops.batch_norm(input_x, running_mean, running_var, weight, bias,
#: training, momentum, eps)`` updates ``running_mean`` and ``running_var``
#: when training (CPU, MindSpore 2.7.0 and 2.10; ``weight`` and ``bias``
#: are left alone): a batch of one writes nan into ``running_var`` (the
#: unbiased variance of one sample) while its result stays finite, and a
#: fresh review got "carried ... Parameter rv held inf/nan when first used"
#: from L1 and an all-clear from L0. ``mint.nn.functional.batch_norm`` has
#: the same parameters and contract (no CPU kernel to check it on).
FUNCTION_WRITES: dict[str, tuple[tuple[str, ...], frozenset, str]] = {
    "batch_norm": (("input_x", "running_mean", "running_var", "weight", "bias", "training"),
                   frozenset({"running_mean", "running_var"}), "training"),
}

#: MSAdapter: torch functions that write some of their tensor arguments in
#: place besides returning a new result, by name: ``(their parameters in
#: order, those it may write, the argument that turns the writes on)``.
#: ``F.batch_norm(input, running_mean, running_var, weight, bias, training)``
#: updates the running statistics when training; mindtorch 0.5.1 hands its
#: CPU kernel the four in another order, so there the update lands in
#: ``weight`` and ``bias`` (a batch of one writes nan into the bias). What
#: the call leaves in any of them is judged with its result (the call is
#: the origin of inf/nan written there); only ``input`` and the result get
#: backward hooks (a hooked copy of a written argument would take the write).
TORCH_WRITES: dict[str, tuple[tuple[str, ...], frozenset, str]] = {
    "batch_norm": (("input", "running_mean", "running_var", "weight", "bias", "training"),
                   frozenset({"running_mean", "running_var", "weight", "bias"}), "training"),
}

#: MSAdapter (PyTorch code on MindSpore): the torch namespaces L1 patches,
#: ``(module name, entry prefix)``, named as msprobe names them there
#: (``Torch.exp.0.forward``, ``Functional.cross_entropy.0.forward``).
#: ``torch.Tensor`` is ``mindspore.Tensor`` under mindtorch: its methods are
#: patched as for MindSpore (``Tensor.__mul__``).
TORCH_MODULES = (("torch", "Torch"), ("torch.nn.functional", "Functional"))
#: functions of the torch namespaces that are not computations, or that
#: make tensors of uninitialised memory (``empty``: any bits, inf and nan
#: included, which would read as an overflow that never happened)
TORCH_SKIP = frozenset({
    "tensor", "as_tensor", "from_numpy", "frombuffer", "is_tensor", "is_grad_enabled", "set_grad_enabled",
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "set_default_dtype",
    "get_default_dtype", "get_default_device", "set_default_device", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_enabled", "set_autocast_enabled", "use_deterministic_algorithms", "compile", "load", "save",
    "typename", "dtype_to_nptype", "dtype_to_pytype", "get_py_obj_dtype", "pytype_to_dtype",
    "initialize_torch_proxy", "enable_mindspore_patch", "setup_metadata_patch", "set_pyboost", "finfo", "iinfo",
    "broadcast_shapes", "empty", "empty_like", "npu_clear_float_status_v2", "npu_get_float_status_v2",
    "no_grad", "enable_grad", "inference_mode", "is_inference_mode_enabled", "get_device",
})
#: torch Tensor methods that are not computations (besides :data:`TENSOR_SKIP`):
#: ``backward`` runs the whole backward pass, the rest move or describe a tensor
TORCH_TENSOR_SKIP = frozenset({
    "backward", "cpu", "cuda", "npu", "type", "element_size", "get_device", "pin_memory", "record_stream",
    "new", "data", "is_leaf", "is_meta", "is_nested", "is_sparse", "is_pinned", "is_cuda", "tolist",
    "requires_grad_", "register_post_accumulate_grad_hook", "share_memory_", "untyped_storage",
})
