"""A mask the loop reads on the host (a review's finding): greedy decoding
masks banned tokens with -inf and takes the argmax on the host
(``np.argmax(masked.asnumpy())``), so no checked call ever takes the
-inf; when the window closed every mask was recorded as an ORIGIN (300
false records in one decoding window, ``overflow_nums`` used up by the
first). A mask written on purpose that the user's code read on the host
left the checked calls there, and is not recorded; one nothing read or
took still is (a forward-only loop returning it: the -inf is the result),
and so is a ``log`` of 0 read on the host (a computed -inf), also when
it rides on a mask: a call passing on the -inf of several makers is
deferred for the first alone (a review's finding: ``bias + log(p)`` read
on the host, ``log(p)`` also taken by an ``exp``, said "no overflow
found")."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.mindspore
ms = pytest.importorskip("mindspore")
np = pytest.importorskip("numpy")

from mindspore import Tensor, nn, ops  # noqa: E402

from runtime_support import PatchedState, run_default_and_exact  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE)
ORIGINAL = PatchedState()


def _decode(read: bool, computed: bool = False):
    def scenario(debugger):
        head = nn.Dense(8, 16)
        banned = Tensor(np.arange(16) % 5 == 0)
        h = Tensor(np.random.default_rng(0).normal(size=(2, 8)).astype(np.float32))
        debugger.start()
        kept = []
        for _ in range(3):
            logits = head(h)
            if computed:  # probabilities that are exactly 0 where banned: log(0) is -inf
                scores = ops.log(ops.softmax(logits, -1) * (1 - banned.astype(ms.float32)))
            else:
                scores = ops.masked_fill(logits, banned, float("-inf"))
            if read:
                assert (np.argmax(scores.asnumpy(), -1) % 5 != 0).all()
            kept.append(scores)
        debugger.stop()
        debugger.step()
    return scenario


def test_masks_the_loop_reads_on_the_host_are_no_overflow(tmp_path, monkeypatch):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _decode(read=True), ORIGINAL)
    assert default == exact == [], (default, exact)


@pytest.mark.parametrize("read,computed", [(False, False), (True, True)])
def test_a_mask_nothing_read_and_a_log_of_zero_read_are_still_recorded(tmp_path, monkeypatch, read, computed):
    default, exact = run_default_and_exact(tmp_path, monkeypatch, _decode(read, computed), ORIGINAL)
    assert default == exact, (default, exact)
    api = "Functional.log" if computed else "Functional.masked_fill"
    assert [r["name"] for _, r in exact if r["origin"]][:1] == [f"{api}.0.forward"], exact


@pytest.mark.parametrize("log_maker", ["remembered", "let go", "an earlier window's"])
def test_a_log_of_zero_riding_on_a_mask_read_on_the_host_is_still_recorded(tmp_path, monkeypatch, log_maker):
    """Also when the log's maker is no longer remembered (let go past 16
    consumed masks, or made in an earlier window: its -inf then looks made
    outside the checked calls; a review's finding)."""
    def scenario(debugger):
        logits = Tensor(np.array([[0.0, 5.0, 30.0, 1.0]], np.float16))
        banned = Tensor(np.array([[True, False, False, False]]))
        debugger.start()
        logp = ops.log(ops.softmax(logits, -1))  # float16: exp(-30) underflows to 0, log(0) is -inf
        probs = ops.exp(logp)  # takes logp's -inf and makes it finite
        assert np.isfinite(probs.asnumpy()).all()
        if log_maker == "let go":
            for _ in range(20):  # masks a softmax consumes: the oldest consumed makers are let go
                ops.softmax(ops.masked_fill(ops.ones((1, 4), ms.float32), banned, float("-inf")), -1)
        if log_maker == "an earlier window's":
            debugger.stop()
            debugger.step()
            debugger.start()
        bias = ops.masked_fill(ops.zeros_like(logits), banned, float("-inf"))
        scores = bias + logp  # the mask first: deferred for the mask alone
        assert np.argmax(scores.asnumpy(), -1) == 2
        debugger.stop()
        debugger.step()

    default, exact = run_default_and_exact(tmp_path, monkeypatch, scenario, ORIGINAL)
    assert default == exact, (default, exact)
    assert any(r["origin"] for _, r in exact), exact  # as before the host rule: an overflow is recorded
