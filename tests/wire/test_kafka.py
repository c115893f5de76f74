"""The Kafka decoder on conversations written from the protocol guide
(https://kafka.apache.org/protocol.html): fed three ways, flexible and classic versions,
record batches in every codec, acks=0, errors by name, gaps, bounds, sniffing."""

from __future__ import annotations

import pytest

from agentshark.wire import kafka_frames, sniff_wire
from agentshark.wire.events import Operation
from agentshark.wire.kafka import KafkaSession, looks_like_kafka
from tests.wire import pg_messages as m
from tests.wire.kafka_messages import (
    Rec,
    array,
    batch,
    blob,
    i8,
    i16,
    i32,
    i64,
    request,
    response,
    string,
    tags,
)

TP = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def api_versions() -> list[m.Step]:
    body = string("librdkafka", True) + string("2.16.0", True) + tags(True)
    keys = [i16(0) + i16(0) + i16(11) + tags(True), i16(1) + i16(0) + i16(16) + tags(True)]
    answer = i16(0) + array(keys, True) + i32(0) + tags(True)
    return [(0, request(18, 3, 1, body, flex=True)), (1, response(1, answer, flex=False))]


def produce_v9(codec: int) -> list[m.Step]:
    records = [
        (b"job-0", b'{"task": "a"}', [("traceparent", TP)]),
        (None, b"plain text", [("blob", b"\x00\xff"), ("blob", b"x")]),
    ]
    part = i32(0) + blob(batch(records, codec=codec), True) + tags(True)
    body = string(None, True) + i16(-1) + i32(30000)
    body += array([string("tasks", True) + array([part], True) + tags(True)], True) + tags(True)
    presp = i32(0) + i16(0) + i64(40) + i64(-1) + i64(0) + array([], True) + string(None, True)
    answer = array([string("tasks", True) + array([presp + tags(True)], True) + tags(True)], True)
    answer += i32(0) + tags(True)
    return [(0, request(0, 9, 2, body, flex=True)), (1, response(2, answer, flex=True))]


def produce_acks0() -> bytes:
    part = i32(1) + blob(batch([(b"k", b"[1, 2]", [])]))
    body = i16(-1) + i16(0) + i32(1000) + array([string("fire") + array([part])])
    return request(0, 3, 3, body, flex=False)


def fetch_v11() -> list[m.Step]:
    part = i32(0) + i32(-1) + i64(7) + i64(0) + i32(1 << 20)
    body = i32(-1) + i32(500) + i32(1) + i32(50 << 20) + i8(0) + i32(0) + i32(-1)
    body += array([string("tasks") + array([part])]) + array([]) + string("")
    records = [(b"job-7", b'{"task": "b"}', [("traceparent", TP)]), (b"job-8", b"", [])]
    data = batch(records, base=7, codec=2, log_append=True) + batch([(None, b"x", [])])[:30]
    good = i32(0) + i16(0) + i64(9) + i64(9) + i64(0) + i32(-1) + i32(-1) + blob(data)
    bad = i32(1) + i16(1) + i64(-1) + i64(-1) + i64(-1) + i32(-1) + i32(-1) + blob(None)
    answer = i32(0) + i16(0) + i32(0) + array([string("tasks") + array([good, bad])])
    return [(0, request(1, 11, 4, body, flex=False)), (1, response(4, answer, flex=False))]


def offset_commit_v2() -> list[m.Step]:
    parts = array([i32(0) + i64(9) + string("")])
    body = string("workers") + i32(3) + string("member-1") + i64(-1)
    body += array([string("tasks") + parts])
    answer = array([string("tasks") + array([i32(0) + i16(0)])])
    return [(0, request(8, 2, 5, body, flex=False)), (1, response(5, answer, flex=False))]


def conversation(codec: int = 1) -> list[m.Step]:
    return [
        *api_versions(),
        *produce_v9(codec),
        (0, produce_acks0()),
        *fetch_v11(),
        *offset_commit_v2(),
    ]


def decoder() -> KafkaSession:
    return KafkaSession("c1")


