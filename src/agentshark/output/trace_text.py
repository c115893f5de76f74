"""The ``analyze`` view: one tree per trace, its incidents under it, a summary line.

Every span that stands for a call names the call and the span (``call7``, ``span 1f0c…``),
the ids ``agentshark show --call/--span`` takes. An INCOMPLETE call says why (its first
diagnostic); errors read as what they are (``JSON-RPC ERROR -32602``, ``TOOL ERROR`` for an
MCP result with ``isError``), not as an HTTP status. The summary line names the exchanges of
API families recognized but not parsed yet, and the inputs that could not be read whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

import orjson

from agentshark.apis.model import Call, Json, ToolCallResponsePart
from agentshark.output.calls_text import error_text
from agentshark.output.census import Census, plural, reasons
from agentshark.output.redact import redactor
from agentshark.pipeline import SourceReport
from agentshark.trace.model import Incident, Span, Trace

PREVIEW = 70
WIDE_PREVIEW = 2000


class TraceTextWriter:
    wide = False  # tool arguments and results at length (set by the CLI)
    _census: Census | None = None  # what the run saw, given to write()

    def __init__(self, out: TextIO, *, redact: bool = True) -> None:
        self._redactor = redactor(redact)
        self._out = self._redactor.stream(out)  # every line redacted, whatever writes it

    def write(
        self,
        traces: Sequence[Trace],
        incidents: Sequence[Incident],
        calls: Sequence[Call],
        sources: Sequence[SourceReport],
        *,
        unclaimed: int,
        census: Census | None = None,
    ) -> None:
        self._census = census
        by_id = {c.id: c for c in calls}
        by_trace: dict[str | None, list[Incident]] = {}
        for incident in incidents:
            by_trace.setdefault(incident.trace_id, []).append(incident)
        w = self._out.write
        for n, trace in enumerate(traces, 1):
            w(self._header(n, trace, by_id))
            self._tree(trace, by_id)
            for hint in trace.hints:
                w(
                    f"   hint: same connection {hint['connection']} as trace "
                    f"{hint['trace_id'][:12]}… ({hint['calls'][0]} → {hint['calls'][1]}, "
                    f"{hint['gap']:.3f}s apart)\n"
                )
            for incident in by_trace.get(trace.trace_id, []):
                w(f"   {_mark(incident.severity)} {incident.rule}: {incident.message}\n")
            w("\n")
        for incident in by_trace.get(None, []):
            w(f"{_mark(incident.severity)} {incident.rule}: {incident.message}\n")
        for source in sources:
            for d in source.diagnostics:
                if d.severity == "error" or d.code.endswith("truncated_file"):
                    where = f" ({d.location})" if d.location else ""
                    w(f"! {source.path}: {d.code}: {d.message}{where}\n")
        w(_summary(traces, incidents, calls, unclaimed) + "\n")
        if census is not None:
            if not calls:
                w(f"  0 calls: {census.why_no_calls()}\n")
            for line in census.not_parsed_lines():
                w(f"  {line}\n")

    def _incomplete(self, call: Call) -> str:
        """INCOMPLETE with the first reason the report gives: its exchange's causes (a gap,
        a cut head) before the call's own consequences."""
        exchange = self._census.unfinished.get(call.exchange_id, []) if self._census else []
        why = reasons([*exchange, *call.diagnostics])
        if not why:
            return "INCOMPLETE (its exchange did not end in the capture)"
        return f"INCOMPLETE ({why[0].code}: {why[0].message})"

    def _header(self, n: int, trace: Trace, by_id: dict[str, Call]) -> str:
        models = sum(1 for s in trace.spans if s.kind == "model")
        tools = sum(1 for s in trace.spans if s.kind == "tool")
        spanned = {s.call_id for s in trace.spans if s.call_id is not None}
        other = [c for c in trace.calls if c in by_id and c not in spanned]
        more = f", {plural(len(other), 'other call')} ({', '.join(other)})" if other else ""
        return (
            f"trace {n}  {trace.trace_id}  ({trace.origin}, id {trace.trace_id_source})  "
            f"{plural(models, 'model call')}, {plural(tools, 'tool call')}{more}\n"
        )

    def _tree(self, trace: Trace, by_id: dict[str, Call]) -> None:
        spans = [s for s in trace.spans if s.kind != "agent"]
        agent = next((s for s in trace.spans if s.kind == "agent"), None)
        w = self._out.write
        if agent is not None:
            w(f"└─ invoke_agent  {_clock(agent.started)}  {_duration(agent)}\n")
        for i, span in enumerate(spans):
            branch = "└─" if i == len(spans) - 1 else "├─"
            w(f"   {branch} {self._line(span, by_id)}\n")

    def _line(self, span: Span, by_id: dict[str, Call]) -> str:
        a = span.attributes
        if span.kind == "model":
            call = by_id.get(span.call_id or "")
            bits = [span.name, span.call_id or ""]
            if "input_tokens" in a or "output_tokens" in a:
                bits.append(f"tokens {_n(a.get('input_tokens'))}/{_n(a.get('output_tokens'))}")
            finish = ",".join(a.get("finish_reasons") or []) or "-"
            bits.append(f"finish {finish}")
            if "time_to_first_token" in a:
                bits.append(f"ttft {a['time_to_first_token']:.3f}s")
            if "duration" in a:
                bits.append(f"{a['duration']:.3f}s")
            if call is not None and not call.complete:
                bits.append(self._incomplete(call))
            if call is not None and call.error is not None:
                bits.append(error_text(call))
            elif "error" in a:
                error = a["error"]
                bits.append(f"ERROR {error.get('status') or ''} {error.get('message') or ''}")
            bits.append(f"span {span.span_id}")
            return "  ".join(b for b in bits if b)
        bits = [span.name, self._preview(a.get("arguments"))]
        execution = by_id.get(span.call_id or "")
        if execution is not None and execution.error is not None:
            bits.append("→ " + error_text(execution))
        elif "result" in a:
            failed = execution is not None and _tool_error(execution)
            arrow = "→ TOOL ERROR (isError) " if failed else "→ "
            bits.append(arrow + self._preview(a["result"]))
        if span.execution is not None:
            bits.append(f"[ran as {span.execution}]")
        elif span.inferred:
            bits.append("[execution not seen]")
        if span.tool_call_id is not None:
            bits.append(f"id {span.tool_call_id}")
        if execution is not None and not execution.complete:
            bits.append(self._incomplete(execution))
        if span.call_id is not None:  # else `show --span` has no call to show
            if span.call_id != span.execution:
                bits.append(span.call_id)
            bits.append(f"span {span.span_id}")
        return "  ".join(b for b in bits if b)

    def _preview(self, value: Json) -> str:
        if value is None:
            return ""
        value = self._redactor.json(value)  # before the cut, which would hide a secret's shape
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        text = " ".join(text.split())
        width = WIDE_PREVIEW if self.wide else PREVIEW
        return text if len(text) <= width else text[: width - 1] + "…"


