"""probe_format.collectives: the dump format's table of collective semantics: what each collective
does (reduces, rooted, point-to-point, receives), the API lists derived
from it, and its readers in the report and the runtime (issue 32)."""
from __future__ import annotations

import pytest

from probe_format import collectives as fmt
from msprobe_lint.report.model import Collective, Record


def test_the_api_lists_derive_from_the_table():
    assert fmt.COLLECTIVE_APIS == tuple(fmt.COLLECTIVES)
    assert set(fmt.REDUCING_APIS) == {"AllReduce", "ReduceScatter", "Reduce"}
    assert set(fmt.P2P_APIS) == {"Send", "Receive"}
    assert fmt.ROOTED_APIS == ("Broadcast",)
    assert {"AllGather", "AlltoAll", "NeighborExchange", "Broadcast"}.isdisjoint(fmt.REDUCING_APIS)


def test_each_row_is_consistent():
    for api, row in fmt.COLLECTIVES.items():
        assert row.api == api
        assert not (row.rooted and row.point_to_point), api
        assert not row.receives or row.point_to_point, api  # a Receive has a peer
        assert not (row.reduces and row.point_to_point), api


def test_an_unknown_collective_only_moves_data():
    row = fmt.collective_semantics("AllReduceV9")
    assert not (row.reduces or row.rooted or row.point_to_point or row.receives or row.class_words)
    assert fmt.collective_semantics("Send") is fmt.COLLECTIVES["Send"]


@pytest.mark.parametrize("name", ["MatmulAllReduceAddRmsNorm", "AlltoAllV", "InnerCommAllToAllV", "ISendIRecv",
                                  "DistCommIsend", "DistCommIrecv", "_HostReduceScatter", "AllGatherMatmul"])
def test_class_words_mark_fused_and_generated_collectives(name):
    assert any(word in name for word in fmt.COLLECTIVE_CLASS_WORDS)


@pytest.mark.parametrize("name", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceAll", "BroadcastTo", "Add",
                                  "MatMul"])
def test_class_words_leave_plain_operators_alone(name):
    assert not any(word in name for word in fmt.COLLECTIVE_CLASS_WORDS)


def record(api, inputs_finite, rank=0, root=None, peer=None):
    return Record(step=0, rank=rank, folder="f", index=0, name=f"Primitive.{api}.0.forward", origin=False,
                  where=None, collective=Collective(api, "g", (0, 1), 0, "forward", inputs_finite, peer, root))


def test_received_reads_the_table():
    assert record("Receive", inputs_finite=False, peer=1).received  # its buffer is overwritten by the peer's data
    assert not record("Send", inputs_finite=False, peer=1).received
    assert record("Broadcast", inputs_finite=False, rank=1, root=0).received
    assert not record("Broadcast", inputs_finite=False, rank=0, root=0).received
    assert not record("AllReduce", inputs_finite=False).received
    assert record("AllReduce", inputs_finite=True).received


def test_the_received_message_names_a_reduction_only_for_reducing_collectives():
    assert "the reduction itself overflowed" in fmt.received_message("Reduce", "g", [0, 1])
    assert "the reduction itself overflowed" not in fmt.received_message("AllGather", "g", [0, 1])


def test_the_runtime_reads_the_same_table():
    from probe_runtime.grad import replay
    from probe_runtime.hooks import collectives

    assert {form.api for form in collectives.FORMS.values()} <= set(fmt.COLLECTIVES)
    assert set(fmt.COLLECTIVE_CLASS_WORDS) <= set(replay.COLLECTIVE_WORDS)
    send = collectives.CollectiveCall("Send", "g", (0, 1), collectives.FORMS["Send"], peer=1)
    assert send.as_record("forward", True)["peer"] == 1 and send.key(0) == ("g", 0, 1)
    broadcast = collectives.CollectiveCall("Broadcast", "g", (0, 1), collectives.FORMS["Broadcast"], root=0)
    assert broadcast.as_record("forward", True)["root"] == 0 and "peer" not in broadcast.as_record("forward", True)
