"""Message lives: every :class:`~agentshark.wire.events.QueueMessage` of the input joined
into the lives of the messages (published, delivered, settled), by evidence only.

Each event is one message of one operation, placed in time where the broker saw it: a
publish or a settlement when its request was sent, a delivery when the reply (or push)
carrying it arrived (with the publish of a move: LMOVE delivers and publishes at once); ties
keep the input's order. The joins, per system:

- Kafka: a publish and a delivery of the same (topic, partition, offset) are one life
  (``offset``); an OffsetCommit of offset O for a partition settles every life of that
  partition below O not yet committed by the same group (``commit``: Kafka's committed offset
  is the next one to consume, https://kafka.apache.org/documentation/#consumerconfigs).
- AMQP 0-9-1 (https://www.rabbitmq.com/amqp-0-9-1-reference.html): a delivery joins the
  publish of the same ``message_id``, else the same ``correlation_id``, else the same routing
  key (and exchange, when the delivery names it) with an identical payload, the first such
  publish not delivered yet (``evidence`` says which). ack/nack/reject settle the delivery of
  the same connection, channel and delivery tag; ``multiple`` settles every unsettled
  delivery of the channel up to the tag (tag 0: all). A delivery whose ``x-death`` header
  names a queue and a reason is a dead letter: it starts a life of its own, joined
  (``dead_letter_of``) to the latest earlier life delivered from that queue (or from a queue
  the delivery did not name) with the same ``message_id`` or payload that was rejected
  or nacked without requeue (or, for ``expired``/``maxlen``, never settled), whose outcome
  becomes ``dead-lettered``.
- Redis: stream entries by (key, entry id): XADD, each XREADGROUP/XREAD/XRANGE/XCLAIM
  delivery, XACK. Lists by identical value, in the list's order: each key's list is
  followed as the commands push and pop (LPUSH then RPOP: first in, first out; LPUSH then
  LPOP: last in, first out), a popped value joining the pushed one at the end it was popped
  from (or the nearest equal one, the evidence saying so); an LMOVE carries its life to the
  destination list. Pub/sub: a delivery joins the earliest publish on that channel with an
  identical payload (one publish, a delivery per subscriber).

Nothing is joined by time alone. A message whose other side is not in the input is a life
of its own. Outcomes: ``acked``, ``nacked``, ``rejected`` (without requeue),
``dead-lettered``, ``requeued`` (a nack/reject with requeue and no redelivery seen),
``delivered`` (where the protocol has no settlement: a list pop, pub/sub, XREAD/XRANGE),
``delivered-unsettled``, ``published-undelivered``, ``returned`` (AMQP's basic.return: the
broker could not route a mandatory publish, joined to it like a delivery), ``unknown`` (the
last event's operation did not end in the capture: a gap or the capture's end hid what
followed).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from agentshark.model import Exchange
from agentshark.wire.events import Json, QueueMessage

SETTLE = frozenset(("ack", "nack", "reject", "commit"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One message of one operation, with where and when it was seen."""

    exchange_id: str
    connection: str | None
    time: float | None
    started: float | None  # the operation's request
    ended: float | None  # and its end (None: not seen)
    complete: bool  # the operation ended in the capture
    order: int  # its place in the input
    message: QueueMessage


@dataclass(slots=True, kw_only=True)
class Event:
    seen: Seen
    evidence: str  # what joined it to the life ("first seen" for the first event)


@dataclass(slots=True, kw_only=True)
class Life:
    id: str
    system: str
    destination: str | None
    events: list[Event] = field(default_factory=list)
    dead_letter_of: str | None = None
    dead_lettered_as: str | None = None
    runs: list[dict[str, Json]] = field(default_factory=list)  # producer -> consumer links

    def add(self, seen: Seen, evidence: str) -> None:
        self.events.append(Event(seen=seen, evidence=evidence))

    def actions(self) -> list[str]:
        return [e.seen.message.action for e in self.events]

    @property
    def outcome(self) -> str:
        return outcome(self)

    def identity(self) -> dict[str, Json]:
        """The identities its messages carried (the first value of each)."""
        out: dict[str, Json] = {}
        for e in self.events:
            m = e.seen.message
            for name in ("routing_key", "partition", "offset", "message_id", "correlation_id"):
                value = getattr(m, name)
                if value is not None and name not in out:
                    out[name] = value
            for name in ("celery", "rq"):
                if name in m.details and name not in out:
                    out[name] = m.details[name]
        return out

    def to_json(self) -> dict[str, Json]:
        events = []
        previous: float | None = None
        for e in self.events:
            t = e.seen.time
            delay = t - previous if t is not None and previous is not None else None
            events.append(
                {
                    "action": e.seen.message.action,
                    "exchange_id": e.seen.exchange_id,
                    "connection": e.seen.connection,
                    "destination": e.seen.message.destination,
                    "time": t,
                    "delay": delay,
                    "redelivered": e.seen.message.redelivered,
                    "evidence": e.evidence,
                }
            )
            previous = t if t is not None else previous
        return {
            "id": self.id,
            "system": self.system,
            "destination": self.destination,
            "identity": self.identity(),
            "outcome": self.outcome,
            "events": events,
            "dead_letter_of": self.dead_letter_of,
            "dead_lettered_as": self.dead_lettered_as,
            "runs": self.runs,
        }


