"""The JSON report (``agentshark.report/1``, as a dict) -> the viewer's two data operations.

The HTML report and ``agentshark serve`` show the same viewer (``output/viewer/``), which reads
its data through two operations, so that 10,000 calls never have to be parsed at once:

* **index**: the summary (traces, calls, tokens, incidents, errors, what was not understood),
  one row per trace and one row per call with the fields the lists show, search and filter
  (:func:`index_rows`);
* **trace** *i*: everything one trace needs, on demand: its spans, the whole report dicts of
  its calls and of their exchanges (with the raw bodies when kept), its incidents, and the
  idle gaps of its timeline (:func:`trace_detail`).

Nothing here analyzes anything: every value is the report's, regrouped (a pure projection).
Calls that no trace holds are shown in one extra group, ``trace_id`` null, whose rows are
view rows only (``view_only``: no span of the report stands for them). The report given is
already redacted by its writer; what this module adds (search snippets) is cut from it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

Json = Any
SNIPPET = 160  # characters of a call's first user text and answer kept for search


@dataclass(slots=True, kw_only=True)
class ViewerData:
    """The projection: the index, and the detail of each trace by its index."""

    index: dict[str, Json]
    traces: list[dict[str, Json]] = field(default_factory=list)


def project(report: dict[str, Json], raw: dict[str, Json] | None = None) -> ViewerData:
    """``report`` (a whole analyze report) regrouped for the viewer; ``raw``: the raw bodies
    by exchange id (:mod:`agentshark.output.viewer_run`), shown on demand."""
    calls: list[Json] = report.get("calls", [])
    traces: list[Json] = list(report.get("traces", []))
    by_call = {c["id"]: c for c in calls}
    exchanges = {x["id"]: x for x in report.get("exchanges", [])}
    in_trace = {cid for t in traces for cid in t.get("calls", [])}
    loose = [c["id"] for c in calls if c["id"] not in in_trace]
    if loose:
        traces.append(_loose_group(loose, by_call))
    trace_of = {cid: i for i, t in enumerate(traces) for cid in t.get("calls", [])}
    incidents = _incidents_by_trace(report.get("incidents", []), trace_of, by_call)
    details = [
        trace_detail(t, i, by_call, exchanges, incidents.get(i, []), raw or {})
        for i, t in enumerate(traces)
    ]
    call_rows = [_call_row(c, trace_of.get(c["id"]), incidents) for c in calls]
    trace_rows = [_trace_row(d, by_call) for d in details]
    index = {
        "schema": "agentshark.viewer/1",
        "summary": _summary(report, call_rows, traces, exchanges, in_trace),
        "sources": [_source_row(s) for s in report.get("sources", [])],
        "traces": trace_rows,
        "calls": call_rows,
        "incidents": [
            {**_incident_row(inc), "trace": i} for i, incs in incidents.items() for inc in incs
        ],
        "live": False,
    }
    return ViewerData(index=index, traces=details)


def _loose_group(call_ids: list[str], by_call: dict[str, Json]) -> dict[str, Json]:
    spans: list[Json] = []
    for cid in call_ids:
        c = by_call[cid]
        t = c.get("timing") or {}
        spans.append(
            {
                "span_id": None,
                "parent_id": None,
                "kind": "tool" if c.get("api") in ("mcp", "a2a", "http.tool") else "model",
                "name": _call_name(c),
                "started": t.get("started"),
                "ended": t.get("ended"),
                "call_id": cid,
                "view_only": True,
                "links": [],
                "attributes": {},
            }
        )
    return {
        "trace_id": None,
        "origin": "none",
        "calls": call_ids,
        "spans": spans,
        "evidence": [],
        "hints": [],
    }


def _call_name(c: Json) -> str:
    model = c.get("response_model") or c.get("request_model")
    what = c.get("operation") or c.get("api")
    return f"{what} {model}" if model else str(what)


def _incidents_by_trace(
    incidents: list[Json], trace_of: dict[str, int], by_call: dict[str, Json]
) -> dict[int | None, list[Json]]:
    call_of_exchange = {c["exchange_id"]: c["id"] for c in by_call.values()}
    out: dict[int | None, list[Json]] = defaultdict(list)
    for inc in incidents:
        cid = inc.get("call_id") or call_of_exchange.get(inc.get("exchange_id"))
        out[trace_of.get(cid) if cid else None].append(inc)
    return out


def trace_detail(
    trace: Json,
    i: int,
    by_call: dict[str, Json],
    exchanges: dict[str, Json],
    incidents: list[Json],
    raw: dict[str, Json],
) -> dict[str, Json]:
    """What the viewer needs to draw trace ``i``: spans, its calls and their exchanges whole,
    the raw bodies kept, the incidents, the idle gaps."""
    spans = trace.get("spans", [])
    ids = list(dict.fromkeys(_span_calls(spans) + list(trace.get("calls", []))))
    calls = {cid: by_call[cid] for cid in ids if cid in by_call}
    # a trace also names the exchanges it took as tool executions (HTTP tools) by their ids
    xids = [c["exchange_id"] for c in calls.values()] + [x for x in ids if x in exchanges]
    return {
        "index": i,
        "trace": trace,
        "calls": calls,
        "exchanges": {x: exchanges[x] for x in xids if x in exchanges},
        "raw": {x: raw[x] for x in xids if x in raw},
        "incidents": incidents,
        "gaps": idle_gaps(spans),
    }


def _span_calls(spans: list[Json]) -> list[str]:
    keys = ("call_id", "requested_by", "result_in", "execution")
    return [s[key] for s in spans for key in keys if s.get(key)]


def idle_gaps(spans: list[Json]) -> list[list[float]]:
    """The stretches inside a trace when no model call or tool execution was under way
    (where the agent thought, or waited): the complement of the union of the non-agent
    spans' intervals, between the first start and the last end."""
    busy = sorted(
        (s["started"], s["ended"])
        for s in spans
        if s.get("kind") != "agent" and s.get("started") is not None and s.get("ended") is not None
    )
    gaps: list[list[float]] = []
    if not busy:
        return gaps
    end = busy[0][1]
    for start, stop in busy[1:]:
        if start > end:
            gaps.append([end, start])
        end = max(end, stop)
    return gaps


