"""Message lives (:mod:`agentshark.trace.queues`) from QueueMessage values with the exact
fields the Kafka and AMQP decoders fill (the QueueMessage docstring), and Redis lists and
pub/sub: each join by its evidence, each outcome, nothing joined by time alone."""

from __future__ import annotations

from typing import Any

from agentshark.model import Exchange
from agentshark.trace.queues import Joiner, Life
from agentshark.wire.events import Operation, QueueMessage


class Capture:
    """Operations in the order given, one exchange each, times a second apart."""

    def __init__(self) -> None:
        self.joiner = Joiner()
        self.n = 0

    def op(
        self, conn: str, *messages: QueueMessage, complete: bool = True, at: float | None = None
    ) -> str:
        self.n += 1
        t = at if at is not None else float(self.n)
        op = Operation(
            protocol=messages[0].system, kind="op", index=self.n, command=messages[0].action,
            statement=None, started=t, request_ended=t, response_started=t + 0.1,
            ended=t + 0.1 if complete else None, request_complete=True,
            response_complete=complete, messages=list(messages),
        )  # fmt: skip
        ex = Exchange(
            id=f"e{self.n}", source=0, connection=conn, transport=op.protocol, request=None,
            response=None, operation=op,
        )  # fmt: skip
        self.joiner.add(ex, self.n)
        return ex.id

    def lives(self) -> list[Life]:
        return self.joiner.lives()


def kafka(action: str, offset: int | None, **kw: Any) -> QueueMessage:
    return QueueMessage(system="kafka", action=action, destination="tasks", partition=0,
                        offset=offset, **kw)  # fmt: skip


def amqp(action: str, **kw: Any) -> QueueMessage:
    return QueueMessage(system="amqp", action=action, **kw)


def shape(lives: list[Life]) -> list[tuple[list[str], str]]:
    return [([f"{e.seen.message.action} {e.seen.exchange_id}" for e in x.events], x.outcome)
            for x in lives]  # fmt: skip


def test_kafka_by_offset_and_commits_covering_it() -> None:
    c = Capture()
    c.op("p", kafka("publish", 41, payload={"t": 1}, size=7),
         kafka("publish", 42, payload={"t": 2}, size=7))  # fmt: skip
    c.op("c", kafka("deliver", 41, payload={"t": 1}, size=7),
         kafka("deliver", 42, payload={"t": 2}, size=7))  # fmt: skip
    c.op("c", kafka("commit", 42, details={"group": "g"}))  # 42 is the next to read
    c.op("c", kafka("commit", 43, details={"group": "g"}))
    c.op("p", kafka("publish", None, payload={"t": 3}, size=7), complete=False)
    lives = c.lives()
    assert shape(lives) == [
        (["publish e1", "deliver e2", "commit e3"], "acked"),
        (["publish e1", "deliver e2", "commit e4"], "acked"),
        (["publish e5"], "unknown"),  # its Produce never answered: no offset, no outcome
    ]
    assert lives[0].events[2].evidence == "commit of offset 42 covers offset 41"
    assert lives[0].identity() == {"partition": 0, "offset": 41}


def test_kafka_fetched_not_committed_and_a_commit_covering_nothing() -> None:
    c = Capture()
    c.op("c", kafka("deliver", 7, payload="x", size=1))
    c.op("c", kafka("commit", 5))
    lives = c.lives()
    assert shape(lives) == [(["deliver e1"], "delivered-unsettled"), (["commit e2"], "acked")]
    assert "covering no message" in lives[1].events[0].evidence


def test_amqp_publish_deliver_ack_by_message_id_then_tag() -> None:
    c = Capture()
    c.op("p", amqp("publish", destination="ex", routing_key="rk", message_id="m1",
                   payload={"a": 1}, size=8))  # fmt: skip
    c.op("c", amqp("deliver", destination="q", routing_key="rk", message_id="m1", channel=1,
                   delivery_tag=1, payload={"a": 1}, size=8))  # fmt: skip
    c.op("c", amqp("ack", channel=1, delivery_tag=1))
    (life,) = c.lives()
    assert shape([life]) == [(["publish e1", "deliver e2", "ack e3"], "acked")]
    assert life.events[1].evidence == "message_id m1"
    assert life.events[2].evidence == "connection c channel 1 tag 1 (tag 1)"


