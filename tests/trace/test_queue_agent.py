"""The agent run of scripts/make_queue_agent_captures.py (the openai SDK against a model stub;
the agent XADDs a task that a worker process reads with XREADGROUP, runs through the model,
writes to PostgreSQL with psycopg and XACKs), against the programs' own records: the
message's life publish -> deliver -> ack, the tool call that published it, the SQL span, the
producer and consumer runs linked, in the JSON report, the OTLP export and the text view."""

from __future__ import annotations

import functools
import io
import json
from typing import Any

from agentshark.library.analyze import analyze
from agentshark.output.otlp.export import Indexer, requests
from agentshark.output.redact import redactor
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import Options, run
from agentshark.trace.collect import Analysis
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures" / "queue_agent_redis"
PCAP = str(FOLDER / "capture.pcap")


@functools.cache
def truth() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FOLDER / "truth.json").read_text())
    return data


@functools.cache
def report() -> dict[str, Any]:
    return analyze(PCAP).to_json()


def test_the_message_life_is_the_programs() -> None:
    t = truth()
    entry = t["agent"]["published"]["entry_id"]
    assert t["worker"]["delivered"]["entry_id"] == entry == t["worker"]["acked"]["entry_id"]
    (life,) = report()["queue_messages"]
    assert life["system"] == "redis" and life["destination"] == t["agent"]["published"]["stream"]
    assert life["identity"] == {"message_id": entry}
    assert [e["action"] for e in life["events"]] == ["publish", "deliver", "ack"]
    assert life["outcome"] == "acked"
    delays = [e["delay"] for e in life["events"]]
    assert delays[0] is None and all(d > 0 for d in delays[1:])
    exchanges = {e["id"]: e for e in report()["exchanges"]}
    commands = [exchanges[e["exchange_id"]]["request"]["method"] for e in life["events"]]
    assert commands == ["XADD", "XREADGROUP", "XACK"]
    publish = exchanges[life["events"][0]["exchange_id"]]["operation"]["messages"][0]
    assert publish["payload"] == t["worker"]["delivered"]["fields"]


def spans_of(kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(t, s) for t in report()["traces"] for s in t["spans"] if s["kind"] == kind]


def test_the_tool_call_published_it_and_the_runs_are_linked() -> None:
    t = truth()
    (life,) = report()["queue_messages"]
    tools = {s["tool_call_id"]: (tr, s) for tr, s in spans_of("tool")}
    producer, enqueue = tools[t["agent"]["tool_call"]["id"]]
    consumer, save = tools[t["worker"]["tool_call"]["id"]]
    assert producer is not consumer  # two runs: the agent's and the worker's
    assert enqueue["execution"] == life["events"][0]["exchange_id"]  # the XADD
    assert enqueue["attributes"]["arguments"] == t["agent"]["tool_call"]["arguments"]
    (run_link,) = life["runs"]
    assert run_link["producer"] == producer["trace_id"]
    assert run_link["producer_tool_span"] == enqueue["span_id"]
    assert run_link["consumer"] == consumer["trace_id"]
    assert run_link["origin"] == "payload_in_prompt"
    calls = {c["id"]: c for c in report()["calls"]}
    prompt = calls[run_link["consumer_call"]]["input_messages"][0]["parts"][0]["content"]
    assert prompt == t["worker"]["prompt"]
    exchanges = {e["id"]: e for e in report()["exchanges"]}
    sql = exchanges[save["execution"]]["operation"]  # the worker's INSERT ran save_result
    assert sql["protocol"] == "postgresql" and sql["result"] == t["worker"]["command_tag"]
    assert sql["parameters"] == t["worker"]["parameters"]


def test_messaging_spans_in_each_run() -> None:
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for tr, s in spans_of("messaging"):
        by_trace.setdefault(tr["trace_id"], []).append(s)
    (life,) = report()["queue_messages"]
    (run_link,) = life["runs"]
    (publish,) = by_trace[run_link["producer"]]
    deliver, ack = by_trace[run_link["consumer"]]
    assert publish["parent_id"] == run_link["producer_tool_span"]
    assert [s["attributes"]["operation_type"] for s in (publish, deliver, ack)] == [
        "send", "receive", "settle"
    ]  # fmt: skip
    for span in (deliver, ack):
        assert span["links"] == [
            {"trace_id": run_link["producer"], "span_id": publish["span_id"],
             "origin": "payload_in_prompt", "life": life["id"]}
        ]  # fmt: skip
    assert ack["attributes"]["outcome"] == "acked"
    agent = next(s for tr, s in spans_of("agent") if tr["trace_id"] == run_link["consumer"])
    assert agent["started"] <= deliver["started"] and agent["ended"] >= ack["ended"]


