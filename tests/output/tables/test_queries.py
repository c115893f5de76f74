"""docs/sql.md: its column tables are the schema's, and each of its eleven queries runs on real
captures (one export of several) with the result the JSON report of the same inputs gives,
worked out here in Python from the report."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentshark.output.tables.schema import TABLES, markdown
from tests.helpers import CAPTURES, ROOT
from tests.output.tables.readback import Export, Row, export, query

DOC = ROOT / "docs" / "sql.md"
DATA = ROOT / "tests" / "data"
QUERY = re.compile(r"^### (\d+)\. (.+?)\n.*?```sql\n(.*?)```", re.S | re.M)

# Seed 004 first: its second call is call3, the call of query 9.
FILES = [
    DATA / "runs/seed004_shenzhen/capture.pcap",
    DATA / "runs/parallel_tools_unanswered/capture.pcap",
    DATA / "runs/seed000_chat_mcp_stream/capture.pcap",
    CAPTURES / "llm_sdk_openai/capture.pcap",
    CAPTURES / "llm_sdk_anthropic/capture.pcap",
    CAPTURES / "mcp_http_plain/capture.pcap",
    DATA / "captures/bedrock_errors_tls13/capture.pcap",
    DATA / "captures/gemini_stream_tls13_h2/capture.pcap",
    DATA / "captures/h2_rst_stream/capture.pcap",
    DATA / "captures/mcp_streamable_sessions/capture.pcap",
    DATA / "captures/ws_sdk_realtime_deflate/capture.pcap",
    CAPTURES / "ws_realtime_plain/capture.pcap",
]


def _inputs() -> list[str]:
    out = [str(f) for f in FILES]
    for f in FILES:
        for keys in ("keys.log", "keylog.txt"):
            if (f.parent / keys).exists():
                out += ["--keylog", str(f.parent / keys)]
    return out


def documented() -> dict[str, str]:
    """The queries of docs/sql.md by title."""
    found = QUERY.findall(DOC.read_text())
    assert [int(n) for n, _, _ in found] == list(range(1, len(found) + 1))
    return {title: sql for _, title, sql in found}


def test_the_column_tables_are_the_schemas() -> None:
    text = DOC.read_text()
    begin = text.index("-->\n", text.index("<!-- BEGIN columns")) + len("-->\n")
    end = text.index("<!-- END columns -->")
    assert text[begin:end] == markdown(), "run: python scripts/sql_docs.py"
    for table in TABLES:  # and every column is there, in the generated tables
        assert all(f"| `{c.name}` | {c.type} |" in text for c in table.columns)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Export:
    return export(tmp_path_factory.mktemp("q"), None, _inputs())


def _seconds(call: dict[str, Any], start: str, end: str) -> float:
    t = call["timing"]
    return float(t[end] - t[start])


def _ttft(x: Export, rows: list[Row]) -> None:
    by_model: dict[str, list[float]] = defaultdict(list)
    for c in x.report["calls"]:
        if c["timing"]["first_token"] is not None:
            by_model[c["request_model"]].append(_seconds(c, "started", "first_token"))
    assert len(by_model) >= 4
    assert [r["model"] for r in rows] == sorted(by_model, key=lambda m: -max(by_model[m]))
    for r in rows:
        values = by_model[r["model"]]
        assert r["streamed_calls"] == len(values)
        assert r["slowest_ttft_s"] == pytest.approx(max(values), abs=1e-4)
        assert r["median_ttft_s"] == pytest.approx(statistics.median(values), abs=1e-4)


def _tokens(x: Export, rows: list[Row]) -> None:
    calls = {c["id"]: c for c in x.report["calls"]}
    want = []
    for t in x.report["traces"]:
        models = [calls[s["call_id"]] for s in t["spans"] if s["kind"] == "model"]
        if not models:
            continue
        sums = []
        for name in ("input_tokens", "output_tokens"):
            values = [c["usage"][name] for c in models if c["usage"] and c["usage"][name]]
            sums.append(sum(values) if values else None)
        want.append((t["trace_id"], len(models), *sums))
    got = [(r["trace_id"], r["model_calls"], r["input_tokens"], r["output_tokens"]) for r in rows]
    assert sorted(got, key=str) == sorted(want, key=str)
    inputs = [r["input_tokens"] for r in rows if r["input_tokens"] is not None]
    assert inputs == sorted(inputs, reverse=True) and len(inputs) >= 10


def _tool_spans(x: Export) -> list[tuple[str, dict[str, Any]]]:
    return [
        (t["trace_id"], s) for t in x.report["traces"] for s in t["spans"] if s["kind"] == "tool"
    ]


def _unanswered(x: Export, rows: list[Row]) -> None:
    want = sorted(
        (s["requested_by"], s["tool_call_id"], s["attributes"]["arguments"])
        for _, s in _tool_spans(x)
        if s["requested_by"] is not None and s["result_in"] is None
    )
    got = [
        (r["requested_by_call_id"], r["gen_ai_tool_call_id"], json.loads(r["arguments"]))
        for r in rows
    ]
    assert got == want and len(got) >= 2
    # the run made for this: two parallel tool calls, one answered (tests/data/runs/README.md)
    assert "call-weather-bj" in {r["gen_ai_tool_call_id"] for r in rows}


def _error_rate(x: Export, rows: list[Row]) -> None:
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for c in x.report["calls"]:
        provider = c["provider"] or c["api"]
        counts[provider] += 1
        errors[provider] += c["error"] is not None
    got = {r["provider"]: (r["n_calls"], r["errors"], r["error_rate"]) for r in rows}
    assert got == {p: (n, errors[p], round(errors[p] / n, 3)) for p, n in counts.items()}
    assert sum(errors.values()) >= 4
    rates = [r["error_rate"] for r in rows]
    assert rates == sorted(rates, reverse=True)


def _incidents(x: Export, rows: list[Row]) -> None:
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for i in x.report["incidents"]:
        where[i["rule"], i["severity"]].append(i.get("call_id") or i["exchange_id"])
    got = {(r["rule"], r["severity"]): r["found_in"] for r in rows}
    assert got == where and len(got) >= 3
    assert all(r["incidents"] == len(r["found_in"]) for r in rows)


def _incomplete(x: Export, rows: list[Row]) -> None:
    exchanges = {e["id"]: e for e in x.report["exchanges"]}
    want = []
    for c in sorted(x.report["calls"], key=lambda c: c["id"]):
        if not c["complete"]:
            ex = exchanges[c["exchange_id"]]
            codes = [d["code"] for d in c["diagnostics"] + ex["diagnostics"]]
            want.append((c["id"], c["api"], ex["response"]["complete"], codes))
    got = [(r["call_id"], r["api"], r["response_complete"], r["why"]) for r in rows]
    assert got == want and any("h2.stream_reset" in codes for *_, codes in got)


def _executions(x: Export, rows: list[Row]) -> None:
    calls = {c["id"]: c for c in x.report["calls"]}
    spans = [s for _, s in _tool_spans(x) if s["call_id"] is not None]
    want = sorted(
        (s["name"].removeprefix("execute_tool "), calls[s["call_id"]]["operation"], s["started"])
        for s in spans
    )
    got = [(r["gen_ai_tool_name"], r["gen_ai_operation_name"]) for r in rows]
    assert sorted(got) == sorted((n, op) for n, op, _ in want) and len(got) >= 5
    arguments = sorted((s["name"], _json_text(s["attributes"].get("arguments"))) for s in spans)
    got_arguments = [
        (f"execute_tool {r['gen_ai_tool_name']}", _json_text(json.loads(r["arguments"])))
        for r in rows
    ]
    assert sorted(got_arguments) == arguments


def _streams(x: Export, rows: list[Row]) -> None:
    events = {
        e["id"]: e["response"]["events"]
        for e in x.events["exchanges"]
        if e["response"] and e["response"].get("events")
    }
    want = {}
    for c in x.report["calls"]:
        evs = events.get(c["exchange_id"])
        if c["stream"] and evs:
            times = [e["ts"] for e in evs if e["ts"] is not None]
            cut = sum(1 for e in evs if e.get("complete", True) is False)
            want[c["id"]] = (c["api"], len(evs), max(times) - min(times), cut)
    assert {r["call_id"] for r in rows} == set(want) and len(want) >= 8
    for r in rows:
        api, n, span, cut = want[r["call_id"]]
        assert (r["api"], r["events"], r["cut_events"]) == (api, n, cut)
        assert r["stream_s"] == pytest.approx(span, abs=1e-4)
    assert [r["events"] for r in rows] == sorted((r["events"] for r in rows), reverse=True)


def _conversation(x: Export, rows: list[Row]) -> None:
    (call,) = [c for c in x.report["calls"] if c["id"] == "call3"]
    assert call["request_model"] == "gpt-4.1"  # seed 004's second call
    want: list[tuple[Any, ...]] = [
        ("system", None, None, i, p["type"], p["content"])
        for i, p in enumerate(call["system_instructions"])
    ]
    for direction in ("input", "output"):
        for m, message in enumerate(call[f"{direction}_messages"]):
            for i, p in enumerate(message["parts"]):
                text = p.get("content") or p.get("name")
                if text is None and "response" in p:
                    text = _json_text(p["response"])
                want.append((direction, m, message["role"], i, p["type"], text))
    got = [tuple(r.values()) for r in rows]
    assert got == want
    assert "预计有雨" in rows[-1]["text"]  # the answer: rain expected


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sessions(x: Export, rows: list[Row]) -> None:
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in x.report["calls"]:
        sid = c["ids"].get("mcp_session_id")
        if c["api"] == "mcp" and sid is not None:
            sessions[sid].append(c)
    assert {r["mcp_session_id"] for r in rows} == set(sessions) and len(sessions) >= 2
    for r in rows:
        calls = sorted(
            sessions[r["mcp_session_id"]], key=lambda c: (c["timing"]["started"], c["id"])
        )
        assert r["messages"] == len(calls)
        assert r["methods"] == [c["operation"] for c in calls]
        assert "tools/call" in r["methods"] or "initialize" in r["methods"]


def _ws_sessions(x: Export, rows: list[Row]) -> None:
    want = {}
    for ex in x.events["exchanges"]:
        for side in ("client", "server"):
            messages = [m for m in ex.get("messages") or () if m["direction"] == side]
            if not messages:
                continue
            types = {
                json.loads(m["text"]).get("type")
                for m in messages
                if m["type"] == "text" and "text" in m
            }
            want[(ex["id"], side)] = {
                "messages": len(messages),
                "bytes": sum(m["size"] for m in messages),
                "lost": sum(1 for m in messages if not m["complete"] or not m["decoded"]),
                "calls": sum(1 for c in x.report["calls"] if c["exchange_id"] == ex["id"]),
                "event_types": sorted(t for t in types if t is not None) or None,
            }
    got = {
        (r["exchange_id"], r["direction"]): {k: r[k] for k in want[next(iter(want))]} for r in rows
    }
    assert got == want and len({eid for eid, _ in want}) == 2
    assert all(w["calls"] >= 1 for w in want.values())
    assert any("response.done" in (w["event_types"] or ()) for w in want.values())


CHECKS: dict[str, Callable[[Export, list[Row]], None]] = {
    "Slowest time to first token per model": _ttft,
    "Tokens per trace": _tokens,
    "Tool calls the model never got a result for": _unanswered,
    "Error rate per provider": _error_rate,
    "Incidents per rule": _incidents,
    "Calls marked incomplete, and why": _incomplete,
    "Tool calls and the calls that executed them": _executions,
    "Streams: events, duration and cut events per streamed call": _streams,
    "One call's conversation, part by part": _conversation,
    "What each MCP session did, in order": _sessions,
    "WebSocket sessions: messages, bytes and event types per direction": _ws_sessions,
}


def test_every_documented_query_is_checked() -> None:
    assert list(documented()) == list(CHECKS)


@pytest.mark.parametrize("title", list(CHECKS))
def test_documented_query(exported: Export, title: str) -> None:
    rows = query(exported.db, documented()[title])
    assert rows
    CHECKS[title](exported, rows)


def test_queries_run_on_the_parquet_files_too(exported: Export) -> None:
    """The same answers from views over the Parquet files, as the page shows them."""
    import duckdb

    con = duckdb.connect()
    for table in TABLES:
        path = str(Path(exported.parquet) / f"{table.name}.parquet")
        con.execute(f"CREATE VIEW {table.name} AS FROM '{path}'")
    for title, sql in documented().items():
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description or ()]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        # the same rows; ties in ORDER BY may come in either order from the two engines' plans
        assert sorted(map(repr, rows)) == sorted(map(repr, query(exported.db, sql))), title
