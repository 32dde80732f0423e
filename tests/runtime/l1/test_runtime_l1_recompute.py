"""L1 with a recomputed Cell (``Cell.recompute()``, ``mindspore.recompute``).

MindSpore does not keep a recomputed Cell's activations: in the backward
pass it runs the Cell's forward code again. Those calls go through the
tool's wrappers a second time (``Functional.exp.1.forward`` after
``Functional.exp.0.forward``), from the same finite inputs. Before, every
such repeat of an overflowing call was a second ORIGIN in the step; now it
is carried, with a message saying it was recomputed. A recomputed call is
still an origin when nothing overflowed before it in the step, and a
backward overflow inside the Cell is named the same under every check mode.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime.check.records import RECOMPUTED_MESSAGE  # noqa: E402
from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class Block(nn.Cell):
    def __init__(self, backward: bool):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.backward = backward

    def construct(self, x):
        h = self.fc(x)
        if self.backward:  # finite forward (sqrt(0) = 0), +inf gradient (d sqrt/dh at 0)
            return ops.sqrt(ops.relu(h) * 0.0)
        return ops.exp(h * 100.0)  # +inf in the forward pass


class Net(nn.Cell):
    def __init__(self, how: str, backward: bool):
        super().__init__()
        self.block = Block(backward)
        self.out = nn.Dense(4, 1, weight_init="ones", bias_init="zeros")
        self.how = how
        if how == "Cell.recompute":
            self.block.recompute()

    def construct(self, x):
        if self.how == "mindspore.recompute":
            return self.out(ms.recompute(self.block, x))
        return self.out(self.block(x))


def _scenario(how: str, backward: bool, steps: int = 1):
    def scenario(debugger):
        net = Net(how, backward)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
        for _ in range(steps):
            debugger.start(net)
            grad_fn(Tensor(np.ones((2, 4), np.float32)))
            debugger.stop()
            debugger.step()
    return scenario


@pytest.mark.parametrize("how", ["Cell.recompute", "mindspore.recompute"])
def test_a_recomputed_forward_overflow_is_one_origin(tmp_path, monkeypatch, how):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(how, backward=False), ORIGINAL)
    for found in (default, exact):
        origins = [r["name"] for _, r in found if r["origin"]]
        assert origins == ["Functional.exp.0.forward"], [(r["name"], r["origin"]) for _, r in found]
        repeats = [r for _, r in found if r["name"].startswith("Functional.exp.") and r["name"].endswith("forward")
                   and r["name"] != "Functional.exp.0.forward"]
        assert repeats, "MindSpore ran Block.construct again in the backward pass: its exp is seen twice"
        assert all(r["message"] == RECOMPUTED_MESSAGE for r in repeats), repeats
    assert [r["name"] for _, r in default] == [r["name"] for _, r in exact]
    assert_origin_invariant(tmp_path / "exact" / "dump")


@pytest.mark.parametrize("how", ["Cell.recompute", "mindspore.recompute"])
def test_a_backward_overflow_in_a_recomputed_cell_is_named_alike(tmp_path, monkeypatch, how):
    """The recomputed calls' backward entries are the ones MindSpore
    differentiates: the origin is the recomputed sqrt's backward entry,
    under the default and exact checks alike; plain forward calls get no
    message."""
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario(how, backward=True), ORIGINAL)
    for found in (default, exact):
        origins = [r["name"] for _, r in found if r["origin"]]
        assert len(origins) == 1 and origins[0].startswith("Functional.sqrt.") \
            and origins[0].endswith(".backward"), [(r["name"], r["origin"]) for _, r in found]
        assert found[0][1]["name"] == origins[0]
        assert not [r for _, r in found if r["name"].endswith("forward")], found
    assert [r["name"] for _, r in default] == [r["name"] for _, r in exact]


def test_a_recomputed_call_first_to_overflow_in_its_step_is_the_origin(tmp_path, monkeypatch):
    """When a recomputed call overflows and nothing did before it in the
    step, it is where the overflow started: its forward run was finite
    (here the Parameter it reads was changed in place between the forward
    pass and the backward pass, as a user's hook might)."""
    def scenario(debugger):
        net = Net("Cell.recompute", backward=False)
        weight = net.block.fc.weight
        grad_fn = ms.value_and_grad(lambda x: poke(net(x)).sum(), None, net.trainable_params())

        def poke(out):
            weight.set_data(Tensor(np.full((4, 4), 1.0, np.float32)))
            return out

        weight.set_data(Tensor(np.full((4, 4), 1e-3, np.float32)))  # exp(0.4) in the forward pass: finite
        debugger.start(net)
        grad_fn(Tensor(np.ones((2, 4), np.float32)))
        debugger.stop()
        debugger.step()

    for found in run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL):
        first = found[0][1]
        assert first["origin"] and first["name"].startswith("Functional.exp.") and first["name"] != \
            "Functional.exp.0.forward", [(r["name"], r["origin"]) for _, r in found]
        assert first["message"] == RECOMPUTED_MESSAGE
