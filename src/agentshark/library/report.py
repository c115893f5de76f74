"""The Python API's :class:`Report`: one analysis of some inputs, with typed views and queries.

A report is made by :func:`agentshark.analyze` (or by :meth:`Report.from_json` from a saved
``agentshark analyze --format json`` report) and never changes. Everything it holds went
through the same redaction as the command line (unless ``redact=False`` was asked for), so a
view, a query or :meth:`Report.to_json` cannot show a credential the report would not.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import orjson

from agentshark.library.query import CallFilter
from agentshark.library.views import (
    Call,
    Diagnostic,
    Exchange,
    Incident,
    Source,
    Span,
    ToolCall,
    Trace,
)

Json = Any

__all__ = ["Report"]


class Report:
    """An analysis report: exchanges, calls, traces (with their spans and tool executions),
    incidents, sources and every diagnostic. Queries return tuples in report order."""

    def __init__(self, raw: bytes) -> None:
        """``raw``: the report as ``agentshark analyze --format json`` writes it."""
        self._raw = raw
        self._data: dict[str, Json] = orjson.loads(raw)

    @classmethod
    def from_json(cls, data: bytes | str | Mapping[str, Json]) -> Report:
        """A report from its JSON (the bytes or text of a report file, or its dict)."""
        if isinstance(data, Mapping):
            return cls(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS))
        return cls(data.encode() if isinstance(data, str) else data)

    def to_json(self) -> dict[str, Json]:
        """The report as ``agentshark analyze --format json`` prints it (a fresh copy)."""
        copy: dict[str, Json] = orjson.loads(self._raw)
        return copy

    def to_bytes(self) -> bytes:
        """The report's JSON, byte for byte what ``analyze --format json`` writes."""
        return self._raw

    # the views, built once

    @cached_property
    def _calls(self) -> tuple[Call, ...]:
        return tuple(Call.from_json(c) for c in self._data.get("calls") or ())

    @cached_property
    def _by_id(self) -> dict[str, Call]:
        return {c.id: c for c in self._calls}

    @cached_property
    def _traces(self) -> tuple[Trace, ...]:
        return tuple(Trace.from_json(t) for t in self._data.get("traces") or ())

    @cached_property
    def _incidents(self) -> tuple[Incident, ...]:
        return tuple(Incident.from_json(i) for i in self._data.get("incidents") or ())

    @cached_property
    def _exchanges(self) -> tuple[Exchange, ...]:
        return tuple(Exchange.from_json(x) for x in self._data.get("exchanges") or ())

    @cached_property
    def _sources(self) -> tuple[Source, ...]:
        return tuple(Source.from_json(s) for s in self._data.get("sources") or ())

    # queries

    def calls(
        self,
        *,
        api: str | None = None,
        model: str | None = None,
        operation: str | None = None,
        tool: str | None = None,
        text: str | None = None,
        status: str | None = None,
    ) -> tuple[Call, ...]:
        """The calls the filters name (all without filters); the filters are those of
        :mod:`agentshark.library.query`."""
        f = CallFilter(
            api=api, model=model, operation=operation, tool=tool, text=text, status=status
        )
        return tuple(c for c in self._calls if f.matches(c))

    def call(self, call_id: str) -> Call:
        """The call of that id (``call3``); KeyError naming the ids there are."""
        try:
            return self._by_id[call_id]
        except KeyError:
            raise KeyError(f"no call {call_id!r} (the calls: {_listed(self._by_id)})") from None

    def get_call(self, call_id: str) -> Call | None:
        """The call of that id, or None."""
        return self._by_id.get(call_id)

    def tool_calls(self, *, name: str | None = None) -> tuple[ToolCall, ...]:
        """Every tool call a model asked for, in call order (of that ``name`` only)."""
        return tuple(t for c in self._calls for t in c.tool_calls if name is None or t.name == name)

    def traces(self) -> tuple[Trace, ...]:
        return self._traces

    def trace(self, trace_id: str) -> Trace:
        """The trace of that id (or a unique prefix of it, as ``analyze`` shows them)."""
        found = [t for t in self._traces if t.trace_id.startswith(trace_id)] if trace_id else []
        exact = [t for t in found if t.trace_id == trace_id]
        if exact or len(found) == 1:
            return (exact or found)[0]
        ids = {t.trace_id: t for t in self._traces}
        why = "is the prefix of several" if found else "is none of them"
        raise KeyError(f"trace {trace_id!r} {why} (the traces: {_listed(ids)})")

    def spans(self, *, kind: str | None = None) -> tuple[Span, ...]:
        """Every span of every trace (``kind``: ``agent``, ``model`` or ``tool``)."""
        return tuple(s for t in self._traces for s in t.spans if kind is None or s.kind == kind)

    def tool_executions(self) -> tuple[Span, ...]:
        """The tool spans: each tool call with where it ran and where its result went."""
        return self.spans(kind="tool")

    def incidents(
        self, *, rule: str | None = None, severity: str | None = None
    ) -> tuple[Incident, ...]:
        """The incidents (``rule`` exactly or a rule family like ``mcp``)."""
        return tuple(
            i
            for i in self._incidents
            if (rule is None or i.rule == rule or i.rule.startswith(f"{rule}."))
            and (severity is None or i.severity == severity)
        )

    def exchanges(self) -> tuple[Exchange, ...]:
        return self._exchanges

    def sources(self) -> tuple[Source, ...]:
        return self._sources

    def diagnostics(self, *, code: str | None = None) -> tuple[Diagnostic, ...]:
        """Every diagnostic of the report: the sources', the exchanges' and the calls'
        (``code`` exactly or a prefix ending at a dot, like ``tls``)."""
        every = [
            *(d for s in self._sources for d in s.diagnostics),
            *(d for x in self._exchanges for d in x.diagnostics),
            *(d for c in self._calls for d in c.diagnostics),
        ]
        return tuple(
            d for d in every if code is None or d.code == code or d.code.startswith(f"{code}.")
        )

    @property
    def failures(self) -> tuple[str, ...]:
        """The inputs that could not be read, each with why (as stderr says it)."""
        return tuple(d.message for s in self._sources for d in s.diagnostics if s.unreadable)

    def summary(self) -> dict[str, int]:
        """Counts: sources, exchanges, calls, traces, tool executions, incidents, errors."""
        return {
            "sources": len(self._sources),
            "exchanges": len(self._exchanges),
            "calls": len(self._calls),
            "traces": len(self._traces),
            "tool_executions": len(self.tool_executions()),
            "incidents": len(self._incidents),
            "error_calls": sum(1 for c in self._calls if c.status == "error"),
            "incomplete_calls": sum(1 for c in self._calls if c.status == "incomplete"),
        }

    def __repr__(self) -> str:
        s = self.summary()
        return f"<Report {s['calls']} calls, {s['traces']} traces, {s['incidents']} incidents>"


def _listed(ids: Mapping[str, object], n: int = 10) -> str:
    names = list(ids)
    if not names:
        return "none"
    return ", ".join(names[:n]) + ("…" if len(names) > n else "")
