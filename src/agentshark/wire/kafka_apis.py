"""Kafka message bodies that carry records and offsets: Produce, Fetch, ListOffsets,
OffsetCommit and OffsetFetch, at every version (https://kafka.apache.org/protocol.html#protocol_messages;
the fields and the versions that have them as in the message specs, apache/kafka
``clients/src/main/resources/common/message/*.json``).

Each API has a request parser (``Cursor`` -> :class:`KafkaRequest`) and a response parser
(``Cursor`` and its request -> :class:`KafkaResponse`). Topics are named by their names, or
from version 13 of Produce and Fetch (10 of OffsetCommit/OffsetFetch) by topic ids, which
are named from the connection's Metadata responses when it had one (``Context.names``), and
else kept as the id (``details["topic_id"]``) with no destination. Records become
:class:`~agentshark.wire.events.QueueMessage` values: Produce's ``publish`` (their offsets
once the response gives the partition's base offset), Fetch's ``deliver``, OffsetCommit's
``commit``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentshark.wire.events import Json, QueueMessage
from agentshark.wire.kafka_codec import Cursor
from agentshark.wire.kafka_names import error_name
from agentshark.wire.kafka_records import Batches, Budget, Record, read_batches

SYSTEM = "kafka"
Failed = dict[tuple[Json, Json], str]  # (topic, partition) -> the error's name


@dataclass(slots=True, kw_only=True)
class Context:
    """What a connection's earlier messages taught: topic ids' names, the payload budget."""

    budget: Budget
    names: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class KafkaRequest:
    statement: str | None = None
    parameters: list[Json] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    produced: list[tuple[str | None, str | None, int, Batches]] = field(default_factory=list)
    commits: list[tuple[str | None, int, int]] = field(default_factory=list)
    answered: bool = True  # False: Produce with acks=0, to which no response comes


@dataclass(slots=True, kw_only=True)
class KafkaResponse:
    result: str | None = None
    rows: int | None = None
    errors: list[dict[str, Json]] = field(default_factory=list)
    messages: list[QueueMessage] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def error(code: int, message: str | None = None, **where: Json) -> dict[str, Json]:
    return {"code": error_name(code), "number": code, "message": message, **where}


def topic(c: Cursor, by_id: bool, ctx: Context) -> tuple[str | None, str | None]:
    """A topic's (name, id): its name as sent, or its id and the name Metadata gave it."""
    if by_id:
        tid = c.uuid()
        return ctx.names.get(tid), tid
    return c.string(), None


def int32s(c: Cursor) -> list[int]:
    return [c.int32() for _ in range(c.count())]


def _summary(pairs: list[tuple[str | None, int]]) -> str:
    return ", ".join(f"{t}[{p}]" for t, p in pairs[:8]) + (" ..." if len(pairs) > 8 else "")


# -- values as JSON ------------------------------------------------------------------------


def text(data: bytes | None) -> Json:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def payload(data: bytes | None) -> Json:
    """JSON when it parses, else text when UTF-8, else None."""
    if not data:
        return None if data is None else ""
    if data[:1] in b'{["-0123456789tfn':
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def message(
    rec: Record,
    action: str,
    name: str | None,
    tid: str | None,
    partition: int,
    offset: int | None,
    error: str | None = None,
) -> QueueMessage:
    headers: dict[str, Json] = {}
    for key, value in rec.headers:
        v = text(value)
        if key in headers:  # a repeated header: its values in order
            old = headers[key]
            headers[key] = [*old, v] if isinstance(old, list) else [old, v]
        else:
            headers[key] = v
    details: dict[str, Json] = {"compression": rec.codec} if rec.codec != "none" else {}
    if tid is not None:
        details["topic_id"] = tid
    if error is not None:
        details["error"] = error
    if rec.cut:
        details["kept"] = False  # past the operation's byte budget: sizes only
    return QueueMessage(
        system=SYSTEM,
        action=action,
        destination=name,
        partition=partition,
        offset=offset,
        key=text(rec.key),
        headers=headers,
        payload=payload(rec.value),
        size=max(rec.value_size, 0),
        timestamp=rec.timestamp / 1000 if rec.timestamp >= 0 else None,
        details=details,
    )