def test_amqp_join_order_correlation_then_payload() -> None:
    c = Capture()
    c.op("p", amqp("publish", routing_key="rk", correlation_id="c-9", payload="one", size=3))
    c.op("p", amqp("publish", routing_key="rk", payload={"n": 2}, size=8))
    c.op("p", amqp("publish", routing_key="other", payload={"n": 2}, size=8))
    c.op("c", amqp("deliver", routing_key="other", channel=1, delivery_tag=1,
                   payload={"n": 2}, size=8))  # fmt: skip
    c.op("c", amqp("deliver", routing_key="rk", channel=1, delivery_tag=2,
                   correlation_id="c-9", payload="one", size=3))  # fmt: skip
    c.op("c", amqp("deliver", routing_key="rk", channel=1, delivery_tag=3,
                   payload={"n": 2}, size=8))  # fmt: skip
    lives = c.lives()
    assert [[e.evidence for e in x.events[1:]] for x in lives] == [
        ["correlation_id c-9"],
        ["routing key rk and an identical payload"],
        ["routing key other and an identical payload"],
    ]
    assert [x.outcome for x in lives] == ["delivered-unsettled"] * 3


def test_amqp_multiple_ack_and_tags_per_connection_and_channel() -> None:
    c = Capture()
    for tag in (1, 2, 3):
        c.op("c", amqp("deliver", channel=1, delivery_tag=tag, payload=f"m{tag}", size=2))
    c.op("d", amqp("deliver", channel=1, delivery_tag=1, payload="other", size=5))
    c.op("c", amqp("ack", channel=1, delivery_tag=2, multiple=True))
    c.op("c", amqp("ack", channel=2, delivery_tag=3))  # another channel: no such delivery
    lives = c.lives()
    assert shape(lives) == [
        (["deliver e1", "ack e5"], "acked"),
        (["deliver e2", "ack e5"], "acked"),
        (["deliver e3"], "delivered-unsettled"),
        (["deliver e4"], "delivered-unsettled"),  # tag 1 of connection d: not acked by c
        (["ack e6"], "acked"),
    ]
    assert lives[0].events[1].evidence == "connection c channel 1 tag 1 (multiple, up to tag 2)"
    assert "no delivery of tag 3 on channel 2" in lives[4].events[0].evidence


def test_amqp_requeue_redelivery_then_reject_into_a_dead_letter() -> None:
    c = Capture()
    body: dict[str, Any] = {"payload": {"job": 5}, "size": 10}
    c.op("p", amqp("publish", destination="ex", routing_key="work", message_id="m5", **body))
    c.op("c", amqp("deliver", destination="work", routing_key="work", message_id="m5",
                   channel=1, delivery_tag=1, redelivered=False, **body))  # fmt: skip
    c.op("c", amqp("nack", channel=1, delivery_tag=1, requeue=True))
    c.op("c", amqp("deliver", destination="work", routing_key="work", message_id="m5",
                   channel=1, delivery_tag=2, redelivered=True, **body))  # fmt: skip
    c.op("c", amqp("reject", channel=1, delivery_tag=2, requeue=False))
    death = [{"queue": "work", "reason": "rejected", "count": 1, "exchange": "ex"}]
    c.op("d", amqp("deliver", destination="dead", routing_key="work", message_id="m5",
                   channel=1, delivery_tag=1, headers={"x-death": death}, **body))  # fmt: skip
    c.op("d", amqp("ack", channel=1, delivery_tag=1))
    first, dead = c.lives()
    assert [e.seen.message.action for e in first.events] == [
        "publish", "deliver", "nack", "deliver", "reject"
    ]  # fmt: skip
    assert first.outcome == "dead-lettered" and first.dead_lettered_as == dead.id
    assert dead.dead_letter_of == first.id and dead.outcome == "acked"
    assert dead.events[0].evidence == "x-death: dead-lettered from queue work (rejected)"


