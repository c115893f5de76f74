"""The pgvector capture made by scripts/make_pgvector_captures.py (psycopg 3 with the pgvector
package's adapters against PostgreSQL 16 with pgvector, from PyPI's pgserver, on loopback):
every search and insert as a retrieval call against the client's own record, the searches
counted by tshark's pgsql dissector, and the agent's search linked to its tool call."""

from __future__ import annotations

import functools
import json
import os
import pwd
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.apis.documents import same_vector
from agentshark.apis.model import Call, GenericPart
from agentshark.model import Exchange
from agentshark.trace.collect import Analysis
from agentshark.wire.events import Operation
from tests.helpers import ROOT
from tests.output.otlp.helpers import export, spans_of_lines

PGV = ROOT / "tests" / "data" / "captures" / "pgvector_psycopg"
OPERATORS = ("<->", "<=>", "<#>")


def truth(folder: Path = PGV) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return data


@functools.cache
def analysis(folder: Path = PGV) -> tuple[Analysis, tuple[object, ...]]:
    out = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    got = tuple(out.watch(agentshark.pipeline.run([str(folder / "capture.pcap")], options)))
    out.finish()
    return out, got


def calls(folder: Path = PGV) -> list[Call]:
    return [i for i in analysis(folder)[1] if isinstance(i, Call)]


def operation_of(folder: Path, call: Call) -> Operation:
    ex = next(i for i in analysis(folder)[1] if type(i) is Exchange and i.id == call.exchange_id)
    assert ex.operation is not None
    return ex.operation


def fields(call: Call) -> list[dict[str, Any]]:
    return [p.fields for m in call.output_messages for p in m.parts if isinstance(p, GenericPart)]


def searches(record: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in record if any(o in s["query"] for o in OPERATORS)]


def test_every_search_is_a_retrieval_call_as_the_client_saw_it() -> None:
    check_searches(PGV)


def check_searches(folder: Path) -> None:
    t = truth(folder)
    sent = searches(t["statements"]) + [{**c, "query": c["statement"]} for c in t["tool_calls"]]
    found = [c for c in calls(folder) if c.api == "pgvector" and c.operation == "retrieval"]
    assert [operation_of(folder, c).statement for c in found] == [s["query"] for s in sent]
    metrics = {"<->": "l2_distance", "<=>": "cosine_distance", "<#>": "negative_inner_product"}
    for call, s in zip(found, sent, strict=True):
        info = call.extras["retrieval"]
        assert info["service"] == "pgvector" and info["data_source"] == "items"
        assert info["vector_column"] == "embedding"
        assert info["metric"] == next(m for o, m in metrics.items() if o in s["query"])
        limit = s["query"].rsplit("LIMIT ", 1)[1]
        assert info["top_k"] == (s["parameters"][-1] if limit.startswith("$") else int(limit))
        (q,) = info["queries"]
        vector = _sent_vector(s)
        assert q["vector_dimensions"] == len(vector)
        assert same_vector(q["vector_head"], [float(x) for x in vector[:8]])
        if "sqlstate" in s:
            assert call.error is not None and call.error.code == s["sqlstate"]
            assert call.output_messages == [] and call.complete
            continue
        rows = s["rows"]
        docs = fields(call)
        assert [d["rank"] for d in docs] == list(range(1, len(rows) + 1))
        assert [d["id"] for d in docs] == [str(r[0]) for r in rows]  # text format, as sent
        columns = s.get("columns") or ["id", "content", "distance"]
        score = next((n for n, c in enumerate(columns) if "distance" in c or "product" in c), None)
        if score is not None:
            assert [d["score"] for d in docs] == pytest.approx([r[score] for r in rows])
            assert info["score_column"] == columns[score]
        if "content" in columns:
            assert [d["content"] for d in docs] == [r[columns.index("content")] for r in rows]
        assert info["documents"] == len(rows) and call.complete and call.error is None


def _sent_vector(statement: dict[str, Any]) -> list[float]:
    """The query vector psycopg sent: a bound list, a bound text, or the literal."""
    if "embedding" in statement:
        return list(statement["embedding"])
    for value in statement["parameters"]:
        if isinstance(value, list):
            return value
        if isinstance(value, str) and value.startswith("["):
            return [float(x) for x in value[1:-1].split(",")]
    literal = statement["query"].split("'")[1]
    return [float(x) for x in literal[1:-1].split(",")]


def test_the_filter_keeps_the_where_clause_and_its_bound_values() -> None:
    found = [c for c in calls() if c.api == "pgvector" and c.operation == "retrieval"]
    filters = [c.extras["retrieval"].get("filter") for c in found]
    assert filters == [
        None,
        {"where": "category = $2", "parameters": {"$2": "vegetable"}},
        None,
        None,
        None,
        {"where": "category = $2", "parameters": {"$2": "fruit"}},
    ]


def test_score_kind_only_when_the_column_is_the_distance_itself() -> None:
    found = [c for c in calls() if c.api == "pgvector" and c.operation == "retrieval"]
    kinds = [{d.get("score_kind") for d in fields(c)} for c in found]
    # l2 selected as is; cosine by alias; -(<#>) an expression of it; id only; error; agent
    assert kinds == [{"distance"}, {"distance"}, {None}, {None}, set(), {"distance"}]
    assert "score" not in fields(found[3])[0]


def test_inserts_of_vectors_are_writes() -> None:
    t = truth()
    inserts = [s for s in t["statements"] if s["query"].startswith("INSERT")]
    writes = [c for c in calls() if c.operation == "retrieval.write"]
    assert len(writes) == len(inserts) == 6
    for call, sent in zip(writes, inserts, strict=True):
        info = call.extras["retrieval"]
        assert (info["data_source"], info["endpoint"], info["count"]) == ("items", "insert", 1)
        assert info["vectors"] == 1 and info["dimensions"] == [3]
        assert info["written"] == int(sent["tag"].rsplit(" ", 1)[1])
        assert call.output_messages == [] and call.complete


