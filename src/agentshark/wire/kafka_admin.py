"""Kafka message bodies around the records: Metadata (which also names the topic ids that
later Produce/Fetch versions send), FindCoordinator, CreateTopics, ApiVersions, and the
error code of the group and transaction APIs whose responses open with it
(https://kafka.apache.org/protocol.html#protocol_messages).
"""

from __future__ import annotations

from agentshark.wire.kafka_apis import Context, KafkaRequest, KafkaResponse, error, int32s
from agentshark.wire.kafka_codec import Cursor
from agentshark.wire.kafka_names import api_name

# api key -> the first version whose response starts with throttle_time_ms before its
# error_code (None: the error code comes first at every version)
LEADING_ERROR: dict[int, int | None] = {
    11: 2, 12: 1, 13: 1, 14: 1, 16: 1,  # JoinGroup, Heartbeat, LeaveGroup, SyncGroup, ListGroups
    17: None, 36: None,  # SaslHandshake, SaslAuthenticate
    22: 0, 25: 0, 26: 0, 60: 0, 68: 0, 71: 0, 72: 0, 76: 0, 88: 0,
}  # fmt: skip


def metadata_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    n = c.count()
    names = []
    for _ in range(max(n, 0)):
        if v >= 10:
            c.uuid()
        names.append(c.string())
        c.tags()
    if v >= 4:
        req.details["allow_auto_topic_creation"] = c.boolean()
    if 8 <= v <= 10:
        c.boolean()  # include_cluster_authorized_operations
    if v >= 8:
        c.boolean()  # include_topic_authorized_operations
    c.tags()
    req.statement = "all topics" if n < 0 or (n == 0 and v < 1) else ", ".join(map(str, names))
    return req


def metadata_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 3:
        resp.details["throttle_time_ms"] = c.int32()
    brokers = []
    for _ in range(c.count()):
        node, host, port = c.int32(), c.string(), c.int32()
        if v >= 1:
            c.string()  # rack
        c.tags()
        brokers.append(f"{node}={host}:{port}")
    resp.details["brokers"] = brokers
    if v >= 2:
        resp.details["cluster_id"] = c.string()
    if v >= 1:
        resp.details["controller_id"] = c.int32()
    topics = []
    for _ in range(c.count()):
        code, name = c.int16(), c.string()
        tid = c.uuid() if v >= 10 else None
        if tid is not None and name is not None and tid != "0" * 32:
            ctx.names[tid] = name
        if v >= 1:
            c.boolean()  # is_internal
        partitions = 0
        for _ in range(c.count()):
            pcode, index = c.int16(), c.int32()
            c.int32()  # leader_id
            if v >= 7:
                c.int32()  # leader_epoch
            int32s(c)  # replica_nodes
            int32s(c)  # isr_nodes
            if v >= 5:
                int32s(c)  # offline_replicas
            c.tags()
            partitions += 1
            if pcode:
                resp.errors.append(error(pcode, topic=name, partition=index))
        if v >= 8:
            c.int32()  # topic_authorized_operations
        c.tags()
        if code:
            resp.errors.insert(0, error(code, topic=name))
        topics.append({"topic": name, "topic_id": tid, "partitions": partitions})
    if 8 <= v <= 10:
        c.int32()  # cluster_authorized_operations
    c.tags()
    resp.details["topics"] = topics
    resp.rows = len(topics)
    resp.result = f"{len(brokers)} brokers, {len(topics)} topics"
    return resp


def find_coordinator_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    if v <= 3:
        keys = [c.string()]
        if v >= 1:
            req.details["key_type"] = c.int8()
    else:
        req.details["key_type"] = c.int8()
        keys = [c.string() for _ in range(c.count())]
    c.tags()
    req.statement = ", ".join(map(str, keys))
    return req


def find_coordinator_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 1:
        resp.details["throttle_time_ms"] = c.int32()
    found = []
    if v <= 3:
        code = c.int16()
        text = c.string() if v >= 1 else None
        node, host, port = c.int32(), c.string(), c.int32()
        entries = [(req.statement, code, text, node, host, port)]
    else:
        entries = []
        for _ in range(c.count()):
            key, node, host, port = c.string(), c.int32(), c.string(), c.int32()
            code, text = c.int16(), c.string()
            c.tags()
            entries.append((key, code, text, node, host, port))
    c.tags()
    for key, code, text, node, host, port in entries:
        if code:
            resp.errors.append(error(code, text, key=key))
        else:
            found.append(f"{key}: {node}={host}:{port}")
    resp.result = "; ".join(found) or None
    return resp


def create_topics_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    names = []
    for _ in range(c.count()):
        names.append(c.string())
        c.int32()  # num_partitions
        c.int16()  # replication_factor
        for _ in range(c.count()):  # assignments
            c.int32()
            int32s(c)
            c.tags()
        for _ in range(c.count()):  # configs
            c.string()
            c.string()
            c.tags()
        c.tags()
    req.details["timeout_ms"] = c.int32()
    if v >= 1:
        req.details["validate_only"] = c.boolean()
    c.tags()
    req.statement = ", ".join(map(str, names))
    return req


def create_topics_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    resp = KafkaResponse()
    if v >= 2:
        resp.details["throttle_time_ms"] = c.int32()
    made = []
    for _ in range(c.count()):
        name = c.string()
        if v >= 7:
            tid = c.uuid()
            if name is not None:
                ctx.names[tid] = name
        code = c.int16()
        text = c.string() if v >= 1 else None
        if v >= 5:
            c.int32()  # num_partitions
            c.int16()  # replication_factor
            for _ in range(c.count()):  # configs
                c.string()
                c.string()
                c.boolean()
                c.int8()
                c.boolean()
                c.tags()
        c.tags()
        if code:
            resp.errors.append(error(code, text, topic=name))
        else:
            made.append(str(name))
    c.tags()
    resp.rows = len(made)
    resp.result = f"created {', '.join(made)}" if made else None
    return resp


def api_versions_request(c: Cursor, v: int, ctx: Context) -> KafkaRequest:
    req = KafkaRequest()
    if v >= 3:
        req.details["client_software"] = f"{c.string()} {c.string()}"
        c.tags()
        req.statement = req.details["client_software"]
    return req


def api_versions_response(c: Cursor, v: int, req: KafkaRequest, ctx: Context) -> KafkaResponse:
    """The error code, then the APIs the broker speaks with their version ranges (a v3+
    body is flexible though its header is not)."""
    resp = KafkaResponse()
    code = c.int16()
    if code:
        resp.errors.append(error(code))
    ranges = {}
    for _ in range(c.count()):
        key, low, high = c.int16(), c.int16(), c.int16()
        c.tags()
        ranges[api_name(key)] = f"{low}-{high}"
    if v >= 1:
        resp.details["throttle_time_ms"] = c.int32()
    c.tags()  # supported and finalized features (v3+, tagged)
    resp.details["api_versions"] = ranges
    resp.rows = len(ranges)
    resp.result = f"{len(ranges)} APIs"
    return resp


def leading_error(c: Cursor, v: int, key: int) -> KafkaResponse:
    """The error code that opens the response of the APIs in :data:`LEADING_ERROR`."""
    resp = KafkaResponse()
    after = LEADING_ERROR[key]
    if after is not None and v >= after:
        resp.details["throttle_time_ms"] = c.int32()
    code = c.int16()
    if code:
        resp.errors.append(error(code))
    return resp