def facts(ops: list[Operation]) -> list[object]:
    return [*m.facts(ops), *(repr(o.messages) for o in ops)]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_same_operations_however_the_bytes_are_cut(chunk: int | None) -> None:
    whole, _ = m.feed(decoder, conversation())
    cut, _ = m.feed(decoder, conversation(), chunk=chunk)
    trailing, _ = m.feed(decoder, [*conversation(), (0, i32(100) + b"\x00\x12")])
    assert facts(cut) == facts(whole)
    assert facts(trailing) == facts(whole)  # a request cut short at the end reports nothing


def test_every_api_with_its_version_and_result() -> None:
    ops, dec = m.feed(decoder, conversation())
    got = [(o.command, o.details["api_version"], o.result, o.role) for o in ops]
    assert got == [
        ("ApiVersions", 3, "2 APIs", None),
        ("Produce", 9, "2 records", "queue.publish"),
        ("Produce", 3, None, "queue.publish"),
        ("Fetch", 11, "2 records", "queue.consume"),
        ("OffsetCommit", 2, "1 offsets committed", "queue.commit"),
    ]
    assert dec.diagnostics == [] and all(o.diagnostics == [] for o in ops)
    assert ops[0].details["api_versions"] == {"Produce": "0-11", "Fetch": "0-16"}
    assert ops[0].statement == "ApiVersions v3 librdkafka 2.16.0"


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_produced_records_take_the_base_offset(codec: int) -> None:
    ops, _ = m.feed(decoder, conversation(codec))
    first, second = ops[1].messages
    assert (first.action, first.destination, first.partition, first.offset) == (
        "publish",
        "tasks",
        0,
        40,
    )
    assert (first.key, first.payload, first.headers) == (
        "job-0",
        {"task": "a"},
        {"traceparent": TP.decode()},
    )
    assert first.timestamp == 1_700_000_000.0 and first.size == 13
    assert (second.offset, second.key, second.payload) == (41, None, "plain text")
    assert second.headers == {"blob": [{"base64": "AP8="}, "x"]}  # repeated, binary
    assert ops[1].parameters == [{"task": "a"}, "plain text"]
    assert ops[1].request_complete and ops[1].response_complete


def test_acks_0_is_reported_at_once_without_a_response() -> None:
    dec = decoder()
    ops = dec.feed(0, produce_acks0(), 1.0)
    assert [(o.command, o.details["acks"], o.response_complete) for o in ops] == [
        ("Produce", 0, False)
    ]
    assert [(x.destination, x.partition, x.offset, x.payload) for x in ops[0].messages] == [
        ("fire", 1, None, [1, 2])
    ]
    assert dec.close() == []


def test_fetched_records_their_offsets_errors_and_a_partial_batch() -> None:
    ops, _ = m.feed(decoder, conversation())
    fetch = ops[3]
    assert [(x.offset, x.key, x.payload) for x in fetch.messages] == [
        (7, "job-7", {"task": "b"}),
        (8, "job-8", ""),
    ]
    assert {x.action for x in fetch.messages} == {"deliver"}
    # LogAppendTime: every record carries the batch's max timestamp
    assert [x.timestamp for x in fetch.messages] == [1_700_000_000.002] * 2
    assert fetch.messages[0].details == {"compression": "snappy"}
    assert fetch.error == {
        "code": "OFFSET_OUT_OF_RANGE",
        "number": 1,
        "message": None,
        "topic": "tasks",
        "partition": 1,
    }
    assert fetch.details["partial_batch_bytes"] == 30
    assert fetch.details["fetch_offsets"] == [{"topic": "tasks", "partition": 0, "offset": 7}]


def test_offset_commit_messages() -> None:
    ops, _ = m.feed(decoder, conversation())
    commit = ops[4]
    assert [
        (x.action, x.destination, x.partition, x.offset, x.details) for x in commit.messages
    ] == [("commit", "tasks", 0, 9, {"group_id": "workers"})]
    assert commit.statement == "OffsetCommit v2 workers: tasks[0]=9"


