"""The tables join back to the JSON report exactly: every row of every table is an entry of
the report (same ids in the same order, same counts, tokens, times to the microsecond,
message and part text, tool calls, incidents), read back from Parquet with pyarrow and
DuckDB and from the DuckDB database (equal, :mod:`tests.output.tables.readback`).

Inputs: the corpus tool loops (``tests/trace/test_corpus_runs.py``), every capture of
``../shared/captures`` and ``tests/data`` (with its key log), and several at once.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from agentshark.output.tables.schema import TABLES
from tests.helpers import CAPTURES, CORPUS, ROOT
from tests.output.tables.readback import Export, Row, export, micros
from tests.trace.test_corpus_runs import RUNS

DATA = ROOT / "tests" / "data"


def _inputs(folder: Path) -> list[str]:
    capture = folder / "capture.pcap"
    files = [str(capture if capture.exists() else folder / "transcript.jsonl")]
    for keys in ("keys.log", "keylog.txt"):
        if (folder / keys).exists():
            files += ["--keylog", str(folder / keys)]
    return files


INPUTS: dict[str, list[str]] = {
    **{f"corpus:{Path(name).stem}": [str(CORPUS / name)] for name in sorted(RUNS)},
    **{f"shared:{d.name}": _inputs(d) for d in sorted(CAPTURES.iterdir()) if d.is_dir()},
    **{
        f"data:{d.name}": _inputs(d)
        for kind in ("captures", "runs")
        for d in sorted((DATA / kind).iterdir())
        if d.is_dir()
    },
}

# inputs whose report holds no exchange by design (none now: ``h3_midway``, a QUIC
# connection seen from its middle, is opened by trying its key log's sessions)
NO_EXCHANGES: set[str] = set()


def check_exchanges(x: Export) -> None:
    rows = x.tables["exchanges"]
    exchanges = x.report["exchanges"]
    assert [r["exchange_id"] for r in rows] == [e["id"] for e in exchanges]
    files = {s["path"] for s in x.report["sources"]}
    for row, ex in zip(rows, exchanges, strict=True):
        req, resp = ex["request"] or {}, ex["response"] or {}
        assert row["capture_file"] in files
        assert row["connection_id"] == ex["connection"]
        assert (row["transport"], row["stream_id"]) == (ex["transport"], ex["stream"])
        assert row["http_request_method"] == req.get("method")
        assert row["url_full"] == req.get("url")
        assert row["request_headers"] == req.get("headers")
        assert row["request_body_bytes"] == req.get("body_bytes")
        assert row["request_started"] == micros(req.get("started"))
        assert row["http_response_status_code"] == resp.get("status")
        assert row["response_headers"] == resp.get("headers")
        assert row["response_body_bytes"] == resp.get("body_bytes")
        assert row["response_first_byte"] == micros(resp.get("first_byte"))
        assert row["response_ended"] == micros(resp.get("ended"))
        assert row["response_complete"] == resp.get("complete")
        assert row["complete"] == ex["complete"]
        assert row["tls"] == ex["tls"]


def check_stream_events(x: Export) -> None:
    """Against the ``exchanges --events`` report: every event, in order."""
    got: dict[str, list[Row]] = defaultdict(list)
    for row in x.tables["stream_events"]:
        got[row["exchange_id"]].append(row)
    want = {
        e["id"]: e["response"]["events"]
        for e in x.events["exchanges"]
        if e["response"] and "events" in e["response"]
    }
    assert set(got) == {k for k, v in want.items() if v}
    by_id = {r["exchange_id"]: r for r in x.tables["exchanges"]}
    for eid, events in want.items():
        rows = got.get(eid, [])
        assert by_id[eid]["stream_event_count"] == len(events) == len(rows)
        for i, (row, ev) in enumerate(zip(rows, events, strict=True)):
            assert row["event_index"] == i
            assert (row["type"], row["body_offset"], row["ts"]) == (
                ev["type"],
                ev["offset"],
                micros(ev["ts"]),
            )
            assert row["data"] == ev.get("data", ev.get("payload"))
            assert row["sse_event"] == ev.get("event")
            assert row["comment"] == ev.get("text")
            assert row["complete"] is ev.get("complete", True)


def check_ws_messages(x: Export) -> None:
    """Against the ``exchanges --events`` report: every WebSocket message, in order."""
    got: dict[str, list[Row]] = defaultdict(list)
    for row in x.tables["ws_messages"]:
        got[row["exchange_id"]].append(row)
    want = {e["id"]: e["messages"] for e in x.events["exchanges"] if e.get("messages")}
    assert set(got) == set(want)
    for eid, messages in want.items():
        rows = got[eid]
        assert [r["message_index"] for r in rows] == list(range(len(messages)))
        for row, m in zip(rows, messages, strict=True):
            assert (row["direction"], row["type"], row["size"], row["wire_size"]) == (
                m["direction"],
                m["type"],
                m["size"],
                m["wire_size"],
            )
            assert (row["started"], row["ended"]) == (
                micros(m["started"] or None),
                micros(m["ended"] or None),
            )
            assert (row["complete"], row["decoded"], row["stream_offset"]) == (
                m["complete"],
                m["decoded"],
                m["offset"],
            )
            assert (row["text"], row["base64"]) == (m.get("text"), m.get("base64"))
            assert (row["close_code"], row["close_reason"]) == (
                m.get("close_code"),
                m.get("close_reason"),
            )
            assert row["diagnostics"] == m["diagnostics"]


_USAGE = {
    "gen_ai_usage_input_tokens": "input_tokens",
    "gen_ai_usage_output_tokens": "output_tokens",
    "gen_ai_usage_cache_read_input_tokens": "cached_input_tokens",
    "gen_ai_usage_cache_creation_input_tokens": "cache_creation_input_tokens",
    "gen_ai_usage_reasoning_output_tokens": "reasoning_tokens",
    "usage_total_tokens": "total_tokens",
}


def check_calls(x: Export) -> None:
    rows = x.tables["calls"]
    calls = x.report["calls"]
    assert [r["call_id"] for r in rows] == [c["id"] for c in calls]
    source_of = {e["id"]: e["source"] for e in x.report["exchanges"]}
    for row, call in zip(rows, calls, strict=True):
        assert row["exchange_id"] == call["exchange_id"]
        assert row["source_index"] == source_of[call["exchange_id"]]
        assert row["api"] == call["api"]
        assert row["gen_ai_provider_name"] == call["provider"]
        assert row["gen_ai_operation_name"] == call["operation"]
        assert row["gen_ai_request_model"] == call["request_model"]
        assert row["gen_ai_response_model"] == call["response_model"]
        assert row["gen_ai_response_id"] == call["response_id"]
        assert (row["stream"], row["complete"]) == (call["stream"], call["complete"])
        assert row["gen_ai_response_finish_reasons"] == call["finish_reasons"]
        usage = call["usage"] or {}
        for column, name in _USAGE.items():
            assert row[column] == usage.get(name), (call["id"], column)
        error = call["error"] or {}
        assert row["error_status"] == error.get("status")
        assert row["error_type"] == error.get("type")
        assert row["error_message"] == error.get("message")
        for name in ("started", "first_byte", "first_token", "ended"):
            assert row[name] == micros(call["timing"][name])
        assert row["ids"] == call["ids"]
        assert row["jsonrpc_request_id"] == _text(call["ids"].get("jsonrpc_id"))
        assert row["mcp_session_id"] == call["ids"].get("mcp_session_id")
        assert row["diagnostics"] == call["diagnostics"]
        assert row["tool_definitions"] == call["tool_definitions"]
        assert row["extras"] == call["extras"]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# A part's fields by type, as the report (OTel GenAI part schema) has them, and the columns
# that hold them; every other field is in ``extra``.
_PART_FIELDS = {
    "text": {"content": "content"},
    "reasoning": {"content": "content"},
    "tool_call": {
        "id": "gen_ai_tool_call_id",
        "name": "gen_ai_tool_name",
        "arguments": "arguments",
        "arguments_raw": "arguments_raw",
        "arguments_error": "arguments_error",
    },
    "tool_call_response": {"id": "gen_ai_tool_call_id", "response": "response"},
    "blob": {"mime_type": "mime_type", "modality": "modality", "content": "content"},
    "uri": {"uri": "uri", "mime_type": "mime_type", "modality": "modality"},
    "file": {"file_id": "file_id", "mime_type": "mime_type", "modality": "modality"},
}


def _part(row: Row) -> dict[str, Any]:
    """The report's part, rebuilt from its row."""
    fields = _PART_FIELDS.get(row["type"], {})
    return {"type": row["type"], **{f: row[c] for f, c in fields.items()}, **(row["extra"] or {})}


