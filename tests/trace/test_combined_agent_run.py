"""The one agent run of scripts/make_combined_capture.py, whose tools are a vector store, a
queue and a database (the openai SDK against a model stub; the agent queries Chroma, its
embedding function calling the stub, publishes a task on RabbitMQ with pika that a worker
process receives and acks, writes a row to PostgreSQL with psycopg, and answers), read by
``agentshark analyze --format json`` against the programs' own records (truth.json): every
tool call a span linked to what it caused, with its inputs, outputs and timings, and the
message's whole life under the tool span that published it. The wire counts against
tshark's HTTP, AMQP and pgsql dissectors."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.cli import main
from agentshark.model import Exchange
from agentshark.wire.amqp_frames import BY_NAME
from tests.helpers import ROOT
from tests.wire.test_amqp_captures import method_counts

FOLDER = ROOT / "tests" / "data" / "captures" / "combined_agent_run"
PCAP = str(FOLDER / "capture.pcap")
CLOCK = 0.005  # seconds between the agent's clock around a tool and the packets' times


@functools.cache
def truth() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FOLDER / "truth.json").read_text())
    return data


@functools.cache
def report_text() -> str:
    with tempfile.TemporaryDirectory(prefix="agentshark-test-") as tmp:
        out = Path(tmp) / "report.json"
        code = main(["analyze", PCAP, "--format", "json", "--no-progress", "--output", str(out)])
        assert code == 0
        return out.read_text()


def report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(report_text())
    return data


@functools.cache
def the_trace() -> dict[str, Any]:
    traces = report()["traces"]
    (trace,) = [t for t in traces if any(s["kind"] == "tool" for s in t["spans"])]
    return dict(trace)


def tool_spans() -> dict[str, dict[str, Any]]:
    return {s["tool_call_id"]: s for s in the_trace()["spans"] if s["kind"] == "tool"}


def asked(name: str) -> dict[str, Any]:
    return next(c for c in truth()["tool_calls"] if c["name"] == name)


def by_id(key: str) -> dict[str, dict[str, Any]]:
    return {x["id"]: x for x in report()[key]}


def test_one_run_every_tool_call_a_span_with_its_arguments_result_and_time() -> None:
    trace = the_trace()
    spans = tool_spans()
    calls = by_id("calls")
    model = [calls[s["call_id"]] for s in trace["spans"] if s["kind"] == "model"]
    assert len(model) == len(truth()["tool_calls"]) + 1  # a model turn per tool, then text
    assert [s["tool_call_id"] for s in spans.values()] == [c["id"] for c in truth()["tool_calls"]]
    for n, done in enumerate(truth()["tool_calls"]):
        span = spans[done["id"]]
        assert span["name"] == f"execute_tool {done['name']}"
        assert not span["inferred"] and span["execution"] is not None
        assert span["attributes"]["arguments"] == done["arguments"]
        assert json.loads(span["attributes"]["result"]) == done["result"]
        assert (span["requested_by"], span["result_in"]) == (model[n]["id"], model[n + 1]["id"])
        # the execution's own times, inside the agent's clock around the tool
        assert done["started"] - CLOCK <= span["started"] <= span["ended"]
        assert span["ended"] <= done["ended"] + CLOCK
    answer = model[-1]["output_messages"][0]["parts"][0]
    assert answer == {"type": "text", "content": truth()["answer"]}
    used = set(trace["calls"])
    assert {s["execution"] for s in spans.values()} <= used


def test_the_search_is_the_chroma_query_with_the_embeddings_call_it_needed() -> None:
    span = tool_spans()[asked("search_docs")["id"]]
    calls = by_id("calls")
    search = calls[span["execution"]]
    assert (search["api"], search["operation"]) == ("chroma.query", "retrieval")
    info = search["extras"]["retrieval"]
    assert info["data_source"] == truth()["collection_id"]
    assert info["top_k"] == int(asked("search_docs")["arguments"]["k"])
    found = truth()["chroma_result"]
    docs = search["output_messages"][0]["parts"]
    assert [d["id"] for d in docs] == found["ids"][0]
    assert [d["content"] for d in docs] == found["documents"][0]
    assert [d["score"] for d in docs] == pytest.approx(found["distances"][0])
    (work,) = span["attributes"]["work"]
    embeddings = calls[work["call_id"]]
    assert embeddings["operation"] == "embeddings"
    assert embeddings["extras"]["embeddings"]["texts"] == [
        asked("search_docs")["arguments"]["query"]
    ]
    assert embeddings["timing"]["ended"] <= search["timing"]["started"]  # the vector first
    # joined by the vector: the one the embedding function got is the one Chroma was sent
    head = truth()["query_vector"][:8]
    assert embeddings["extras"]["embeddings"]["vector_heads"] == [pytest.approx(head)]
    assert info["queries"] == [{"vector_dimensions": 8, "vector_head": pytest.approx(head)}]
    assert span["attributes"]["execution_evidence"].endswith(f"the one {embeddings['id']} returned")


def test_the_task_is_the_publish_and_the_message_life_is_under_its_span() -> None:
    span = tool_spans()[asked("enqueue_task")["id"]]
    published, worker = truth()["published"], truth()["worker"]
    op = span["attributes"]["operation"]
    assert (op["protocol"], op["command"], op["role"]) == ("amqp", "basic.publish", "queue.publish")
    assert op["parameters"] == [json.loads(published["body"])]
    assert op["result"] == "basic.ack" and op["complete"]  # the broker's confirm
    (message,) = op["messages"]
    assert message["message_id"] == published["properties"]["message_id"]
    assert message["routing_key"] == published["routing_key"]
    (life,) = report()["queue_messages"]
    assert [e["action"] for e in life["events"]] == ["publish", "deliver", "ack"]
    assert life["outcome"] == "acked" and life["runs"] == []  # the worker runs no model
    assert life["events"][0]["exchange_id"] == span["execution"]
    messaging = [s for s in the_trace()["spans"] if s["kind"] == "messaging"]
    assert [s["name"] for s in messaging] == [
        f"publish {published['routing_key']}",
        f"deliver {truth()['queue']}",
        f"ack {truth()['queue']}",
    ]
    publish, deliver, ack = messaging
    assert publish["parent_id"] == span["span_id"]
    assert deliver["parent_id"] == ack["parent_id"] == publish["span_id"]
    delivered = worker["delivered"]
    assert deliver["attributes"]["delivery_tag"] == delivered["delivery_tag"]
    assert deliver["attributes"]["redelivered"] is delivered["redelivered"] is False
    assert ack["attributes"]["delivery_tag"] == worker["acked"]["delivery_tag"]
    assert ack["attributes"]["outcome"] == "acked"
    # the worker's clock: it acked after it slept on the delivery
    assert abs(ack["started"] - worker["acked"]["at"]) < CLOCK
    assert ack["attributes"]["delay"] == pytest.approx(
        worker["acked"]["at"] - delivered["at"], abs=2 * CLOCK
    )
    exchanges = by_id("exchanges")
    connections = {c["id"]: c for c in report()["connections"]}
    deliver_at = exchanges[deliver["attributes"]["exchange_id"]]["connection"]
    assert str(connections[deliver_at]["client"]["port"]) == worker["local_port"]


def test_the_note_is_the_insert_with_its_parameters_and_tag() -> None:
    span = tool_spans()[asked("log_task")["id"]]
    sql = truth()["sql"]
    op = span["attributes"]["operation"]
    assert op["protocol"] == "postgresql" and op["command"] == "INSERT"
    assert op["statement"] == sql["statement"].replace("%s", "$1", 1).replace("%s", "$2", 1)
    assert op["parameters"] == sql["parameters"]
    assert (op["result"], op["rows"]) == (sql["command_tag"], len(sql["returned"]))
    assert truth()["rows"] == [[*sql["returned"], *sql["parameters"]]]


def test_the_chroma_connection_seen_without_its_handshake_reads_whole() -> None:
    """The agent's Chroma client opened its connection before the capture: the port guess
    took the client (a lower port) for the server; the request head showed otherwise, and
    the request body in the next segment follows the roles the bytes showed."""
    chroma = [e for e in report()["exchanges"] if ":54351/" in (e["request"] or {})["url"]]
    (query,) = chroma
    assert query["complete"] and query["response"]["status"] == 200
    assert query["diagnostics"] == []


def test_the_passwords_are_nowhere_in_the_report() -> None:
    text = report_text()
    for password in truth()["passwords"]:
        assert password not in text


def tshark(*args: str) -> list[list[str]]:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    out = subprocess.run(
        ["tshark", "-r", PCAP, *args], capture_output=True, text=True, check=True
    ).stdout
    return [line.split("\t") for line in out.splitlines()]


def test_wire_counts_agree_with_tshark() -> None:
    ports = json.loads((FOLDER / "run.json").read_text())["ports"]
    http = [f"tcp.port=={ports[k]},http" for k in ("model", "chroma")]
    decode = [a for d in http for a in ("-d", d)]
    rows = tshark(*decode, "-Y", "http.request", "-T", "fields", "-e", "http.request.method",
                  "-e", "http.request.uri")  # fmt: skip
    items = list(agentshark.pipeline.run([PCAP]))
    exchanges = [i for i in items if type(i) is Exchange]
    requests = [e.request for e in exchanges if e.transport == "http/1.1"]
    ours = [(r.method, r.target) for r in requests if r is not None]
    assert len(ours) == len(requests) == 6
    assert sorted(ours) == sorted((m, u) for m, u in rows)
    statuses = tshark(*decode, "-Y", "http.response", "-T", "fields", "-e", "http.response.code")
    assert len(statuses) == len(ours)
    rows = tshark("-d", f"tcp.port=={ports['amqp']},amqp", "-Y", "amqp", "-T", "fields",
                  "-e", "amqp.method.class", "-e", "amqp.method.method")  # fmt: skip
    names = {f"{c}.{m}": name for name, (c, m) in BY_NAME.items()}
    theirs: Counter[str] = Counter()
    for classes, methods in rows:
        for c, m in zip(classes.split(","), methods.split(","), strict=True):
            if c:
                theirs[names[f"{c}.{m}"]] += 1
    amqp: Counter[str] = Counter()
    confirms: set[object] = set()
    for e in exchanges:
        if e.operation is not None and e.operation.protocol == "amqp":
            count, found = method_counts([e.operation], str(e.connection))
            amqp += count
            confirms |= found
    amqp.update(str(c[2]) for c in confirms)  # type: ignore[index]
    assert amqp == theirs
    assert theirs["basic.publish"] == theirs["basic.deliver"] == 1
    assert theirs["basic.ack"] == 2  # the broker's confirm and the worker's ack
    rows = tshark("-d", f"tcp.port=={ports['postgresql']},pgsql", "-Y", "pgsql", "-T", "fields",
                  "-e", "pgsql.type")  # fmt: skip
    types = Counter(t for (line,) in rows for t in line.split(",") if t)
    sql = [e.operation for e in exchanges if e.operation and e.operation.protocol == "postgresql"]
    assert types["Execute"] == sum(o.kind == "execute" for o in sql) == 1
    assert types["Data row"] == sum(o.rows or 0 for o in sql) == 1
    assert types["Command completion"] == sum(
        o.result is not None for o in sql if o.kind == "execute"
    )
