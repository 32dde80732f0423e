"""One host read per memory viewed the same way, none for a covered view.

``HostCache`` decides each tensor's finiteness once per check batch. Two
tensor objects over the same memory and layout (a call's output and the
tensor a ``HookBackward`` hands back for it) are read once; a view that is
not contiguous (reading one makes MindSpore copy it) is finite without a
read when a finite contiguous tensor read in the batch covers it. These
tests count the reads and check that no verdict changes: a view that holds
inf is still found, and a view of a non-finite base that misses the inf is
still finite.
"""
from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ms = pytest.importorskip("mindspore")

from probe_runtime.check import verdict  # noqa: E402
from probe_runtime.check.verdict import HostCache, storage_key, storage_keys_usable, view_span  # noqa: E402

needs_keys = pytest.mark.skipif(not storage_keys_usable(), reason=f"MindSpore {ms.__version__}: tensors are read by "
                                "identity only (data_ptr() logs and gives 0 for a tensor made on the host)")


@pytest.fixture
def reads(monkeypatch):
    """The tensors ``to_host`` was called on, in order."""
    seen: list = []
    real = verdict.to_host

    def counting(tensor, name=None):
        seen.append(tensor)
        return real(tensor, name)

    monkeypatch.setattr(verdict, "to_host", counting)
    return seen


def fresh(array):
    """A tensor made by an operator (its memory owned by MindSpore)."""
    return ms.Tensor(np.asarray(array, np.float32)) * 1


@needs_keys
def test_a_hooked_output_and_the_output_are_read_once(reads):
    out = fresh(np.ones((4, 8)))
    hooked = ms.ops.HookBackward(lambda *grads: None)(out)
    assert hooked is not out and hooked.data_ptr() == out.data_ptr()
    cache = HostCache()
    assert cache.finite(out) and cache.finite(hooked)
    assert len(reads) == 1


@needs_keys
def test_same_memory_other_layout_is_read_again(reads):
    base = fresh(np.arange(16).reshape(4, 4))
    flat = base.reshape(16)
    assert storage_key(base, "Float32") != storage_key(flat, "Float32")
    cache = HostCache()
    assert cache.finite(base) and cache.finite(flat)
    assert len(reads) == 2


@needs_keys
def test_a_transpose_of_a_finite_tensor_read_in_the_batch_needs_no_read(reads):
    base = fresh(np.random.default_rng(0).normal(size=(2, 3, 4)))
    view = base.transpose(0, 2, 1)
    assert not view.is_contiguous()
    cache = HostCache()
    assert cache.finite(base)
    assert cache.finite(view)
    assert reads == [base]


def test_a_view_that_holds_inf_is_found(reads):
    values = np.zeros((4, 6), np.float32)
    values[3, 5] = np.inf
    base = fresh(values)
    view = base.transpose(1, 0)
    cache = HostCache()
    assert not cache.finite(base)
    assert not cache.finite(view)
    assert len(reads) == 2  # the base was not finite: nothing covers the view


def test_a_view_of_a_non_finite_base_that_misses_the_inf_is_finite():
    values = np.zeros((4, 6), np.float32)
    values[0, 0] = np.nan
    base = fresh(values)
    view = base[1:, 1:]
    assert not view.is_contiguous()
    cache = HostCache()
    assert not cache.finite(base)
    assert cache.finite(view)


def test_a_view_whose_base_was_not_read_is_read(reads):
    base = fresh(np.ones((3, 5)))
    view = base.transpose(1, 0)
    assert HostCache().finite(view)
    assert reads == [view]


@needs_keys
def test_a_view_reaching_past_what_was_read_is_read(reads):
    base = fresh(np.ones((4, 6)))
    head = base[:2]              # contiguous: the first 12 elements
    view = base[:, ::2]          # strided over all 4 rows
    cache = HostCache()
    assert cache.finite(head)
    assert view_span(view, storage_key(view, "Float32"))[1] > head.data_ptr() + 12 * 4
    assert cache.finite(view)
    assert reads == [head, view]


def test_two_tensors_with_no_address_are_never_one(reads, monkeypatch):
    """A tensor whose data_ptr() is 0 (no memory yet) gets no storage key:
    two of them with the same shape are still judged apart."""
    finite, broken = ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.full(4, np.inf, np.float32))
    monkeypatch.setattr(type(finite), "data_ptr", lambda self: 0)
    assert storage_key(finite, "Float32") is None
    cache = HostCache()
    assert cache.finite(finite) and not cache.finite(broken)
    assert len(reads) == 2
