"""Queue messages in the ``analyze`` view: a messaging span's line in its trace, and one
line per message life under the traces (its events with the delays between, its outcome,
and the runs it links)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentshark.output.screen import Line, Seg, Tone
from agentshark.trace.model import Span
from agentshark.trace.queues import Life

OUTCOME_TONES: dict[str, Tone] = {"unknown": "incomplete", "rejected": "error", "nacked": "error",
                 "dead-lettered": "error", "published-undelivered": "incomplete",
                 "returned": "error", "delivered-unsettled": "incomplete"}  # fmt: skip


def identity_text(a: Mapping[str, object]) -> str:
    """The message's identity as its protocol carries it."""
    if a.get("offset") is not None:
        return f"partition {a.get('partition')} offset {a['offset']}"
    if a.get("message_id") is not None:
        return f"id {a['message_id']}"
    if a.get("delivery_tag") is not None:
        return f"tag {a['delivery_tag']}"
    if a.get("correlation_id") is not None:
        return f"correlation {a['correlation_id']}"
    return ""


def messaging_line(span: Span, trace_numbers: Mapping[str, int]) -> Line:
    a = span.attributes
    bits: list[Seg] = [
        (span.name, "name"),
        (f"{a.get('system')} {a.get('life')}", "label"),
        (identity_text(a), None),
    ]
    if isinstance(a.get("delay"), float | int):
        bits.append((f"+{a['delay']:.3f}s", "dim"))
    for link in span.links:
        other = str(link.get("trace_id"))
        number = trace_numbers.get(other)
        where = f"trace {number}" if number is not None else f"trace {other[:12]}…"
        bits.append((f"← published in {where} ({link.get('origin')})", None))
    if a.get("outcome") is not None:
        outcome = str(a["outcome"])
        bits.append((f"→ {outcome}", OUTCOME_TONES.get(outcome)))
    if a.get("complete") is False:
        bits.append(("INCOMPLETE (its operation did not end in the capture)", "incomplete"))
    bits.append((f"[ran as {a.get('exchange_id')}]", "dim"))
    out: list[Seg] = []
    for bit in bits:
        if bit[0]:
            out.extend([("  ", None), bit] if out else [bit])
    return tuple(out)


def life_lines(lives: Sequence[Life], trace_numbers: Mapping[str, int]) -> list[Line]:
    """One line per life: ``msg1 redis agent:tasks  publish e6 → deliver e12 +0.330s → ack
    e18 +0.710s  acked``, then the runs it links."""
    out: list[Line] = []
    for life in lives:
        steps = []
        previous: float | None = None
        for e in life.events:
            t = e.seen.time
            delay = f" +{t - previous:.3f}s" if t is not None and previous is not None else ""
            steps.append(f"{e.seen.message.action} {e.seen.exchange_id}{delay}")
            previous = t if t is not None else previous
        outcome = life.outcome
        line: list[Seg] = [
            (f"{life.id} {life.system} {life.destination or '-'}", "label"),
            ("  " + " → ".join(steps), None),
            (f"  {outcome}", OUTCOME_TONES.get(outcome)),
        ]
        if life.dead_letter_of is not None:
            line.append((f"  (dead letter of {life.dead_letter_of})", "dim"))
        if life.dead_lettered_as is not None:
            line.append((f"  (dead-lettered as {life.dead_lettered_as})", "dim"))
        out.append(tuple(line))
        for run in life.runs:
            producer, consumer = run.get("producer"), str(run.get("consumer"))
            left = f"trace {trace_numbers.get(str(producer), '?')}" if producer else "no run"
            right = f"trace {trace_numbers.get(consumer, '?')}"
            out.append(
                ((f"    {left} → {right}: {run.get('origin')}, {run.get('evidence')}", "dim"),)
            )
    return out