def _call_row(c: Json, trace: int | None, incidents: dict[int | None, list[Json]]) -> Json:
    timing = c.get("timing") or {}
    usage = c.get("usage") or {}
    err = c.get("error")
    tools = [
        p.get("name")
        for m in c.get("output_messages", [])
        for p in m.get("parts", [])
        if p.get("type") == "tool_call"
    ]
    n_incidents = sum(1 for inc in incidents.get(trace, []) if inc.get("call_id") == c["id"])
    model = c.get("response_model") or c.get("request_model")
    user, answer = _snippets(c)
    error = _error_text(err) if err else None
    search = " ".join(
        str(x) for x in (c["id"], c.get("api"), model, *tools, error, user, answer) if x
    ).lower()
    return {
        "id": c["id"],
        "trace": trace,
        "api": c.get("api"),
        "provider": c.get("provider"),
        "operation": c.get("operation"),
        "model": model,
        "started": timing.get("started"),
        "ended": timing.get("ended"),
        "first_token": timing.get("first_token"),
        "first_byte": timing.get("first_byte"),
        "stream": c.get("stream"),
        "complete": c.get("complete"),
        "finish_reasons": c.get("finish_reasons", []),
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "error": error,
        "tools": tools,
        "incidents": n_incidents,
        "search": search,
    }


def _error_text(err: Json) -> str:
    parts = [str(err[k]) for k in ("status", "type", "code", "message") if err.get(k) is not None]
    return " ".join(parts) or "error"


