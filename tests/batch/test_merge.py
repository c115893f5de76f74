"""The merge of a batch's summaries: joins by shared ids only, close in time, each recorded;
one agent span per merged run; a call seen in several files is one span. And one task in
this process, on an input of another fsspec file system."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.batch.keys import unique_looking
from agentshark.batch.merge import JOIN_WINDOW, merge

Json = Any
REPO = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
RESPONSE = "resp_67ccd2bed1ec8190b14f964abc054267"


def trace(
    trace_id: str, calls: list[str], start: float, keys: list[list[str]], **extra: Json
) -> dict[str, Json]:
    agent = f"a{trace_id[:15]}"
    spans = [
        {"span_id": agent, "parent_id": None, "kind": "agent", "name": "invoke_agent",
         "started": start, "ended": start + 2, "links": [], "call_id": None,
         "synthesized": True},
        *({"span_id": f"s{trace_id[:8]}{c}", "parent_id": agent, "kind": "model",
           "name": "chat", "started": start + n, "ended": start + n + 1, "links": [],
           "call_id": c} for n, c in enumerate(calls)),
    ]  # fmt: skip
    return {
        "trace_id": trace_id,
        "origin": "single" if len(calls) == 1 else "history",
        "trace_id_source": "generated",
        "evidence": [],
        "hints": [],
        "calls": calls,
        "spans": spans,
        "time": [start, start + 2],
        "keys": keys,
        "sightings": {},
        **extra,
    }


def summary(key: str, *traces: dict[str, Json]) -> dict[str, Json]:
    return {"key": key, "sha256": key * 4, "url": f"{key}.pcap", "sources": [{"path": key}],
            "traces": list(traces), "incidents": []}  # fmt: skip


def test_a_continuation_in_another_file_joins_by_response_id() -> None:
    a = summary("aaaa", trace("1" * 32, ["call1"], 100.0, [["response_id", RESPONSE, "call1"]]))
    b = summary("bbbb", trace("2" * 32, ["call1"], 103.0, [["response_id", RESPONSE, "call1"]]))
    merged = merge([a, b])
    assert merged["joins"] == [
        {
            "key": "response_id",
            "value": RESPONSE,
            "files": ["aaaa", "bbbb"],
            "calls": ["aaaa:call1", "bbbb:call1"],
            "file_traces": [
                {"file": "aaaa", "trace_id": "1" * 32},
                {"file": "bbbb", "trace_id": "2" * 32},
            ],
            "trace_id": "1" * 32,
        }
    ]
    [one] = merged["traces"]
    assert one["calls"] == ["aaaa:call1", "bbbb:call1"]
    assert one["origin"] == "previous_response_id"
    assert [s["kind"] for s in one["spans"]] == ["agent", "model", "model"]
    agent = one["spans"][0]["span_id"]
    assert all(s["parent_id"] == agent for s in one["spans"][1:])
    assert one["evidence"][-1]["cross_file"] is True
    assert one["same_calls"] == []  # a continuation, not the same call
    assert [s["file"] for s in merged["sources"]] == ["aaaa", "bbbb"]


def test_the_same_call_in_two_files_is_one_span() -> None:
    keys = [["response_id", RESPONSE, "call2"]]
    sightings = {f"response_id {RESPONSE}": "call2"}
    a = summary("aaaa", trace("1" * 32, ["call2"], 100.0, keys, sightings=sightings))
    b = summary("bbbb", trace("2" * 32, ["call7"], 100.1, [["response_id", RESPONSE, "call7"]],
                              sightings={f"response_id {RESPONSE}": "call7"}))  # fmt: skip
    [one] = merge([a, b])["traces"]
    assert one["same_calls"] == [["aaaa:call2", "bbbb:call7"]]
    models = [s for s in one["spans"] if s["kind"] == "model"]
    assert [(s["call_id"], s["seen_as"]) for s in models] == [("aaaa:call2", ["bbbb:call7"])]


def test_an_mcp_call_seen_by_the_client_and_a_gateway_is_one_span() -> None:
    """The same session, JSON-RPC id and method: one call, its tool span once."""
    session = "c2243a905f71487895ee89148c682c86"
    keys = [["mcp_session", session, "call1"]]

    def seen(key: str, call: str, start: float) -> dict[str, Json]:
        t = trace(key * 8, [call], start, [[k, v, call] for k, v, _ in keys],
                  sightings={f"mcp {session} 3 tools/call": call})  # fmt: skip
        t["spans"][1].update(kind="tool", name="execute_tool get_weather", execution=call,
                             tool_call_id=None, requested_by=None)  # fmt: skip
        return summary(key, t)

    [one] = merge([seen("aaaa", "call4", 10.0), seen("bbbb", "call9", 10.01)])["traces"]
    assert one["same_calls"] == [["aaaa:call4", "bbbb:call9"]]
    tools = [s for s in one["spans"] if s["kind"] == "tool"]
    assert [(s["call_id"], s["execution"]) for s in tools] == [("aaaa:call4", "aaaa:call4")]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("traceparent", TRACE_ID),
        ("a2a_context", "0f3c8d2a-5b7e-4c1d-9a6f-2e8b4d7c1a90"),
        ("mcp_session", "c2243a905f71487895ee89148c682c86"),
        ("tool_call_id", "call_8gFZ1v2oQ0mXo3Jk4LbQ9aTt"),
    ],
)
def test_each_kind_of_id_joins_within_the_window(kind: str, value: str) -> None:
    a = summary("aaaa", trace("1" * 32, ["call1"], 100.0, [[kind, value, "call1"]]))
    near = summary(
        "bbbb", trace("2" * 32, ["call1"], 102.0 + JOIN_WINDOW, [[kind, value, "call1"]])
    )
    far = summary("cccc", trace("3" * 32, ["call1"], 7300.0, [[kind, value, "call1"]]))
    merged = merge([a, near, far])
    assert [j["files"] for j in merged["joins"]] == [["aaaa", "bbbb"]]
    assert sorted(len(t["files"]) for t in merged["traces"]) == [1, 2]
    assert merged["traces"][0]["origin"] == {"traceparent": "traceparent",
        "a2a_context": "a2a_context", "mcp_session": "mcp_session",
        "tool_call_id": "tool_call"}[kind]  # fmt: skip


def test_a_file_alone_keeps_its_traces_with_ids_qualified() -> None:
    hint = {"origin": "connection", "trace_id": "9" * 32, "connection": "c2", "calls": ["call1"]}
    lone = trace("1" * 32, ["call1", "e4"], 5.0, [], hints=[hint])
    merged = merge([summary("aaaa", lone)])
    [one] = merged["traces"]
    assert one["calls"] == ["aaaa:call1", "aaaa:e4"]
    assert one["spans"][1]["call_id"] == "aaaa:call1"
    assert one["hints"] == [
        {"origin": "connection", "trace_id": "9" * 32, "connection": "aaaa:c2",
         "calls": ["aaaa:call1"]}]  # fmt: skip
    assert merged["joins"] == []


@pytest.mark.parametrize(
    ("value", "unique"),
    [
        ("call_1", False),
        ("ctx-1", False),
        ("resp_0001", False),
        ("chatcmpl-enqueue_task-1", False),
        ("7", False),
        ("chatcmpl-B9MBs8CjcvOU2jLn4n570S", True),
        ("toolu_01A09q90qw90lq917835lq9", True),
        (TRACE_ID, True),
        ("550e8400-e29b-41d4-a716-446655440000", True),
    ],
)
def test_only_ids_made_to_be_unique_join(value: str, unique: bool) -> None:
    assert unique_looking(value) is unique


def test_an_input_on_another_file_system_is_copied_hashed_and_analyzed(tmp_path: Path) -> None:
    """Through fsspec (its in-memory file system, as s3:// or gs:// would be): the folder is
    listed, each input copied to a temporary file, and its source named by the URL."""
    import fsspec

    from agentshark.batch.inputs import expand
    from agentshark.batch.task import TaskOptions, analyze_one

    fs = fsspec.filesystem("memory")
    data = (REPO / "tests" / "data" / "runs" / "seed004_shenzhen" / "capture.pcap").read_bytes()
    fs.pipe("/agentshark-test/run/capture.pcap", data)
    fs.pipe("/agentshark-test/run/notes.txt", b"not an input")
    try:
        [found] = expand(["memory://agentshark-test/run"])
        assert found.url == "memory:///agentshark-test/run/capture.pcap" and found.local is None
        opts = TaskOptions(out=str(tmp_path), fingerprint="f")
        result = analyze_one(found, opts)
        assert result["status"] == "done", result
        assert result["sha256"] == hashlib.sha256(data).hexdigest()
        report = json.loads((tmp_path / "files" / result["key"] / "report.json").read_bytes())
        assert report["sources"][0]["path"] == found.url
        assert [len(t["calls"]) for t in report["traces"]] == [3]
        assert analyze_one(found, opts)["status"] == "skipped"
    finally:
        fs.rm("/agentshark-test", recursive=True)