def seen_of(exchange: Exchange, order: int) -> list[Seen]:
    """The messages of an exchange's operation, placed in time (module docstring)."""
    op = exchange.operation
    if op is None or not op.messages:
        return []
    answered = op.response_started if op.response_started is not None else op.ended
    # a move (LMOVE: a delivery and a publish in one command) happens at once, when answered
    moves = any(m.action == "deliver" for m in op.messages)
    out = []
    for n, message in enumerate(op.messages):
        t = op.started
        if (message.action == "deliver" or moves) and answered is not None:
            t = answered
        out.append(
            Seen(
                exchange_id=exchange.id,
                connection=exchange.connection,
                time=t,
                started=op.started,
                ended=op.ended,
                complete=op.response_complete,
                order=order * 1024 + min(n, 1023),
                message=message,
            )
        )
    return out


def outcome(life: Life) -> str:
    if life.dead_lettered_as is not None:
        return "dead-lettered"
    last = life.events[-1]
    m = last.seen.message
    if not last.seen.complete and m.action != "ack":
        return "unknown"
    if m.action in ("ack", "commit"):
        return "acked"
    if m.action == "return":
        return "returned"
    if m.action in ("nack", "reject"):
        if m.requeue:
            return "requeued"
        return "nacked" if m.action == "nack" else "rejected"
    if m.action == "deliver":
        return "delivered" if _unsettled_kind(m) else "delivered-unsettled"
    if any("moved_to" in e.seen.message.details for e in life.events):
        return "delivered-unsettled"  # LMOVE to a processing list: there until removed
    return "published-undelivered"


def _unsettled_kind(m: QueueMessage) -> bool:
    """A delivery the protocol never settles (a Redis list pop, pub/sub, XREAD/XRANGE)."""
    if m.system != "redis":
        return False
    return "group" not in m.details


def _canonical(m: QueueMessage) -> bytes | None:
    """What compares two payloads: the payload and size, or the digest of one too large to
    keep (``details["payload_sha256"]``)."""
    if m.payload is None:
        digest = m.details.get("payload_sha256")
        return digest.encode() if isinstance(digest, str) else None
    return orjson.dumps([m.size, m.payload], option=orjson.OPT_SORT_KEYS)


def _time_key(s: Seen) -> tuple[bool, float, int]:
    return s.time is None, s.time or 0.0, s.order


class Joiner:
    """Lives of the messages given to :meth:`add` (in any order); :meth:`lives` joins."""

    def __init__(self) -> None:
        self._seen: list[Seen] = []

    def add(self, exchange: Exchange, order: int) -> None:
        self._seen.extend(seen_of(exchange, order))

    def __bool__(self) -> bool:
        return bool(self._seen)

    def lives(self) -> list[Life]:
        state = _State()
        for seen in sorted(self._seen, key=_time_key):
            system = seen.message.system
            if system == "kafka":
                state.kafka(seen)
            elif system == "amqp":
                state.amqp(seen)
            elif system == "redis":
                state.redis(seen)
            else:
                state.new(seen, "first seen (a system the joiner has no rule for)")
        return state.out


