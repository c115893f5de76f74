"""PostgreSQL captures made by scripts/make_pg_captures.py (psycopg 3 against a real
PostgreSQL 15 on loopback, in cleartext and over TLS with libpq's key log): every statement
against the client's own record, the message counts against tshark's pgsql dissector, the
password nowhere in the report, and the agent run's SQL linked to the model's tool call."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import ConnectionReport
from agentshark.trace.collect import Analysis
from agentshark.wire.events import Operation
from tests.helpers import ROOT

CAPTURES = ROOT / "tests" / "data" / "captures"
PG = CAPTURES / "pg_psycopg"
PG_TLS = CAPTURES / "pg_tls"
PG_DIRECT = CAPTURES / "pg_direct_tls"
AGENT = CAPTURES / "pg_agent"


def truth(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return data


def items(folder: Path, keys: bool = True) -> list[object]:
    """The pipeline's items, with the folder's key log when it has one and ``keys``."""
    return _items(folder, keys)


@functools.cache
def _items(folder: Path, keys: bool) -> list[object]:
    keylog = folder / "keys.log"
    logs = [str(keylog)] if keys and keylog.exists() else []
    options = agentshark.pipeline.Options(keylogs=logs)
    return list(agentshark.pipeline.run([str(folder / "capture.pcap")], options))


def operations(folder: Path, keys: bool = True) -> list[Operation]:
    return [i.operation for i in items(folder, keys) if type(i) is Exchange and i.operation]


def statements(ops: list[Operation]) -> list[Operation]:
    return [o for o in ops if o.kind in ("query", "execute", "parse")]


def parameter_matches(seen: Any, sent: Any) -> bool:
    """A parameter as the report keeps it against the Python value psycopg was given:
    text as the value's text, a binary integer as its big-endian bytes."""
    if sent is None:
        return seen is None
    if isinstance(seen, str):
        return seen == str(sent)
    import base64

    raw = base64.b64decode(seen["base64"])
    return bool(
        seen["format"] == "binary"
        and int.from_bytes(raw, signed=True) == sent
        and seen["value"] == sent  # read by the type the Parse named
    )


@pytest.mark.parametrize("folder", [PG, PG_TLS, PG_DIRECT], ids=["cleartext", "tls", "direct_tls"])
def test_every_statement_as_the_client_sent_and_got_it(folder: Path) -> None:
    check_statements(folder)


def check_statements(folder: Path) -> None:
    record = [s for s in truth(folder)["statements"] if "query" in s]
    seen = statements(operations(folder))
    assert len(seen) == len(record) == 15
    for op, sent in zip(seen, record, strict=True):
        assert op.statement == sent["query"]
        if sent["protocol"] == "simple" or sent.get("parameters"):
            assert op.kind == ("query" if sent["protocol"] == "simple" else "execute")
        params = sent.get("parameters", [])
        assert len(op.parameters) == len(params), op
        assert all(parameter_matches(a, b) for a, b in zip(op.parameters, params, strict=True))
        results = sent.get("results", [sent])  # a multi-statement string: each result
        if "sqlstate" in sent:
            assert op.error is not None and op.error["code"] == sent["sqlstate"]
        else:
            assert op.error is None and op.result == results[-1]["tag"]
        if len(results) > 1:
            assert op.details["tags"] == [r["tag"] for r in results]
        if "rows" in sent:
            assert op.rows == sum(r["rows"] for r in results)
            assert op.columns == results[-1]["columns"]  # the last RowDescription
        assert op.request_complete and op.response_complete


def test_connection_setup_notification_cancel_and_refused_login() -> None:
    ops = operations(PG)
    t = truth(PG)
    startups = [o for o in ops if o.kind == "startup"]
    assert len(startups) == 2
    ok, refused = startups
    assert ok.error is None and ok.details["authenticated"] is True
    assert ok.details["sasl_mechanisms"] == ["SCRAM-SHA-256"]
    assert refused.error is not None and refused.error["code"] == "28P01"
    assert [(o.statement, o.parameters) for o in ops if o.kind == "notification"] == [
        (n["channel"], [n["payload"]]) for n in t["notifications"]
    ]
    cancels = [o for o in ops if o.kind == "cancel"]
    assert [c.details["process_id"] for c in cancels] == [ok.details["process_id"]]
    assert [o.result for o in ops if o.kind == "ssl_request"] == ["N", "N"]
    reports = [i for i in items(PG) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"postgresql"}
    assert all(not r.diagnostics for r in reports)


