"""The Redis RESP decoder on conversations written from the protocol spec
(https://redis.io/docs/latest/develop/reference/protocol-spec/): fed three ways, pipelined
replies paired by order, errors, RESP3 types, pub/sub pushes, queues, secrets, a gap."""

from __future__ import annotations

import pytest

from agentshark.wire import sniff_wire
from agentshark.wire.resp import RespSession, looks_like_resp
from tests.wire import pg_messages as m

SECRET = "p4ss-never-kept"


def cmd(*args: str | bytes) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        raw = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(raw), raw)
    return out


def bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def conversation() -> list[m.Step]:
    return [
        (0, cmd("AUTH", "default", SECRET)),
        (1, b"+OK\r\n"),
        (0, cmd("SET", "k", "v") + cmd("GET", "k") + cmd("INCR", "k")),  # pipelined
        (1, b"+OK\r\n" + bulk(b"v") + b"-ERR value is not an integer or out of range\r\n"),
        (0, cmd("LPUSH", "jobs", '{"id": 1}') + cmd("BRPOP", "jobs", "0")),
        (1, b":1\r\n*2\r\n" + bulk(b"jobs") + bulk(b'{"id": 1}')),
        (0, cmd("XACK", "s", "g", "1-0") + cmd("GET", "missing")),
        (1, b":1\r\n$-1\r\n"),
        (0, cmd("HELLO", "3")),
        (1, b"%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n"),
        (0, cmd("SUBSCRIBE", "a", "b")),
        (1, b">3\r\n+subscribe\r\n+a\r\n:1\r\n>3\r\n+subscribe\r\n+b\r\n:2\r\n"),
        (1, b">3\r\n+message\r\n+a\r\n" + bulk(b"hello")),
    ]


def decoder() -> RespSession:
    return RespSession("c1")


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_same_operations_however_the_bytes_are_cut(chunk: int | None) -> None:
    whole, _ = m.feed(decoder, conversation())
    cut, _ = m.feed(decoder, conversation(), chunk=chunk)
    assert m.facts(cut) == m.facts(whole)


def test_commands_paired_with_their_replies_by_order() -> None:
    ops, dec = m.feed(decoder, conversation())
    got = [(o.kind, o.command, o.result, o.error["code"] if o.error else None) for o in ops]
    assert got == [
        ("command", "AUTH", "OK", None),
        ("command", "SET", "OK", None),
        ("command", "GET", "bulk 1 bytes", None),
        ("command", "INCR", None, "ERR"),
        ("command", "LPUSH", "1", None),
        ("command", "BRPOP", "array 2", None),
        ("command", "XACK", "1", None),
        ("command", "GET", "nil", None),
        ("command", "HELLO", "map 2", None),
        ("command", "SUBSCRIBE", "push 3", None),
        ("push", "MESSAGE", "message", None),
    ]
    assert dec.diagnostics == []
    auth = ops[0]
    assert auth.parameters == ["default"] and auth.details == {"secret_arguments": 1}
    assert SECRET not in repr(ops)
    assert [o.role for o in ops[4:7]] == ["queue.publish", "queue.consume", "queue.ack"]
    assert ops[5].values == [[["jobs", '{"id": 1}']]] and ops[5].rows == 2
    assert ops[8].values == [[[["server", "redis"], ["proto", 3]]]]
    assert ops[9].values is not None and len(ops[9].values) == 2  # one reply per channel
    push = ops[10]
    assert (push.statement, push.parameters, push.role) == ("a", ["a", "hello"], "pubsub.deliver")
    assert all(o.request_complete and o.response_complete for o in ops)


def test_resp2_pubsub_messages_are_pushes_after_subscribe() -> None:
    steps: list[m.Step] = [
        (0, cmd("SUBSCRIBE", "news")),
        (1, b"*3\r\n" + bulk(b"subscribe") + bulk(b"news") + b":1\r\n"),
        (1, b"*3\r\n" + bulk(b"message") + bulk(b"news") + bulk(b"done")),
    ]
    ops, _ = m.feed(decoder, steps)
    assert [(o.kind, o.command) for o in ops] == [("command", "SUBSCRIBE"), ("push", "MESSAGE")]


def test_resp3_attribute_and_scalar_types() -> None:
    steps: list[m.Step] = [
        (0, cmd("EXISTS", "k") + cmd("X") + cmd("Y") + cmd("Z")),
        (1, b"|1\r\n+ttl\r\n:3\r\n#t\r\n,3.5\r\n(12345678901234567890\r\n_\r\n"),
    ]
    ops, dec = m.feed(decoder, steps)
    assert [o.result for o in ops] == ["True", "3.5", "12345678901234567890", "nil"]
    assert dec.diagnostics == []