def _summary(
    traces: Sequence[Trace], incidents: Sequence[Incident], calls: Sequence[Call], unclaimed: int
) -> str:
    models = sum(1 for t in traces for s in t.spans if s.kind == "model")
    tools = sum(1 for t in traces for s in t.spans if s.kind == "tool")
    tokens_in = sum(c.usage.input_tokens or 0 for c in calls if c.usage is not None)
    tokens_out = sum(c.usage.output_tokens or 0 for c in calls if c.usage is not None)
    worst = {s: sum(1 for i in incidents if i.severity == s) for s in ("error", "warning")}
    return (
        f"{plural(len(traces), 'trace')}, {plural(len(calls), 'call')} "
        f"({plural(models, 'model span')}, {plural(tools, 'tool span')}), "
        f"tokens {tokens_in} in / {tokens_out} out, {plural(len(incidents), 'incident')} "
        f"({plural(worst['error'], 'error')}, {plural(worst['warning'], 'warning')}), "
        f"{plural(unclaimed, 'HTTP exchange')} not understood"
    )


def _tool_error(call: Call) -> bool:
    return any(
        isinstance(p, ToolCallResponsePart) and p.provider_details.get("is_error") is True
        for m in call.output_messages
        for p in m.parts
    )


def _mark(severity: str) -> str:
    return {"error": "✗", "warning": "!"}.get(severity, "·")


def _clock(ts: float | None) -> str:
    if ts is None or ts <= 0:
        return "-"
    return time.strftime("%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}"


def _duration(span: Span) -> str:
    if span.started is None or span.ended is None:
        return ""
    return f"{span.ended - span.started:.3f}s"


def _n(value: Json) -> str:
    return "-" if value is None else str(value)
