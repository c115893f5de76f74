"""Redis as a queue: the messages each command publishes, delivers or acks
(:mod:`agentshark.wire.resp_queue`), on replies written from the command reference
(https://redis.io/docs/latest/commands/), fed three ways, and on the redis-py capture against
the client's own record."""

from __future__ import annotations

import base64
import json

import orjson
import pytest

from agentshark.wire.events import Operation, QueueMessage
from agentshark.wire.resp import RespSession
from tests.wire import pg_messages as m
from tests.wire.test_redis_captures import FOLDER, by_port, truth
from tests.wire.test_resp import bulk, cmd

TP = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"


def arr(*items: bytes) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(items)


def entry(entry_id: str, *fields: str) -> bytes:
    return arr(bulk(entry_id.encode()), arr(*(bulk(f.encode()) for f in fields)))


def run(steps: list[m.Step], chunk: int | None = None) -> list[Operation]:
    ops, _ = m.feed(lambda: RespSession("c1"), steps, chunk=chunk)
    return ops


def messages(steps: list[m.Step], chunk: int | None = None) -> list[tuple[str, QueueMessage]]:
    return [(str(o.command), msg) for o in run(steps, chunk) for msg in o.messages]


def stream_steps() -> list[m.Step]:
    return [
        (0, cmd("XADD", "tasks", "MAXLEN", "~", "1000", "*", "task", '{"q": 1}',
                "traceparent", TP)),
        (1, bulk(b"1700000000000-0")),
        (0, cmd("XREADGROUP", "GROUP", "g", "w1", "COUNT", "2", "STREAMS", "tasks", ">")),
        (1, arr(arr(bulk(b"tasks"), arr(entry("1700000000000-0", "task", '{"q": 1}'))))),
        (0, cmd("XREADGROUP", "GROUP", "g", "w1", "STREAMS", "tasks", "0")),
        (1, arr(arr(bulk(b"tasks"), arr(arr(bulk(b"1699-0"), b"*-1\r\n"))))),
        (0, cmd("XACK", "tasks", "g", "1700000000000-0", "1699-0")),
        (1, b":2\r\n"),
        (0, cmd("XCLAIM", "tasks", "g", "w2", "60000", "1-0", "JUSTID")),
        (1, arr(bulk(b"1-0"))),
        (0, cmd("XAUTOCLAIM", "tasks", "g", "w2", "60000", "0")),
        (1, arr(bulk(b"0-0"), arr(entry("2-0", "a", "b")), arr())),
        (0, cmd("XRANGE", "tasks", "-", "+")),
        (1, arr(entry("2-0", "a", "b"))),
    ]  # fmt: skip


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_stream_messages(chunk: int | None) -> None:
    got = messages(stream_steps(), chunk)
    assert [(c, x.action, x.destination, x.message_id) for c, x in got] == [
        ("XADD", "publish", "tasks", "1700000000000-0"),
        ("XREADGROUP", "deliver", "tasks", "1700000000000-0"),
        ("XREADGROUP", "deliver", "tasks", "1699-0"),
        ("XACK", "ack", "tasks", "1700000000000-0"),
        ("XACK", "ack", "tasks", "1699-0"),
        ("XCLAIM", "deliver", "tasks", "1-0"),
        ("XAUTOCLAIM", "deliver", "tasks", "2-0"),
        ("XRANGE", "deliver", "tasks", "2-0"),
    ]
    publish, first, pending = got[0][1], got[1][1], got[2][1]
    assert publish.payload == {"task": '{"q": 1}', "traceparent": TP}
    assert publish.headers == {"traceparent": TP}
    assert publish.size == len("task" + '{"q": 1}' + "traceparent" + TP)
    assert first.payload == {"task": '{"q": 1}'} and first.redelivered is None
    assert first.details == {"group": "g", "consumer": "w1"}
    assert pending.redelivered is True and pending.details["deleted"] is True
    assert pending.payload is None and pending.size is None  # never invented
    assert got[5][1].redelivered is True and got[5][1].payload is None  # JUSTID: ids only
    assert got[6][1].details["claim"] == "XAUTOCLAIM" and got[6][1].payload == {"a": "b"}