def test_hello_auth_password_is_not_kept() -> None:
    ops, _ = m.feed(decoder, [(0, cmd("HELLO", "3", "AUTH", "u", SECRET)), (1, b"%0\r\n")])
    assert ops[0].parameters == ["3", "AUTH", "u"] and SECRET not in str(ops[0].statement)


def test_unanswered_command_is_incomplete() -> None:
    ops, _ = m.feed(decoder, [(0, cmd("BLPOP", "q", "0"))])
    assert [(o.command, o.response_complete) for o in ops] == [("BLPOP", False)]
    assert [d.code for d in ops[0].diagnostics] == ["resp.unanswered"]


def test_replies_after_a_gap_are_not_paired_by_guess() -> None:
    """Server bytes lost with two commands waiting: how many replies were lost is not
    known, so the reply read after the gap pairs by order only as an incomplete guess."""
    dec = decoder()
    dec.feed(0, cmd("GET", "a") + cmd("GET", "b"), 1.0)
    assert dec.gap(1, 10, 2.0) == []
    ops = dec.feed(1, bulk(b"x"), 3.0) + dec.close()
    assert [o.response_complete for o in ops] == [False, False]
    assert [d.code for d in ops[0].diagnostics] == ["resp.gap_pairing"]
    assert [d.code for d in dec.diagnostics] == ["resp.gap", "resp.resync"]


def test_a_reply_lost_is_told_by_the_next_command_s_ack() -> None:
    """The client sent its next command having received every server byte up to where
    reading resumed: the lost bytes held the one reply owed before it."""
    dec = decoder()
    dec.feed(0, cmd("GET", "a"), 1.0, acked=0)
    dec.feed(1, bulk(b"x"), 1.1, acked=len(cmd("GET", "a")))
    dec.feed(0, cmd("GET", "b"), 2.0, acked=7)
    dec.feed(0, cmd("GET", "c"), 3.0, acked=14)  # the reply to b (7 bytes) was not captured
    assert dec.gap(1, 7, 3.1) == []
    ops = dec.feed(1, bulk(b"z"), 3.1, acked=3 * len(cmd("GET", "a")))
    assert [(o.statement, o.response_complete, o.result) for o in ops] == [
        ("GET b", False, None),
        ("GET c", True, "bulk 1 bytes"),
    ]
    assert [d.code for d in ops[0].diagnostics] == ["resp.gap_unanswered"]


class _Wire:
    """A conversation with TCP's acknowledgments: each segment carries how much of the
    other direction its sender had received (all of it: a sequential client)."""

    def __init__(self) -> None:
        self.dec = decoder()
        self.sent = [0, 0]
        self.ops: list[object] = []

    def send(self, direction: int, data: bytes, ts: float, *, lost: bool = False) -> None:
        if lost:
            self.ops += self.dec.gap(direction, len(data), ts)
        else:
            self.ops += self.dec.feed(direction, data, ts, acked=self.sent[1 - direction])
        self.sent[direction] += len(data)


def test_a_lost_command_s_reply_and_the_next_pairs_by_the_acks() -> None:
    """A sequential client's command lost: its reply was sent before the server had the
    next command (unpaired); the next reply begins where the client's ack stood when it sent
    the next command and was sent when the server had that command and nothing more, so it
    answers that command, and order is trusted again."""
    w = _Wire()
    w.send(0, cmd("SET", "a", "1"), 1.0)
    w.send(1, b"+OK\r\n", 1.1)
    w.send(0, cmd("GET", "a"), 2.0, lost=True)
    w.send(1, bulk(b"1"), 2.1)
    w.send(0, cmd("INCR", "n"), 3.0)
    w.send(1, b":1\r\n", 3.1)
    w.send(0, cmd("GET", "n"), 4.0)
    w.send(1, bulk(b"1"), 4.1)
    ops = w.ops + w.dec.close()
    assert [(o.statement, o.response_complete, o.result) for o in ops] == [  # type: ignore[attr-defined]
        ("SET a 1", True, "OK"),
        ("INCR n", True, "1"),
        ("GET n", True, "bulk 1 bytes"),
    ]
    assert "resp.gap_unpaired" in [d.code for d in w.dec.diagnostics]


