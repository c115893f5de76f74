"""Live updates (:mod:`agentshark.pipeline.follow`) as JSON and as terminal lines.

:func:`update_json` is one update as a plain dict, ``{"update": kind, ...}``, its payload
the report's own dict of that object (``exchange_json``, ``call_json``, a trace's or an
incident's ``to_json``), every one through the options' redactor::

    {"update": "exchange", "exchange": {...}}          an exchange ended
    {"update": "call", "call": {...}}                  a call was recognized in it
    {"update": "connection", "connection": {...}}      a TCP connection closed
    {"update": "diagnostic", "path": str, "diagnostic": {...}}
    {"update": "trace", "trace_id": str, "new": bool, "calls_added": [str],
     "absorbed": [str], "trace": {...}}                a trace appeared or changed
    {"update": "trace_absorbed", "trace_id": str, "into": [str]}
    {"update": "incident" | "incident_withdrawn", "incident": {...}}
    {"update": "source", "source": {...}}              an input ended

:class:`LiveTextWriter` prints them for ``--follow``: each call as the one line of
``agentshark calls`` (:class:`~agentshark.output.calls_text.CallsTextWriter`), trace and
incident changes as ``~`` lines, source problems as ``!`` lines; all redacted.
"""

from __future__ import annotations

from typing import Any, TextIO, assert_never

from agentshark.output.calls_text import CallsTextWriter
from agentshark.output.census import Census, plural
from agentshark.output.report import (
    RenderOptions,
    call_json,
    connection_json,
    exchange_json,
    source_json,
)
from agentshark.pipeline.follow import (
    CallFinished,
    ConnectionFinished,
    DiagnosticFound,
    ExchangeFinished,
    SourceFinished,
    Update,
)
from agentshark.trace.changes import IncidentFound, IncidentWithdrawn, TraceAbsorbed, TraceChanged

__all__ = ["LiveTextWriter", "update_json"]


def update_json(update: Update, opts: RenderOptions) -> dict[str, Any]:
    """``update`` as the plain dict described above (redacted unless ``opts.redact`` is off)."""
    r = opts.redactor
    if isinstance(update, ExchangeFinished):
        return {"update": "exchange", "exchange": exchange_json(update.exchange, opts)}
    if isinstance(update, CallFinished):
        return {"update": "call", "call": call_json(update.call, opts)}
    if isinstance(update, ConnectionFinished):
        return {"update": "connection", "connection": r.json(connection_json(update.report))}
    if isinstance(update, SourceFinished):
        return {"update": "source", "source": r.json(source_json(update.report))}
    if isinstance(update, DiagnosticFound):
        return {
            "update": "diagnostic",
            "path": r.text(update.path),
            "diagnostic": r.json(update.diagnostic.to_json()),
        }
    if isinstance(update, TraceChanged):
        return {
            "update": "trace",
            "trace_id": update.trace.trace_id,
            "new": update.new,
            "calls_added": list(update.calls_added),
            "absorbed": list(update.absorbed),
            "trace": r.json(update.trace.to_json()),
        }
    if isinstance(update, TraceAbsorbed):
        return {"update": "trace_absorbed", "trace_id": update.trace_id, "into": list(update.into)}
    if isinstance(update, IncidentFound):
        return {"update": "incident", "incident": r.json(update.incident.to_json())}
    if isinstance(update, IncidentWithdrawn):
        return {"update": "incident_withdrawn", "incident": r.json(update.incident.to_json())}
    assert_never(update)


class LiveTextWriter:
    """``--follow`` in a terminal: one line per call, trace change, incident or problem."""

    def __init__(self, out: TextIO, opts: RenderOptions, *, traces: bool, wide: bool) -> None:
        self.calls = CallsTextWriter(out, opts)
        self.calls.wide = wide
        self._out = opts.redactor.stream(out)
        self._traces = traces

    def write(self, update: Update, census: Census) -> None:
        w = self._out.write
        if isinstance(update, CallFinished):
            census.count(update.call)
            self.calls.write(update.call)
        elif isinstance(update, ExchangeFinished):
            census.count(update.exchange)
            self.calls.write(update.exchange)
        elif isinstance(update, SourceFinished):
            census.count(update.report)
            self.calls.write(update.report)
        elif isinstance(update, ConnectionFinished):
            census.count(update.report)
        elif isinstance(update, DiagnosticFound):
            d = update.diagnostic
            w(f"! {update.path}: {d.code}: {d.message}\n")
        elif not self._traces:
            return
        elif isinstance(update, TraceChanged):
            w(_trace_line(update) + "\n")
        elif isinstance(update, TraceAbsorbed):
            into = ", ".join(t[:12] + "…" for t in update.into) or "no trace"
            w(f"~ trace {update.trace_id[:12]}… joined {into}\n")
        elif isinstance(update, IncidentFound):
            i = update.incident
            w(f"~ incident {i.rule} ({i.severity}): {i.message}\n")
        elif isinstance(update, IncidentWithdrawn):
            w(f"~ incident withdrawn: {update.incident.rule}: {update.incident.message}\n")
        else:
            assert_never(update)

    def flush(self) -> None:
        self._out.flush()


def _trace_line(update: TraceChanged) -> str:
    t = update.trace
    what = "new trace" if update.new else "trace"
    added = f", +{' +'.join(update.calls_added)}" if update.calls_added else ", updated"
    joined = (
        f", joins {', '.join(a[:12] + '…' for a in update.absorbed)}" if update.absorbed else ""
    )
    return (
        f"~ {what} {t.trace_id[:12]}… ({t.origin}): {plural(len(t.calls), 'call')}{added}{joined}"
    )