def analysis() -> tuple[Analysis, Indexer]:
    a = Analysis()
    index = Indexer(redactor(True))
    for _ in a.watch(index.watch(run([PCAP], Options(calls=True)))):
        pass
    a.finish()
    return a, index


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def test_otlp_messaging_spans() -> None:
    a, index = analysis()
    spans = [s for req in requests(a, index.index, [PCAP], redact=redactor(True))
             for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]  # fmt: skip
    messaging = {
        s.name: s for s in spans if any(kv.key == "messaging.system" for kv in s.attributes)
    }
    assert sorted(messaging) == ["ack agent:tasks", "deliver agent:tasks", "publish agent:tasks"]
    attrs = {
        name: {kv.key: value(kv.value) for kv in s.attributes} for name, s in messaging.items()
    }
    entry = truth()["agent"]["published"]["entry_id"]
    publish = attrs["publish agent:tasks"]
    assert publish["messaging.system"] == "redis"
    assert publish["messaging.operation.type"] == "send"
    assert publish["messaging.destination.name"] == "agent:tasks"
    assert publish["messaging.message.id"] == entry
    assert attrs["deliver agent:tasks"]["messaging.consumer.group.name"] == "workers"
    kinds = {name: s.kind for name, s in messaging.items()}
    assert kinds == {"publish agent:tasks": 4, "deliver agent:tasks": 5, "ack agent:tasks": 3}
    link = messaging["deliver agent:tasks"].links[0]
    assert link.span_id == messaging["publish agent:tasks"].span_id
    assert link.trace_id == messaging["publish agent:tasks"].trace_id


def test_text_view() -> None:
    a, _ = analysis()
    out = io.StringIO()
    TraceTextWriter(out).write(a.traces, a.incidents, a.calls, [], unclaimed=0, lives=a.lives)
    text = out.getvalue()
    entry = truth()["agent"]["published"]["entry_id"]
    assert f"publish agent:tasks  redis msg1  id {entry}" in text
    assert "← published in trace 1 (payload_in_prompt)" in text
    assert "→ acked" in text
    assert "1 queue message" in text
    assert "trace 1 → trace 2: payload_in_prompt" in text


def test_with_trace_context_one_trace_and_the_traceparent_as_evidence() -> None:
    """The _traceparent variant: the agent's model calls and the message carry W3C trace
    context, which the worker continues: one trace, the consumer found by the message's
    traceparent, the delivery and ack spans linked to the publish span in it."""
    folder = ROOT / "tests" / "data" / "captures" / "queue_agent_redis_traceparent"
    t = json.loads((folder / "truth.json").read_text())
    sent = t["trace_context"]["message"]["traceparent"]
    assert t["worker"]["delivered"]["traceparent"] == sent
    trace_id = sent.split("-")[1]
    data = analyze(str(folder / "capture.pcap")).to_json()
    (trace,) = data["traces"]
    assert trace["trace_id"] == trace_id and trace["origin"] == "traceparent"
    (life,) = data["queue_messages"]
    assert [e["action"] for e in life["events"]] == ["publish", "deliver", "ack"]
    assert life["outcome"] == "acked"
    (run_link,) = life["runs"]
    assert run_link["producer"] == run_link["consumer"] == trace_id
    assert run_link["origin"] == "traceparent" and sent in run_link["evidence"]
    messaging = [s for s in trace["spans"] if s["kind"] == "messaging"]
    publish = messaging[0]
    assert [s["name"] for s in messaging] == [
        "publish agent:tasks", "deliver agent:tasks", "ack agent:tasks"
    ]  # fmt: skip
    assert all(s["links"][0]["span_id"] == publish["span_id"] for s in messaging[1:])
    assert publish["span_id"] == sent.split("-")[2]  # the span the message's context names
    assert publish["span_id_source"] == "traceparent parent-id of the message"
    tools = {s["tool_call_id"]: s for s in trace["spans"] if s["kind"] == "tool"}
    assert publish["parent_id"] == tools[t["agent"]["tool_call"]["id"]]["span_id"]
    assert tools[t["worker"]["tool_call"]["id"]]["execution"] is not None  # the INSERT