def test_requeued_without_redelivery_and_a_dead_letter_of_nothing_seen() -> None:
    c = Capture()
    c.op("c", amqp("deliver", destination="q", channel=1, delivery_tag=1, payload="a", size=1))
    c.op("c", amqp("reject", channel=1, delivery_tag=1, requeue=True))
    death = [{"queue": "elsewhere", "reason": "expired"}]
    c.op("c", amqp("deliver", destination="dlq", channel=1, delivery_tag=2, payload="b", size=1,
                   headers={"x-death": death}))  # fmt: skip
    lives = c.lives()
    assert [x.outcome for x in lives] == ["requeued", "delivered-unsettled"]
    assert lives[1].dead_letter_of is None  # no life of queue "elsewhere": joined to none


def redis_list(
    action: str, value: str, end: str, key: str = "jobs", **details: Any
) -> QueueMessage:
    return QueueMessage(system="redis", action=action, destination=key, payload=value,
                        size=len(value), details={"end": end, **details})  # fmt: skip


def test_redis_lists_fifo_lifo_and_a_move() -> None:
    c = Capture()
    c.op("p", redis_list("publish", "a", "left"), redis_list("publish", "b", "left"))
    c.op("w", redis_list("deliver", "a", "right"))  # LPUSH then RPOP: first in, first out
    c.op("p", redis_list("publish", "c", "left"))
    c.op("w", redis_list("deliver", "c", "left"))  # LPOP: last in, first out
    c.op("w", redis_list("deliver", "b", "right", moved_to="doing"),
         redis_list("publish", "b", "left", key="doing"))  # fmt: skip
    c.op("w", redis_list("deliver", "zz", "right"))
    lives = c.lives()
    assert shape(lives) == [
        (["publish e1", "deliver e2"], "delivered"),
        (["publish e1", "deliver e5", "publish e5"], "delivered-unsettled"),
        (["publish e3", "deliver e4"], "delivered"),
        (["deliver e6"], "delivered"),
    ]
    assert lives[0].events[1].evidence.endswith("(first in, first out)")
    assert lives[2].events[1].evidence.endswith("(last in, first out)")
    assert lives[1].events[2].evidence == "moved in the same command to list doing"


def test_redis_pubsub_one_publish_each_subscriber() -> None:
    c = Capture()

    def pub(action: str, value: str, **details: Any) -> QueueMessage:
        return QueueMessage(system="redis", action=action, destination="news", payload=value,
                            size=len(value), details={"pubsub": True, **details})  # fmt: skip

    c.op("p", pub("publish", "hi", receivers=2))
    c.op("s1", pub("deliver", "hi"))
    c.op("s2", pub("deliver", "hi"))
    c.op("s3", pub("deliver", "hi"))  # a third delivery: the publish said two receivers
    lives = c.lives()
    assert shape(lives) == [
        (["publish e1", "deliver e2", "deliver e3"], "delivered"),
        (["deliver e4"], "delivered"),
    ]


def test_events_are_placed_by_time_not_input_order() -> None:
    """An ack whose exchange came first in the input still follows the delivery."""
    c = Capture()
    stream: dict[str, Any] = {"system": "redis", "destination": "s", "message_id": "1-0"}
    c.op("w", QueueMessage(action="ack", details={"group": "g"}, **stream), at=5.0)
    c.op("w", QueueMessage(action="deliver", details={"group": "g"}, **stream), at=3.0)
    c.op("p", QueueMessage(action="publish", **stream), at=1.0)
    (life,) = c.lives()
    assert [e.seen.message.action for e in life.events] == ["publish", "deliver", "ack"]
    out = life.to_json()
    assert [e["delay"] for e in out["events"]] == [None, 2.1, 1.9]  # deliver at the reply
    assert out["outcome"] == "acked" and out["identity"] == {"message_id": "1-0"}


