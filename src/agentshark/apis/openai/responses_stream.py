"""OpenAI Responses streams: SSE events -> the output messages of one response.

Spec: https://platform.openai.com/docs/api-reference/responses-streaming (seed 000 §3.6,
§3.6.1, §7.7). Every ``data`` is one typed event. Deltas are assembled per output item
(``output_index``, else ``item_id``) by a :class:`PartsAccumulator` keyed by the event's own
indexes (``content_index``, ``summary_index``); a ``.done`` event's full value checks what the
deltas built and wins; a stream that sends only ``.done`` values still yields them.

Authority, from weakest to strongest: the deltas, an item's ``response.output_item.done``
(the whole item), the terminal event's ``response.output`` (the whole output). The strongest
present is kept; each weaker one that disagrees with it is a diagnostic. A stream is
terminated only by a whole ``response.completed``, ``response.failed`` or
``response.incomplete`` event; before one, items still in progress are rebuilt from their
``output_item.added`` skeleton and the deltas received, and the call stays incomplete.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.model import (
    CallError,
    GenericPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)
from agentshark.apis.openai.responses_items import group_parts, item_entry, item_parts
from agentshark.errors import Diagnostic
from agentshark.framing.events import FramingOutput, SseEvent

TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
LIFECYCLE = frozenset({"response.created", "response.in_progress", "response.queued"})

# delta event -> (what it extends, the event field indexing it within the item, if any);
# the matching ".done" event -> the same, plus the field holding the whole value.
_DELTAS: dict[str, tuple[str, str | None]] = {
    "response.output_text.delta": ("text", "content_index"),
    "response.refusal.delta": ("refusal", "content_index"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index"),
    "response.reasoning_text.delta": ("reasoning_text", "content_index"),
    "response.function_call_arguments.delta": ("arguments", None),
    "response.custom_tool_call_input.delta": ("input", None),
    "response.mcp_call_arguments.delta": ("arguments", None),
    "response.code_interpreter_call_code.delta": ("code", None),
}
_DONE: dict[str, tuple[str, str | None, str]] = {
    "response.output_text.done": ("text", "content_index", "text"),
    "response.refusal.done": ("refusal", "content_index", "refusal"),
    "response.reasoning_summary_text.done": ("summary", "summary_index", "text"),
    "response.reasoning_text.done": ("reasoning_text", "content_index", "text"),
    "response.function_call_arguments.done": ("arguments", None, "arguments"),
    "response.custom_tool_call_input.done": ("input", None, "input"),
    "response.mcp_call_arguments.done": ("arguments", None, "arguments"),
    "response.code_interpreter_call_code.done": ("code", None, "code"),
}
# Events carrying a whole content or summary part ({"type", "text" or "refusal"}).
_PART_EVENTS: dict[str, tuple[str, str]] = {
    "response.content_part.added": ("content_index", "part"),
    "response.content_part.done": ("content_index", "part"),
    "response.reasoning_summary_part.added": ("summary_index", "part"),
    "response.reasoning_summary_part.done": ("summary_index", "part"),
}
_FIELD_KINDS = frozenset({"input", "code"})  # hosted/custom fields rebuilt as item strings


@dataclass(slots=True, kw_only=True)
class Assembled:
    """What a Responses stream says."""

    response: dict[str, Any] | None = None  # the terminal event's response object
    terminal_event: int | None = None  # its index among the stream's SSE events
    snapshot: dict[str, Any] | None = None  # the last lifecycle (or cut terminal) response
    snapshot_event: int | None = None
    output: list[Message] = field(default_factory=list)
    error: CallError | None = None  # from an in-band ``error`` event
    first_token: float | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def terminated(self) -> bool:
        return self.response is not None


class _Item:
    """One output item under construction."""

    __slots__ = ("acc", "added", "annotations", "done", "keys", "logprobs", "partial_image")

    def __init__(self, location: str) -> None:
        self.acc = PartsAccumulator(location=location)
        self.added: dict[str, Any] | None = None
        self.done: dict[str, Any] | None = None
        self.keys: list[tuple[str, int]] = []  # the accumulator's keys, in opening order
        self.annotations: dict[int, list[Any]] = {}
        self.logprobs: dict[int, list[Any]] = {}
        self.partial_image: str | None = None

    def key(self, kind: str, index: Any) -> tuple[str, int]:
        """The accumulator key of a value; every caller feeds the accumulator right after,
        so ``keys`` stays in the order ``acc.parts()`` returns."""
        key = (kind, index if isinstance(index, int) else 0)
        if key not in self.keys:
            self.keys.append(key)
        return key

    def values(self) -> list[tuple[tuple[str, int], str | None]]:
        return [(k, _value(p)) for k, p in zip(self.keys, self.acc.parts(), strict=False)]


class _Assembler:
    def __init__(self, location: str) -> None:
        self.location = location
        self.out = Assembled()
        self.items: dict[int, _Item] = {}
        self.by_item_id: dict[str, int] = {}
        self.last_seq: int | None = None
        self.response_id: Any = None

    def item(self, obj: dict[str, Any]) -> _Item:
        index = obj.get("output_index")
        if not isinstance(index, int):
            item_id = obj.get("item_id")
            index = self.by_item_id.get(item_id, -1) if isinstance(item_id, str) else -1
        entry = self.items.get(index)
        if entry is None:
            entry = self.items[index] = _Item(f"{self.location} output[{index}]")
        return entry

    def event(self, n: int, ev: SseEvent) -> None:
        data = ev.data
        if not data or data == "[DONE]":
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self.diag(
                "responses.bad_event",
                n,
                f"event data is not JSON ({exc}): event skipped",
                "error" if ev.complete else "warning",
            )
            return
        if not isinstance(obj, dict):
            self.diag("responses.bad_event", n, "event data is not an object: event skipped")
            return
        kind = obj.get("type")
        kind = kind if isinstance(kind, str) else ev.event
        self.sequence(n, obj.get("sequence_number"))
        if kind in _DELTAS:
            self.delta(kind, obj, ev)
        elif kind in _DONE:
            what, index_field, value_field = _DONE[kind]
            entry = self.item(obj)
            value = obj.get(value_field)
            if isinstance(value, str):
                key = entry.key(what, obj.get(index_field) if index_field else None)
                if what == "arguments":
                    entry.acc.done(key, arguments=value)
                else:
                    entry.acc.done(key, text=value)
        elif kind in _PART_EVENTS:
            self.part(kind, obj)
        elif kind == "response.output_item.added" or kind == "response.output_item.done":
            self.output_item(kind, obj)
        elif kind == "response.output_text.annotation.added":
            entry = self.item(obj)
            key = entry.key("text", obj.get("content_index"))
            entry.acc.text(key, "")
            entry.annotations.setdefault(key[1], []).append(obj.get("annotation"))
        elif kind == "response.image_generation_call.partial_image":
            image = obj.get("partial_image_b64")
            self.item(obj).partial_image = image if isinstance(image, str) else None
        elif kind in TERMINAL or kind in LIFECYCLE:
            self.lifecycle(kind, n, obj, ev)
        elif kind == "error":
            self.error(n, obj)

    def delta(self, kind: str, obj: dict[str, Any], ev: SseEvent) -> None:
        what, index_field = _DELTAS[kind]
        delta = obj.get("delta")
        if not isinstance(delta, str):
            return
        if self.out.first_token is None:
            self.out.first_token = ev.ts
        entry = self.item(obj)
        key = entry.key(what, obj.get(index_field) if index_field else None)
        if what == "arguments":
            entry.acc.arguments(key, delta)
        elif what in ("summary", "reasoning_text"):
            entry.acc.reasoning(key, delta)
        else:
            entry.acc.text(key, delta)
        logprobs = obj.get("logprobs")
        if what == "text" and isinstance(logprobs, list) and logprobs:
            entry.logprobs.setdefault(key[1], []).extend(logprobs)

    def part(self, kind: str, obj: dict[str, Any]) -> None:
        index_field, value_field = _PART_EVENTS[kind]
        part = obj.get(value_field)
        if not isinstance(part, dict):
            return
        entry = self.item(obj)
        ptype = part.get("type")
        what = {
            "output_text": "text",
            "refusal": "refusal",
            "summary_text": "summary",
            "reasoning_text": "reasoning_text",
        }.get(ptype if isinstance(ptype, str) else "")
        if what is None:
            return
        key = entry.key(what, obj.get(index_field))
        value = part.get("refusal" if what == "refusal" else "text")
        if kind.endswith(".done") and isinstance(value, str):
            entry.acc.done(key, text=value)
            annotations = part.get("annotations")
            if what == "text" and isinstance(annotations, list) and annotations:
                entry.annotations[key[1]] = list(annotations)  # the whole list wins
        elif what in ("summary", "reasoning_text"):
            entry.acc.reasoning(key, "")
        else:
            entry.acc.text(key, "")

    def output_item(self, kind: str, obj: dict[str, Any]) -> None:
        item = obj.get("item")
        if not isinstance(item, dict):
            return
        entry = self.item(obj)
        if isinstance(item.get("id"), str) and isinstance(obj.get("output_index"), int):
            self.by_item_id[item["id"]] = obj["output_index"]
        if kind.endswith(".added"):
            entry.added = item
        else:
            entry.done = item

    def lifecycle(self, kind: str, n: int, obj: dict[str, Any], ev: SseEvent) -> None:
        response = obj.get("response")
        if not isinstance(response, dict):
            return
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid is not None and rid != self.response_id:
            self.diag(
                "responses.response_changed",
                n,
                f"{kind} is about response {rid}, the stream began with "
                f"{self.response_id}: one stream should carry one response",
            )
        if kind in TERMINAL and ev.complete:
            self.out.response, self.out.terminal_event = response, n
        else:
            if kind in TERMINAL:
                self.diag(
                    "responses.cut_terminal_event",
                    n,
                    f"the {kind} event is cut by the end of the body: the stream is "
                    "not known to have ended",
                    "warning",
                )
            self.out.snapshot, self.out.snapshot_event = response, n

    def error(self, n: int, obj: dict[str, Any]) -> None:
        if self.out.error is not None:
            return
        nested = obj.get("error")
        err = nested if isinstance(nested, dict) else obj

        def text(key: str) -> str | None:
            value = err.get(key)
            return None if value is None else str(value)

        self.out.error = CallError(
            status=None,
            type=text("type") if err is not obj else None,
            code=text("code"),
            message=text("message"),
            source=f"stream event {n}",
        )

    def sequence(self, n: int, seq: Any) -> None:
        if not isinstance(seq, int):
            return
        if self.last_seq is not None and seq != self.last_seq + 1:
            self.diag(
                "responses.sequence_gap",
                n,
                f"sequence_number {seq} follows {self.last_seq}: "
                f"{'events are missing' if seq > self.last_seq else 'events are out of order'}",
            )
        self.last_seq = seq

    def diag(self, code: str, n: int, message: str, severity: str = "warning") -> None:
        self.out.diagnostics.append(
            Diagnostic(
                code=code,
                message=message,
                location=f"{self.location} event {n}",
                severity="error" if severity == "error" else "warning",
            )
        )

    # -- the end --------------------------------------------------------------------------

    def finish(self) -> Assembled:
        out = self.out
        streamed = {i: self.whole(i, e) for i, e in sorted(self.items.items())}
        streamed = {i: item for i, item in streamed.items() if item}
        for entry in self.items.values():
            out.diagnostics.extend(entry.acc.diagnostics)
        final = out.response.get("output") if out.response is not None else None
        if isinstance(final, list):
            self.check_final(final, streamed)
            out.output = group_parts(item_entry(it, output=True) for it in final)
        else:
            out.output = group_parts(item_entry(it, output=True) for it in streamed.values())
        return out

    def whole(self, index: int, entry: _Item) -> dict[str, Any]:
        """The item at ``index``: its ``output_item.done`` (checked against the deltas), or
        the skeleton rebuilt with what the deltas said."""
        rebuilt = rebuild(entry) if entry.keys or entry.done is None else None
        if entry.done is None:
            return rebuilt or {}
        if rebuilt is not None and digest(item_parts(rebuilt)) != digest(item_parts(entry.done)):
            self.out.diagnostics.append(
                Diagnostic(
                    code="responses.item_mismatch",
                    message="output_item.done differs from what the deltas built; the item is kept",
                    location=f"{self.location} output[{index}]",
                )
            )
        return entry.done

    def check_final(self, final: list[Any], streamed: dict[int, dict[str, Any]]) -> None:
        by_id = {it["id"]: it for it in final if isinstance(it, dict) and _is_str(it.get("id"))}
        for index, item in streamed.items():
            item_id = item.get("id")
            other = by_id.get(item_id) if isinstance(item_id, str) else None
            if (
                other is None
                and 0 <= index < len(final)
                and isinstance(final[index], dict)
                and (final[index].get("type") == item.get("type"))
            ):
                other = final[index]  # the same place (proxies that rewrite item ids)
            if other is None:
                problem = "is missing from the final response output"
            elif other == item or digest(item_parts(other)) == digest(item_parts(item)):
                continue
            else:
                problem = "differs from the final response output; the final output is kept"
            self.out.diagnostics.append(
                Diagnostic(
                    code="responses.final_mismatch",
                    message=f"streamed item {item.get('id') or index} {problem}",
                    location=f"{self.location} event {self.out.terminal_event}",
                )
            )


def rebuild(entry: _Item) -> dict[str, Any]:
    """An item as the deltas built it: the ``added`` skeleton with its content filled."""
    item = dict(entry.added or {})
    content: dict[int, dict[str, Any]] = {}
    summary: dict[int, dict[str, Any]] = {}
    for (kind, index), value in entry.values():
        if kind == "text":
            c: dict[str, Any] = {"type": "output_text", "text": value or ""}
            c["annotations"] = entry.annotations.get(index, [])
            if index in entry.logprobs:
                c["logprobs"] = entry.logprobs[index]
            content[index] = c
            item.setdefault("type", "message")
            item.setdefault("role", "assistant")
        elif kind == "refusal":
            content[index] = {"type": "refusal", "refusal": value or ""}
            item.setdefault("type", "message")
            item.setdefault("role", "assistant")
        elif kind == "summary":
            summary[index] = {"type": "summary_text", "text": value or ""}
            item.setdefault("type", "reasoning")
        elif kind == "reasoning_text":
            content[index] = {"type": "reasoning_text", "text": value or ""}
            item.setdefault("type", "reasoning")
        elif kind == "arguments":
            item["arguments"] = value if value is not None else item.get("arguments")
            item.setdefault("type", "function_call")
        elif kind in _FIELD_KINDS:
            item[kind] = value
    if content:
        item["content"] = [content[i] for i in sorted(content)]
    if summary:
        item["summary"] = [summary[i] for i in sorted(summary)]
    if entry.partial_image is not None and not item.get("result"):
        item["partial_image_b64"] = entry.partial_image
    return item


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _value(part: Part) -> str | None:
    if isinstance(part, TextPart | ReasoningPart):
        return part.content
    if isinstance(part, ToolCallPart):
        return part.arguments_raw
    return None


def digest(parts: Iterable[Part]) -> list[tuple[Any, ...]]:
    """What a stream's deltas must agree on: texts, reasoning, refusals, tool calls."""
    out: list[tuple[Any, ...]] = []
    for p in parts:
        if isinstance(p, TextPart | ReasoningPart):
            out.append((p.type, p.content))
        elif isinstance(p, ToolCallPart):
            out.append((p.type, p.id, p.name, p.arguments_raw))
        elif isinstance(p, GenericPart) and p.type == "refusal":
            out.append((p.type, p.fields.get("refusal")))
    return out


def assemble(events: Iterable[FramingOutput], location: str) -> Assembled:
    """One pass over a response's framing output."""
    asm = _Assembler(location)
    n = 0
    for ev in events:
        if isinstance(ev, Diagnostic):
            asm.out.diagnostics.append(ev)
        elif isinstance(ev, SseEvent):
            asm.event(n, ev)
            n += 1
    return asm.finish()