# -- Produce -------------------------------------------------------------------------------


def produce_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    txn = c.string() if v >= 3 else None
    acks = c.int16()
    req.details.update(acks=acks, timeout_ms=c.int32())
    if txn is not None:
        req.details["transactional_id"] = txn
    req.answered = acks != 0
    for _ in range(c.count()):
        name, tid = topic(c, v >= 13, ctx)
        for _ in range(c.count()):
            partition = c.int32()
            records = c.bytes_()
            c.tags()
            req.produced.append((name, tid, partition, read_batches(records or b"", ctx.budget)))
        c.tags()
    c.tags()
    req.statement = _summary([(n or t, p) for n, t, p, _ in req.produced])
    req.parameters = [
        payload(r.value) for *_, b in req.produced for r in b.records if r.value is not None
    ]
    return req


def produce_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    bases: dict[tuple[str | None, int], int] = {}
    for _ in range(c.count()):
        name, tid = topic(c, v >= 13, ctx)
        for _ in range(c.count()):
            partition, code, base = c.int32(), c.int16(), c.int64()
            if v >= 2:
                c.int64()  # log_append_time_ms
            if v >= 5:
                c.int64()  # log_start_offset
            message_text = None
            if v >= 8:
                for _ in range(c.count()):
                    c.int32()
                    c.string()
                    c.tags()
                message_text = c.string()
            c.tags()
            if code:
                resp.errors.append(
                    error(code, message_text, topic=name or tid, partition=partition)
                )
            else:
                bases[(name or tid, partition)] = base
        c.tags()
    if v >= 1:
        resp.details["throttle_time_ms"] = c.int32()
    c.tags()
    resp.messages = produced_messages(req, bases, failures(resp.errors))
    resp.rows = len(resp.messages)
    resp.result = f"{resp.rows} records"
    return resp


def produced_messages(
    req: KafkaRequest, bases: dict[tuple[str | None, int], int], failed: Failed
) -> list[QueueMessage]:
    """Every produced record; its offset the partition's base offset plus its place in the
    partition's records (the broker gives a request's batches consecutive offsets from the
    base), when the response gave the base offset (never for acks=0 or an error: then
    ``details["error"]`` names the partition's error)."""
    out = []
    for name, tid, partition, batches in req.produced:
        base = bases.get((name or tid, partition))
        error = failed.get((name or tid, partition))
        for n, rec in enumerate(batches.records):
            offset = None if base is None else base + n
            out.append(message(rec, "publish", name, tid, partition, offset, error))
    return out


def failures(errors: list[dict[str, Json]]) -> Failed:
    """The error code name of each (topic, partition) a response reported one for."""
    return {(e.get("topic"), e.get("partition")): str(e["code"]) for e in errors}


# -- Fetch ---------------------------------------------------------------------------------


def fetch_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    if v <= 14:
        c.int32()  # replica_id
    req.details["max_wait_ms"] = c.int32()
    req.details["min_bytes"] = c.int32()
    if v >= 3:
        req.details["max_bytes"] = c.int32()
    if v >= 4:
        req.details["isolation_level"] = c.int8()
    if v >= 7:
        req.details["session_id"], req.details["session_epoch"] = c.int32(), c.int32()
    wanted = []
    offsets = []
    for _ in range(c.count()):
        name, tid = topic(c, v >= 13, ctx)
        for _ in range(c.count()):
            partition = c.int32()
            if v >= 9:
                c.int32()  # current_leader_epoch
            offset = c.int64()
            if v >= 12:
                c.int32()  # last_fetched_epoch
            if v >= 5:
                c.int64()  # log_start_offset
            c.int32()  # partition_max_bytes
            c.tags()
            wanted.append((name or tid, partition))
            offsets.append({"topic": name or tid, "partition": partition, "offset": offset})
        c.tags()
    if v >= 7:
        forgotten = []
        for _ in range(c.count()):
            name, tid = topic(c, v >= 13, ctx)
            forgotten += [f"{name or tid}[{p}]" for p in int32s(c)]
            c.tags()
        if forgotten:
            req.details["forgotten"] = forgotten
    if v >= 11:
        c.string()  # rack_id
    c.tags()
    req.details["fetch_offsets"] = offsets
    req.statement = _summary(wanted) or "(fetch session: no partition named)"
    return req


