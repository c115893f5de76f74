"""The Kafka wire protocol (https://kafka.apache.org/protocol.html): both directions of a
connection -> :class:`~agentshark.wire.events.Operation` values.

A request is ``Size api_key:int16 api_version:int16 correlation_id:int32
client_id:nullable-string`` (request header v1), with tagged fields after the client id in
the flexible versions (header v2); its response is ``Size correlation_id:int32`` (response
header v0), with tagged fields in the flexible versions (header v1) except ApiVersions
(:func:`~agentshark.wire.kafka_names.response_header_flexible`). A broker answers a
connection's requests in order, and a Produce with ``acks=0`` is never answered; requests
and responses are paired by correlation id, so a response that names no request in flight
is a Diagnostic and never taken for another's.

Each request is an operation of kind ``request``: ``command`` the API's name (``Produce``,
``Fetch``, ``Metadata``...), ``details["api_version"]`` its version, ``statement`` the name,
version and what it is about (topics and partitions, a group...). Produce, Fetch,
ListOffsets, OffsetCommit, OffsetFetch, Metadata, FindCoordinator, CreateTopics and
ApiVersions bodies are decoded (:mod:`agentshark.wire.kafka_apis`,
:mod:`agentshark.wire.kafka_admin`), as is the leading error code of the group and
transaction APIs; the first error a response reports (by name:
``UNKNOWN_TOPIC_OR_PARTITION``) is ``Operation.error``, every one in ``details["errors"]``.
An ApiVersions that the broker could not read is answered at v0 with UNSUPPORTED_VERSION
(KIP-511) and read so. The other APIs' bodies are not read (``details["request_bytes"]``
sizes them). Records are ``Operation.messages`` (``publish``/``deliver``/``commit``), their
key and value bytes kept up to :data:`MAX_VALUE_BYTES` per operation, every record counted
past it.
``role``: ``queue.publish`` (Produce), ``queue.consume`` (Fetch), ``queue.commit``
(OffsetCommit).

Gaps (:mod:`agentshark.wire.kafka_frames`): a frame damaged by a gap makes its operation
incomplete (paired still, by the correlation id its head kept); a frame whose head was lost
pairs with nothing; after a gap at a frame boundary the framing resumes at the next header
that chains (:meth:`KafkaSession._resync_request`, :meth:`KafkaSession._resync_response`),
and since pairing is by correlation id, what follows pairs as if nothing happened: a request
whose response was lost stays unanswered, a response whose request was lost is unpaired.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.wire import kafka_admin as admin
from agentshark.wire import kafka_apis as apis
from agentshark.wire.events import Operation
from agentshark.wire.kafka_apis import Context, KafkaRequest, KafkaResponse
from agentshark.wire.kafka_codec import Cursor, KafkaDecodeError
from agentshark.wire.kafka_frames import FrameReader, KafkaFrame, rule
from agentshark.wire.kafka_names import APIS, MAX_VERSION, api_name, flexible
from agentshark.wire.kafka_names import response_header_flexible as response_flex
from agentshark.wire.kafka_records import Budget

PROTOCOL = "kafka"
MAX_VALUE_BYTES = 1 << 20  # record key and value bytes kept per operation
ROLES = {0: "queue.publish", 1: "queue.consume", 8: "queue.commit"}
_Req = Callable[[Cursor, int, Context], KafkaRequest]
_Resp = Callable[[Cursor, int, KafkaRequest, Context], KafkaResponse]
BODIES: dict[int, tuple[_Req, _Resp]] = {
    0: (apis.produce_request, apis.produce_response),
    1: (apis.fetch_request, apis.fetch_response),
    2: (apis.list_offsets_request, apis.list_offsets_response),
    3: (admin.metadata_request, admin.metadata_response),
    8: (apis.offset_commit_request, apis.offset_commit_response),
    9: (apis.offset_fetch_request, apis.offset_fetch_response),
    10: (admin.find_coordinator_request, admin.find_coordinator_response),
    18: (admin.api_versions_request, admin.api_versions_response),
    19: (admin.create_topics_request, admin.create_topics_response),
}


def looks_like_kafka(client: bytes, port: int) -> bool | None:
    """A request header: a plausible size, an API key this table knows (any key below 128
    on the well-known port 9092), a version below :data:`MAX_VERSION`, a client id that fits
    the frame and is printable. None: too few bytes to tell."""
    if len(client) < 14:
        return None
    size = int.from_bytes(client[:4], signed=True)
    key = int.from_bytes(client[4:6], signed=True)
    version = int.from_bytes(client[6:8], signed=True)
    known = key in APIS or (port == 9092 and 0 <= key < 128)
    if not (10 <= size <= 100 << 20 and known and 0 <= version <= MAX_VERSION):
        return False
    n = int.from_bytes(client[12:14], signed=True)
    if n == -1:
        return True
    if n < 0 or 10 + n > size:
        return False
    return all(32 <= b < 127 for b in client[14 : 14 + n])  # once per connection


class _Pending:
    __slots__ = ("client_id", "corr", "diagnostics", "frame", "key", "req", "version")

    def __init__(self, key: int, version: int, corr: int, frame: KafkaFrame) -> None:
        self.key, self.version, self.corr, self.frame = key, version, corr, frame
        self.client_id: str | None = None
        self.req = KafkaRequest()
        self.diagnostics: list[Diagnostic] = []


class KafkaSession:
    """Both directions of one Kafka connection; see the module docstring."""

    __slots__ = (
        "_count", "_last_corr", "_names", "_pending", "_readers", "diagnostics", "location",
    )  # fmt: skip

    def __init__(self, location: str) -> None:
        self.location = location
        self._readers = (
            FrameReader(f"{location} client", rule(self._resync_request, chain=2)),
            FrameReader(f"{location} server", rule(self._resync_response, chain=1)),
        )
        self._last_corr: int | None = None  # of the last request read
        self._pending: dict[int, _Pending] = {}  # by correlation id, in the order sent
        self._names: dict[str, str] = {}  # topic id -> name, from Metadata/CreateTopics
        self._count = 0
        self.diagnostics: list[Diagnostic] = []

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        return self._take(direction, self._readers[direction].feed(data, ts))

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]:
        return self._take(direction, self._readers[direction].gap(size, ts))

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]:
        return []

    def close(self) -> list[Operation]:
        for reader in self._readers:
            self.diagnostics.extend(reader.close())
        out = []
        for p in self._pending.values():
            p.diagnostics.append(
                Diagnostic(
                    code="kafka.unanswered",
                    message=f"no response to this {api_name(p.key)} (correlation id {p.corr}) "
                    "in the capture",
                    location=self.location,
                )
            )
            out.append(self._operation(p, None, None))
        self._pending.clear()
        return out

    def _take(self, direction: int, items: list[KafkaFrame | Diagnostic]) -> list[Operation]:
        out: list[Operation] = []
        for item in items:
            if isinstance(item, Diagnostic):
                self.diagnostics.append(item)
            elif direction == 0:
                self._request(item, out)
            else:
                self._response(item, out)
        return out

    def _diagnostic(self, code: str, message: str, frame: KafkaFrame, side: str) -> None:
        self.diagnostics.append(
            Diagnostic(
                code=code, message=message, location=f"{self.location} {side} byte {frame.offset}"
            )
        )

    # -- requests -------------------------------------------------------------------------

    def _request(self, frame: KafkaFrame, out: list[Operation]) -> None:
        if len(frame.head) < 8:
            self._diagnostic(
                "kafka.lost_request",
                "a request whose header was not captured: it is not reported",
                frame,
                "client",
            )
            return
        key = int.from_bytes(frame.head[:2], signed=True)
        version = int.from_bytes(frame.head[2:4], signed=True)
        corr = int.from_bytes(frame.head[4:8], signed=True)
        self._last_corr = corr
        p = _Pending(key, version, corr, frame)
        flex = flexible(key, version)
        try:
            c = Cursor(frame.head if frame.body is None else frame.body, pos=8)
            p.client_id = c.string()
            c.flex = flex
            c.tags() if flex else None
            if frame.body is not None and key in BODIES:
                p.req = BODIES[key][0](c, version, self._context())
                if c.left():
                    raise KafkaDecodeError(f"{c.left()} bytes after its fields")
        except KafkaDecodeError as exc:
            if frame.body is not None:
                p.diagnostics.append(self._body_error("request", key, version, exc))
        if corr in self._pending:
            self._diagnostic(
                "kafka.duplicate_correlation",
                f"correlation id {corr} is sent "
                "again before its response: the first request stays unanswered",
                frame,
                "client",
            )
            out.append(self._operation(self._pending.pop(corr), None, None))
        if p.req.answered:
            self._pending[corr] = p
        else:
            out.append(self._operation(p, None, None))

    # -- finding frames again after a gap ---------------------------------------------------

    def _resync_request(self, buf: bytes | bytearray, at: int, size: int) -> bool:
        """A request header at ``at``: a known API at a version that exists, a correlation id
        past the last one read (by less than 2**16: clients count up), a client id that
        fits."""
        key = int.from_bytes(buf[at : at + 2], signed=True)
        version = int.from_bytes(buf[at + 2 : at + 4], signed=True)
        corr = int.from_bytes(buf[at + 4 : at + 8], signed=True)
        last = self._last_corr
        if key not in APIS or not 0 <= version <= MAX_VERSION:
            return False
        if last is not None and not 0 < corr - last <= 1 << 16:
            return False
        n = int.from_bytes(buf[at + 8 : at + 10], signed=True)
        return n == -1 or 0 <= n <= size - 10

    def _resync_response(self, buf: bytes | bytearray, at: int, size: int) -> bool:
        """A response header at ``at``: its correlation id names a request in flight."""
        return int.from_bytes(buf[at : at + 4], signed=True) in self._pending

    def _body_error(self, side: str, key: int, version: int, exc: Exception) -> Diagnostic:
        return Diagnostic(
            code="kafka.body",
            message=f"this {api_name(key)} v{version} {side} "
            f"does not follow its layout ({exc}): what it says is not reported",
            location=self.location,
        )

    def _context(self) -> Context:
        return Context(budget=Budget(MAX_VALUE_BYTES), names=self._names)

    # -- responses ------------------------------------------------------------------------

    def _response(self, frame: KafkaFrame, out: list[Operation]) -> None:
        if len(frame.head) < 4:
            self._diagnostic(
                "kafka.lost_response",
                "a response whose correlation id was not captured: it is not paired",
                frame,
                "server",
            )
            return
        corr = int.from_bytes(frame.head[:4], signed=True)
        p = self._pending.pop(corr, None)
        if p is None:
            self._diagnostic(
                "kafka.unpaired",
                f"a response with correlation id {corr}, which "
                "no request in the capture had (the capture starts mid-connection "
                "or lost client bytes)",
                frame,
                "server",
            )
            return
        resp = None
        if frame.body is not None:
            try:
                c = Cursor(frame.body, pos=4, flex=response_flex(p.key, p.version))
                c.tags()
                c.flex = flexible(p.key, p.version)
                resp = self._response_body(c, p)
            except KafkaDecodeError as exc:
                p.diagnostics.append(self._body_error("response", p.key, p.version, exc))
        out.append(self._operation(p, frame, resp))

    def _response_body(self, c: Cursor, p: _Pending) -> KafkaResponse:
        if (
            p.key == 18
            and p.version >= 1
            and c.left() >= 2
            and c.data[c.pos : c.pos + 2] == b"\x00\x23"
        ):
            # UNSUPPORTED_VERSION: the broker answers an ApiVersions it cannot read at v0,
            # so that the client learns its ranges (KIP-511)
            return admin.api_versions_response(Cursor(c.data, pos=c.pos), 0, p.req, self._context())
        if p.key in BODIES:
            resp = BODIES[p.key][1](c, p.version, p.req, self._context())
            if c.left():
                raise KafkaDecodeError(f"{c.left()} bytes after its fields")
            return resp
        if p.key in admin.LEADING_ERROR:
            return admin.leading_error(c, p.version, p.key)
        return KafkaResponse()

    # -- operations -----------------------------------------------------------------------

    def _operation(
        self, p: _Pending, frame: KafkaFrame | None, resp: KafkaResponse | None
    ) -> Operation:
        name = api_name(p.key)
        req = p.req
        details: dict[str, Any] = {
            "api_key": p.key,
            "api_version": p.version,
            "correlation_id": p.corr,
            "client_id": p.client_id,
            **req.details,
        }
        if p.key not in BODIES:
            details["request_bytes"] = p.frame.size  # a body this module does not read
        messages = []
        error = None
        if resp is not None:
            details.update(resp.details)
            messages = resp.messages
            if resp.errors:
                error = resp.errors[0]
                if len(resp.errors) > 1:
                    details["errors"] = resp.errors
        elif req.produced:  # unanswered (or acks=0): the records without their offsets
            messages = apis.produced_messages(req, {}, {})
        elif req.commits:
            messages = apis.commit_messages(req, {})
        for flag, f in (("too_large", p.frame.too_large), ("request_damaged", p.frame.damaged)):
            if f:
                details[flag] = True
        if frame is not None and (frame.too_large or frame.damaged):
            details["response_too_large" if frame.too_large else "response_damaged"] = True
        index = self._count
        self._count += 1
        statement = f"{name} v{p.version}" + (f" {req.statement}" if req.statement else "")
        return Operation(
            protocol=PROTOCOL,
            kind="request",
            index=index,
            command=name,
            statement=statement,
            parameters=req.parameters,
            started=p.frame.started,
            request_ended=p.frame.ended,
            response_started=frame.started if frame else None,
            ended=frame.ended if frame else None,
            request_complete=p.frame.body is not None,
            response_complete=frame is not None and frame.body is not None,
            result=resp.result if resp else None,
            rows=resp.rows if resp else None,
            error=error,
            role=ROLES.get(p.key),
            values_cut=any(m.details.get("kept") is False for m in messages),
            details=details,
            messages=messages,
            diagnostics=p.diagnostics,
        )