def test_dead_letters_of_an_unnamed_queue_and_of_an_expired_message() -> None:
    """A delivery whose queue the decoder did not know, and a message that expired before any
    delivery, are joined by their body; another body is not."""
    c = Capture()
    c.op("c", amqp("deliver", channel=1, delivery_tag=1, message_id="m1", payload="a", size=1))
    c.op("c", amqp("nack", channel=1, delivery_tag=1, requeue=False))
    c.op("p", amqp("publish", destination="ex", routing_key="ttl", payload="b", size=1))
    c.op("p", amqp("publish", destination="ex", routing_key="ttl", payload="c", size=1))
    for tag, body, reason in ((1, "a", "rejected"), (2, "b", "expired"), (3, "zz", "expired")):
        death = [{"queue": "work", "reason": reason}]
        c.op("d", amqp("deliver", destination="dlq", channel=1, delivery_tag=tag,
                       message_id="m1" if body == "a" else None, payload=body, size=len(body),
                       headers={"x-death": death}))  # fmt: skip
    first, expired, other, dead_a, dead_b, dead_zz = c.lives()
    assert (dead_a.dead_letter_of, dead_b.dead_letter_of, dead_zz.dead_letter_of) == (
        first.id, expired.id, None
    )  # fmt: skip
    assert [first.outcome, expired.outcome, other.outcome] == [
        "dead-lettered", "dead-lettered", "published-undelivered"
    ]  # fmt: skip


def test_the_redis_py_capture_s_lives() -> None:
    """redis-py's capture (no agent in it): the list, the stream and the channel, each its
    life, no run to link."""
    from agentshark.library.analyze import analyze
    from tests.wire.test_redis_captures import FOLDER

    lives = analyze(str(FOLDER / "capture.pcap")).to_json()["queue_messages"]
    assert [
        (x["destination"], [e["action"] for e in x["events"]], x["outcome"]) for x in lives
    ] == [
        ("jobs", ["publish", "deliver"], "delivered"),
        ("events", ["publish", "deliver", "ack"], "acked"),
        ("news", ["publish", "deliver"], "delivered"),
    ]
    assert [x["runs"] for x in lives] == [[], [], []]
    assert lives[2]["events"][0]["connection"] != lives[2]["events"][1]["connection"]


def test_a_returned_publish_is_joined_to_it() -> None:
    """AMQP's basic.return gives a mandatory publish back: one life, ``returned``."""
    cap = Capture()
    pub = cap.op("c1", amqp("publish", routing_key="nowhere", message_id="m9"))
    back = cap.op("c1", amqp("return", routing_key="nowhere", message_id="m9"))
    assert shape(cap.lives()) == [([f"publish {pub}", f"return {back}"], "returned")]


def test_the_rabbitmq_capture_s_lives() -> None:
    """pika and Celery against RabbitMQ: every publish's life, from the client's records (five
    work-queue messages, one nacked and redelivered, one rejected into the dead-letter queue,
    the unroutable mandatory publish given back, the Celery task)."""
    from agentshark.library.analyze import analyze
    from tests.helpers import ROOT

    folder = ROOT / "tests" / "data" / "captures" / "amqp_pika"
    lives = analyze(str(folder / "capture.pcap")).to_json()["queue_messages"]
    got = [([e["action"] for e in x["events"]], x["outcome"]) for x in lives]
    assert got == [
        (["publish", "deliver", "ack"], "acked"),
        (["publish", "deliver", "nack", "deliver", "ack"], "acked"),
        (["publish", "deliver", "reject"], "dead-lettered"),
        (["publish", "deliver", "ack"], "acked"),
        (["publish", "return"], "returned"),
        (["publish", "deliver", "ack"], "acked"),
        (["deliver", "ack"], "acked"),  # the dead letter's delivery, joined by x-death
        (["publish", "deliver", "ack"], "acked"),  # the Celery task
    ]
