"""The AMQP 0-9-1 decoder on conversations written from the specification
(tests/wire/amqp_wire.py): fed three ways, synchronous methods paired with their -ok,
content assembled from header and body frames, messages, confirms, closes as errors,
secrets, Celery task messages, bad frames."""

from __future__ import annotations

import json

import pytest

from agentshark.wire import sniff_wire
from agentshark.wire.amqp import AmqpSession
from agentshark.wire.events import Operation
from tests.wire import amqp_wire as w
from tests.wire import pg_messages as m

SECRET = "amqp-p4ss-never-kept"
TP = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"


def handshake() -> list[m.Step]:
    return [
        (0, w.HEADER),
        (1, w.start()),
        (0, w.start_ok("guest", SECRET)),
        (1, w.tune()),
        (0, w.tune_ok() + w.open_()),
        (1, w.open_ok()),
        (0, w.channel_open(1)),
        (1, w.channel_open_ok(1)),
    ]


def conversation() -> list[m.Step]:
    big = b'{"text": "' + b"x" * 300_000 + b'"}'
    return [
        *handshake(),
        (0, w.exchange_declare(1, "dlx", "fanout")),
        (1, w.exchange_declare_ok(1)),
        (0, w.queue_declare(1, "tasks", {"x-dead-letter-exchange": "dlx"})),
        (1, w.queue_declare_ok(1, "tasks")),
        (0, w.queue_bind(1, "tasks", "amq.direct", "tasks")),
        (1, w.queue_bind_ok(1)),
        (0, w.confirm_select(1)),
        (1, w.confirm_select_ok(1)),
        (0, w.publish(1, "", "tasks", b'{"n": 1}', message_id="m1", correlation_id="c1",
                      reply_to="replies", headers={"traceparent": TP}, delivery_mode=2,
                      content_type="application/json", timestamp=1_700_000_000)),
        (0, w.publish(1, "", "tasks", big, message_id="m2")),
        (1, w.ack(1, 2, multiple=True)),
        (0, w.heartbeat()),
        (0, w.qos(1, 10)),
        (1, w.qos_ok(1)),
        (0, w.consume(1, "")),  # the channel's last declared queue
        (1, w.consume_ok(1, "ctag-1")),
        (1, w.deliver(1, "ctag-1", 1, "", "tasks", b'{"n": 1}', message_id="m1")),
        (1, w.deliver(1, "ctag-1", 2, "", "tasks", b"plain text", redelivered=True)),
        (0, w.ack(1, 1) + w.nack(1, 2, requeue=False) + w.reject(1, 3, requeue=True)),
        (0, w.get(1, "tasks")),
        (1, w.get_ok(1, 4, "", "tasks", 0, b"\xff\xfe")),
        (0, w.get(1, "tasks")),
        (1, w.get_empty(1)),
        (0, w.cancel(1, "ctag-1")),
        (1, w.cancel_ok(1, "ctag-1")),
        (0, w.queue_declare(1, "tasks", {"x-max-length": 5}, passive=False)),
        (1, w.close(1, 406, "PRECONDITION_FAILED - inequivalent arg 'x-max-length'", 50, 10)),
        (0, w.close_ok(1)),
        (0, w.close(0, 200, "Normal shutdown")),
        (1, w.close_ok(0)),
    ]  # fmt: skip


def decoder() -> AmqpSession:
    return AmqpSession("c1")


def run(steps: list[m.Step], chunk: int | None = None) -> tuple[list[Operation], AmqpSession]:
    ops, dec = m.feed(decoder, steps, chunk=chunk)
    assert isinstance(dec, AmqpSession)
    return ops, dec


def facts(ops: list[Operation]) -> list[tuple[object, ...]]:
    return [
        (*f, repr(o.messages), repr(o.diagnostics)) for f, o in zip(m.facts(ops), ops, strict=True)
    ]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_same_operations_however_the_bytes_are_cut(chunk: int | None) -> None:
    whole, _ = run(conversation()[:-4])  # byte by byte: not the 300 kB message twice more
    if chunk == 1:
        steps = [s for s in conversation() if len(s[1]) < 1000]
        whole, _ = run(steps)
        cut, _ = run(steps, chunk=1)
    else:
        cut, _ = run(conversation()[:-4], chunk=chunk)
    assert facts(cut) == facts(whole)


def test_trailing_bytes_wait_for_the_rest() -> None:
    dec = decoder()
    dec.feed(0, w.HEADER, 1.0)
    assert dec.feed(1, w.start() + w.tune()[:5], 1.1) == []
    assert dec.feed(0, w.start_ok("u", SECRET), 1.2)[0].command == "connection.start"
    assert dec.feed(1, w.tune()[5:], 1.3) == []  # whole now: it waits for its tune-ok
    assert [o.command for o in dec.feed(0, w.tune_ok(), 1.4)] == ["connection.tune"]
    assert dec.diagnostics == []
    (lone,) = dec.feed(1, w.open_ok(), 1.5)  # a reply to nothing seen
    assert [d.code for d in lone.diagnostics] == ["amqp.unpaired"]
    assert (lone.request_complete, lone.response_complete) == (False, False)