def test_an_error_response_names_the_error() -> None:
    body = i16(-1) + i16(1) + i32(100) + array([string("nope") + array([i32(0) + blob(b"")])])
    presp = i32(0) + i16(3) + i64(-1) + i64(-1)
    answer = array([string("nope") + array([presp])]) + i32(0)
    ops, _ = m.feed(
        decoder, [(0, request(0, 3, 9, body, flex=False)), (1, response(9, answer, flex=False))]
    )
    assert ops[0].error == {
        "code": "UNKNOWN_TOPIC_OR_PARTITION",
        "number": 3,
        "message": None,
        "topic": "nope",
        "partition": 0,
    }
    assert ops[0].messages == [] and ops[0].diagnostics == []  # it sent no record
    heartbeat = [
        (
            0,
            request(
                12,
                4,
                10,
                string("g", True) + i32(1) + string("m", True) + string(None, True) + tags(True),
                flex=True,
            ),
        ),
        (1, response(10, i32(0) + i16(27) + tags(True), flex=True)),
    ]
    ops, _ = m.feed(decoder, heartbeat)
    assert (ops[0].command, ops[0].error) == (
        "Heartbeat",
        {"code": "REBALANCE_IN_PROGRESS", "number": 27, "message": None},
    )


def test_an_unpaired_response_is_never_taken_for_another() -> None:
    steps = [(0, request(3, 1, 20, array([]), flex=False)), (1, response(21, b"", flex=False))]
    ops, dec = m.feed(decoder, steps)
    assert [(o.command, o.response_complete) for o in ops] == [("Metadata", False)]
    assert [d.code for d in dec.diagnostics] == ["kafka.unpaired"]
    assert [d.code for d in ops[0].diagnostics] == ["kafka.unanswered"]


def test_a_gap_inside_a_response_costs_that_operation_only() -> None:
    fetch = fetch_v11()
    dec = decoder()
    dec.feed(0, fetch[0][1], 1.0)
    data = fetch[1][1]
    assert dec.feed(1, data[:20], 2.0) == []
    ops = dec.gap(1, 30, 2.1)
    ops += dec.feed(1, data[50:], 2.2)
    assert [(o.command, o.request_complete, o.response_complete) for o in ops] == [
        ("Fetch", True, False)
    ]
    assert ops[0].details["response_damaged"] and ops[0].messages == []
    ops, _ = m.feed(lambda: dec, offset_commit_v2())  # in step again
    assert [(o.command, o.response_complete) for o in ops] == [("OffsetCommit", True)]


def test_a_gap_at_a_frame_boundary_resyncs_on_a_correlation_id_in_flight() -> None:
    """Bytes lost at a boundary, then noise: the next frame is the one whose correlation id
    names the request in flight, and it pairs by that id."""
    dec = decoder()
    dec.feed(0, offset_commit_v2()[0][1], 1.0)
    assert dec.gap(1, 10, 2.0) == []
    noise = b"\x00\x00\x00\x09\x00\x00\x7f\x7f"  # a size, then no id in flight
    ops = dec.feed(1, noise + offset_commit_v2()[1][1], 3.0)
    assert [(o.command, o.response_complete) for o in ops] == [("OffsetCommit", True)]
    assert [d.code for d in dec.diagnostics] == ["kafka.gap", "kafka.resync"]
    assert "8 bytes were skipped" in dec.diagnostics[1].message


def test_a_response_naming_no_request_in_flight_does_not_resync() -> None:
    dec = decoder()
    dec.feed(0, offset_commit_v2()[0][1], 1.0)
    dec.gap(1, 10, 2.0)
    response = bytearray(offset_commit_v2()[1][1])
    response[4:8] = (999).to_bytes(4)  # another correlation id
    assert dec.feed(1, bytes(response), 3.0) == []
    ops = dec.close()
    assert [(o.command, o.response_complete) for o in ops] == [("OffsetCommit", False)]
    assert [d.code for d in dec.diagnostics] == ["kafka.gap", "kafka.no_resync"]


def test_a_frame_too_large_to_hold_is_skipped_but_paired(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_frames, "MAX_KEPT", 100)
    ops, dec = m.feed(decoder, fetch_v11(), chunk=40)
    assert [(o.command, o.response_complete) for o in ops] == [("Fetch", False)]
    assert ops[0].details["response_too_large"] and dec.diagnostics == []


def test_payload_bytes_are_bounded_every_record_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentshark.wire import kafka

    monkeypatch.setattr(kafka, "MAX_VALUE_BYTES", 100)
    records: list[Rec] = [(b"a", b"x" * 60, []), (b"b", b"y" * 60, []), (b"c", b"z", [])]
    part = i32(0) + blob(batch(records))
    body = i16(-1) + i16(0) + i32(100) + array([string("big") + array([part])])
    ops, _ = m.feed(decoder, [(0, request(0, 3, 1, body, flex=False))])
    got = [(x.key, x.size, x.details.get("kept")) for x in ops[0].messages]
    assert got == [("a", 60, None), (None, 60, False), ("c", 1, None)]
    assert ops[0].values_cut