def test_tls_connections_are_decrypted_after_their_sslrequest() -> None:
    """SSLRequest answered S, then TLS 1.3: the startup and every statement inside it, on
    the same connection, numbered after the SSLRequest; the TLS facts on the report."""
    got = [i for i in items(PG_TLS) if type(i) is Exchange and i.operation]
    by_conn: dict[str | None, list[Exchange]] = {}
    for ex in got:
        by_conn.setdefault(ex.connection, []).append(ex)
    tls_conns = [
        c for c, exs in by_conn.items() if exs[0].request and exs[0].request.method == "SSLRequest"
    ]
    assert len(tls_conns) == 2  # the session, and the login with a wrong password
    for conn in tls_conns:
        exs = by_conn[conn]
        ops = [e.operation for e in exs if e.operation is not None]
        assert ops[0].result == "S" and ops[1].kind == "startup"
        assert [o.index for o in ops] == list(range(len(ops)))
        assert [e.stream for e in exs] == [o.index for o in ops]
        assert exs[0].tls is None
        assert all(e.tls and e.tls["version"] == "TLS 1.3" for e in exs[1:])
    reports = [i for i in items(PG_TLS) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"postgresql"}
    assert all(not r.diagnostics for r in reports)
    decrypted = [r for r in reports if r.tls is not None]
    assert len(decrypted) == 2
    assert all(r.tls and r.tls["version"] == "TLS 1.3" and r.tls["decrypted"] for r in decrypted)
    assert sum(r.exchanges for r in reports) == len(got)


def test_direct_tls_is_read_by_its_alpn() -> None:
    """PostgreSQL 17's direct TLS: no SSLRequest; the ClientHello offers ALPN ``postgresql``,
    which names no HTTP, so the decrypted bytes are sniffed as on a cleartext connection."""
    got = [i for i in items(PG_DIRECT) if type(i) is Exchange and i.operation]
    assert not [e for e in got if e.operation and e.operation.kind == "ssl_request"]
    session = [e for e in got if e.operation and e.operation.kind != "cancel"]
    assert all(e.tls and e.tls["alpn"] == "postgresql" for e in session)
    reports = [i for i in items(PG_DIRECT) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"postgresql"}
    assert all(not r.diagnostics for r in reports)


def test_tls_without_the_key_log_says_so() -> None:
    """No key log: the SSLRequests (and the cleartext cancel) are all that can be read; each
    TLS connection says why, with what to do."""
    ops = operations(PG_TLS, keys=False)
    assert sorted(o.kind for o in ops) == ["cancel", "ssl_request", "ssl_request"]
    reports = [i for i in items(PG_TLS, False) if isinstance(i, ConnectionReport)]
    codes = [d.code for r in reports for d in r.diagnostics]
    assert codes == ["tls.no_keys", "tls.no_keys"]


@pytest.mark.parametrize("folder", [PG, PG_TLS], ids=["cleartext", "tls"])
def test_the_password_is_nowhere_in_the_report(folder: Path) -> None:
    password = truth(folder)["password"]
    opts = RenderOptions(events=True)
    for item in items(folder):
        if type(item) is Exchange:
            assert password not in json.dumps(exchange_json(item, opts))


def test_values_only_with_events() -> None:
    select = next(o for o in operations(PG) if o.statement and "n IS NULL" in o.statement)
    ex = next(i for i in items(PG) if type(i) is Exchange and i.operation is select)
    assert "values" not in exchange_json(ex, RenderOptions())["operation"]
    values = exchange_json(ex, RenderOptions(events=True))["operation"]["values"]
    assert values == [
        ["1", "first note", "7"],
        ["2", "second", "1"],
        ["3", "third", "2"],
        ["4", "fourth", None],
    ]


