"""Bounded JSON for a coding agent's context: pages, clipped strings, call summaries.

Every listing is a page: ``offset`` and ``limit`` in, ``total``, ``offset``, ``limit`` and
``next_offset`` (None on the last page) out; ``limit`` is at most :data:`MAX_LIMIT`. Every
string taken from the captured traffic is clipped to ``max_chars`` (its first characters,
then ``…[N more chars]``), walking into lists and objects, so one huge prompt or tool
result cannot flood the answer; lists longer than :data:`MAX_ITEMS` inside a value are cut
the same way (``"…[N more items]"`` as the last element).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from agentshark.library.query import tool_names
from agentshark.library.views import Call, Incident

Json = Any
T = TypeVar("T")

MAX_LIMIT = 200
MAX_ITEMS = 50
EXCERPT = 200  # characters of a call's text in a summary

__all__ = ["EXCERPT", "MAX_LIMIT", "call_summary", "clip", "incident_json", "page"]


def page(items: Sequence[T], offset: int, limit: int) -> tuple[list[T], dict[str, Json]]:
    """The items of one page, and the page's facts."""
    if offset < 0:
        raise ValueError(f"offset {offset}: give 0 or more")
    if limit < 1:
        raise ValueError(f"limit {limit}: give 1 or more (at most {MAX_LIMIT})")
    limit = min(limit, MAX_LIMIT)
    chosen = list(items[offset : offset + limit])
    end = offset + len(chosen)
    facts = {
        "total": len(items),
        "offset": offset,
        "limit": limit,
        "next_offset": end if end < len(items) else None,
    }
    return chosen, facts


def clip(value: Json, max_chars: int) -> Json:
    """``value`` with every string past ``max_chars`` cut, lists past :data:`MAX_ITEMS`."""
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return f"{value[:max_chars]}…[{len(value) - max_chars} more chars]"
    if isinstance(value, Mapping):
        return {k: clip(v, max_chars) for k, v in value.items()}
    if isinstance(value, list | tuple):
        out = [clip(v, max_chars) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            out.append(f"…[{len(value) - MAX_ITEMS} more items]")
        return out
    return value


def call_summary(call: Call, trace_of: Mapping[str, str]) -> dict[str, Json]:
    """One line's worth of a call: what it was, how it ended, an excerpt of its text."""
    usage = call.usage
    last_input = next((m.text for m in reversed(call.input_messages) if m.text), "")
    return {
        "id": call.id,
        "api": call.api,
        "operation": call.operation,
        "model": call.model,
        "status": call.status,
        "complete": call.complete,
        "stream": call.stream,
        "finish_reasons": list(call.finish_reasons),
        "tools": tool_names(call),
        "error": clip(call.error.message, EXCERPT) if call.error and call.error.message else None,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "started": call.timing.started,
        "duration": call.timing.duration,
        "last_input_text": clip(last_input, EXCERPT) if last_input else None,
        "output_text": clip(call.output_text, EXCERPT) if call.output_text else None,
        "trace_id": trace_of.get(call.id),
        "exchange_id": call.exchange_id,
    }


def incident_json(incident: Incident, max_chars: int) -> dict[str, Json]:
    return clip(dict(incident.data), max_chars)  # type: ignore[no-any-return]