def test_a_body_that_breaks_its_layout_is_a_diagnostic() -> None:
    steps = [(0, request(0, 3, 1, i16(-1) + i16(1), flex=False)), (1, response(1, b"", flex=False))]
    ops, dec = m.feed(decoder, steps)
    assert [(o.command, o.request_complete, o.response_complete) for o in ops] == [
        ("Produce", True, True)
    ]
    assert [d.code for d in ops[0].diagnostics] == ["kafka.body", "kafka.body"]
    assert dec.diagnostics == []


def test_a_corrupt_compressed_batch_is_reported_not_raised() -> None:
    data = bytearray(batch([(b"k", b"v" * 50, [])], codec=4))
    data[-8:] = b"\xff" * 8
    part = i32(0) + blob(bytes(data))
    body = i16(-1) + i16(1) + i32(100) + array([string("t") + array([part])])
    answer = (
        i32(0)
        + i16(0)
        + i32(0)
        + array(
            [
                string("t")
                + array(
                    [
                        i32(0)
                        + i16(0)
                        + i64(1)
                        + i64(1)
                        + i64(0)
                        + i32(-1)
                        + i32(-1)
                        + blob(bytes(data))
                    ]
                )
            ]
        )
    )
    fetch = request(
        1,
        11,
        2,
        i32(-1)
        + i32(1)
        + i32(1)
        + i32(1)
        + i8(0)
        + i32(0)
        + i32(-1)
        + array([])
        + array([])
        + string(""),
        flex=False,
    )
    ops, _ = m.feed(
        decoder,
        [(0, request(0, 3, 1, body, flex=False)), (0, fetch), (1, response(2, answer, flex=False))],
    )
    fetched = next(o for o in ops if o.command == "Fetch")
    assert fetched.messages == [] and "zstd" in fetched.details["record_errors"][0]


def test_sniffing() -> None:
    head = request(18, 3, 1, b"\x00\x00\x00", flex=True)
    assert looks_like_kafka(head, 39092)
    assert looks_like_kafka(head[:10], 9092) is None
    proto = sniff_wire(head, b"", 4000)
    assert proto is not None and proto.name == "kafka"
    assert sniff_wire(head[:10], b"", 4000) is None  # waits for the client id
    assert not looks_like_kafka(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 9092)
    assert not looks_like_kafka(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40, 9092
    )
    assert not looks_like_kafka(b"AMQP\x00\x00\x09\x01" + b"\x00" * 10, 5672)
    unknown = request(120, 0, 1, b"", flex=False)  # an API key this table does not know
    assert not looks_like_kafka(unknown, 4000) and looks_like_kafka(unknown, 9092)
    pg = m.startup(user="u", database="d")
    found = sniff_wire(pg, b"", 5432)
    assert found is not None and found.name == "postgresql"


