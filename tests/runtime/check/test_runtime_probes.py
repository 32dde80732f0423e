"""The asynchronous path's Parameter probe (probe_runtime.check.probes.
launch_sum): non-finite exactly when the Parameter holds inf/nan, whatever
its finite values add up to."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Parameter, Tensor  # noqa: E402

from probe_runtime.check.probes import launch_sum  # noqa: E402
from probe_runtime.check.verdict import HostCache  # noqa: E402


def _sum(values, dtype, trainable=True):
    param = Parameter(Tensor(np.array(values, dtype)), name="p", requires_grad=trainable)
    probe = launch_sum(param)
    return float(np.asarray(probe.asnumpy()).reshape(-1)[0]), HostCache().finite(probe)


@pytest.mark.parametrize("values, dtype", [
    ([3e38, 3e38], np.float32),        # a helper's finding: their float32 sum was inf, a false record
    ([np.finfo(np.float32).max] * 1000, np.float32),
    ([1e300, 1e300, -1e308], np.float64),  # over float32's range before the cast
    ([65504.0] * 4096, np.float16),
    ([1e-45, -3e38, 1.0], np.float32),
])
def test_finite_values_give_a_finite_probe(values, dtype):
    total, finite = _sum(values, dtype)
    assert np.isfinite(total) and finite


@pytest.mark.parametrize("values, dtype, trainable, expected", [
    ([1.0, np.inf], np.float32, True, np.inf),
    ([1.0, np.nan], np.float64, True, np.nan),
    ([3e38, -np.inf], np.float32, True, np.nan),    # -inf of a trainable one is read as nan (TrainableSum)
    ([3e38, -np.inf], np.float32, False, -np.inf),  # a frozen one's -inf stays -inf: a mask by design
    ([np.inf, -np.inf], np.float32, False, np.nan),
    ([1.0, np.inf], np.float16, True, np.inf),
])
def test_inf_and_nan_stay_what_they_are(values, dtype, trainable, expected):
    total, finite = _sum(values, dtype, trainable)
    assert not finite
    assert np.isnan(total) if np.isnan(expected) else total == expected