def tshark_types(pcap: Path, port: int, keylog: Path | None = None) -> Counter[str]:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    keys = ["-o", f"tls.keylog_file:{keylog}"] if keylog is not None else []
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(pcap),
            *keys,
            "-d",
            f"tcp.port=={port},pgsql",
            "-T",
            "fields",
            "-e",
            "pgsql.type",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Counter(t for line in out.splitlines() for t in line.split(",") if t)


@pytest.mark.parametrize("folder", [PG, PG_TLS], ids=["cleartext", "tls"])
def test_message_counts_agree_with_tshark(folder: Path) -> None:
    """tshark decrypts the TLS capture with the same key log (its pgsql dissector follows
    the SSLRequest into TLS too)."""
    port = int(truth(folder)["server"].rsplit(":", 1)[1])
    keylog = folder / "keys.log"
    theirs = tshark_types(folder / "capture.pcap", port, keylog if keylog.exists() else None)
    ops = operations(folder)
    tags = sum(
        len(o.details.get("tags", [])) if o.kind == "query" else o.result is not None
        for o in ops
        if o.kind in ("query", "execute")
    )
    ours = {
        "Simple query": sum(o.kind == "query" for o in ops),
        "Execute": sum(o.kind == "execute" for o in ops),
        "Data row": sum(o.rows or 0 for o in ops),
        "Command completion": tags,
        "Error": sum(o.error is not None for o in ops),
        "Startup message": sum(o.kind == "startup" for o in ops),
        "SSL request": sum(o.kind == "ssl_request" for o in ops),
        "Cancel request": sum(o.kind == "cancel" for o in ops),
        "Notification": sum(o.kind == "notification" for o in ops),
        "SASL messages": sum(int(o.details.get("password_messages", 0)) for o in ops),
    }
    theirs["SASL messages"] = theirs["SASLInitialResponse message"] + theirs["SASLResponse message"]
    assert ours == {k: theirs[k] for k in ours}


def test_agent_run_links_the_sql_to_the_tool_call() -> None:
    check_agent(AGENT)


def check_agent(folder: Path) -> None:
    t = truth(folder)
    analysis = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    got = list(analysis.watch(agentshark.pipeline.run([str(folder / "capture.pcap")], options)))
    analysis.finish()
    asked = t["tool_calls"][0]
    sql = [
        i
        for i in got
        if type(i) is Exchange
        and i.operation is not None
        and i.operation.statement == asked["statement"]
    ]
    assert len(sql) == 1 and sql[0].operation is not None
    assert sql[0].operation.rows == asked["rows"]
    assert len(analysis.traces) == 1
    tools = [s for s in analysis.traces[0].spans if s.kind == "tool"]
    assert [(s.tool_call_id, s.execution, s.inferred) for s in tools] == [
        (asked["id"], sql[0].id, False)
    ]
    assert tools[0].attributes["arguments"] == asked["arguments"]
    assert analysis.not_understood() == 0


def live_reason() -> str | None:
    """Why fresh captures cannot be made here, or None."""
    if os.geteuid() != 0:
        return "not root: scripts/make_pg_captures.py needs tcpdump and runuser"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        return "no PostgreSQL server: run scripts/postgresql.sh (as root)"
    if shutil.which("tcpdump") is None:
        return "no tcpdump (apt-get install tcpdump)"
    return None


def test_fresh_captures_of_a_real_server(tmp_path: Path) -> None:
    """scripts/make_pg_captures.py run now, against the server scripts/postgresql.sh
    installs: the same checks on what it captures."""
    reason = live_reason()
    if reason is not None:
        pytest.skip(reason)
    script = ROOT / "scripts" / "make_pg_captures.py"
    subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    for name in ("pg_psycopg", "pg_agent", "pg_tls", "pg_direct_tls"):
        run = json.loads((tmp_path / name / "run.json").read_text())
        if not run["capture_complete"]:
            pytest.skip(f"tcpdump dropped packets of {name}: {run['tcpdump']}")
    check_statements(tmp_path / "pg_psycopg")
    check_statements(tmp_path / "pg_tls")
    check_statements(tmp_path / "pg_direct_tls")
    check_agent(tmp_path / "pg_agent")
