"""The ``analyze`` view: one tree per trace, its incidents under it, a summary line.

Every span that stands for a call names the call and the span (``call7``, ``span 1f0c…``),
the ids ``agentshark show --call/--span`` takes. An INCOMPLETE call says why (its first
diagnostic); errors read as what they are (``JSON-RPC ERROR -32602``, ``TOOL ERROR`` for an
MCP result with ``isError``), not as an HTTP status. The summary line names the exchanges of
API families recognized but not parsed yet, and the inputs that could not be read whole.
The view builds each trace as a :class:`~agentshark.output.screen.Node` tree of styled lines;
a :class:`~agentshark.output.screen.Screen` draws it, plain or with ``rich`` (errors red,
INCOMPLETE yellow, ids dim, incidents by severity).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TextIO

import orjson

from agentshark.apis.model import Call, Json, ToolCallResponsePart
from agentshark.output.calls_text import error_text
from agentshark.output.census import Census, plural, reasons, unsaid_reason
from agentshark.output.queue_text import life_lines, messaging_line
from agentshark.output.redact import redactor
from agentshark.output.screen import Line, Node, PlainScreen, Screen, Seg, Tone, severity_tone
from agentshark.pipeline import SourceReport
from agentshark.trace.model import Incident, Span, Trace
from agentshark.trace.queues import Life

PREVIEW = 70
WIDE_PREVIEW = 2000


class TraceTextWriter:
    wide = False  # tool arguments and results at length (set by the CLI)
    _census: Census | None = None  # what the run saw, given to write()
    _numbers: dict[str, int]  # trace id -> its number in the view

    def __init__(self, out: TextIO, *, redact: bool = True, screen: Screen | None = None) -> None:
        self._redactor = redactor(redact)
        self._screen = screen if screen is not None else PlainScreen(out, self._redactor)

    def write(
        self,
        traces: Sequence[Trace],
        incidents: Sequence[Incident],
        calls: Sequence[Call],
        sources: Sequence[SourceReport],
        *,
        unclaimed: int,
        census: Census | None = None,
        lives: Sequence[Life] = (),
    ) -> None:
        by_id = {c.id: c for c in calls}
        by_trace: dict[str | None, list[Incident]] = {}
        for incident in incidents:
            by_trace.setdefault(incident.trace_id, []).append(incident)
        self._numbers = {t.trace_id: n for n, t in enumerate(traces, 1)}
        views = (
            (t, {c: by_id[c] for c in t.calls if c in by_id}, by_trace.get(t.trace_id, []))
            for t in traces
        )
        loose = by_trace.get(None, [])
        self.write_views(
            views, loose, sources, unclaimed=unclaimed, census=census, lives=lives, calls=len(calls)
        )

    def write_views(
        self,
        views: Iterable[tuple[Trace, dict[str, Call], list[Incident]]],
        loose: Iterable[Incident],
        sources: Sequence[SourceReport],
        *,
        unclaimed: int,
        census: Census | None = None,
        lives: Sequence[Life] = (),
        calls: int | None = None,
    ) -> None:
        """Each trace with its calls and incidents, as they come (a long input's come from
        its store, :mod:`agentshark.trace.spill`), then the incidents of no trace and the
        summary. ``calls``: how many there were, when not all are in the traces' views."""
        self._census = census
        if not hasattr(self, "_numbers"):
            self._numbers = {}  # traces are numbered for queue messages, which come whole
        totals = _Totals()
        line = self._screen.line
        for n, (trace, by_id, incidents) in enumerate(views, 1):
            totals.add(trace, by_id, incidents)
            self._screen.tree(
                Node(label=self._header(n, trace, by_id), children=self._tree(trace, by_id))
            )
            for hint in trace.hints:
                line(
                    (
                        f"   hint: same connection {hint['connection']} as trace "
                        f"{hint['trace_id'][:12]}… ({hint['calls'][0]} → {hint['calls'][1]}, "
                        f"{hint['gap']:.3f}s apart)",
                        "dim",
                    )
                )
            for incident in incidents:
                line(("   ", None), _incident(incident))
            line()
        if lives:  # the queue messages' lives (agentshark.output.queue_text)
            line((f"{plural(len(lives), 'queue message')}", "head"))
            for row in life_lines(lives, self._numbers):
                line(("  ", None), *row)
            line()
        for incident in loose:
            totals.add_incident(incident)
            line(_incident(incident))
        for source in sources:
            for d in source.diagnostics:
                if d.severity == "error" or d.code.endswith("truncated_file"):
                    where = f" ({d.location})" if d.location else ""
                    line(
                        (
                            f"! {source.path}: {d.code}: {d.message}{where}",
                            severity_tone(d.severity),
                        )
                    )
        if calls is not None:
            totals.calls = calls
        line((totals.summary(unclaimed), "head"))
        if census is not None:
            if not totals.calls:
                line((f"  0 calls: {census.why_no_calls()}", "incomplete"))
            for text in census.not_parsed_lines():
                line((f"  {text}", "incomplete"))
        self._screen.flush()

    def _incomplete(self, call: Call) -> Seg:
        """INCOMPLETE with the first reason the report gives: its exchange's causes (a gap,
        a cut head) before the call's own consequences."""
        exchange = self._census.unfinished.get(call.exchange_id, []) if self._census else []
        why = reasons([*exchange, *call.diagnostics])
        if not why:
            return (f"INCOMPLETE ({unsaid_reason(call)})", "incomplete")
        return (f"INCOMPLETE ({why[0].code}: {why[0].message})", "incomplete")

    def _header(self, n: int, trace: Trace, by_id: dict[str, Call]) -> Line:
        models = sum(1 for s in trace.spans if s.kind == "model")
        tools = sum(1 for s in trace.spans if s.kind == "tool")
        spanned = {s.call_id for s in trace.spans if s.call_id is not None}
        other = [c for c in trace.calls if c in by_id and c not in spanned]
        more = f", {plural(len(other), 'other call')} ({', '.join(other)})" if other else ""
        return (
            (f"trace {n}  ", "head"),
            (f"{trace.trace_id}  ({trace.origin}, id {trace.trace_id_source})  ", "dim"),
            (f"{plural(models, 'model call')}, {plural(tools, 'tool call')}{more}", "head"),
        )

    def _tree(self, trace: Trace, by_id: dict[str, Call]) -> list[Node]:
        """The agent span (or an undrawn level when there is none) and the other spans
        under it."""
        spans = [Node(label=self._line(s, by_id)) for s in trace.spans if s.kind != "agent"]
        agent = next((s for s in trace.spans if s.kind == "agent"), None)
        if agent is None:
            return [Node(label=None, children=spans)]
        label: Line = (
            ("invoke_agent", "head"),
            (f"  {_clock(agent.started)}  {_duration(agent)}", "dim"),
        )
        return [Node(label=label, children=spans)]

    def _line(self, span: Span, by_id: dict[str, Call]) -> Line:
        a = span.attributes
        bits: list[Seg]
        if span.kind == "messaging":
            return messaging_line(span, self._numbers)
        if span.kind == "model":
            call = by_id.get(span.call_id or "")
            bits = [(span.name, "name"), (span.call_id or "", "label")]
            if "input_tokens" in a or "output_tokens" in a:
                tokens = f"tokens {_n(a.get('input_tokens'))}/{_n(a.get('output_tokens'))}"
                bits.append((tokens, None))
            finish = ",".join(a.get("finish_reasons") or []) or "-"
            bits.append((f"finish {finish}", None))
            if "time_to_first_token" in a:
                bits.append((f"ttft {a['time_to_first_token']:.3f}s", "dim"))
            if "duration" in a:
                bits.append((f"{a['duration']:.3f}s", "dim"))
            if call is not None and not call.complete:
                bits.append(self._incomplete(call))
            if call is not None and call.error is not None:
                bits.append((error_text(call), "error"))
            elif "error" in a:
                error = a["error"]
                text = f"ERROR {error.get('status') or ''} {error.get('message') or ''}"
                bits.append((text, "error"))
            bits.append((f"span {span.span_id}", "dim"))
            return _joined(bits)
        bits = [(span.name, "name"), (self._preview(a.get("arguments")), None)]
        execution = by_id.get(span.call_id or "")
        if execution is not None and execution.error is not None:
            bits.append(("→ " + error_text(execution), "error"))
        elif "result" in a:
            failed = execution is not None and _tool_error(execution)
            if failed:
                bits.append(("→ TOOL ERROR (isError) " + self._preview(a["result"]), "error"))
            else:
                bits.append(("→ " + self._preview(a["result"]), None))
        bits.append(_partial(a.get("graphql")))
        if span.execution is not None:
            work = [w["call_id"] for w in a.get("work") or [] if isinstance(w, dict)]
            with_work = f", with {', '.join(work)}" if work else ""  # an embedding, a rerank
            bits.append((f"[ran as {span.execution}{with_work}]", "dim"))
        elif span.inferred:
            bits.append(("[execution not seen]", "incomplete"))
        if span.tool_call_id is not None:
            bits.append((f"id {span.tool_call_id}", "dim"))
        if execution is not None and not execution.complete:
            bits.append(self._incomplete(execution))
        if span.call_id is not None:  # else `show --span` has no call to show
            if span.call_id != span.execution:
                bits.append((span.call_id, "label"))
            bits.append((f"span {span.span_id}", "dim"))
        return _joined(bits)

    def _preview(self, value: Json) -> str:
        if value is None:
            return ""
        value = self._redactor.json(value)  # before the cut, which would hide a secret's shape
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        text = " ".join(text.split())
        width = WIDE_PREVIEW if self.wide else PREVIEW
        return text if len(text) <= width else text[: width - 1] + "…"