def test_every_method_paired_with_its_reply() -> None:
    ops, dec = run(conversation())
    got = [(o.kind, o.command, o.result) for o in ops]
    assert got == [
        ("push", "connection.start", "connection.start-ok"),
        ("push", "connection.tune", "connection.tune-ok"),
        ("request", "connection.open", "connection.open-ok"),
        ("request", "channel.open", "channel.open-ok"),
        ("request", "exchange.declare", "exchange.declare-ok"),
        ("request", "queue.declare", "queue.declare-ok"),
        ("request", "queue.bind", "queue.bind-ok"),
        ("request", "confirm.select", "confirm.select-ok"),
        ("request", "basic.publish", "basic.ack"),
        ("request", "basic.publish", "basic.ack"),
        ("request", "basic.qos", "basic.qos-ok"),
        ("request", "basic.consume", "basic.consume-ok"),
        ("push", "basic.deliver", None),
        ("push", "basic.deliver", None),
        ("request", "basic.ack", None),
        ("request", "basic.nack", None),
        ("request", "basic.reject", None),
        ("request", "basic.get", "basic.get-ok"),
        ("request", "basic.get", "basic.get-empty"),
        ("request", "basic.cancel", "basic.cancel-ok"),
        ("request", "queue.declare", "channel.close"),
        ("push", "channel.close", "channel.close-ok"),
        ("request", "connection.close", "connection.close-ok"),
    ]
    assert dec.diagnostics == []
    assert all(o.request_complete and o.response_complete for o in ops)
    assert [o.index for o in ops] == list(range(len(ops)))
    roles = [o.role for o in ops if o.role]
    assert roles == ["queue.publish"] * 2 + ["queue.deliver"] * 2 + [
        "queue.ack", "queue.nack", "queue.reject", "queue.deliver"]  # fmt: skip


def test_credentials_are_counted_never_kept() -> None:
    ops, _ = run(conversation())
    start = ops[0]
    assert start.details["secret_arguments"] == 1
    assert start.details["reply"] == {"client_properties": {"product": "pika"},
                                      "mechanism": "PLAIN", "locale": "en_US"}  # fmt: skip
    assert start.details["arguments"]["server_properties"]["product"] == "RabbitMQ"
    assert SECRET not in repr(ops) and "guest" not in repr(ops)


def test_published_messages_with_properties_and_confirms() -> None:
    ops, _ = run(conversation())
    first, second = ops[8], ops[9]
    (msg,) = first.messages
    assert (msg.system, msg.action, msg.destination, msg.routing_key) == (
        "amqp", "publish", "", "tasks")  # fmt: skip
    assert (msg.message_id, msg.correlation_id, msg.reply_to) == ("m1", "c1", "replies")
    assert msg.headers == {"traceparent": TP} and msg.payload == {"n": 1} and msg.size == 8
    assert msg.timestamp == 1_700_000_000.0 and msg.channel == 1 and msg.delivery_tag is None
    assert msg.details == {"content_type": "application/json", "delivery_mode": 2,
                           "exchange": "", "mandatory": False, "immediate": False}  # fmt: skip
    assert first.parameters == [{"n": 1}]
    assert first.details["publish_seq"] == 1 and second.details["publish_seq"] == 2
    assert second.details["confirm"] == {"method": "basic.ack", "delivery_tag": 2,
                                         "multiple": True}  # fmt: skip
    assert second.messages[0].size == 300_012 and second.messages[0].payload is not None
    assert first.response_started is not None and first.ended == second.ended


def test_deliveries_get_and_settlements() -> None:
    ops, _ = run(conversation())
    d1, d2 = ops[12].messages[0], ops[13].messages[0]
    assert (d1.action, d1.destination, d1.delivery_tag, d1.redelivered) == (
        "deliver", "tasks", 1, False)  # fmt: skip
    assert d1.details["consumer_tag"] == "ctag-1" and d1.message_id == "m1"
    assert (d2.payload, d2.redelivered) == ("plain text", True)
    acks = [o.messages[0] for o in ops[14:17]]
    assert [(a.action, a.delivery_tag, a.multiple, a.requeue) for a in acks] == [
        ("ack", 1, False, None), ("nack", 2, False, False), ("reject", 3, False, True)]  # fmt: skip
    got = ops[17].messages[0]
    assert (got.action, got.destination, got.delivery_tag, got.payload, got.size) == (
        "deliver", "tasks", 4, None, 2)  # fmt: skip
    assert got.details["message_count"] == 0
    assert ops[18].messages == [] and ops[18].role is None