def test_classic_and_group_versions_of_the_offset_and_metadata_apis() -> None:
    fetch_v1 = string("workers") + array([string("tasks") + array([i32(0), i32(1)])])
    fetched = array(
        [
            string("tasks")
            + array(
                [i32(0) + i64(12) + string("") + i16(0), i32(1) + i64(-1) + string("") + i16(0)]
            )
        ]
    )
    groups_v8 = array(
        [
            string("workers", True)
            + array([string("tasks", True) + array([i32(0)], True) + tags(True)], True)
            + tags(True)
        ],
        True,
    )
    answer_v8 = (
        i32(0)
        + array(
            [
                string("workers", True)
                + array(
                    [
                        string("tasks", True)
                        + array(
                            [i32(0) + i64(5) + i32(-1) + string(None, True) + i16(0) + tags(True)],
                            True,
                        )
                        + tags(True)
                    ],
                    True,
                )
                + i16(16)
                + tags(True)
            ],
            True,
        )
        + tags(True)
    )
    list_v1 = i32(-1) + array([string("tasks") + array([i32(0) + i64(-1)])])
    listed = array([string("tasks") + array([i32(0) + i16(0) + i64(-1) + i64(13)])])
    meta_v1 = array([string("tasks"), string("gone")])
    broker = i32(1) + string("127.0.0.1") + i32(9092) + string(None)
    part = i16(0) + i32(0) + i32(1) + array([i32(1)]) + array([i32(1)])
    meta = (
        array([broker])
        + i32(1)
        + array(
            [
                i16(0) + string("tasks") + i8(0) + array([part]),
                i16(3) + string("gone") + i8(0) + array([]),
            ]
        )
    )
    coord = i32(0) + i16(0) + string(None) + i32(1) + string("127.0.0.1") + i32(9092)
    steps: list[m.Step] = [
        (0, request(9, 1, 1, fetch_v1, flex=False)),
        (1, response(1, fetched, flex=False)),
        (0, request(9, 8, 2, groups_v8 + i8(0) + tags(True), flex=True)),
        (1, response(2, answer_v8, flex=True)),
        (0, request(2, 1, 3, list_v1, flex=False)),
        (1, response(3, listed, flex=False)),
        (0, request(3, 1, 4, meta_v1, flex=False)),
        (1, response(4, meta, flex=False)),
        (0, request(10, 1, 5, string("workers") + i8(0), flex=False)),
        (1, response(5, coord, flex=False)),
    ]
    ops, dec = m.feed(decoder, steps)
    assert dec.diagnostics == [] and all(o.diagnostics == [] for o in ops)
    got = [(o.statement, o.result, o.error["code"] if o.error else None) for o in ops]
    assert got == [
        ("OffsetFetch v1 workers: tasks[0], tasks[1]", "tasks[0]=12, tasks[1]=-1", None),
        ("OffsetFetch v8 workers: tasks[0]", "tasks[0]=5", "NOT_COORDINATOR"),
        ("ListOffsets v1 tasks[0]@latest", "tasks[0]=13", None),
        ("Metadata v1 tasks, gone", "1 brokers, 2 topics", "UNKNOWN_TOPIC_OR_PARTITION"),
        ("FindCoordinator v1 workers", "workers: 1=127.0.0.1:9092", None),
    ]
    assert ops[0].details["offsets"][0] == {
        "group": "workers",
        "topic": "tasks",
        "partition": 0,
        "offset": 12,
    }
    assert ops[3].error == {
        "code": "UNKNOWN_TOPIC_OR_PARTITION",
        "number": 3,
        "message": None,
        "topic": "gone",
    }


def test_an_api_versions_the_broker_cannot_read_is_answered_at_v0() -> None:
    body = string("librdkafka", True) + string("2.16.0", True) + tags(True)
    answer = i16(35) + array([i16(18) + i16(0) + i16(2)])  # classic, no throttle time
    ops, _ = m.feed(
        decoder, [(0, request(18, 3, 1, body, flex=True)), (1, response(1, answer, flex=False))]
    )
    assert ops[0].error is not None and ops[0].error["code"] == "UNSUPPORTED_VERSION"
    assert ops[0].details["api_versions"] == {"ApiVersions": "0-2"} and ops[0].diagnostics == []


def test_a_refused_produce_or_commit_names_the_error_on_its_messages() -> None:
    part = i32(0) + blob(batch([(b"k", b"v", [])]))
    body = i16(-1) + i16(1) + i32(100) + array([string("t") + array([part])])
    answer = array([string("t") + array([i32(0) + i16(10) + i64(-1) + i64(-1)])]) + i32(0)
    commit = (
        string("g")
        + i32(1)
        + string("m")
        + i64(-1)
        + array([string("t") + array([i32(0) + i64(5) + string("")])])
    )
    refused = array([string("t") + array([i32(0) + i16(22)])])
    ops, _ = m.feed(
        decoder,
        [
            (0, request(0, 3, 1, body, flex=False)),
            (1, response(1, answer, flex=False)),
            (0, request(8, 2, 2, commit, flex=False)),
            (1, response(2, refused, flex=False)),
        ],
    )
    assert [(x.action, x.offset, x.details) for o in ops for x in o.messages] == [
        ("publish", None, {"error": "MESSAGE_TOO_LARGE"}),
        ("commit", 5, {"group_id": "g", "error": "ILLEGAL_GENERATION"}),
    ]
