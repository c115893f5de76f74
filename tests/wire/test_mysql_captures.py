"""MySQL captures made by scripts/make_mysql_captures.py (PyMySQL and mysql-connector-python
against a real MariaDB on loopback, in cleartext, over TLS with Python's key log, and with
zlib compression): every statement against the client's own record, the commands and errors
against tshark's mysql dissector, the password nowhere in the report, and the agent run's
SQL linked to the model's tool call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import ConnectionReport
from agentshark.wire.events import Operation
from agentshark.wire.mysql_parse import COMMAND_NAMES
from tests.helpers import ROOT
from tests.wire.test_pg_captures import check_agent, items, operations, truth

CAPTURES = ROOT / "tests" / "data" / "captures"
PLAIN = CAPTURES / "mysql_pymysql"
TLS = CAPTURES / "mysql_tls"
CONNECTOR = CAPTURES / "mysql_connector"
COMPRESSED = CAPTURES / "mysql_compressed"
AGENT = CAPTURES / "mysql_agent"


def check_pymysql(folder: Path) -> None:
    """PyMySQL's statements (text protocol: the SQL as it quoted it), then PING, INIT_DB,
    QUIT, and a login refused with 1045."""
    record = truth(folder)["statements"]
    ops = operations(folder)
    queries = [o for o in ops if o.kind == "query" and o.statement != "SET NAMES utf8mb4"]
    sent = [r for r in record if "query" in r]
    assert len(queries) == len(sent) == 8
    for op, entry in zip(queries, sent, strict=True):
        assert op.statement == entry["query"]
        assert op.request_complete and op.response_complete
        if "errno" in entry:
            assert op.error is not None and op.error["number"] == entry["errno"]
            continue
        assert op.error is None
        results = entry.get("results", [entry])
        if "rows" in entry:
            assert op.result == "RESULTSET"
            assert op.rows == sum(r["rows"] for r in results)
            assert op.columns == results[-1]["columns"]
            if len(results) > 1:
                assert [r["rows"] for r in op.details["results"]] == [r["rows"] for r in results]
        else:
            assert op.result == "OK"
            assert op.details["affected_rows"] == entry["rowcount"]
            if "lastrowid" in entry and entry["rowcount"]:
                assert op.details["last_insert_id"] == entry["lastrowid"]
    commands = [o.command for o in ops if o.kind in ("command", "quit")]
    assert commands == [r["command"] for r in record if "command" in r]
    init_db = next(o for o in ops if o.command == "INIT_DB")
    assert init_db.statement == "other_db"
    logins = [o for o in ops if o.kind == "startup"]
    assert len(logins) == 2
    ok, refused = logins
    assert ok.details["authenticated"] is True and ok.error is None
    assert ok.details["parameters"] == {"user": "agent", "database": "notes_db"}
    assert refused.error is not None and refused.error["number"] == record[-1]["errno"]
    assert refused.error["code"] == "28000"


@pytest.mark.parametrize("folder", [PLAIN, TLS], ids=["cleartext", "tls"])
def test_pymysql_statements_as_the_client_sent_and_got_them(folder: Path) -> None:
    check_pymysql(folder)


def test_the_greeting_is_read_and_its_scramble_is_not_kept() -> None:
    login = next(o for o in operations(PLAIN) if o.kind == "startup")
    server = login.details["server"]
    assert "MariaDB" in server["server_version"]
    assert server["auth_plugin"] == "mysql_native_password"
    assert "PROTOCOL_41" in server["capabilities"]
    assert login.details["client"]["attributes"]["program_name"] == "agentshark-test"
    assert login.details["password_messages"] == 1
    reports = [i for i in items(PLAIN) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"mysql"}
    assert all(not r.diagnostics for r in reports)


def test_tls_connections_are_decrypted_after_their_sslrequest() -> None:
    got = [i for i in items(TLS) if type(i) is Exchange and i.operation]
    by_conn: dict[str | None, list[Exchange]] = {}
    for ex in got:
        by_conn.setdefault(ex.connection, []).append(ex)
    assert len(by_conn) == 2  # the session, and the login with a wrong password
    for exs in by_conn.values():
        ops = [e.operation for e in exs if e.operation is not None]
        assert ops[0].kind == "ssl_request" and ops[1].kind == "startup"
        assert [o.index for o in ops] == list(range(len(ops)))
        assert exs[0].tls is None
        assert all(e.tls and e.tls["version"] == "TLS 1.3" for e in exs[1:])
    reports = [i for i in items(TLS) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"mysql"}
    assert all(not r.diagnostics for r in reports)


def test_tls_without_the_key_log_says_so() -> None:
    ops = operations(TLS, keys=False)
    assert [o.kind for o in ops] == ["ssl_request", "ssl_request"]
    reports = [i for i in items(TLS, False) if isinstance(i, ConnectionReport)]
    assert [d.code for r in reports for d in r.diagnostics] == ["tls.no_keys", "tls.no_keys"]


def binary_matches(seen: Any, sent: Any) -> bool:
    """A bound parameter against the Python value mysql-connector was given."""
    if sent is None or (isinstance(sent, str) and not isinstance(seen, dict)):
        return bool(seen == sent)
    return bool(isinstance(seen, dict) and seen["format"] == "binary" and seen["value"] == sent)


@pytest.mark.parametrize("folder", [CONNECTOR, COMPRESSED], ids=["plain", "compressed"])
def test_prepared_statements_as_the_client_sent_and_got_them(folder: Path) -> None:
    """COM_STMT_PREPARE then COM_STMT_EXECUTE: the prepare's SQL on each execute, the
    parameters decoded by the types bound, binary rows counted; compressed or not."""
    record = [r for r in truth(folder)["statements"] if r["prepared"]]
    ops = operations(folder)
    done = [o for o in ops if o.kind == "execute" or (o.kind == "prepare" and o.error)]
    assert len(done) == len(record) == 5
    for op, entry in zip(done, record, strict=True):
        assert op.statement == entry["query"]
        assert op.request_complete and op.response_complete
        if "errno" in entry:
            assert op.kind == "prepare" and op.error is not None
            assert (op.error["number"], op.error["code"]) == (entry["errno"], entry["sqlstate"])
            continue
        assert len(op.parameters) == len(entry["parameters"])
        assert all(
            binary_matches(a, b) for a, b in zip(op.parameters, entry["parameters"], strict=True)
        )
        if "rows" in entry:
            assert (op.rows, op.columns) == (entry["rows"], entry["columns"])
        else:
            assert op.details["affected_rows"] == entry["rowcount"]
            assert op.details["last_insert_id"] == entry["lastrowid"]
    select = next(o for o in ops if o.kind == "execute" and o.rows == 2)
    assert select.values is not None and [r[1] for r in select.values] == ["lamp", "desk"]
    assert select.values[0][4]["value"] == "2024-05-01"  # a DATE, binary
    reports = [i for i in items(folder) if isinstance(i, ConnectionReport)]
    assert {r.protocol for r in reports} == {"mysql"}
    assert all(not r.diagnostics for r in reports)


def test_compression_is_negotiated_in_one_capture_only() -> None:
    def caps(folder: Path) -> list[str]:
        login = next(o for o in operations(folder) if o.kind == "startup")
        names: list[str] = login.details["client"]["capabilities"]
        return names

    assert "COMPRESS" in caps(COMPRESSED) and "COMPRESS" not in caps(CONNECTOR)


@pytest.mark.parametrize("folder", [PLAIN, TLS, CONNECTOR], ids=["cleartext", "tls", "prepared"])
def test_the_password_is_nowhere_in_the_report(folder: Path) -> None:
    password = truth(folder)["password"]
    opts = RenderOptions(events=True)
    for item in items(folder):
        if type(item) is Exchange:
            assert password not in json.dumps(exchange_json(item, opts))


def test_values_only_with_events() -> None:
    select = next(o for o in operations(PLAIN) if o.statement and "n IS NULL" in o.statement)
    ex = next(i for i in items(PLAIN) if type(i) is Exchange and i.operation is select)
    assert "values" not in exchange_json(ex, RenderOptions())["operation"]
    values = exchange_json(ex, RenderOptions(events=True))["operation"]["values"]
    sent = next(r for r in truth(PLAIN)["statements"] if "n IS NULL" in r.get("query", ""))
    assert values == sent["values"]


def tshark_fields(pcap: Path, port: int, keylog: Path | None) -> tuple[Counter[str], list[str]]:
    """tshark's mysql dissector: the commands it read (by code), the error numbers."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    keys = ["-o", f"tls.keylog_file:{keylog}"] if keylog is not None else []
    out = subprocess.run(
        [
            *("tshark", "-r", str(pcap), *keys, "-d", f"tcp.port=={port},mysql"),
            *("-T", "fields", "-e", "mysql.command", "-e", "mysql.error_code"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    commands: Counter[str] = Counter()
    errors: list[str] = []
    for line in out.splitlines():
        command, _, error = line.partition("\t")
        commands.update(COMMAND_NAMES[int(c)] for c in command.split(",") if c)
        errors.extend(e for e in error.split(",") if e)
    return commands, errors


@pytest.mark.parametrize("folder", [PLAIN, TLS, CONNECTOR], ids=["cleartext", "tls", "prepared"])
def test_commands_and_errors_agree_with_tshark(folder: Path) -> None:
    """tshark decrypts the TLS capture with the same key log. COM_STMT_CLOSE has no answer
    and makes no operation: it is left out of tshark's count. (tshark misreads the
    compressed capture, so it is not compared.)"""
    keylog = folder / "keys.log"
    commands, errors = tshark_fields(
        folder / "capture.pcap", 33061, keylog if keylog.exists() else None
    )
    commands.pop("STMT_CLOSE", None)
    ops = operations(folder)
    ours = Counter(_command_name(o) for o in ops if o.kind not in ("startup", "ssl_request"))
    assert ours == commands
    assert sorted(str(o.error["number"]) for o in ops if o.error) == sorted(errors)


def _command_name(op: Operation) -> str:
    named = {"query": "QUERY", "prepare": "STMT_PREPARE", "execute": "STMT_EXECUTE"}
    return named.get(op.kind) or str(op.command)


def test_agent_run_links_the_sql_to_the_tool_call() -> None:
    check_agent(AGENT)


def live_reason() -> str | None:
    if os.geteuid() != 0:
        return "not root: scripts/make_mysql_captures.py needs tcpdump and runs mariadbd as mysql"
    if not Path("/usr/sbin/mariadbd").exists():
        return "no MariaDB server: run scripts/mysql.sh (as root)"
    if shutil.which("tcpdump") is None:
        return "no tcpdump (apt-get install tcpdump)"
    return None


def test_fresh_captures_of_a_real_server(tmp_path: Path) -> None:
    """scripts/make_mysql_captures.py run now, against the server scripts/mysql.sh
    installs: the same checks on what it captures."""
    reason = live_reason()
    if reason is not None:
        pytest.skip(reason)
    script = ROOT / "scripts" / "make_mysql_captures.py"
    subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    for name in ("mysql_pymysql", "mysql_connector", "mysql_agent"):
        run = json.loads((tmp_path / name / "run.json").read_text())
        if not run["capture_complete"]:
            pytest.skip(f"tcpdump dropped packets of {name}: {run['tcpdump']}")
    check_pymysql(tmp_path / "mysql_pymysql")
    check_pymysql(tmp_path / "mysql_tls")
    check_agent(tmp_path / "mysql_agent")