class _State:
    def __init__(self) -> None:
        self.out: list[Life] = []
        self.by_key: dict[tuple[Json, ...], Life] = {}
        self.partitions: dict[tuple[str | None, int | None], list[tuple[int, int]]] = {}
        self.committed: dict[tuple[Json, ...], int] = {}
        self.waiting: dict[tuple[Json, ...], deque[Life]] = {}
        self.tags: dict[tuple[str | None, int | None], dict[int, Life]] = {}
        self.lists: dict[str | None, deque[tuple[bytes | None, Life]]] = {}
        self.moved: dict[str, Life] = {}
        self.channels: dict[str | None, list[tuple[bytes | None, Life]]] = {}

    def new(self, seen: Seen, evidence: str = "first seen") -> Life:
        m = seen.message
        life = Life(id=f"msg{len(self.out) + 1}", system=m.system, destination=m.destination)
        life.add(seen, evidence)
        self.out.append(life)
        return life

    # -- kafka --------------------------------------------------------------------------

    def kafka(self, seen: Seen) -> None:
        m = seen.message
        if m.action == "commit":
            self._commit(seen)
            return
        if m.offset is None:
            self.new(seen, "first seen (no offset: joined to nothing)")
            return
        key = ("kafka", m.destination, m.partition, m.offset)
        life = self.by_key.get(key)
        if life is None:
            life = self.by_key[key] = self.new(seen)
            bisect.insort(self.partitions.setdefault((m.destination, m.partition), []),
                          (m.offset, len(self.out) - 1))  # fmt: skip
            return
        life.add(seen, f"topic {m.destination} partition {m.partition} offset {m.offset}")

    def _commit(self, seen: Seen) -> None:
        m = seen.message
        group = m.details.get("group")
        lives = self.partitions.get((m.destination, m.partition), [])
        if m.offset is None or not lives:
            self.new(seen, "first seen (a commit covering no message of the capture)")
            return
        gkey = (m.destination, m.partition, group)
        low = self.committed.get(gkey, -1)
        start = bisect.bisect_left(lives, (low + 1, -1))
        stop = bisect.bisect_left(lives, (m.offset, -1))
        for offset, n in lives[start:stop]:
            self.out[n].add(seen, f"commit of offset {m.offset} covers offset {offset}")
        if stop > start:
            self.committed[gkey] = max(low, m.offset - 1)
        else:
            self.new(seen, "first seen (a commit covering no message of the capture)")

    # -- amqp ---------------------------------------------------------------------------

    def amqp(self, seen: Seen) -> None:
        m = seen.message
        if m.action == "publish":
            life = self.new(seen)
            for key in _amqp_keys(m):
                self.waiting.setdefault(key, deque()).append(life)
        elif m.action == "deliver":
            self._deliver(seen)
        elif m.action == "return":  # the publish it gives back is not delivered
            given, evidence = self._published(m)
            if given is None:
                self.new(seen, "first seen (its publish is not in the capture)")
            else:
                given.add(seen, evidence)
        elif m.action in SETTLE:
            self._settle(seen)
        else:
            self.new(seen)

    def _deliver(self, seen: Seen) -> None:
        m = seen.message
        life = self._dead_letter(seen)
        if life is None:
            life, evidence = self._published(m)
            if life is None:
                life = self.new(seen, "first seen (its publish is not in the capture)")
            else:
                life.add(seen, evidence)
        if m.delivery_tag is not None:
            self.tags.setdefault((seen.connection, m.channel), {})[m.delivery_tag] = life

    def _published(self, m: QueueMessage) -> tuple[Life | None, str]:
        """The life this delivery is a delivery of: a publish waiting, else a requeued
        life (a redelivery), by the strongest identity the message carries."""
        for key in _amqp_keys(m):
            queue = self.waiting.get(key)
            while queue and "deliver" in queue[0].actions() and queue[0].outcome != "requeued":
                queue.popleft()  # delivered already (a requeued one is put back first)
            if queue:
                return queue.popleft(), _amqp_evidence(key)
        return None, ""

    def _dead_letter(self, seen: Seen) -> Life | None:
        """A dead letter (``x-death`` names the queue and reason): a life of its own, joined
        to the life it was dead-lettered from."""
        deaths = seen.message.headers.get("x-death")
        if not isinstance(deaths, list) or not deaths or not isinstance(deaths[0], dict):
            return None
        death = deaths[0]  # the most recent death first (RabbitMQ's order)
        queue, reason = death.get("queue"), death.get("reason")
        if not isinstance(queue, str):
            return None
        life = self.new(seen, f"x-death: dead-lettered from queue {queue} ({reason})")
        for first in reversed(self.out[:-1]):
            if first.system != "amqp" or first.dead_lettered_as is not None:
                continue
            queues = {e.seen.message.destination for e in first.events
                      if e.seen.message.action == "deliver"}  # fmt: skip
            if queues and queue not in queues and queues != {None}:
                continue  # delivered from another queue (a queue not known: the body decides)
            if not _died(first, reason) or not _same_body(first, seen.message):
                continue
            first.dead_lettered_as = life.id
            life.dead_letter_of = first.id
            break
        return life

    def _settle(self, seen: Seen) -> None:
        m = seen.message
        open_tags = self.tags.get((seen.connection, m.channel), {})
        tag = m.delivery_tag
        if tag is None:
            self.new(seen, "first seen (a settlement without a delivery tag)")
            return
        if m.multiple:
            hit = sorted(t for t in open_tags if tag == 0 or t <= tag)
        else:
            hit = [tag] if tag in open_tags else []
        if not hit:
            self.new(seen, f"first seen (no delivery of tag {tag} on channel {m.channel})")
            return
        for t in hit:
            life = open_tags.pop(t)
            how = "multiple, up to " if m.multiple else ""
            life.add(
                seen, f"connection {seen.connection} channel {m.channel} tag {t} ({how}tag {tag})"
            )
            if m.action in ("nack", "reject") and m.requeue:
                first = life.events[0].seen.message
                for key in _amqp_keys(first):  # back in the queue: its redelivery joins it
                    self.waiting.setdefault(key, deque()).appendleft(life)

    # -- redis --------------------------------------------------------------------------

    def redis(self, seen: Seen) -> None:
        m = seen.message
        if m.details.get("pubsub"):
            self._pubsub(seen)
        elif "end" in m.details:
            self._list(seen)
        elif m.message_id is not None:
            key = ("redis", m.destination, m.message_id)
            life = self.by_key.get(key)
            if life is None:
                self.by_key[key] = self.new(seen)
            else:
                life.add(seen, f"stream {m.destination} entry {m.message_id}")
        else:
            self.new(seen, "first seen (no entry id: joined to nothing)")

    def _list(self, seen: Seen) -> None:
        m = seen.message
        items = self.lists.setdefault(m.destination, deque())
        value = _canonical(m)
        end = m.details["end"]
        if m.action == "publish":
            life = self.moved.pop(seen.exchange_id, None)
            if life is None:
                life = self.new(seen)
            else:
                life.add(seen, f"moved in the same command to list {m.destination}")
            life.destination = life.destination or m.destination
            if end == "left":
                items.appendleft((value, life))
            else:
                items.append((value, life))
            return
        found = _take(items, value, end)
        if found is None:
            life = self.new(seen, "first seen (its push is not in the capture)")
        else:
            life, how = found
            pushed = next(e.seen.message for e in life.events if e.seen.message.action == "publish")
            order = (
                "first in, first out" if pushed.details.get("end") != end else "last in, first out"
            )
            life.add(seen, f"identical value {how} of list {m.destination} ({order})")
        if isinstance(m.details.get("moved_to"), str):
            self.moved[seen.exchange_id] = life

    def _pubsub(self, seen: Seen) -> None:
        m = seen.message
        waiting = self.channels.setdefault(m.destination, [])
        value = _canonical(m)
        if m.action == "publish":
            waiting.append((value, self.new(seen)))
            del waiting[:-256]  # bounded: an old publish is delivered by now or never
            return
        for n, (pub_value, life) in enumerate(waiting):
            if pub_value == value and value is not None:
                life.add(seen, f"channel {m.destination}, identical payload")
                receivers = life.events[0].seen.message.details.get("receivers")
                delivered = life.actions().count("deliver")
                if isinstance(receivers, int) and delivered >= receivers:
                    del waiting[n]
                return
        self.new(seen, "first seen (its publish is not in the capture)")