def test_after_a_lost_command_a_pipelining_client_pairs_only_as_a_guess() -> None:
    """The same loss on a connection that sent a command while an older one waited, in a
    later segment: a reply may answer an older command, so pairing stays a guess."""
    w = _Wire()
    w.send(0, cmd("GET", "x"), 0.5)
    w.dec.feed(0, cmd("GET", "y"), 0.6, acked=0)  # sent before the reply to GET x came
    w.sent[0] += len(cmd("GET", "y"))
    w.send(1, bulk(b"x") + bulk(b"y"), 0.7)
    w.send(0, cmd("GET", "a"), 2.0, lost=True)
    w.send(1, bulk(b"1"), 2.1)
    w.send(0, cmd("INCR", "n"), 3.0)
    w.send(1, b":1\r\n", 3.1)
    ops = w.ops + w.dec.close()
    assert [(o.statement, o.response_complete) for o in ops] == [  # type: ignore[attr-defined]
        ("GET x", True),
        ("GET y", True),
        ("INCR n", False),
    ]
    assert [d.code for d in ops[-1].diagnostics] == ["resp.gap_pairing"]  # type: ignore[attr-defined]


def test_a_batch_in_one_segment_is_not_pipelining_across_segments() -> None:
    """A pipeline written at once (one segment, as redis-py's pipeline does) leaves the
    connection sequential: a later lost command is recovered from."""
    w = _Wire()
    w.send(0, cmd("INCR", "n") + cmd("INCR", "n"), 0.5)
    w.send(1, b":1\r\n:2\r\n", 0.6)
    w.send(0, cmd("GET", "a"), 2.0, lost=True)
    w.send(1, bulk(b"1"), 2.1)
    w.send(0, cmd("SUBSCRIBE", "news"), 3.0)  # sent unsubscribed: no push before its reply
    w.send(1, b"*3\r\n" + bulk(b"subscribe") + bulk(b"news") + b":1\r\n", 3.1)
    ops = w.ops + w.dec.close()
    assert [(o.statement, o.response_complete) for o in ops] == [  # type: ignore[attr-defined]
        ("INCR n", True),
        ("INCR n", True),
        ("SUBSCRIBE news", True),
    ]


def test_a_lost_command_and_its_lost_reply_then_order_again() -> None:
    """Both the command and its reply lost (a snap length that cut both): the next command
    was sent having received every server byte up to where reading resumed, and its reply
    begins there and was sent when the server had it: it answers that command."""
    w = _Wire()
    w.send(0, cmd("AUTH", "default", SECRET), 1.0, lost=True)
    w.send(1, b"+OK\r\n", 1.1, lost=True)
    w.send(0, cmd("GET", "a"), 2.0)
    w.send(1, bulk(b"1"), 2.1)
    ops = w.ops + w.dec.close()
    assert [(o.statement, o.response_complete) for o in ops] == [("GET a", True)]  # type: ignore[attr-defined]


def test_large_bulk_value_waits_for_its_length() -> None:
    dec = decoder()
    dec.feed(0, cmd("GET", "big"), 1.0)
    reply = bulk(b"x" * 100_000)
    out = []
    for i in range(0, len(reply), 1000):
        out += dec.feed(1, reply[i : i + 1000], 2.0)
    assert [(o.command, o.result) for o in out] == [("GET", "bulk 100000 bytes")]


def test_not_resp_is_a_diagnostic() -> None:
    ops, dec = m.feed(decoder, [(0, cmd("GET", "a")), (1, b"$abc\r\n")])
    assert [d.code for d in dec.diagnostics] == ["resp.framing"]
    assert [o.response_complete for o in ops] == [False]


def test_a_command_with_a_null_argument_is_not_a_command() -> None:
    """Fuzz finding: a null bulk string ($-1) inside a command array raised AttributeError."""
    ops, dec = m.feed(
        decoder, [(0, b"*2\r\n$3\r\nGET\r\n$-1\r\n" + cmd("PING")), (1, b"+PONG\r\n")]
    )
    assert [(o.command, o.result) for o in ops] == [("PING", "PONG")]
    assert [d.code for d in dec.diagnostics] == ["resp.not_a_command"]


def test_sniffing() -> None:
    assert looks_like_resp(cmd("PING"))
    assert not looks_like_resp(b"GET / HTTP/1.1\r\n")
    proto = sniff_wire(b"PING\r\n", b"", 6379)
    assert proto is not None and proto.name == "redis"
    assert sniff_wire(b"PING\r\n", b"", 8080) is None  # a plain line needs the port
    assert sniff_wire(b"GET / HTTP/1.1\r\n", b"", 6379) is None