def test_other_statements_stay_sql_operations() -> None:
    """DDL, the adapter's type lookups, ``count(*)``: operations, no calls, all understood."""
    a, got = analysis()
    claimed = {c.exchange_id for c in calls()}
    ops = [i for i in got if type(i) is Exchange and i.operation is not None]
    rest = [i.operation.statement for i in ops if i.id not in claimed and i.operation]
    assert "SELECT count(*) FROM items" in rest
    assert not any(s and any(o in s for o in OPERATORS) for s in rest)
    assert a.not_understood() == 0


def test_the_agent_search_is_the_tool_calls_execution() -> None:
    a, _ = analysis()
    t = truth()
    asked = t["tool_calls"][0]
    embedding = next(c for c in a.calls if c.api == "openai.embeddings")
    search = [c for c in a.calls if c.api == "pgvector" and c.operation == "retrieval"][-1]
    tools = [s for t_ in a.traces for s in t_.spans if s.kind == "tool"]
    assert [(s.tool_call_id, s.execution, s.inferred) for s in tools] == [
        (asked["id"], search.id, False)
    ]
    tool = tools[0]
    assert tool.attributes["arguments"] == asked["arguments"]
    assert (
        f"its query vector is the one {embedding.id} returned"
        in (tool.attributes["execution_evidence"])
    )
    assert tool.attributes["retrieval"]["service"] == "pgvector"
    assert [d["id"] for d in fields(search)] == [str(r[0]) for r in asked["rows"]]


FIELDS = ("-T", "fields", "-E", "occurrence=a", "-e", "pgsql.type", "-e", "pgsql.query")


def test_the_agent_search_exports_as_a_retrieval_span_under_the_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "spans.jsonl"
    code, _ = export(capsys, str(PGV / "capture.pcap"), "-o", str(out))
    assert code == 0
    spans = spans_of_lines(out.read_text())
    (tool,) = [s for s in spans if s["name"] == "execute_tool search_docs"]
    children = [s for s in spans if s.get("parentSpanId") == tool["spanId"]]
    (search,) = [s for s in children if s["name"] == "retrieval items"]
    attrs = search["attributes"]
    assert attrs["gen_ai.operation.name"] == "retrieval"
    assert attrs["gen_ai.data_source.id"] == "items"
    assert attrs["gen_ai.request.top_k"] == 2
    assert attrs["agentshark.retrieval.service"] == "pgvector"
    assert attrs["agentshark.retrieval.metric"] == "cosine_distance"
    assert attrs["db.system.name"] == "postgresql"
    assert attrs["db.query.text"] == truth()["tool_calls"][0]["statement"]
    assert json.loads(attrs["agentshark.retrieval.filter"])["parameters"] == {"$2": "fruit"}
    docs = json.loads(attrs["agentshark.retrieval.documents"])
    assert [d["id"] for d in docs] == [str(r[0]) for r in truth()["tool_calls"][0]["rows"]]


def tshark_queries(pcap: Path, port: int) -> tuple[list[str], Counter[str]]:
    """The statements of the Query and Parse messages, and the message types, by tshark."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (scripts/tcpdump.sh)")
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-d", f"tcp.port=={port},pgsql", "-Y", "pgsql", *FIELDS],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    queries: list[str] = []
    types: Counter[str] = Counter()
    for line in out.splitlines():
        kinds, _, query = line.partition("\t")
        types.update(k for k in kinds.split(",") if k)
        if query:
            queries.append(query.replace("\\n", "\n"))
    return queries, types


def test_searches_and_rows_agree_with_tshark() -> None:
    t = truth()
    port = int(t["server"].rsplit(":", 1)[1])
    queries, types = tshark_queries(PGV / "capture.pcap", port)
    theirs = [q for q in queries if any(o in q for o in OPERATORS)]
    found = [c for c in calls() if c.api == "pgvector" and c.operation == "retrieval"]
    assert [operation_of(PGV, c).statement for c in found] == theirs
    assert len(theirs) == 6
    ops = [i.operation for i in analysis()[1] if type(i) is Exchange and i.operation]
    assert sum(o.rows or 0 for o in ops) == types["Data row"]
    assert sum(o.error is not None for o in ops) == types["Error"] == 1


def live_reason() -> str | None:
    """Why a fresh capture cannot be made here, or None."""
    if os.geteuid() != 0:
        return "not root: scripts/make_pgvector_captures.py needs tcpdump and runuser"
    if not (ROOT / ".venv-pgvector" / "bin" / "python").exists():
        return "no pgvector server: run scripts/pgvector.sh (PyPI's pgserver, in .venv-pgvector)"
    if shutil.which("tcpdump") is None:
        return "no tcpdump: run scripts/tcpdump.sh"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user to run the server as: run scripts/postgresql.sh"
    return None


def test_fresh_capture_of_a_real_pgvector_server(tmp_path: Path) -> None:
    """scripts/make_pgvector_captures.py run now, against the server scripts/pgvector.sh
    installs: the same checks on what it captures."""
    reason = live_reason()
    if reason is not None:
        pytest.skip(reason)
    script = ROOT / "scripts" / "make_pgvector_captures.py"
    made = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-2000:]  # e.g. its ports taken by another run
    run = json.loads((tmp_path / "pgvector_psycopg" / "run.json").read_text())
    if not run["capture_complete"]:
        pytest.skip(f"tcpdump dropped packets: {run['tcpdump']}")
    check_searches(tmp_path / "pgvector_psycopg")