def fetch_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 1:
        resp.details["throttle_time_ms"] = c.int32()
    if v >= 7:
        code = c.int16()
        if code:
            resp.errors.append(error(code))
        resp.details["session_id"] = c.int32()
    partial = batches = 0
    for _ in range(c.count()):
        name, tid = topic(c, v >= 13, ctx)
        for _ in range(c.count()):
            partition, code = c.int32(), c.int16()
            c.int64()  # high_watermark
            if v >= 4:
                c.int64()  # last_stable_offset
            if v >= 5:
                c.int64()  # log_start_offset
            if v >= 4:
                for _ in range(c.count()):  # aborted_transactions
                    c.int64()
                    c.int64()
                    c.tags()
            if v >= 11:
                c.int32()  # preferred_read_replica
            records = c.bytes_()
            c.tags()
            if code:
                resp.errors.append(error(code, topic=name or tid, partition=partition))
            got = read_batches(records or b"", ctx.budget)
            partial += got.partial_bytes
            batches += got.batches
            for problem in got.errors:
                resp.details.setdefault("record_errors", []).append(
                    f"{name or tid}[{partition}]: {problem}"
                )
            resp.messages.extend(
                message(r, "deliver", name, tid, partition, r.offset) for r in got.records
            )
        c.tags()
    c.tags()
    resp.rows = len(resp.messages)
    resp.result = f"{resp.rows} records"
    if partial:
        resp.details["partial_batch_bytes"] = partial
    return resp


# -- offsets -------------------------------------------------------------------------------


def list_offsets_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    c.int32()  # replica_id
    if v >= 2:
        c.int8()  # isolation_level
    asked = []
    for _ in range(c.count()):
        name = c.string()
        for _ in range(c.count()):
            partition = c.int32()
            if v >= 4:
                c.int32()  # current_leader_epoch
            stamp = c.int64()
            if v == 0:
                c.int32()  # max_num_offsets
            c.tags()
            when = {-1: "latest", -2: "earliest", -3: "max-timestamp"}.get(stamp, str(stamp))
            asked.append(f"{name}[{partition}]@{when}")
        c.tags()
    if v >= 10:
        req.details["timeout_ms"] = c.int32()
    c.tags()
    req.statement = ", ".join(asked[:8]) + (" ..." if len(asked) > 8 else "")
    return req


def list_offsets_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 2:
        resp.details["throttle_time_ms"] = c.int32()
    found = []
    for _ in range(c.count()):
        name = c.string()
        for _ in range(c.count()):
            partition, code = c.int32(), c.int16()
            entry: dict[str, Json] = {"topic": name, "partition": partition}
            if v == 0:
                entry["offsets"] = [c.int64() for _ in range(c.count())]
            else:
                entry["timestamp"], entry["offset"] = c.int64(), c.int64()
            if v >= 4:
                c.int32()  # leader_epoch
            c.tags()
            if code:
                resp.errors.append(error(code, topic=name, partition=partition))
            else:
                found.append(entry)
        c.tags()
    c.tags()
    resp.details["offsets"] = found
    resp.rows = len(found)
    resp.result = ", ".join(f"{e['topic']}[{e['partition']}]={e.get('offset')}" for e in found[:8])
    return resp