def test_queue_arguments_and_channel_errors() -> None:
    ops, _ = run(conversation())
    declare = ops[5]
    assert declare.details["arguments"]["arguments"] == {"x-dead-letter-exchange": "dlx"}
    assert declare.details["reply"] == {"queue": "tasks", "message_count": 0, "consumer_count": 0}
    assert declare.statement == "queue.declare queue=tasks"
    failed, close = ops[20], ops[21]
    error = {"code": 406, "message": "PRECONDITION_FAILED - inequivalent arg 'x-max-length'",
             "class_id": 50, "method_id": 10, "method": "queue.declare"}  # fmt: skip
    assert failed.error == error and close.error == error
    assert ops[22].error is None  # 200: reply-success


def test_unconfirmed_publish_and_unanswered_request_are_incomplete() -> None:
    steps = [*handshake(), (0, w.confirm_select(1)), (1, w.confirm_select_ok(1)),
             (0, w.publish(1, "x", "k", b"1") + w.queue_declare(1, "q"))]  # fmt: skip
    ops, _ = run(steps)
    left = [(o.command, o.response_complete, [d.code for d in o.diagnostics]) for o in ops[5:]]
    assert left == [("basic.publish", False, ["amqp.unanswered"]),
                    ("queue.declare", False, ["amqp.unanswered"])]  # fmt: skip
    assert ops[5].messages[0].payload == 1  # the message itself was seen whole


def test_content_cut_short_keeps_what_was_seen() -> None:
    body = w.publish(1, "x", "k", b"0123456789", message_id="m9")
    steps = [*handshake(), (0, body[:-18]), (0, w.ack(1, 1))]  # its body frame never sent
    ops, _ = run(steps)
    pub = ops[4]
    assert (pub.command, pub.request_complete) == ("basic.publish", False)
    assert [d.code for d in pub.diagnostics] == ["amqp.content_cut"]
    assert pub.messages[0].message_id == "m9" and pub.messages[0].size is None
    assert pub.parameters == []
    assert ops[5].command == "basic.ack"


def test_publish_without_confirms_needs_no_reply() -> None:
    ops, _ = run([*handshake(), (0, w.publish(1, "ex", "rk", b"[1, 2]"))])
    pub = ops[4]
    assert (pub.request_complete, pub.response_complete, pub.result) == (True, True, None)
    assert pub.statement == "basic.publish exchange=ex routing_key=rk"


def test_server_ack_without_confirm_mode_is_no_settlement() -> None:
    ops, _ = run([*handshake(), (1, w.ack(1, 1))])
    assert (ops[4].command, ops[4].kind, ops[4].role, ops[4].messages) == (
        "basic.ack", "push", None, [])  # fmt: skip


def test_basic_return_is_an_error_with_its_message() -> None:
    ops, _ = run([*handshake(), (1, w.basic_return(1, 312, "NO_ROUTE", "ex", "nowhere", b"{}"))])
    ret = ops[4]
    assert ret.error == {"code": 312, "message": "NO_ROUTE"}
    assert (ret.messages[0].action, ret.messages[0].routing_key, ret.role) == (
        "return", "nowhere", None)  # fmt: skip


def test_field_table_types() -> None:
    """Every type RabbitMQ's errata lists, in a header table."""
    import struct

    fields = (
        w.shortstr("t") + b"t\x01" + w.shortstr("b") + b"b\xff" + w.shortstr("B") + b"B\xff"
        + w.shortstr("s") + b"s" + struct.pack(">h", -2) + w.shortstr("u") + b"u\xff\xff"
        + w.shortstr("I") + b"I" + struct.pack(">i", -3) + w.shortstr("i") + b"i\xff\xff\xff\xff"
        + w.shortstr("l") + b"l" + struct.pack(">q", -4) + w.shortstr("f") + b"f"
        + struct.pack(">f", 1.5) + w.shortstr("d") + b"d" + struct.pack(">d", 2.25)
        + w.shortstr("D") + b"D\x02" + struct.pack(">i", 1234) + w.shortstr("S") + b"S"
        + w.longstr(b"text") + w.shortstr("A") + b"A" + w.longstr(b"I\x00\x00\x00\x01V")
        + w.shortstr("T") + b"T" + w.u64(1_700_000_000) + w.shortstr("F") + b"F"
        + w.table({"x": "y"}) + w.shortstr("V") + b"V" + w.shortstr("x") + b"x"
        + w.longstr(b"\x00\x01")
    )  # fmt: skip
    header = w.frame(2, 1, w.u16(60) + w.u16(0) + w.u64(0) + w.u16(1 << 13) + w.longstr(fields))
    pub = w.method(1, 60, 40, w.u16(0) + w.shortstr("") + w.shortstr("k") + w.bits())
    ops, dec = run([*handshake(), (0, pub + header)])
    assert dec.diagnostics == []
    assert ops[4].messages[0].headers == {
        "t": True, "b": -1, "B": 255, "s": -2, "u": 65535, "I": -3, "i": 4294967295, "l": -4,
        "f": 1.5, "d": 2.25, "D": {"decimal": "1234e-2"}, "S": "text", "A": [1, None],
        "T": 1_700_000_000, "F": {"x": "y"}, "V": None, "x": {"base64": "AAE="},
    }  # fmt: skip
    assert ops[4].messages[0].size == 0 and ops[4].messages[0].payload == ""