class _Totals:
    """The summary line's counts, added up trace by trace."""

    def __init__(self) -> None:
        self.traces = self.calls = self.models = self.tools = 0
        self.tokens_in = self.tokens_out = 0
        self.severities: dict[str, int] = {"error": 0, "warning": 0}
        self.incidents = 0

    def add(self, trace: Trace, calls: dict[str, Call], incidents: Iterable[Incident]) -> None:
        self.traces += 1
        self.calls += len(calls)
        self.models += sum(1 for s in trace.spans if s.kind == "model")
        self.tools += sum(1 for s in trace.spans if s.kind == "tool")
        for call in calls.values():
            if call.usage is not None:
                self.tokens_in += call.usage.input_tokens or 0
                self.tokens_out += call.usage.output_tokens or 0
        for incident in incidents:
            self.add_incident(incident)

    def add_incident(self, incident: Incident) -> None:
        self.incidents += 1
        if incident.severity in self.severities:
            self.severities[incident.severity] += 1

    def summary(self, unclaimed: int) -> str:
        worst = self.severities
        return (
            f"{plural(self.traces, 'trace')}, {plural(self.calls, 'call')} "
            f"({plural(self.models, 'model span')}, {plural(self.tools, 'tool span')}), "
            f"tokens {self.tokens_in} in / {self.tokens_out} out, "
            f"{plural(self.incidents, 'incident')} "
            f"({plural(worst['error'], 'error')}, {plural(worst['warning'], 'warning')}), "
            f"{plural(unclaimed, 'HTTP exchange')} not understood"
        )


def _partial(graphql: Json) -> Seg:
    """A GraphQL execution's partial results: data, and errors at these paths."""
    ops = graphql if isinstance(graphql, list) else []
    paths = [
        ".".join(str(k) for k in p) if isinstance(p, list) else "-"
        for op in ops
        if isinstance(op, dict) and op.get("partial")
        for p in op.get("error_paths") or []
    ]
    if not paths:
        return ("", None)
    return (f"PARTIAL (data, errors at {', '.join(paths)})", "incomplete")


def _tool_error(call: Call) -> bool:
    return any(
        isinstance(p, ToolCallResponsePart) and p.provider_details.get("is_error") is True
        for m in call.output_messages
        for p in m.parts
    )


def _joined(bits: list[Seg]) -> Line:
    """The non-empty bits, two spaces apart."""
    out: list[Seg] = []
    for text, tone in bits:
        if text:
            if out:
                out.append(("  ", None))
            out.append((text, tone))
    return tuple(out)


def _incident(incident: Incident) -> Seg:
    tone: Tone = severity_tone(incident.severity)
    return (f"{_mark(incident.severity)} {incident.rule}: {incident.message}", tone)


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
