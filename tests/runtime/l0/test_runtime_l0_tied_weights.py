"""L0 with a tied weight: an embedding table handed to the output head.

The table's gradient is the sum of the embedding lookup's and the head's
gradient w.r.t. the table it took as an argument. When the head's backward
makes inf, the Embedding's ``parameters_grad`` entry only carries it; a
fresh hunt found it called a second ORIGIN of the step beside the head's
backward entry.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


class _Head(nn.Cell):
    def construct(self, h, table, scale):
        signs = scale * Tensor(np.array([1.0, -1.0] * 5, np.float32))
        return (ops.matmul(h, table.T) * signs).sum()


class _Tied(nn.Cell):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, embedding_table="ones")
        self.head = _Head()

    def construct(self, ids, amp, scale):
        return self.head(self.emb(ids) * amp, self.emb.embedding_table, scale)


def _scenario(debugger):
    """Three steps; in step 1 the head's gradient w.r.t. the table is inf
    (10,000 tokens, amplitudes 1e10 and 1e26), its forward pass finite."""
    net = _Tied()
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    ids = Tensor(np.ones((10000,), np.int32))
    for step in range(3):
        big = step == 1
        debugger.start(net)
        loss, grads = grad_fn(ids, Tensor(1e10 if big else 1.0, ms.float32), Tensor(1e26 if big else 1.0, ms.float32))
        debugger.stop()
        debugger.step()
        if step == 0:
            assert np.isfinite(loss.asnumpy()) and np.isfinite(grads[0].asnumpy()).all()
        if step == 1:
            assert not np.isfinite(grads[0].asnumpy()).all()


def test_the_tied_tables_gradient_carries_the_heads_overflow(tmp_path, monkeypatch):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _scenario, ORIGINAL, level="L0")
    for records in (default, exact):
        first = [r for step, r in records if step == 1]
        origins = [r["name"] for r in first if r["origin"]]
        assert origins == ["Cell.head._Head.backward.0"], [(r["name"], r["origin"]) for r in first]
        assert "Cell.emb.Embedding.parameters_grad" in [r["name"] for r in first]
