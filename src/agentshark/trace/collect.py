"""The last stage: every call of the input, and the HTTP requests no family claimed, kept
until the input ends; then traces and incidents.

Traces need the whole input (a run's calls can be anywhere in it), so unlike the stages
before, this one keeps what it needs: a slim copy of each call (:func:`slim`: every string
longer than :data:`KEPT_CHARS` becomes its first characters, its length and a digest, so
equal strings stay equal; tool definitions keep their names), and the first
:data:`BODY_KEPT` bytes of each unclaimed request body (to match tool executions against the
arguments a model asked for; a gRPC request body is kept as the JSON of its messages read
without a schema, :func:`grpc_request_json`, so argument values are found in it as text).
Exchanges themselves are not kept (the queue messages of wire operations are, for their
lives: :mod:`agentshark.trace.queues`). The whole calls are in the
report's ``calls``; trace attributes (tool arguments, results) hold the slim values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import orjson

from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.framing import decode_stream
from agentshark.framing.events import GrpcMessage
from agentshark.framing.protobuf import decode_raw
from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from agentshark.pipeline import Item
from agentshark.trace.build import build_traces, connection_hints
from agentshark.trace.heap import KeptHeap
from agentshark.trace.history import HistoryLink, is_model_call, link_history
from agentshark.trace.incidents import find_incidents
from agentshark.trace.model import Incident, Trace
from agentshark.trace.openapi import OpenApi, is_openapi, name_operations
from agentshark.trace.queue_spans import add_queue_spans
from agentshark.trace.queues import Joiner, Life
from agentshark.trace.routes import wire_execution
from agentshark.trace.spans import HttpRequest
from agentshark.trace.spill import Store

BODY_KEPT = 4096
BODY_DECODED_LIMIT = 1 << 20  # compressed request bodies larger than this are kept as sent
KEPT_CHARS = 256
KEEP_CALLS = 10_000  # kept in memory before the rest go to disk (--keep-calls)


def slim(call: Call, shared: dict[bytes, Message] | None = None) -> Call:
    """A copy of ``call`` small enough to keep for every call of a large capture. With
    ``shared``, equal messages are one object: a replayed history is kept once."""

    def message(m: Message) -> Message:
        small = _message(m)
        if shared is None:
            return small
        data = orjson.dumps(small, option=orjson.OPT_NON_STR_KEYS)  # dataclasses natively
        return shared.setdefault(hashlib.blake2b(data, digest_size=16).digest(), small)

    return replace(
        call,
        system_instructions=[_part(p) for p in call.system_instructions],
        input_messages=[message(m) for m in call.input_messages],
        output_messages=[message(m) for m in call.output_messages],
        usage=replace(call.usage, raw=None) if call.usage is not None else None,
        tool_definitions=[_definition(t) for t in call.tool_definitions],
        request_params=_value(call.request_params),
        extras=_value(call.extras),
        diagnostics=list(call.diagnostics),
    )


def _definition(tool: Json) -> Json:
    """A tool definition without its schema: type and name (Chat nests it in function)."""
    if not isinstance(tool, dict):
        return _value(tool)
    out = {k: tool[k] for k in ("type", "name") if k in tool}
    function = tool.get("function")
    if isinstance(function, dict) and "name" in function:
        out["function"] = {"name": function["name"]}
    return out


def _message(m: Message) -> Message:
    return replace(m, parts=[_part(p) for p in m.parts])


def _part(part: Part) -> Part:
    if isinstance(part, TextPart | ReasoningPart):
        return replace(
            part, content=_part_text(part.content), provider_details=_value(part.provider_details)
        )
    if isinstance(part, GenericPart):
        return replace(part, fields=_value(part.fields))
    if isinstance(part, ToolCallPart):
        return replace(
            part,
            arguments=_value(part.arguments),
            arguments_raw=_value(part.arguments_raw),
            provider_details=_value(part.provider_details),
        )
    if isinstance(part, ToolCallResponsePart):
        return replace(
            part, response=_value(part.response), provider_details=_value(part.provider_details)
        )
    if isinstance(part, BlobPart):
        return replace(part, content=_text(part.content))
    return replace(part, provider_details=_value(part.provider_details))


def _value(value: Json) -> Json:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _part_text(text: str) -> str:
    """A text part's content as sent (a streamed chunk's leading space is text); a long one
    cut, its digest taken without the whitespace around it, which a replayed turn may not
    keep (history compares parts up to that whitespace)."""
    return text if len(text) <= KEPT_CHARS else _text(text.strip())


def _text(text: str) -> str:
    if len(text) <= KEPT_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[: KEPT_CHARS // 2]}…[{len(text)} chars, sha256 {digest}]"


@dataclass(slots=True)
class Analysis:
    calls: list[Call] = field(default_factory=list)
    http: list[HttpRequest] = field(default_factory=list)  # exchanges no family claimed
    exchanges: int = 0
    model_hosts: set[str] = field(default_factory=set)  # host:port of the model APIs seen
    traces: list[Trace] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    links: dict[str, HistoryLink] = field(default_factory=dict)
    openapi: OpenApi = field(default_factory=lambda: OpenApi([]))  # --openapi, and seen ones
    _shared: dict[bytes, Message] = field(default_factory=dict)  # slim messages, by content
    _connection: dict[str, str] = field(default_factory=dict)  # exchange id -> connection
    _ahead: set[str] = field(default_factory=set)  # exchanges whose model call came first
    _ops: set[str] = field(default_factory=set)  # exchanges that are a wire protocol's operation
    queues: Joiner = field(default_factory=Joiner)  # the queue messages of the operations
    lives: list[Life] = field(default_factory=list)  # their lives, once finished
    # a run that reads its input once (the commands, not a live view): the kept calls are
    # frozen out of the garbage collector's walks until finish (trace.heap)
    heap: KeptHeap | None = None
    # kept calls and requests past which they go to a temporary store on disk (trace.spill):
    # for a run that reads the traces and incidents once, in the report's order
    keep: int | None = None
    views: bool = False  # the store keeps each trace's calls with it (the text view)
    store: Store | None = None

    def watch(self, items: Iterator[Item]) -> Iterator[Item]:
        """Pass ``items`` through, keeping what the traces need. A call comes right after
        its exchange, or before it (a WebSocket session's calls, followed live)."""
        last: Exchange | None = None  # the latest exchange no call has claimed yet
        heap = self.heap
        for item in items:
            if type(item) is Exchange:
                self.exchanges += 1
                store = self.store
                if item.connection is not None:
                    if store is None:
                        self._connection[item.id] = item.connection
                    else:
                        store.add_exchange(item.id, item.connection)
                if item.operation is not None:
                    if store is None:
                        self._ops.add(item.id)
                    if item.operation.messages:
                        self.queues.add(item, self.exchanges)
                self._unclaimed(last)
                last = item
                if self._ahead and item.id in self._ahead:
                    self._ahead.discard(item.id)
                    if item.request is not None:
                        self.model_hosts.add(urlsplit(item.request.url).netloc)
            elif isinstance(item, Call):
                if last is not None and last.id == item.exchange_id:
                    if is_model_call(item) and last.request is not None:
                        self.model_hosts.add(urlsplit(last.request.url).netloc)
                    last = None
                elif is_model_call(item) and not self._seen(item.exchange_id):
                    self._ahead.add(item.exchange_id)
                yield item  # written whole before it is slimmed
                if self.store is not None:
                    self.store.add_call(slim(item))
                    continue
                self.calls.append(slim(item, self._shared))
                if heap is not None:
                    heap.kept(len(self.calls) + len(self.http))
                if self.keep is not None and len(self.calls) + len(self.http) > self.keep:
                    self._spill()
                continue
            yield item
        self._unclaimed(last)

    def _seen(self, exchange_id: str) -> bool:
        if self.store is not None:
            return self.store.has_exchange(exchange_id)
        return exchange_id in self._connection

    def _spill(self) -> None:
        """From now on, what is kept goes to disk (not with queue messages: their spans
        join traces, which :mod:`agentshark.trace.spill` does not do)."""
        if self.queues:
            return
        store = self.store = Store(views=self.views)
        for exchange_id, connection in self._connection.items():
            store.add_exchange(exchange_id, connection)
        ops = self._ops
        for call in self.calls:
            store.add_call(call)
        for req in self.http:
            store.add_http(req, operation=req.exchange_id in ops)
        self.calls, self.http, self._shared, self._connection = [], [], {}, {}
        if self.heap is not None:
            self.heap.release()

    def _unclaimed(self, exchange: Exchange | None) -> None:
        if exchange is not None and (req := _request(exchange)) is not None:
            if self.store is not None:
                self.store.add_http(req, operation=exchange.operation is not None)
            else:
                self.http.append(req)
            doc = _openapi_document(exchange)
            if doc is not None:
                self.openapi.add(doc, f"{exchange.id} {req.method} {req.url}")

    def trace_docs(self) -> Iterator[dict[str, Json]]:
        """The traces' JSON, once finished (from the store when there is one)."""
        if self.store is not None:
            return self.store.traces()
        return (t.to_json() for t in self.traces)

    def incident_docs(self) -> Iterator[dict[str, Json]]:
        incidents = self.store.incidents() if self.store is not None else iter(self.incidents)
        return (i.to_json() for i in incidents)

    def close(self) -> None:
        """Remove the store, once the report is written."""
        if self.store is not None:
            self.store.close()

    def not_understood(self) -> int:
        """HTTP exchanges no family claimed and no trace took as a tool execution (the
        operations of other protocols, a SQL statement..., are understood as what they are)."""
        if self.store is not None:
            return self.store.unclaimed
        used = {cid for t in self.traces for cid in t.calls}
        return sum(
            1 for h in self.http if h.exchange_id not in used and h.exchange_id not in self._ops
        )

    def finish(self) -> None:
        """Traces and incidents, once the input has ended."""
        store = self.store
        if store is not None and not self.queues:
            store.finish(self.model_hosts, self.openapi)
            return
        if store is not None:  # queue messages came after the calls went to disk
            self.calls, self.http, self._connection = store.read_back()
            self._ops = set(store.operations())
            store.close()
            self.store = None
        claimed = {c.exchange_id for c in self.calls}  # MCP calls can come late
        self.http = [h for h in self.http if h.exchange_id not in claimed]
        self.links = link_history(self.calls)
        self.traces = build_traces(
            self.calls, self.links, self.http, self.model_hosts, self._connection
        )
        connection_hints(self.traces, self.calls, self._connection)
        if self.queues:
            self.lives = self.queues.lives()
            add_queue_spans(self.lives, self.traces, self.calls)
        name_operations([s for t in self.traces for s in t.spans], self.openapi)
        self.incidents = find_incidents(self.calls, self.traces, self.links)
        if self.heap is not None:
            self.heap.release()


def grpc_request_json(pieces: list[tuple[float, bytes]], encoding: str | None) -> bytes:
    """The messages of a gRPC request body (its first :data:`BODY_DECODED_LIMIT` bytes) as
    JSON: each message's fields read without a schema (strings as text, numbers as numbers),
    which is what argument matching needs of it."""
    kept, size = [], 0
    for ts, piece in pieces:
        kept.append((ts, piece[: BODY_DECODED_LIMIT - size]))
        size += len(kept[-1][1])
        if size >= BODY_DECODED_LIMIT:
            break
    fields = [
        decode_raw(ev.payload)
        for ev in decode_stream(kept, "grpc", encoding=encoding)
        if isinstance(ev, GrpcMessage) and ev.payload is not None and ev.complete
    ]
    return orjson.dumps(fields)


OPENAPI_LIMIT = 8 << 20  # decoded bytes of a response read for an OpenAPI document


def _openapi_document(x: Exchange) -> Json:
    """The OpenAPI document a response carries, else None. Cheap for every other response:
    only a whole response whose first bytes are a JSON object naming ``openapi`` or
    ``swagger`` is decoded and parsed."""
    resp = x.response
    if resp is None or not resp.complete or not resp.body.pieces:
        return None
    coding = header(resp.headers, "content-encoding")
    if coding is not None:  # decoded only when it says JSON
        ctype = (header(resp.headers, "content-type") or "").lower()
        if "json" not in ctype or resp.body.size > BODY_DECODED_LIMIT:
            return None
    elif not _names_openapi(resp.body.pieces[0][1][:512]) or resp.body.size > OPENAPI_LIMIT:
        return None
    pieces = resp.body.pieces
    if coding is not None:
        pieces = decode_body(resp.body, coding, limit=OPENAPI_LIMIT).pieces
    data = b"".join(p for _, p in pieces)
    if not _names_openapi(data[:512]):
        return None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return doc if is_openapi(doc) else None


def _names_openapi(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and (b'"openapi"' in head or b'"swagger"' in head)


def _request(x: Exchange) -> HttpRequest | None:
    req = x.request
    if req is None:
        return None
    pieces = req.body.pieces
    coding = header(req.headers, "content-encoding")
    if coding is not None and req.body.size <= BODY_DECODED_LIMIT:
        # a compressed request body: decoded (bounded), so tool arguments can be found in it
        pieces = decode_body(req.body, coding, limit=BODY_DECODED_LIMIT).pieces
    grpc = (header(req.headers, "content-type") or "").startswith("application/grpc")
    if grpc:
        pieces = [(0.0, grpc_request_json(pieces, header(req.headers, "grpc-encoding")))]
    body = bytearray()
    for _, piece in pieces:
        body += piece[: BODY_KEPT - len(body)]
        if len(body) >= BODY_KEPT:
            break
    resp = x.response
    return HttpRequest(
        exchange_id=x.id,
        method=req.method,
        url=req.url,
        body=bytes(body),
        started=req.started,
        ended=resp.ended if resp is not None else req.ended,
        status=resp.status if resp is not None else None,
        traceparent=header(req.headers, "traceparent"),
        operation=_value(wire_execution(x.operation, req.url)) if x.operation else None,
    )
