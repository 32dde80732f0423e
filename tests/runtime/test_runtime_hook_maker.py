"""One ``HookBackward`` per thread, its hook set before each use.

``HookMaker`` reuses a single ``mindspore.ops.HookBackward`` and calls
``set_hook_fn`` before each use instead of building a primitive per hooked
call. That is only right if every use keeps the hook function set when it
ran: these tests check it on the running release (this module also runs on
the oldest tested release, tests/runtime/test_mindspore_releases.py), and
that gradients are the same with and without the hooks.
"""
from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ms = pytest.importorskip("mindspore")

from probe_runtime.check.verdict import iter_tensors  # noqa: E402
from probe_runtime.hooks.backward import (  # noqa: E402
    SHARED_HOOK_RELEASES, HookMaker, synchronize_setting, through_hook,
)


@pytest.fixture(params=[True, False], ids=["synchronous", "asynchronous"])
def synchronous(request):
    """The process runs synchronously (``pynative_synchronize``) or not, as
    the parameter says; the setting is put back after the test."""
    context, key = synchronize_setting()
    before = bool(context.get_param(key))
    context.set_param(key, request.param)
    yield request.param
    context.set_param(key, before)


def chain(make, fired: list, x):
    """Three hooked steps, each hook recording its own index when it fires."""
    def hook_for(index):
        return lambda *grads: fired.append((index, [g.asnumpy().copy() for g in iter_tensors(grads)]))

    for index in range(3):
        x = ms.ops.relu(x) * float(index + 2)
        x = through_hook(make, hook_for(index), [x], [0])[0]
    return (x * x).sum()


@pytest.fixture
def x():
    return ms.Tensor(np.linspace(-1.0, 2.0, 12, dtype=np.float32).reshape(3, 4))


def test_this_release_is_one_the_shared_instance_is_used_on():
    assert HookMaker(ms.ops.HookBackward, ms.__version__).shared, \
        f"MindSpore {ms.__version__} is outside SHARED_HOOK_RELEASES {SHARED_HOOK_RELEASES}"


def test_each_use_keeps_its_own_hook_and_the_gradients_are_unchanged(x, synchronous):
    maker = HookMaker(ms.ops.HookBackward, ms.__version__)
    fired: list = []
    shared_grad = ms.grad(lambda t: chain(maker, fired, t))(x).asnumpy()
    fresh: list = []
    fresh_grad = ms.grad(lambda t: chain(ms.ops.HookBackward, fresh, t))(x).asnumpy()
    plain_grad = ms.grad(lambda t: chain(lambda hook: (lambda *ts: ts[0] if len(ts) == 1 else ts), [], t))(x)
    assert [index for index, _ in fired] == [2, 1, 0]  # backward order, each hook once
    assert [index for index, _ in fresh] == [2, 1, 0]
    for (_, got), (_, want) in zip(fired, fresh):
        assert len(got) == len(want) == 1
        np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(shared_grad, fresh_grad)
    np.testing.assert_array_equal(shared_grad, plain_grad.asnumpy())


def test_one_instance_is_reused_only_while_synchronous(synchronous):
    maker = HookMaker(ms.ops.HookBackward, "2.8.0")
    first, second = maker(lambda *g: None), maker(lambda *g: None)
    assert (first is second) is synchronous  # asynchronously each use would get the last hook set


@pytest.mark.parametrize("version", ["2.6.0", "2.11.0", "not a version"])
def test_outside_the_range_each_use_gets_a_fresh_instance(version, synchronous):
    maker = HookMaker(ms.ops.HookBackward, version)
    assert not maker.shared
    assert maker(lambda *g: None) is not maker(lambda *g: None)
