"""Complex tensors count: inf/nan in a complex64 tensor is an overflow.

A fresh user's finding (an FNet-style mixing layer): ``ops.fft`` of large
finite values returned a complex64 DC bin of inf, and ``ops.real`` then
copied it out. Complex tensors never counted, so ``fft``'s entry had no
overflow and ``real``, whose only input "was finite", was the ORIGIN. A
complex tensor is now judged by its values (``numpy.isfinite``: both parts
finite); its statistics stay None, as before.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from probe_runtime.check.verdict import HostCache, judge, statistics, to_host  # noqa: E402
from runtime_support import PatchedState, assert_origin_invariant, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def _complex(values):
    return ops.Complex()(Tensor(np.array(values, np.float32)), Tensor(np.zeros(len(values), np.float32)))


def test_a_complex_tensor_holding_inf_is_not_finite():
    bad, good = _complex([1.0, np.inf]), _complex([1.0, 2.0])
    assert not HostCache().finite(bad) and HostCache().finite(good)
    floats = Tensor(np.ones(2, np.float32))
    made = judge([floats], [bad])
    assert made.overflow and made.origin                       # finite input, complex inf out: it made it
    copied = judge([bad], [Tensor(np.array([1.0, np.inf], np.float32))])
    assert copied.overflow and not copied.origin               # complex inf in, float inf out: carried
    assert statistics(to_host(bad)) == {"Max": None, "Min": None, "Mean": None, "Norm": None}


class FNetMix(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 8, weight_init="ones")
        self.head = nn.Dense(8, 1)

    def construct(self, x):
        f = ops.fft(self.fc(x))                                # complex64 DC bin: 8 * 5e37, inf
        return self.head(ops.real(f)).mean()


@pytest.mark.cpu_kernel("fft", "float32", arity=1)
def test_l1_names_the_fft_that_overflowed_not_the_real_that_copied_it(tmp_path, monkeypatch):
    def run(debugger):
        net = FNetMix()
        optimizer = nn.SGD(net.trainable_params(), 1e-3)
        grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
        debugger.start()
        grad_fn(Tensor(np.full((2, 8), 5e37 / 8, np.float32)))
        debugger.stop()

    for records in run_default_and_exact(tmp_path, monkeypatch, run, ORIGINAL):
        origins = [r["name"] for _, r in records if r["origin"]]
        assert origins and origins[0].startswith("Functional.fft."), records
        real = [r for _, r in records if r["name"].startswith("Functional.real.") and "forward" in r["name"]]
        assert real and real[0]["origin"] is False, records
    for checks in ("default", "exact"):
        assert_origin_invariant(tmp_path / checks / "dump")