def check_messages_and_parts(x: Export) -> None:
    messages: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in x.tables["messages"]:
        messages[row["call_id"], row["direction"]].append(row)
    parts: dict[tuple[str, str, int | None], list[Row]] = defaultdict(list)
    for row in x.tables["parts"]:
        parts[row["call_id"], row["direction"], row["message_index"]].append(row)
    n_messages = n_parts = 0
    for call in x.report["calls"]:
        cid = call["id"]
        system = parts.get((cid, "system", None), [])
        assert [_part(p) for p in system] == call["system_instructions"]
        assert [p["part_index"] for p in system] == list(range(len(system)))
        n_parts += len(system)
        for direction in ("input", "output"):
            want = call[f"{direction}_messages"]
            got = messages.get((cid, direction), [])
            assert [m["message_index"] for m in got] == list(range(len(want)))
            for row, message in zip(got, want, strict=True):
                assert row["role"] == message["role"]
                assert row["name"] == message.get("name")
                assert row["finish_reason"] == message.get("finish_reason")
                in_message = parts.get((cid, direction, row["message_index"]), [])
                assert row["part_count"] == len(in_message) == len(message["parts"])
                assert [_part(p) for p in in_message] == message["parts"]
                n_parts += len(in_message)
            n_messages += len(want)
    assert len(x.tables["messages"]) == n_messages
    assert len(x.tables["parts"]) == n_parts


