"""Tensors the tool hands back to user code keep what a layer keeps on them.

MSAdapter's mindtorch sets ``_device`` on every tensor and fails without it
(``ValueError: Tensor must have device``); the tensors that come out of the
tool's ``HookBackward`` are new objects, so they must carry it over.
"""
from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ms = pytest.importorskip("mindspore")

from probe_runtime.hooks.backward import carry_attributes, through_hook  # noqa: E402


def test_hooked_tensors_keep_the_instance_attributes():
    x = ms.Tensor(np.ones(3, np.float32))
    x._device = "cpu-of-the-layer"
    y = ms.Tensor(np.zeros(2, np.float32))
    out = through_hook(ms.ops.HookBackward, lambda *grads: None, [x, 7, y], [0, 2])
    assert out[0] is not x and out[0]._device == "cpu-of-the-layer"
    assert out[1] == 7
    assert "_device" not in vars(out[2])
    np.testing.assert_array_equal(out[0].asnumpy(), x.asnumpy())


def test_gradients_still_flow_through_the_carried_tensor():
    seen = []
    x = ms.Tensor(np.array([1.0, 2.0], np.float32))
    x._device = "d"

    def f(v):
        hooked = through_hook(ms.ops.HookBackward, lambda *g: seen.append(g), [v], [0])[0]
        assert hooked._device == "d"
        return (hooked * hooked).sum()

    grad = ms.grad(f)(x)
    np.testing.assert_allclose(grad.asnumpy(), [2.0, 4.0])
    assert len(seen) == 1


def test_a_parameters_own_attributes_stay_with_it():
    p = ms.Parameter(ms.Tensor(np.ones(2, np.float32)), name="w")
    target = ms.Tensor(np.ones(2, np.float32))
    carry_attributes(p, target)
    assert vars(target) == {}


def test_existing_attributes_are_not_overwritten():
    source, target = ms.Tensor(np.ones(1, np.float32)), ms.Tensor(np.ones(1, np.float32))
    source._device, target._device = "a", "b"
    carry_attributes(source, target)
    assert target._device == "b"


def test_objects_without_attributes_are_left_alone():
    carry_attributes(1.5, object())  # never raises
