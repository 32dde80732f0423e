"""Names the script analysis knows, as data: the namespaces whose
functions msprobe and probe_runtime intercept at L1 (and the names in them
that are not operator functions), and the MindSpore API the analysis
follows (``set_context``, ``jit``, ``JitConfig``, the mode constants).

Example::

    >>> from msprobe_lint.lint.script.namespaces import is_function_name
    >>> is_function_name("mindspore.ops", "relu"), is_function_name("mindspore.ops", "value_and_grad")
    (True, False)
"""
from __future__ import annotations

# Namespaces whose functions msprobe / probe_runtime intercept at L1 by
# replacing the module attribute: a name bound by `from M import f` keeps the
# original function.
MINDSPORE_NAMESPACES = ("mindspore.ops", "mindspore.mint", "mindspore.mint.nn.functional")
TORCH_NAMESPACES = ("torch", "torch.nn.functional")
INTERCEPTED = MINDSPORE_NAMESPACES + TORCH_NAMESPACES

_TORCH_DTYPES = {
    "float", "double", "half", "bfloat16", "float16", "float32", "float64", "int", "long", "short", "int8",
    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex32", "complex64",
    "complex128", "cfloat", "cdouble", "chalf", "qint8", "quint8", "qint32", "quint4x2", "float8_e4m3fn",
    "float8_e5m2", "bits8", "bits16", "strided", "sparse_coo", "sparse_csr", "channels_last",
    "contiguous_format", "preserve_format", "channels_last_3d", "inf", "nan", "pi", "e", "newaxis",
}
# Names in each namespace that are not intercepted operator functions:
# submodules, dtypes and other objects, transforms, decorators, utilities.
NOT_FUNCTIONS: dict[str, frozenset[str]] = {
    "mindspore.ops": frozenset({
        "operations", "functional", "composite", "primitive", "function", "auto_generate", "op_info_register",
        "vm_impl_registry", "extend", "deprecated", "silent_check", "operations_", "functional_overload",
        "constexpr", "ms_kernel", "kernel", "custom_info_register", "prim_attr_register", "prim_arg_register",
        "grad", "value_and_grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian", "derivative",
        "stop_gradient", "get_vm_impl_fn", "signature", "multitype_ops", "arg_dtype_cast", "arg_handler",
        "typing",
    }),
    "mindspore.mint": frozenset({
        "nn", "optim", "linalg", "special", "distributed", "fft", "functional", "distributions", "utils",
        "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool_",
    }),
    "mindspore.mint.nn.functional": frozenset(),
    "torch": frozenset({
        "nn", "optim", "utils", "cuda", "distributed", "autograd", "jit", "onnx", "fx", "backends",
        "multiprocessing", "amp", "linalg", "fft", "special", "sparse", "testing", "hub", "profiler",
        "quantization", "ao", "nested", "masked", "func", "library", "overrides", "random", "serialization",
        "types", "export", "compiler", "mps", "xpu", "npu", "futures", "package", "storage", "version",
        "functional", "distributions", "hub", "monitor", "quasirandom", "return_types", "signal", "accelerator",
        "device", "dtype", "layout", "memory_format", "finfo", "iinfo", "no_grad", "enable_grad",
        "set_grad_enabled", "inference_mode", "autocast", "save", "load", "manual_seed", "seed", "initial_seed",
        "set_printoptions", "is_tensor", "is_storage", "is_floating_point", "set_default_dtype",
        "get_default_dtype", "set_default_tensor_type", "set_default_device", "compile", "set_num_threads",
        "get_num_threads", "set_num_interop_threads", "use_deterministic_algorithms", "is_grad_enabled",
        "get_rng_state", "set_rng_state", "set_float32_matmul_precision", "vmap", "cond", "typename",
        "is_inference_mode_enabled", "set_anomaly_enabled", "is_anomaly_enabled", "no_grad",
    } | _TORCH_DTYPES),
    "torch.nn.functional": frozenset({"grad", "Tensor", "Optional", "List", "Tuple", "Callable", "Union",
                                      "Number", "DType", "utils", "math", "warnings", "importlib"}),
}

DEBUGGER_METHODS = ("start", "stop", "step")
MODE_VALUES = {"mindspore.GRAPH_MODE": "graph", "mindspore.PYNATIVE_MODE": "pynative"}
SET_CONTEXT = {"mindspore.set_context"}
JIT = {"mindspore.jit", "mindspore.ms_function"}
JIT_CONFIG = {"mindspore.JitConfig"}
# Canonical names: prefixes that name the same object as a shorter path.
ALIASES = (("mindspore.context.", "mindspore."), ("mindspore.common.api.", "mindspore."),
            ("mindspore.common.jit_config.", "mindspore."), ("mindspore.common.", "mindspore."),
            ("mindspore.train.model.", "mindspore.train."), ("mindspore.nn.functional", "mindspore.ops"))
# What `from mindspore import *` binds that the analysis reads.
MINDSPORE_STAR = {"set_context", "context", "GRAPH_MODE", "PYNATIVE_MODE", "jit", "JitConfig", "ms_function",
                   "ops", "mint", "nn", "Model"}


def is_function_name(module: str, name: str) -> bool:
    """Whether ``from module import name`` binds an intercepted function,
    judged without importing: not private, not capitalised (classes,
    constants), not a known submodule or non-operator object."""
    if not name or name.startswith("_") or name[0].isupper():
        return False
    return name not in NOT_FUNCTIONS.get(module, frozenset())

