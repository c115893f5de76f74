"""The summaries of a batch's files -> one report: their traces, joined across files.

Traces of different files are joined only by an id both carry (:mod:`.keys`: W3C trace-id,
tool call id, MCP session id, A2A context id, response id), and only when the traces are
close in time: :data:`JOIN_WINDOW` seconds at most between one's end and the other's start
(captures of one run from several vantage points are taken at the same time; a test stub's
fixed ids, seen again in a capture of another day, are not a join). Each id that joins is one
entry of ``joins``: ``{key, value, files, calls, file_traces, trace_id}``, the files and the
calls that carried it, and the merged trace it made; the merged trace's ``evidence`` holds the
same entries (``"cross_file": true``, ``origin`` as a join of one file would name it).

A merged trace is its files' traces made one: one agent span (the earliest trace's; the
others' synthesized agent spans are left out and their children hang from it), every other
span, the calls and evidence of all, its trace-id the W3C one when a trace has it; a call
seen in several files (:func:`_same_calls`) is one span, ``same_calls`` listing its
sightings. Ids of
calls, exchanges and connections are qualified by their file's key (``<key>:call3``: the
entry ``call3`` of ``files/<key>/report.json``); span ids are kept (derived from the run's
first call, its time among them, they do not collide across files). Traces that share no id
with another file's are kept as they are, ids qualified.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from agentshark.output.report import SCHEMA
from agentshark.trace.spans import ORIGINS

Json = Any
JOIN_WINDOW = 600.0
ORIGIN_OF = {
    "traceparent": "traceparent",
    "tool_call_id": "tool_call",
    "mcp_session": "mcp_session",
    "a2a_context": "a2a_context",
    "response_id": "previous_response_id",
}
_SPAN_IDS = ("call_id", "requested_by", "result_in", "execution")
Node = tuple[int, int]  # (file, trace) places in the summaries


def merge(summaries: Sequence[dict[str, Json]]) -> dict[str, Json]:
    """The merged report of ``summaries`` (one per distinct file, in batch order)."""
    joins = _joins(summaries)
    parent: dict[Node, Node] = {}

    def find(n: Node) -> Node:
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    for join in joins:
        first = find(join["nodes"][0])
        for other in join["nodes"][1:]:
            root = find(other)
            if root != first:
                parent[root] = first
    groups: dict[Node, list[Node]] = {}
    for f, summary in enumerate(summaries):
        for t in range(len(summary["traces"])):
            groups.setdefault(find((f, t)), []).append((f, t))
    joins_of: dict[Node, list[dict[str, Json]]] = {}
    for join in joins:
        joins_of.setdefault(find(join["nodes"][0]), []).append(join)
    renamed: dict[tuple[str, str], str] = {}  # (file key, its trace id) -> merged trace id
    traces = []
    for root, nodes in groups.items():
        mine = joins_of.get(root, [])
        trace = _merged(summaries, nodes, mine)
        for f, t in nodes:
            renamed[summaries[f]["key"], summaries[f]["traces"][t]["trace_id"]] = trace["trace_id"]
        for join in mine:
            join["trace_id"] = trace["trace_id"]
        traces.append(trace)
    traces.sort(key=lambda t: (_start(t) is None, _start(t) or 0.0))
    for trace in traces:
        for hint in trace["hints"]:
            hint["trace_id"] = renamed.get((hint.pop("file"), hint["trace_id"]), hint["trace_id"])
    return {
        "schema": SCHEMA,
        "sources": [{**s, "file": x["key"]} for x in summaries for s in x["sources"]],
        "traces": traces,
        "incidents": [_incident(x["key"], i, renamed) for x in summaries for i in x["incidents"]],
        "joins": [{k: v for k, v in j.items() if k != "nodes"} for j in joins],
    }


def _joins(summaries: Sequence[dict[str, Json]]) -> list[dict[str, Json]]:
    """One entry per id carried by traces of two files or more, close in time."""
    holders: dict[tuple[str, str], list[tuple[Node, str]]] = {}
    for f, summary in enumerate(summaries):
        for t, trace in enumerate(summary["traces"]):
            for kind, value, member in trace["keys"]:
                holders.setdefault((kind, value), []).append(((f, t), member))
    out = []
    for (kind, value), held in holders.items():
        if len({node[0] for node, _ in held}) < 2:
            continue
        for cluster in _close_in_time(summaries, held):
            files = list(dict.fromkeys(node[0] for node, _ in cluster))
            if len(files) < 2:
                continue
            out.append(
                {
                    "key": kind,
                    "value": value,
                    "files": [summaries[f]["key"] for f in files],
                    "calls": [_q(summaries[f]["key"], m) for (f, _), m in cluster],
                    "file_traces": [
                        {
                            "file": summaries[f]["key"],
                            "trace_id": summaries[f]["traces"][t]["trace_id"],
                        }
                        for (f, t), _ in cluster
                    ],
                    "trace_id": None,
                    "nodes": [node for node, _ in cluster],
                }
            )
    return out


def _close_in_time(
    summaries: Sequence[dict[str, Json]], held: list[tuple[Node, str]]
) -> Iterable[list[tuple[Node, str]]]:
    """``held`` in clusters whose traces follow each other within JOIN_WINDOW seconds
    (a trace without times joins the first cluster)."""

    def window(node: Node) -> list[float] | None:
        time: list[float] | None = summaries[node[0]]["traces"][node[1]]["time"]
        return time

    timed = sorted((h for h in held if window(h[0]) is not None), key=lambda h: window(h[0]))  # type: ignore[arg-type,return-value]
    untimed = [h for h in held if window(h[0]) is None]
    clusters: list[list[tuple[Node, str]]] = []
    end = 0.0
    for h in timed:
        start, stop = window(h[0])  # type: ignore[misc]
        if not clusters or start > end + JOIN_WINDOW:
            clusters.append([])
            end = stop
        clusters[-1].append(h)
        end = max(end, stop)
    if not clusters:
        clusters.append([])
    clusters[0].extend(untimed)
    return clusters


def _q(key: str, member: str | None) -> str | None:
    return f"{key}:{member}" if member is not None else None


def _merged(
    summaries: Sequence[dict[str, Json]], nodes: list[Node], joins: list[dict[str, Json]]
) -> dict[str, Json]:
    members = sorted(
        ((summaries[f]["key"], summaries[f]["traces"][t]) for f, t in nodes),
        key=lambda m: (_start(m[1]) is None, _start(m[1]) or 0.0),
    )
    qualified = [_qualified(key, trace) for key, trace in members]
    if len(qualified) == 1:
        return qualified[0]
    w3c = Counter(t["trace_id"] for t in qualified if t["trace_id_source"] == "traceparent")
    first = qualified[0]
    root = first["spans"][0]
    spans = [root]
    seen = {root["span_id"]}
    for trace in qualified:
        agent = trace["spans"][0] if trace["spans"] else None
        dropped = None
        if agent is not None and agent is not root and agent["kind"] == "agent":
            dropped = agent["span_id"]
            if not agent.get("synthesized") and agent["span_id"] not in seen:
                dropped = None  # an agent span seen on the wire stays
        for span in trace["spans"]:
            if span["span_id"] == dropped or span["span_id"] in seen:
                continue
            if dropped is not None and span["parent_id"] == dropped:
                span["parent_id"] = root["span_id"]
            seen.add(span["span_id"])
            spans.append(span)
    same = _same_calls(members)
    if same:
        spans = _one_span_per_call(spans, same)
    times = [t for tr in qualified for t in (tr.get("time") or [])]
    if times:
        root["started"], root["ended"] = min(times), max(times)
    spans[1:] = sorted(spans[1:], key=lambda s: (s["started"] is None, s["started"] or 0.0))
    cross = [
        {
            "origin": ORIGIN_OF[j["key"]],
            "cross_file": True,
            "key": j["key"],
            "value": j["value"],
            "files": j["files"],
            "calls": j["calls"],
        }
        for j in joins
    ]
    origins = {t["origin"] for t in qualified} | {e["origin"] for e in cross}
    return {
        "trace_id": w3c.most_common(1)[0][0] if w3c else first["trace_id"],
        "origin": next(o for o in ORIGINS if o in origins),
        "trace_id_source": "traceparent" if w3c else first["trace_id_source"],
        "evidence": [e for t in qualified for e in t["evidence"]] + cross,
        "hints": [h for t in qualified for h in t["hints"]],
        "calls": [c for t in qualified for c in t["calls"]],
        "spans": spans,
        "files": list(dict.fromkeys(key for key, _ in members)),
        "time": [min(times), max(times)] if times else None,
        "same_calls": _groups(same),
    }


def _same_calls(members: Sequence[tuple[str, dict[str, Json]]]) -> dict[str, str]:
    """Each call seen again in a later file (:func:`~agentshark.batch.keys.trace_sightings`:
    the same response id, or MCP session and JSON-RPC id) -> its first sighting."""
    first: dict[str, str] = {}
    out: dict[str, str] = {}
    for key, trace in members:
        for response, call in trace.get("sightings", {}).items():
            here = _q(key, call)
            assert here is not None
            kept = first.setdefault(response, here)
            if kept != here and kept.split(":", 1)[0] != key:
                out[here] = kept
    return out


def _groups(same: dict[str, str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for again, kept in same.items():
        groups.setdefault(kept, [kept]).append(again)
    return list(groups.values())


def _one_span_per_call(spans: list[dict[str, Json]], same: dict[str, str]) -> list[dict[str, Json]]:
    """A call seen in several files is one span: its other sightings are named by the
    first's ids, and a model or tool span that is then a twin of an earlier one is left
    out (a model span's ``seen_as`` lists the sightings left out)."""
    out: list[dict[str, Json]] = []
    kept: dict[tuple[Json, ...], dict[str, Json]] = {}
    for span in spans:
        own = span.get("call_id")
        for name in _SPAN_IDS:
            if span.get(name) in same:
                span[name] = same[span[name]]
        twin = (span["kind"], span["name"], span.get("tool_call_id"),
                *(span.get(n) for n in _SPAN_IDS))  # fmt: skip
        if span["kind"] in ("model", "tool") and twin in kept:
            if span["kind"] == "model" and own != span["call_id"]:
                kept[twin].setdefault("seen_as", []).append(own)
            continue
        kept[twin] = span
        out.append(span)
    return out


def _qualified(key: str, trace: dict[str, Json]) -> dict[str, Json]:
    """A copy of one file's trace with its ids qualified by the file's key."""
    out = {k: v for k, v in trace.items() if k not in ("keys", "sightings")}
    out["calls"] = [_q(key, c) for c in trace["calls"]]
    out["evidence"] = [_evidence(key, e) for e in trace["evidence"]]
    out["hints"] = [{**_evidence(key, h), "file": key} for h in trace["hints"]]
    out["spans"] = [_span(key, s) for s in trace["spans"]]
    out["files"] = [key]
    out["same_calls"] = []
    return out


def _evidence(key: str, e: dict[str, Json]) -> dict[str, Json]:
    out = dict(e)
    if "calls" in e:
        out["calls"] = [_q(key, c) for c in e["calls"]]
    if "connection" in e:
        out["connection"] = _q(key, e["connection"])
    return out


def _span(key: str, span: dict[str, Json]) -> dict[str, Json]:
    out = dict(span)
    for name in _SPAN_IDS:
        if name in span:
            out[name] = _q(key, span[name])
    out["links"] = [
        {**link, "call_id": _q(key, link["call_id"])} if "call_id" in link else link
        for link in span.get("links", [])
    ]
    return out


def _incident(key: str, incident: dict[str, Json], renamed: dict[tuple[str, str], str]) -> Json:
    out = dict(incident)
    for name in ("call_id", "exchange_id"):
        if name in out:
            out[name] = _q(key, out[name])
    if out.get("trace_id") is not None:
        out["trace_id"] = renamed.get((key, out["trace_id"]), out["trace_id"])
    out["file"] = key
    return out


def _start(trace: dict[str, Json]) -> float | None:
    time = trace.get("time")
    return time[0] if time else None
