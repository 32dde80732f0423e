"""Floating or not is decided from the dtype object, never from its string.

MSAdapter's ``mindtorch`` makes ``str(mindspore.float16)`` read
``'mindspore.float16'`` for the whole process; when the checker decided
"floating point" from that string, every tensor looked like an integer one
and a NaN loss passed as "no overflow found". These tests change what
``str`` reads on MindSpore's dtype class the same way (and put it back).
"""
from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ms = pytest.importorskip("mindspore")

from probe_runtime.check.verdict import (  # noqa: E402
    FLOAT_DTYPES, HostCache, dtype_label, dtype_name, is_floating, judge, to_host,
)


@pytest.fixture
def strings_changed():
    """``str`` of every MindSpore dtype reads ``mindspore.<name>``, as after
    ``import mindtorch``."""
    from mindspore._c_expression.typing import Type

    own = vars(Type).get("__str__")
    Type.__str__ = lambda self: "mindspore.changed"
    try:
        assert str(ms.float16) == "mindspore.changed"
        yield
    finally:
        if own is None:
            del Type.__str__
        else:
            Type.__str__ = own


@pytest.mark.parametrize("attr, name", [("float16", "Float16"), ("float32", "Float32"), ("float64", "Float64"),
                                        ("bfloat16", "BFloat16"), ("int32", "Int32"), ("uint8", "UInt8"),
                                        ("bool_", "Bool"), ("complex64", "Complex64")])
def test_label_from_the_object(strings_changed, attr, name):
    assert dtype_label(getattr(ms, attr)) == name


def test_float8_dtypes_are_floating():
    # MindSpore 2.7-2.10 spell them Float8E4M3FN, Float8E5M2: the old name
    # list had Float8_e4m3fn, so float8 tensors were never checked
    for attr in ("float8_e4m3fn", "float8_e5m2", "hifloat8"):
        if hasattr(ms, attr):
            assert dtype_label(getattr(ms, attr)) in FLOAT_DTYPES


@pytest.mark.parametrize("np_dtype, ms_dtype", [(np.float16, "float16"), (np.float32, "float32")])
def test_inf_is_found_whatever_str_reads(strings_changed, np_dtype, ms_dtype):
    x = ms.Tensor(np.array([1.0, np.inf], np_dtype))
    assert dtype_name(x) == dtype_label(getattr(ms, ms_dtype))
    assert is_floating(x)
    assert not HostCache().finite(x)
    verdict = judge([ms.Tensor(np.ones(2, np_dtype))], [x])
    assert verdict.overflow and verdict.origin


def test_bfloat16_is_read_through_float32(strings_changed):
    x = ms.Tensor(np.array([np.nan, 1.0], np.float32)).astype(ms.bfloat16)
    host = to_host(x)
    assert host.dtype == "BFloat16" and host.array is not None and host.array.dtype == np.float32
    assert not host.finite()


def test_integer_tensors_stay_unchecked(strings_changed):
    assert not is_floating(ms.Tensor(np.array([1, 2], np.int32)))


def test_names_given_as_strings_are_kept():
    assert dtype_label("Float32") == "Float32"