def check_traces(x: Export) -> None:
    traces = x.report["traces"]
    assert [t["trace_id"] for t in x.tables["traces"]] == [t["trace_id"] for t in traces]
    spans = [(t["trace_id"], s) for t in traces for s in t["spans"]]
    rows = x.tables["spans"]
    assert [(r["trace_id"], r["span_id"]) for r in rows] == [(t, s["span_id"]) for t, s in spans]
    for row, (_, span) in zip(rows, spans, strict=True):
        assert row["parent_span_id"] == span["parent_id"]
        assert (row["kind"], row["name"], row["call_id"]) == (
            span["kind"],
            span["name"],
            span["call_id"],
        )
        assert (row["started"], row["ended"]) == (micros(span["started"]), micros(span["ended"]))
        assert row["attributes"] == span["attributes"]
        assert row["synthesized"] is span.get("synthesized", False)
    for trow, trace in zip(x.tables["traces"], traces, strict=True):
        assert trow["call_ids"] == trace["calls"]
        assert trow["span_count"] == len(trace["spans"])
        assert trow["origin"] == trace["origin"]
    tools = [(t, s) for t, s in spans if s["kind"] == "tool"]
    assert len(x.tables["tool_calls"]) == len(tools)
    for row, (tid, span) in zip(x.tables["tool_calls"], tools, strict=True):
        attrs = span["attributes"]
        assert (row["trace_id"], row["span_id"]) == (tid, span["span_id"])
        assert row["gen_ai_tool_call_id"] == span["tool_call_id"]
        assert f"execute_tool {row['gen_ai_tool_name']}" == span["name"]
        assert row["requested_by_call_id"] == span["requested_by"]
        assert row["result_in_call_id"] == span["result_in"]
        assert row["execution_id"] == span["execution"]
        assert row["inferred"] is span["inferred"]
        assert row["arguments"] == attrs.get("arguments")
        assert row["result"] == attrs.get("result")


def check_rest(x: Export) -> None:
    incidents = x.report["incidents"]
    rows = x.tables["incidents"]
    assert [(r["rule"], r["severity"], r["message"]) for r in rows] == [
        (i["rule"], i["severity"], i["message"]) for i in incidents
    ]
    for row, inc in zip(rows, incidents, strict=True):
        assert (row["call_id"], row["exchange_id"], row["trace_id"]) == (
            inc.get("call_id"),
            inc.get("exchange_id"),
            inc["trace_id"],
        )
        assert row["evidence"] == inc["evidence"]
    conns = x.report["connections"]
    rows = x.tables["connections"]
    assert [r["connection_id"] for r in rows] == [c["id"] for c in conns]
    for row, conn in zip(rows, conns, strict=True):
        assert (row["client_port"], row["server_port"]) == (
            conn["client"]["port"],
            conn["server"]["port"],
        )
        assert (row["client_bytes"], row["server_bytes"]) == (
            conn["bytes"]["client"],
            conn["bytes"]["server"],
        )
        assert row["first_seen"] == micros(conn["first_ts"])
        assert row["exchange_count"] == conn["exchanges"]
        assert row["tls"] == conn["tls"]
    sources = x.report["sources"]
    assert [(r["capture_file"], r["format"], r["exchange_count"]) for r in x.tables["sources"]] == [
        (s["path"], s["format"], s["exchanges"]) for s in sources
    ]


def check_all(x: Export) -> None:
    check_exchanges(x)
    check_stream_events(x)
    check_ws_messages(x)
    check_calls(x)
    check_messages_and_parts(x)
    check_traces(x)
    check_rest(x)
    for table in TABLES:  # the keys name one row each
        keys = [tuple(r[k] for k in table.key) for r in x.tables[table.name]]
        assert len(set(keys)) == len(keys), table.name


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_tables_join_back_to_the_report(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each input alone, its Parquet tables read with pyarrow and DuckDB."""
    x = export(tmp_path, capsys, INPUTS[name], duckdb_file=False)
    check_all(x)
    if name in NO_EXCHANGES:
        assert x.tables["exchanges"] == [] == x.report["exchanges"]
        assert x.report["connections"]
    else:
        assert len(x.tables["exchanges"]) == len(x.report["exchanges"]) > 0


@pytest.mark.parametrize("group", ["corpus", "shared", "data"])
def test_several_inputs_at_once(
    group: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """All the inputs of a group in one export, to Parquet and to DuckDB: ids stay unique
    across inputs (``s0.c1``), each row names its capture file."""
    names = [n for n in INPUTS if n.startswith(f"{group}:")]
    files = [f for n in names for f in INPUTS[n][:1]]
    keylogs = [a for n in names for a in INPUTS[n][1:]]  # "--keylog", path...
    x = export(tmp_path, capsys, [*files, *keylogs])
    check_all(x)
    used = {r["capture_file"] for r in x.tables["exchanges"]}
    assert used == {f for n in names if n not in NO_EXCHANGES for f in INPUTS[n][:1]}
    by_source = {r["source_index"]: r["capture_file"] for r in x.tables["sources"]}
    assert all(by_source[r["source_index"]] == r["capture_file"] for r in x.tables["calls"])