def test_celery_task_message_recognized_by_its_headers() -> None:
    task_id = "3f2a-4b"
    headers = {"lang": "py", "task": "agents.summarize", "id": task_id, "root_id": task_id,
               "parent_id": None, "group": None, "retries": 0, "argsrepr": "('doc-7',)",
               "kwargsrepr": "{}", "origin": "gen1@host"}  # fmt: skip
    body = json.dumps([["doc-7"], {}, {"callbacks": None}]).encode()
    pub = w.publish(1, "", "celery", body, headers=headers, correlation_id=task_id,
                    content_type="application/json", content_encoding="utf-8")  # fmt: skip
    ops, _ = run([*handshake(), (0, pub)])
    celery = ops[4].messages[0].details["celery"]
    assert celery == {"protocol": 2, "task": "agents.summarize", "id": task_id,
                      "root_id": task_id, "parent_id": None, "group": None, "retries": 0,
                      "argsrepr": "('doc-7',)", "kwargsrepr": "{}", "origin": "gen1@host",
                      "lang": "py", "args": ["doc-7"], "kwargs": {}}  # fmt: skip
    plain, _ = run([*handshake(), (0, w.publish(1, "", "q", b"{}", headers={"task": "x"}))])
    assert "celery" not in plain[4].messages[0].details


def test_bad_frame_end_loses_the_direction() -> None:
    bad = w.qos(1, 1)[:-1] + b"\x00"
    ops, dec = run([*handshake(), (0, w.qos(1, 0) + bad + w.qos(1, 2)), (1, w.qos_ok(1) * 2)])
    assert [d.code for d in dec.diagnostics] == ["amqp.framing"]
    assert [(o.command, [d.code for d in o.diagnostics]) for o in ops[4:]] == [
        ("basic.qos", ["amqp.after_loss"]), ("basic.qos-ok", ["amqp.unpaired"])]  # fmt: skip


def test_unknown_method_is_a_diagnostic_and_reading_goes_on() -> None:
    ops, dec = run([*handshake(), (0, w.method(1, 99, 1) + w.qos(1, 3)), (1, w.qos_ok(1))])
    assert [d.code for d in dec.diagnostics] == ["amqp.bad_method"]
    assert ops[4].command == "basic.qos" and ops[4].response_complete


def test_a_gap_ends_what_waited_and_reading_resumes() -> None:
    """Server bytes lost while a basic.get waited: its reply may be among them, so it ends
    incomplete; the get-empty read after the resync is a reply to no request (incomplete);
    the next get pairs as if nothing happened."""
    dec = decoder()
    for d, data in handshake():
        dec.feed(d, data, 1.0)
    dec.feed(0, w.get(1, "q"), 2.0)
    ops = dec.gap(1, 100, 3.0)
    assert [(o.command, o.response_complete) for o in ops] == [("basic.get", False)]
    assert [d.code for d in ops[0].diagnostics] == ["amqp.gap_reply"]
    ops = dec.feed(1, w.get_empty(1), 4.0)
    assert [(o.command, o.response_complete) for o in ops] == [("basic.get-empty", False)]
    dec.feed(0, w.get(1, "q"), 5.0)
    ops = dec.feed(1, w.get_empty(1), 6.0)
    assert [(o.command, o.result, o.response_complete) for o in ops] == [
        ("basic.get", "basic.get-empty", True)
    ]
    assert [d.code for d in dec.diagnostics] == ["amqp.gap", "amqp.resync"]


def test_sniffed_by_the_protocol_header() -> None:
    proto = sniff_wire(w.HEADER, b"", 5672)
    assert proto is not None and proto.name == "amqp"
    assert sniff_wire(b"AMQP\x00\x01\x00\x00", b"", 5672) is None  # AMQP 1.0: not this decoder
    assert sniff_wire(b"GET / HTTP/1.1\r\n", b"", 5672) is None


def test_server_refusing_the_version() -> None:
    _, dec = run([(0, w.HEADER), (1, b"AMQP\x00\x00\x09\x01")])
    assert [d.code for d in dec.diagnostics] == ["amqp.version"]
