"""Anthropic Messages stream events -> one output message, its usage and its status.

The events (https://docs.anthropic.com/en/docs/build-with-claude/streaming), whatever carried
them (SSE from Anthropic or Vertex, base64 chunks of Bedrock's AWS event stream):

- ``message_start``: the message (id, model, role, usage so far) with empty ``content``;
- ``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` per block
  ``index``: ``text_delta``, ``input_json_delta`` (tool input as JSON text in fragments, parsed
  once when the stream is over), ``thinking_delta``, ``signature_delta``, ``citations_delta``,
  ``compaction_delta``;
- ``message_delta``: ``stop_reason``, ``stop_sequence``, and usage whose counts are cumulative
  (they replace, never add to, what ``message_start`` said);
- ``message_stop`` (the end), ``ping``, ``error`` (a failed stream ends with it).

Blocks feed the shared :class:`PartsAccumulator` under a key per ``content_block_start`` (so
a repeated index cannot merge two blocks). Deltas that do not fit their block are kept and
reported, never dropped.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.anthropic.blocks import block_part, is_int
from agentshark.apis.model import (
    CallError,
    GenericPart,
    Json,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    part_json,
)
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic, Severity
from agentshark.framing.events import EventStreamMessage, SseEvent

__all__ = ["MessageStream", "json_object", "stream_events"]

# message fields normalized elsewhere; the others are kept in ``extras``
_MESSAGE_FIELDS = frozenset(
    {"id", "type", "role", "model", "content", "usage", "stop_reason", "stop_sequence"}
)


# the block a delta implies when it comes without its content_block_start
_IMPLIED_BLOCKS: dict[str, dict[str, Json]] = {
    "text_delta": {"type": "text", "text": ""},
    "citations_delta": {"type": "text", "text": ""},
    "thinking_delta": {"type": "thinking", "thinking": ""},
    "signature_delta": {"type": "thinking", "thinking": ""},
    "input_json_delta": {"type": "tool_use", "id": None, "name": ""},
}


@dataclass(slots=True)
class _Block:
    key: int  # the accumulator key
    kind: str  # "text", "reasoning", "tool" or "whole"
    start_input: Json = None  # a tool block's input as content_block_start gave it
    has_arguments: bool = False  # some non-empty input_json_delta arrived
    citations: list[Json] | None = None
    part: Part | None = None  # whole blocks


@dataclass(slots=True)
class _Message:
    fields: dict[str, Json] = field(default_factory=dict)  # message_start's message
    usage: dict[str, Json] | None = None


class MessageStream:
    """Feed the decoded events in order; read the results when the stream is over."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._acc = PartsAccumulator(location=location)
        self._blocks: dict[int, _Block] = {}  # open blocks by index
        self._order: list[_Block] = []  # every block, in accumulator order
        self._serial = 0
        self._n = 0  # the place of the event being fed
        self.started = False
        self.message = _Message()
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.ended = False  # message_stop (or an error event) arrived whole
        self.error: CallError | None = None
        self.first_token: float | None = None
        self.fallback_model: str | None = None
        self.extras: dict[str, Json] = {}
        self.diagnostics: list[Diagnostic] = []

    # -- results ----------------------------------------------------------------------------

    def parts(self) -> list[Part]:
        parts = self._acc.parts()
        if len(parts) == len(self._order):  # one part per block, in the same order
            for part, block in zip(parts, self._order, strict=True):
                if (
                    block.kind == "tool"
                    and not block.has_arguments
                    and isinstance(part, ToolCallPart)
                ):
                    part.arguments = block.start_input  # no input_json_delta: the start's input
        self.diagnostics.extend(self._acc.diagnostics)
        return parts

    # -- events -----------------------------------------------------------------------------

    def feed(self, data: dict[str, Json], *, name: str, n: int, ts: float, whole: bool) -> None:
        """One event: ``name`` is its type, ``n`` its place in the stream, ``whole`` False
        when the body ended inside it (its content is used, but it cannot end the stream)."""
        self._n = n
        if name == "content_block_delta":
            self._delta(data, ts)
        elif name == "content_block_start":
            self._block_start(data)
        elif name in ("content_block_stop", "ping"):
            pass
        elif name == "message_delta":
            self._message_delta(data)
        elif name == "message_start":
            self._message_start(data)
        elif name == "message_stop":
            self.ended = self.ended or whole
            self._keep(data, "type")
        elif name == "error":
            self._error(data, n)
            self.ended = self.ended or whole
        else:
            self.extras.setdefault("unknown_events", []).append(data)
            self._diagnose(
                "anthropic.stream.unknown_event",
                f"unknown event {name!r} kept raw",
                severity="info",
            )

    def _message_start(self, data: dict[str, Json]) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            self._diagnose("anthropic.stream.bad_event", "message_start without a message")
            return
        if self.started:
            if self._order:
                abandoned = {
                    "id": self.message.fields.get("id"),
                    "parts": [part_json(p) for p in self.parts()],
                }
                self.extras.setdefault("abandoned_messages", []).append(abandoned)
                self._diagnose(
                    "anthropic.stream.restarted",
                    "a second message_start interrupts the message: its parts so far are "
                    "kept under extras.response.abandoned_messages",
                )
            else:
                self._diagnose(
                    "anthropic.stream.repeated_message_start",
                    "message_start repeated before any content",
                    severity="info",
                )
            self._acc = PartsAccumulator(location=self._location)
            self._blocks, self._order = {}, []
        self.started = True
        usage = message.get("usage")
        self.message = _Message(
            fields=message, usage=dict(usage) if isinstance(usage, dict) else None
        )
        stop = message.get("stop_reason")
        self.stop_reason = stop if isinstance(stop, str) else None
        content = message.get("content")
        if isinstance(content, list):  # always empty on the wire; kept if not
            for i, block in enumerate(content):
                self._block_start({"index": i, "content_block": block})

    def _block_start(self, data: dict[str, Json]) -> None:
        index, block = data.get("index"), data.get("content_block")
        if not is_int(index) or not isinstance(block, dict):
            self._diagnose(
                "anthropic.stream.bad_event",
                "content_block_start without an index or a content_block",
            )
            return
        assert isinstance(index, int)
        if index in self._blocks:
            self._diagnose(
                "anthropic.stream.block_restarted",
                f"content_block_start repeats index {index}: a new block",
            )
        part = block_part(block)
        key = self._serial
        self._serial += 1
        if isinstance(part, TextPart):
            entry = _Block(key, "text")
            self._acc.text(key, part.content)
            citations = part.provider_details.get("citations")
            entry.citations = list(citations) if isinstance(citations, list) else None
            if part.provider_details:
                self._acc.details(key, "text", **part.provider_details)
        elif isinstance(part, ReasoningPart) and block.get("type") == "thinking":
            entry = _Block(key, "reasoning")
            self._acc.reasoning(key, part.content)
            if part.provider_details:
                self._acc.details(key, "reasoning", **part.provider_details)
        elif isinstance(part, ToolCallPart):
            entry = _Block(key, "tool", start_input=part.arguments)
            self._acc.tool_call(key, id=part.id, name=part.name, **part.provider_details)
        else:
            entry = _Block(key, "whole", part=part)
            self._acc.whole(key, part)
            if isinstance(part, GenericPart) and part.type == "fallback":
                to = part.fields.get("to")
                model = to.get("model") if isinstance(to, dict) else None
                self.fallback_model = model if isinstance(model, str) else self.fallback_model
        self._blocks[index] = entry
        self._order.append(entry)

    def _delta(self, data: dict[str, Json], ts: float) -> None:
        if self.first_token is None:
            self.first_token = ts
        index, delta = data.get("index"), data.get("delta")
        if not is_int(index) or not isinstance(delta, dict):
            self._diagnose(
                "anthropic.stream.bad_event",
                "content_block_delta without an index or a delta",
            )
            return
        assert isinstance(index, int)
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:  # no content_block_start: open the block the delta implies
            self._diagnose(
                "anthropic.stream.delta_without_start",
                f"content_block_delta for index {index} before its content_block_start",
            )
            implied = _IMPLIED_BLOCKS.get(kind if isinstance(kind, str) else "")
            self._block_start({"index": index, "content_block": implied or {"type": "unknown"}})
            block = self._blocks[index]
        if not self._apply(block, kind, delta):
            self.extras.setdefault("unplaced_deltas", []).append(data)
            self._diagnose(
                "anthropic.stream.delta_mismatch",
                f"a {kind!r} delta does not fit block {index} ({block.kind}): kept "
                "under extras.response.unplaced_deltas",
            )

    def _apply(self, block: _Block, kind: Json, delta: dict[str, Json]) -> bool:
        """Apply one delta to its block; False when it does not fit."""
        key = block.key
        match block.kind, kind, delta:
            case "text", "text_delta", {"text": str(text)}:
                self._acc.text(key, text)
            case "tool", "input_json_delta", {"partial_json": str(fragment)}:
                if fragment:  # an empty fragment is no JSON text at all
                    self._acc.arguments(key, fragment)
                    block.has_arguments = True
            case "reasoning", "thinking_delta", {"thinking": str(thinking)}:
                self._acc.reasoning(key, thinking)
            case "reasoning", "signature_delta", {"signature": str(signature)}:
                self._acc.details(key, "reasoning", signature=signature)  # replaces
            case "text", "citations_delta", {"citation": citation}:
                block.citations = [*(block.citations or []), citation]
                self._acc.details(key, "text", citations=block.citations)
            case "whole", "compaction_delta", _ if isinstance(block.part, GenericPart):
                # like the SDK: a compaction delta replaces the block's content
                block.part.fields["content"] = delta.get("content")
                block.part.fields["encrypted_content"] = delta.get("encrypted_content")
            case _:
                return False
        return True

    def _message_delta(self, data: dict[str, Json]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict):
            stop = delta.get("stop_reason")
            self.stop_reason = stop if isinstance(stop, str) else None
            sequence = delta.get("stop_sequence")
            self.stop_sequence = sequence if isinstance(sequence, str) else None
            self._keep(delta, "stop_reason", "stop_sequence")
        usage = data.get("usage")
        if isinstance(usage, dict):  # cumulative: replaces; absent or null keeps the start's
            merged = self.message.usage if self.message.usage is not None else {}
            merged.update((k, v) for k, v in usage.items() if v is not None)
            self.message.usage = merged
        self._keep(data, "type", "delta", "usage")

    def _error(self, data: dict[str, Json], n: int) -> None:
        error = data.get("error")
        error = error if isinstance(error, dict) else {}
        kind, message = error.get("type"), error.get("message")
        self.error = CallError(
            status=None,
            type=kind if isinstance(kind, str) else None,
            code=None,
            message=message if isinstance(message, str) else None,
            source=f"stream event {n}",
        )

    def _keep(self, data: dict[str, Json], *used: str) -> None:
        self.extras.update((k, v) for k, v in data.items() if k not in used and v is not None)

    def message_extras(self) -> dict[str, Json]:
        """message_start's fields that have no normalized place, then the stream's."""
        fields = self.message.fields
        out = {k: v for k, v in fields.items() if k not in _MESSAGE_FIELDS and v is not None}
        out.update(self.extras)
        return out

    def _diagnose(self, code: str, message: str, *, severity: Severity = "warning") -> None:
        where = f"{self._location} stream event {self._n}"
        self.diagnostics.append(
            Diagnostic(code=code, message=message, location=where, severity=severity)
        )


