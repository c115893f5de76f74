"""Message lives (:mod:`agentshark.trace.queues`) in the traces: messaging spans, and the
producing run linked to the consuming run.

A life whose publish is a tool span's execution (an XADD that a tool call's arguments
were found in) belongs to that run, the producer: each of its events becomes a span of kind
``messaging`` (``send`` for a publish, ``receive`` for a delivery, ``settle`` for an ack,
nack, reject or commit, as OpenTelemetry's messaging conventions name the operation
types), the publish span a child of the tool span. The consumer run is found by evidence,
strongest first:

1. ``traceparent``: a message header carrying W3C trace context names the trace-id of
   the run that consumed it when a trace of that id holds a model call after the delivery;
2. ``payload_in_prompt``: the first model call of another run, started in the
   :data:`CONSUME_WINDOW` after the delivery, whose
   prompt (its input's text) holds every string of the payload of 16 characters or more
   (a JSON string value is searched by its own values). The trace keeps slim calls: a long
   prompt is searched in its first characters only.

The consumer's spans (the delivery and the settlement) are then in the consumer's trace,
under its agent span, each with a link to the publish span; the life's ``runs`` records
the join with its evidence. Without a consumer run, every span of the life stays in the
producer's trace. A life no tool execution published is in the report's ``queue_messages``
only (or in a consumer run found by its payload, when it has one).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import orjson

from agentshark.apis.model import Call, Json, TextPart
from agentshark.trace.context import TraceParent, parse_traceparent
from agentshark.trace.history import is_model_call
from agentshark.trace.model import Span, Trace
from agentshark.trace.queues import Event, Life
from agentshark.trace.spans import hex_id

OPERATION_TYPES = {"publish": "send", "deliver": "receive"}
MIN_NEEDLE = 16
CONSUME_WINDOW = 600.0  # seconds after a delivery its consumer's model call may start


def add_queue_spans(lives: Sequence[Life], traces: Sequence[Trace], calls: Sequence[Call]) -> None:
    """Messaging spans in ``traces`` and ``Life.runs`` (module docstring)."""
    tool_of: dict[str, tuple[Trace, Span]] = {}
    trace_of: dict[str, Trace] = {}
    for trace in traces:
        for cid in trace.calls:
            trace_of[cid] = trace
        for span in trace.spans:
            if span.kind == "tool" and span.execution is not None:
                tool_of[span.execution] = (trace, span)
    models = _Models(calls)
    by_id = {t.trace_id: t for t in traces}
    for life in lives:
        _place(life, tool_of, trace_of, by_id, models)


def _place(
    life: Life,
    tool_of: dict[str, tuple[Trace, Span]],
    trace_of: dict[str, Trace],
    traces: dict[str, Trace],
    models: _Models,
) -> None:
    publish = next((e for e in life.events if e.seen.message.action == "publish"), None)
    producer = tool_of.get(publish.seen.exchange_id) if publish is not None else None
    consumer = _consumer(life, producer[0] if producer else None, trace_of, traces, models)
    if producer is None and consumer is None:
        return
    link: dict[str, Json] | None = None
    if producer is not None and publish is not None:
        at = life.events.index(publish)
        publish_id = _span_id_of(producer[0], life, at, publish)
        link = {"trace_id": producer[0].trace_id, "span_id": publish_id[0], "life": life.id}
    parent_span: Span | None = producer[1] if producer is not None else None
    for n, event in enumerate(life.events):
        consumer_side = event.seen.message.action != "publish"
        if consumer is not None and consumer_side:
            trace, agent = consumer[0], _agent(consumer[0])
            span = _span(life, n, event, trace, agent.span_id)
            if link is not None:
                span.links.append({**link, "origin": consumer[2]})
            _insert(trace, span)
            _cover(agent, span)
        elif producer is not None:
            trace = producer[0]
            parent = parent_span.span_id if parent_span is not None else _agent(trace).span_id
            span = _span(life, n, event, trace, parent)
            _insert(trace, span, after=parent_span)
            parent_span = span if event is publish else parent_span
    if consumer is not None:
        life.runs.append(
            {
                "producer": producer[0].trace_id if producer else None,
                "producer_tool_span": producer[1].span_id if producer else None,
                "consumer": consumer[0].trace_id,
                "consumer_call": consumer[1],
                "origin": consumer[2],
                "evidence": consumer[3],
            }
        )


def _consumer(
    life: Life,
    producer: Trace | None,
    trace_of: dict[str, Trace],
    traces: dict[str, Trace],
    models: _Models,
) -> tuple[Trace, str, str, str] | None:
    """(trace, model call, origin, evidence) of the run that consumed the message."""
    delivered = [e for e in life.events if e.seen.message.action == "deliver"]
    if not delivered:
        return None
    later = models.after(delivered[0].seen.time)
    for event in delivered:
        value = event.seen.message.headers.get("traceparent")
        parsed = parse_traceparent(value) if isinstance(value, str) else None
        trace = traces.get(parsed.trace_id) if isinstance(parsed, TraceParent) else None
        if trace is None:
            continue
        call = next((c for c in later if trace_of.get(c.id) is trace), None)
        if call is not None:
            return trace, call.id, "traceparent", f"the message's traceparent {value}"
    needles = _needles(delivered[0].seen.message.payload)
    if not needles:
        return None
    for call in later:
        trace = trace_of.get(call.id)
        if trace is None or trace is producer:
            continue
        text = models.prompt(call)
        if all(n in text for n in needles):
            shown = ", ".join(repr(n[:40]) for n in needles[:3])
            return trace, call.id, "payload_in_prompt", f"{call.id}'s prompt holds {shown}"
    return None


class _Models:
    """The model calls by start time, and their prompts (made once)."""

    def __init__(self, calls: Sequence[Call]) -> None:
        self.calls = sorted(
            (c for c in calls if is_model_call(c) and c.timing.started is not None),
            key=lambda c: c.timing.started or 0.0,
        )
        self.starts = [c.timing.started or 0.0 for c in self.calls]
        self._prompts: dict[str, str] = {}

    def after(self, t: float | None) -> list[Call]:
        """The calls started in the :data:`CONSUME_WINDOW` seconds from ``t``."""
        if t is None:
            return self.calls
        lo = bisect.bisect_left(self.starts, t)
        hi = bisect.bisect_right(self.starts, t + CONSUME_WINDOW)
        return self.calls[lo:hi]

    def prompt(self, call: Call) -> str:
        text = self._prompts.get(call.id)
        if text is None:
            text = self._prompts[call.id] = _prompt(call)
        return text


def _needles(payload: Json) -> list[str]:
    """The payload's strings of :data:`MIN_NEEDLE` characters or more (a string that is a
    JSON object or array by its own strings)."""
    out: list[str] = []
    stack = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            if value[:1] in ("{", "[") and len(value) >= 2:
                try:
                    stack.append(orjson.loads(value))
                    continue
                except orjson.JSONDecodeError:
                    pass
            if len(value) >= MIN_NEEDLE:
                out.append(value)
    return out


def _prompt(call: Call) -> str:
    parts = [p.content for p in call.system_instructions if isinstance(p, TextPart)]
    parts += [p.content for m in call.input_messages for p in m.parts if isinstance(p, TextPart)]
    return "\n".join(parts)


def _agent(trace: Trace) -> Span:
    return next(s for s in trace.spans if s.parent_id is None)


def _span(life: Life, n: int, event: Event, trace: Trace, parent: str) -> Span:
    seen, m = event.seen, event.seen.message
    op_type = OPERATION_TYPES.get(m.action, "settle")
    attributes: dict[str, Json] = {
        "system": m.system,
        "operation_type": op_type,
        "operation": m.action,
        "destination": m.destination,
        "life": life.id,
        "exchange_id": seen.exchange_id,
        "evidence": event.evidence,
    }
    for name in ("message_id", "correlation_id", "routing_key", "partition", "offset",
                 "delivery_tag", "size", "redelivered"):  # fmt: skip
        value = getattr(m, name)
        if value is not None:
            attributes[name] = value
    if m.key is not None:
        attributes["key"] = m.key
    for name in ("group", "consumer", "celery", "rq"):
        if name in m.details:
            attributes[name] = m.details[name]
    previous = life.events[n - 1].seen.time if n else None
    if previous is not None and seen.time is not None:
        attributes["delay"] = seen.time - previous
    if n == len(life.events) - 1:
        attributes["outcome"] = life.outcome
    if not seen.complete:
        attributes["complete"] = False
    span_id, source = _span_id_of(trace, life, n, event)
    return Span(
        span_id=span_id,
        span_id_source=source,
        parent_id=parent,
        kind="messaging",
        name=f"{m.action} {where}" if (where := m.destination or _queue(life)) else m.action,
        started=seen.started,
        ended=seen.ended if seen.ended is not None else seen.started,
        execution=seen.exchange_id,
        attributes=attributes,
    )


def _queue(life: Life) -> str | None:
    """What a span of ``life`` whose own operation names no destination is named by: the
    queue it was delivered from (an AMQP ack names a delivery tag only, a publish to the
    default exchange ``""`` a routing key only), else the routing key it was published
    with."""
    messages = [e.seen.message for e in life.events]
    named = next((m.destination for m in messages if m.destination), None)
    return named or next((m.routing_key for m in messages if m.routing_key), None)


def _cover(agent: Span, span: Span) -> None:
    """The synthesized agent span lasts as long as the messaging spans of its run."""
    if span.started is not None:
        agent.started = min(agent.started or span.started, span.started)
    end = span.ended if span.ended is not None else span.started
    if end is not None:
        agent.ended = max(agent.ended or end, end)


def _span_id_of(trace: Trace, life: Life, n: int, event: Event) -> tuple[str, str]:
    """A publish whose message carries a ``traceparent`` of the trace's id is the span that
    parent-id names (the producer's span, as instrumentation propagates it); else derived."""
    m = event.seen.message
    value = m.headers.get("traceparent")
    parsed = parse_traceparent(value) if m.action == "publish" and isinstance(value, str) else None
    if isinstance(parsed, TraceParent) and parsed.trace_id == trace.trace_id:
        used = {s.span_id for s in trace.spans}
        if parsed.parent_id not in used:
            return parsed.parent_id, "traceparent parent-id of the message"
    seed = f"message {trace.trace_id} {life.id} {n} {event.seen.exchange_id}"
    return hex_id(seed, 16), "generated"


def _insert(trace: Trace, span: Span, *, after: Span | None = None) -> None:
    """After ``after`` (and the messaging spans already following it), else in time order:
    before the first span of the run that started later."""
    spans = trace.spans
    if after is not None and after in spans:
        at = spans.index(after) + 1
        while at < len(spans) and spans[at].kind == "messaging":
            at += 1
        spans.insert(at, span)
        return
    if span.started is not None:
        for at, other in enumerate(spans):
            if other.parent_id is not None and (other.started or 0.0) > span.started:
                spans.insert(at, span)
                return
    spans.append(span)