def _take(
    items: deque[tuple[bytes | None, Life]], value: bytes | None, end: str
) -> tuple[Life, str] | None:
    """Pop the pushed value a pop returned: at ``end``, else the nearest equal one."""
    if not items or value is None:
        return None
    at = 0 if end == "left" else len(items) - 1
    if items[at][0] == value:
        life = items[at][1]
        del items[at]
        return life, f"at the {end} end"
    order: Iterable[int] = range(len(items)) if end == "left" else range(len(items) - 1, -1, -1)
    for n in order:
        if items[n][0] == value:
            life = items[n][1]
            del items[n]
            return life, f"(the nearest to the {end} end, not at it)"
    return None


def _amqp_keys(m: QueueMessage) -> list[tuple[Json, ...]]:
    keys: list[tuple[Json, ...]] = []
    if m.message_id is not None:
        keys.append(("message_id", m.message_id))
    if m.correlation_id is not None:
        keys.append(("correlation_id", m.correlation_id))
    body = _canonical(m)
    if body is not None:
        keys.append(("body", m.routing_key, body))
    return keys


def _amqp_evidence(key: tuple[Json, ...]) -> str:
    if key[0] == "body":
        return f"routing key {key[1]} and an identical payload"
    return f"{key[0]} {key[1]}"


def _died(life: Life, reason: Json) -> bool:
    last = life.events[-1].seen.message
    if last.action in ("nack", "reject"):
        return last.requeue is False
    return reason in ("expired", "maxlen", "delivery_limit")


def _same_body(life: Life, m: QueueMessage) -> bool:
    first = life.events[0].seen.message
    if first.message_id is not None and m.message_id is not None:
        return first.message_id == m.message_id
    return _canonical(first) == _canonical(m)