# -- decoding ----------------------------------------------------------------------------


def stream_events(
    view: ExchangeView, diagnostics: list[Diagnostic], location: str, *, limit: int | None = None
) -> Iterator[tuple[int, dict[str, Json], float, bool]]:
    """The stream's events as (place, decoded JSON, arrival time, whole): SSE ``data``, or
    the base64 chunks of Bedrock's event stream, whose exception messages become ``error``
    events. ``whole`` is False for an event the body ended inside. Framing diagnostics and
    events that do not decode go to ``diagnostics``."""
    n = -1
    for out in view.events:
        if isinstance(out, Diagnostic):
            diagnostics.append(out)
            continue
        if not isinstance(out, SseEvent | EventStreamMessage):
            continue  # SSE comments
        n += 1
        whole = out.complete if isinstance(out, SseEvent) else True
        data = _decode(out)
        if data is None:
            if whole and (out.data.strip() if isinstance(out, SseEvent) else True):
                diagnostics.append(
                    Diagnostic(
                        code="anthropic.stream.bad_event",
                        location=f"{location} stream event {n} byte {out.offset}",
                        message=f"stream event {n} is not a JSON object: skipped",
                    )
                )
            continue
        yield n, data, out.ts, whole
        if limit is not None and n + 1 >= limit:
            return


def _decode(out: SseEvent | EventStreamMessage) -> dict[str, Json] | None:
    if isinstance(out, SseEvent):
        data, name = json_object(out.data), out.event
    elif out.message_type in ("exception", "error"):
        payload = json_object(out.payload) or {}
        error = {"type": out.event_type, "message": payload.get("message")}
        return {"type": "error", "error": error}
    else:
        chunk = (json_object(out.payload) or {}).get("bytes")
        try:
            data = json_object(base64.b64decode(chunk, validate=True)) if chunk else None
        except (binascii.Error, ValueError, TypeError):
            data = None
        name = out.event_type or "chunk"
    if data is not None and not isinstance(data.get("type"), str):
        data["type"] = name  # a gateway that keeps only the SSE event name
    return data


def json_object(raw: bytes | str) -> dict[str, Json] | None:
    """``raw`` as a JSON object, or None."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