def test_resp3_map_reply_and_explicit_id_without_reply() -> None:
    steps: list[m.Step] = [
        (0, cmd("XREAD", "STREAMS", "s", "0")),
        (1, b"%1\r\n" + bulk(b"s") + arr(entry("5-1", "k", "v"))),
        (0, cmd("XADD", "s", "7-0", "k", "v") + cmd("XADD", "s", "*", "k", "v")),
    ]
    got = messages(steps)
    assert [(x.action, x.message_id, x.details) for _, x in got] == [
        ("deliver", "5-1", {}),
        ("publish", "7-0", {}),  # unanswered: the id it sent
        ("publish", None, {}),  # "*": the server's id was never seen
    ]


def test_list_messages() -> None:
    steps: list[m.Step] = [
        (0, cmd("LPUSH", "jobs", '{"id": 1}', "plain", b"\xff\xfe")),
        (1, b":3\r\n"),
        (0, cmd("BRPOP", "jobs", "other", "0") + cmd("RPOP", "jobs", "2")),
        (1, arr(bulk(b"jobs"), bulk(b'{"id": 1}')) + arr(bulk(b"plain"), bulk(b"\xff\xfe"))),
        (0, cmd("BRPOP", "jobs", "1")),
        (1, b"*-1\r\n"),
        (0, cmd("LMOVE", "jobs", "doing", "RIGHT", "LEFT") + cmd("LMPOP", "1", "jobs", "LEFT")),
        (1, bulk(b"x") + arr(bulk(b"jobs"), arr(bulk(b"y")))),
        (0, cmd("LPOP", "jobs")),
        (1, b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    ]
    got = messages(steps)
    assert [(c, x.action, x.destination, x.payload, x.details.get("end")) for c, x in got] == [
        ("LPUSH", "publish", "jobs", {"id": 1}, "left"),
        ("LPUSH", "publish", "jobs", "plain", "left"),
        ("LPUSH", "publish", "jobs", None, "left"),  # not UTF-8: no payload, its size
        ("BRPOP", "deliver", "jobs", {"id": 1}, "right"),
        ("RPOP", "deliver", "jobs", "plain", "right"),
        ("RPOP", "deliver", "jobs", None, "right"),
        ("LMOVE", "deliver", "jobs", "x", "right"),
        ("LMOVE", "publish", "doing", "x", "left"),
        ("LMPOP", "deliver", "jobs", "y", "left"),
    ]
    assert got[2][1].size == 2
    assert got[6][1].details["moved_to"] == "doing"


def test_pubsub_messages() -> None:
    steps: list[m.Step] = [
        (0, cmd("PUBLISH", "news", '{"done": true}')),
        (1, b":2\r\n"),
        (0, cmd("PSUBSCRIBE", "n*")),
        (1, arr(bulk(b"psubscribe"), bulk(b"n*"), b":1\r\n")),
        (1, arr(bulk(b"pmessage"), bulk(b"n*"), bulk(b"news"), bulk(b'{"done": true}'))),
    ]
    got = messages(steps)
    assert [(c, x.action, x.destination, x.payload) for c, x in got] == [
        ("PUBLISH", "publish", "news", {"done": True}),
        ("PMESSAGE", "deliver", "news", {"done": True}),
    ]
    assert got[0][1].details == {"pubsub": True, "receivers": 2}
    assert got[1][1].details == {"pubsub": True, "pattern": "n*"}


def celery_envelope() -> bytes:
    body = base64.b64encode(orjson.dumps([[2, 3], {}, {"callbacks": None}])).decode()
    return orjson.dumps(
        {
            "body": body,
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {
                "lang": "py", "task": "tasks.add", "id": "9a1c-task", "root_id": "9a1c-task",
                "parent_id": None, "argsrepr": "(2, 3)", "kwargsrepr": "{}",
                "traceparent": TP,
            },
            "properties": {
                "correlation_id": "9a1c-task", "body_encoding": "base64",
                "delivery_info": {"exchange": "", "routing_key": "celery"},
            },
        }
    )  # fmt: skip


def test_celery_and_rq_are_recognized() -> None:
    steps: list[m.Step] = [
        (0, cmd("LPUSH", "celery", celery_envelope())),
        (1, b":1\r\n"),
        (0, cmd("HSET", "rq:job:abc", "description", "app.work(1)", "origin", "default",
                "data", b"\x78\x9c\x00")),
        (1, b":3\r\n"),
        (0, cmd("RPUSH", "rq:queue:default", "abc")),
        (1, b":1\r\n"),
    ]  # fmt: skip
    ops = run(steps)
    celery = ops[0].messages[0]
    assert celery.details["celery"] == {
        "task": "tasks.add", "id": "9a1c-task", "argsrepr": "(2, 3)", "kwargsrepr": "{}",
        "root_id": "9a1c-task", "parent_id": None, "body": [[2, 3], {}, {"callbacks": None}],
    }  # fmt: skip
    assert celery.headers["traceparent"] == TP and celery.correlation_id == "9a1c-task"
    assert ops[1].details["rq_job"] == {
        "job_id": "abc", "description": "app.work(1)", "origin": "default"
    }  # fmt: skip
    assert ops[1].messages == []  # a job hash is no message
    assert ops[2].messages[0].details["rq"] == {"queue": "default", "job_id": "abc"}


def test_a_reply_of_another_shape_is_no_message() -> None:
    steps: list[m.Step] = [
        (0, cmd("XREADGROUP", "GROUP", "g", "w", "STREAMS", "s", ">")),
        (1, b":5\r\n"),
        (0, cmd("BRPOP", "q", "0")),
        (1, arr(b":1\r\n")),
    ]
    ops = run(steps)
    assert [o.messages for o in ops] == [[], []]
    assert all(o.response_complete for o in ops)


def test_the_capture_s_messages_are_the_client_s() -> None:
    """redis-py's record: the XADD reply is the entry id XREADGROUP delivered and XACK acked."""
    records = [r for rs in truth(FOLDER)["connections"].values() for r in rs]
    replies = iter(records)
    entry_id = None
    for record in replies:
        if record.get("command", [None])[0] == "XADD":
            entry_id = next(replies)["reply"]
    assert entry_id is not None
    ops = [o for ops in by_port(FOLDER).values() for o in ops]
    got = {(o.command, x.action, x.message_id) for o in ops for x in o.messages}
    assert {("XADD", "publish", entry_id), ("XREADGROUP", "deliver", entry_id),
            ("XACK", "ack", entry_id)} <= got  # fmt: skip
    lpush = next(o for o in ops if o.command == "LPUSH").messages[0]
    assert lpush.payload == json.loads('{"task": "summarize", "id": 17}')


def test_a_payload_too_large_is_not_kept_but_still_joins() -> None:
    """Over MAX_PAYLOAD: no payload, its digest; a list pop joins its push by that digest."""
    from agentshark.model import Exchange
    from agentshark.trace.queues import Joiner
    from agentshark.wire.resp_queue import MAX_PAYLOAD

    big = b"x" * (MAX_PAYLOAD + 1)
    steps: list[m.Step] = [
        (0, cmd("RPUSH", "q", big) + cmd("XADD", "s", "*", "traceparent", TP, "blob", big)),
        (1, b":1\r\n" + bulk(b"1-0")),
        (0, cmd("LPOP", "q")),
        (1, bulk(big)),
    ]
    ops = run(steps)
    push, entry_msg, pop = (o.messages[0] for o in ops)
    assert push.payload is None and push.size == len(big) and push.details["payload_cut"]
    assert push.details["payload_sha256"] == pop.details["payload_sha256"]
    assert entry_msg.payload is None and entry_msg.headers == {"traceparent": TP}
    assert entry_msg.details["payload_cut"] is True
    joiner = Joiner()
    for n, op in enumerate(ops):
        ex = Exchange(id=f"e{n}", source=0, connection="c", transport="redis", request=None,
                      response=None, operation=op)  # fmt: skip
        joiner.add(ex, n)
    lives = joiner.lives()
    assert [[e.seen.exchange_id for e in x.events] for x in lives] == [["e0", "e2"], ["e1"]]