def offset_commit_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    req.details["group_id"] = c.string()
    if v >= 1:
        req.details["generation_id"] = c.int32()
        req.details["member_id"] = c.string()
    if v >= 7:
        c.string()  # group_instance_id
    if 2 <= v <= 4:
        c.int64()  # retention_time_ms
    for _ in range(c.count()):
        name, tid = topic(c, v >= 10, ctx)
        for _ in range(c.count()):
            partition, offset = c.int32(), c.int64()
            if v >= 6:
                c.int32()  # committed_leader_epoch
            if v == 1:
                c.int64()  # commit_timestamp
            c.string()  # committed_metadata
            c.tags()
            req.commits.append((name or tid, partition, offset))
        c.tags()
    c.tags()
    group = req.details["group_id"]
    req.statement = f"{group}: " + ", ".join(f"{t}[{p}]={o}" for t, p, o in req.commits[:8])
    return req


def commit_messages(req: KafkaRequest, failed: Failed) -> list[QueueMessage]:
    """A commit per partition; one the broker refused names its error (``details["error"]``)."""
    group = req.details.get("group_id")
    return [
        QueueMessage(
            system=SYSTEM,
            action="commit",
            destination=t,
            partition=p,
            offset=o,
            details={"group_id": group, "error": failed[(t, p)]}
            if (t, p) in failed
            else {"group_id": group},
        )
        for t, p, o in req.commits
    ]


def offset_commit_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 3:
        resp.details["throttle_time_ms"] = c.int32()
    for _ in range(c.count()):
        name, tid = topic(c, v >= 10, ctx)
        for _ in range(c.count()):
            partition, code = c.int32(), c.int16()
            c.tags()
            if code:
                resp.errors.append(error(code, topic=name or tid, partition=partition))
        c.tags()
    c.tags()
    resp.messages = commit_messages(req, failures(resp.errors))
    resp.rows = len(resp.messages)
    resp.result = f"{resp.rows} offsets committed" if not resp.errors else None
    return resp


def offset_fetch_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    groups = []
    for _ in range(c.count() if v >= 8 else 1):
        group = c.string()
        if v >= 9:
            c.string()  # member_id
            c.int32()  # member_epoch
        asked = []
        for _ in range(c.count()):
            name, tid = topic(c, v >= 10, ctx)
            asked += [f"{name or tid}[{p}]" for p in int32s(c)]
            c.tags()
        if v >= 8:
            c.tags()
        groups.append(f"{group}: {', '.join(asked) or 'all'}")
        req.details.setdefault("group_id", group)
    if v >= 7:
        c.boolean()  # require_stable
    c.tags()
    req.statement = "; ".join(groups)
    return req


def offset_fetch_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 3:
        resp.details["throttle_time_ms"] = c.int32()
    offsets: list[dict[str, Json]] = []
    for _ in range(c.count() if v >= 8 else 1):
        group = c.string() if v >= 8 else req.details.get("group_id")
        for _ in range(c.count()):
            name, tid = topic(c, v >= 10, ctx)
            for _ in range(c.count()):
                partition, offset = c.int32(), c.int64()
                if v >= 5:
                    c.int32()  # committed_leader_epoch
                c.string()  # metadata
                code = c.int16()
                c.tags()
                where: dict[str, Json] = {
                    "group": group,
                    "topic": name or tid,
                    "partition": partition,
                }
                if code:
                    resp.errors.append(error(code, None, **where))
                offsets.append({**where, "offset": offset})
            c.tags()
        if v >= 8:
            code = c.int16()
            if code:
                resp.errors.append(error(code, group=group))
            c.tags()
    if 2 <= v <= 7:
        code = c.int16()
        if code:
            resp.errors.append(error(code))
    c.tags()
    resp.details["offsets"] = offsets
    resp.rows = len(offsets)
    resp.result = ", ".join(f"{o['topic']}[{o['partition']}]={o['offset']}" for o in offsets[:8])
    return resp