def _snippets(c: Json) -> tuple[str, str]:
    """The first text a user gave and the first text answered, cut to :data:`SNIPPET`."""
    user = answer = ""
    for m in c.get("input_messages", []):
        if m.get("role") == "user" and not user:
            user = _first_text(m)
    for m in c.get("output_messages", []):
        if not answer:
            answer = _first_text(m)
    return user[:SNIPPET], answer[:SNIPPET]


def _first_text(message: Json) -> str:
    for p in message.get("parts", []):
        if p.get("type") == "text" and isinstance(p.get("content"), str):
            text: str = p["content"]
            return text
    return ""


def _trace_row(detail: Json, by_call: dict[str, Json]) -> Json:
    trace = detail["trace"]
    spans = trace.get("spans", [])
    calls = [by_call[c] for c in trace.get("calls", []) if c in by_call]
    starts = [s["started"] for s in spans if s.get("started") is not None]
    ends = [s["ended"] for s in spans if s.get("ended") is not None]
    agent = next((s for s in spans if s.get("kind") == "agent"), None)
    models = sorted({m for c in calls if (m := c.get("response_model") or c.get("request_model"))})
    tokens = _tokens(calls)
    prompt = next((u for c in calls if (u := _snippets(c)[0])), "")
    return {
        "index": detail["index"],
        "trace_id": trace.get("trace_id"),
        "origin": trace.get("origin"),
        "name": (agent or {}).get("name") or ("calls in no trace" if not agent else ""),
        "prompt": prompt,  # the first text a user gave in this trace
        "started": min(starts) if starts else None,
        "ended": max(ends) if ends else None,
        "spans": len(spans),
        "calls": [c["id"] for c in calls],
        "apis": sorted({c.get("api") for c in calls if c.get("api")}),
        "models": models,
        "errors": sum(1 for c in calls if c.get("error")),
        "incidents": len(detail["incidents"]),
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
    }


def _tokens(calls: list[Json]) -> tuple[int | None, int | None]:
    """Summed token counts; None when no call reported any (not zero: unknown)."""
    out: list[int | None] = [None, None]
    for c in calls:
        usage = c.get("usage") or {}
        for n, key in enumerate(("input_tokens", "output_tokens")):
            v = usage.get(key)
            if isinstance(v, int):
                out[n] = (out[n] or 0) + v
    return out[0], out[1]


def _summary(
    report: Json,
    call_rows: list[Json],
    traces: list[Json],
    exchanges: dict[str, Json],
    in_trace: set[str],
) -> Json:
    used = {c["exchange_id"] for c in report.get("calls", [])} | in_trace
    unclaimed = [_exchange_row(x) for xid, x in exchanges.items() if xid not in used]
    tokens = _tokens(report.get("calls", []))
    return {
        "traces": sum(1 for t in traces if t.get("trace_id") is not None),
        "calls": len(call_rows),
        "exchanges": len(exchanges),
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "incidents": len(report.get("incidents", [])),
        "errors": sum(1 for c in call_rows if c["error"]),
        "incomplete": sum(1 for c in call_rows if c["complete"] is False),
        "not_understood": unclaimed,
        "not_parsed": report.get("not_parsed", []),
    }


def _exchange_row(x: Json) -> Json:
    req = x.get("request") or {}
    resp = x.get("response") or {}
    return {
        "id": x["id"],
        "method": req.get("method"),
        "url": req.get("url"),
        "status": resp.get("status"),
        "transport": x.get("transport"),
    }


def _incident_row(inc: Json) -> Json:
    return {k: inc.get(k) for k in ("rule", "severity", "message", "call_id", "exchange_id")}


def _source_row(s: Json) -> Json:
    return {
        "path": s.get("path"),
        "format": s.get("format"),
        "bytes": s.get("bytes"),
        "exchanges": s.get("exchanges"),
        "diagnostics": s.get("diagnostics", []),
    }
