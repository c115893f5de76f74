"""Make loopback captures of the official PostgreSQL client for Python (psycopg 3) talking
to a real PostgreSQL server, in ``tests/data/captures/pg_psycopg/``, ``pg_tls/`` and
``pg_agent/``.

    python3 scripts/make_pg_captures.py                 # both; needs root (tcpdump, runuser)
    python3 scripts/make_pg_captures.py --only pg_agent

The server is Debian's ``postgresql`` (scripts/postgresql.sh installs it): a throw-away
cluster made with ``initdb`` in a temporary folder, SCRAM-SHA-256 passwords, listening on
127.0.0.1 only, TLS off. ``tcpdump -i lo`` writes the cluster's port only. The client runs,
on one connection: DDL, inserts with text parameters (one RETURNING), an ``executemany``
(pipelined: several Bind/Execute per Sync), a select with rows, binary parameters, a
prepared statement used twice, a statement that fails (42P01), simple-protocol queries
through a ``ClientCursor`` (a multi-statement string, a division by zero: 22012),
LISTEN/NOTIFY, a statement cancelled from another connection (CancelRequest; 57014), then a
second connection whose password is wrong (28P01).

``pg_tls`` is the same session over TLS: the server has a self-signed certificate, the
client connects with ``sslmode=require`` (an SSLRequest answered ``S``, then TLS 1.3) and
libpq 18 writes the session keys to ``keys.log`` (``sslkeylogfile``).

``pg_direct_tls`` is that session with PostgreSQL 17's direct TLS (``sslnegotiation=direct``:
no SSLRequest, the ClientHello first with ALPN ``postgresql``). PostgreSQL 15 does not accept
it, so a relay of this script on 127.0.0.1 terminates the TLS (Python's ``ssl``, ALPN
``postgresql``: ``genlib.TlsRelay``) and passes the bytes on to the server in cleartext; only
the client's side of the relay is captured. libpq sends its CancelRequest in cleartext, which
the relay passes on as it comes.

``truth.json`` holds the client's own record of each statement, in order: the query as
psycopg sent it (``$n`` placeholders; the literal text for a ClientCursor), the parameters
it sent, the command tag (``cursor.statusmessage``), the rows it fetched, and the SQLSTATE
of an error; plus the notifications it received and the password (which the report must
never show). Nothing in it is read back from the pcap.

``pg_agent`` is an agent run: the official ``openai`` SDK sends a Chat Completions request
with a ``run_sql`` tool to a model stub on 127.0.0.1 (``genlib.JsonStub``, which asks for
``run_sql`` with a SQL string when the conversation holds no tool result, and answers with
text when it does); the agent executes the SQL with psycopg, sends the rows back as the tool
result and gets the final answer. ``truth.json`` holds the tool call id, its arguments, the
statement executed and its rows, as the agent saw them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
import genlib  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"


def pg_bin() -> Path:
    """Debian's PostgreSQL binaries (scripts/postgresql.sh installs them), newest first."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name)
    )
    if not found:
        raise SystemExit("make_pg_captures.py: no PostgreSQL server; run scripts/postgresql.sh")
    return found[-1].parent


PORT = 54329
USER = "agent"
PASSWORD = "pg-s3cret-never-shown"


def start_cluster(folder: Path, *, tls: bool = False) -> subprocess.Popen[bytes]:
    """A throw-away cluster in ``folder``; ``tls``: with a self-signed certificate, so a
    client's SSLRequest is answered ``S``."""
    data = folder / "data"
    if not genlib.port_is_free(PORT):  # a cluster left running would answer in its place
        raise genlib.ToolError(f"127.0.0.1:{PORT} is in use: stop what listens there")
    pwfile = folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    shutil.chown(folder, "postgres")
    shutil.chown(pwfile, "postgres")
    runuser = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [
            *runuser,
            str(pg_bin() / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    server = subprocess.Popen(
        [
            *runuser,
            str(pg_bin() / "postgres"),
            "-D",
            str(data),
            "-p",
            str(PORT),
            "-k",
            str(folder),
            "-c",
            "listen_addresses=127.0.0.1",
            *ssl_options(folder, tls),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    genlib.wait_pg_ready(pg_bin() / "pg_isready", PORT, server)
    return server


def ssl_options(folder: Path, tls: bool) -> list[str]:
    if not tls:
        return ["-c", "ssl=off"]
    certs = genlib.make_test_certs(folder)
    for name in ("rsa", "rsa_key"):
        shutil.chown(certs[name], "postgres")
        certs[name].chmod(0o600)
    return [
        *("-c", "ssl=on"),
        *("-c", f"ssl_cert_file={certs['rsa']}"),
        *("-c", f"ssl_key_file={certs['rsa_key']}"),
    ]


RELAY_PORT = 54331


def placeholders(query: str) -> str:
    """The query as psycopg sends it on the extended protocol: ``%s``/``%b`` become ``$n``
    (the queries here hold no other ``%``)."""
    parts = re.split(r"%[sb]", query)
    return parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))


def statement(cur: Any, query: str, params: Any = None, *, simple: bool = False) -> dict[str, Any]:
    """What the client knows it sent and got for the cursor's last statement."""
    out: dict[str, Any] = {
        "query": query if simple else placeholders(query),
        "protocol": "simple" if simple else "extended",
        "parameters": list(params or []),
        "binary": "%b" in query,
        "tag": cur.statusmessage,
    }
    results = []  # one per statement of the string (psycopg 3: nextset())
    while True:
        result: dict[str, Any] = {"tag": cur.statusmessage}
        if cur.description is not None and cur.pgresult is not None:
            result["rows"] = len(cur.fetchall())
            result["columns"] = [c.name for c in cur.description]
        results.append(result)
        if not cur.nextset():
            break
    out.update(results[0])
    if len(results) > 1:
        out["results"] = results
    return out


def session(record: list[dict[str, Any]], notes: list[dict[str, Any]], tls: str = "") -> None:
    """``tls``: more connection parameters (``sslmode=require sslkeylogfile=...``)."""
    import psycopg

    dsn = f"host=127.0.0.1 port={PORT} user={USER} password={PASSWORD} dbname=postgres {tls}"
    with psycopg.connect(dsn, autocommit=True, application_name="agentshark-test") as conn:
        cur = conn.cursor()

        def run(query: str, params: Any = None, **kw: Any) -> None:
            try:
                cur.execute(query, params, **kw)
                record.append(statement(cur, query, params))
            except psycopg.Error as exc:
                entry = statement(cur, query, params)
                entry["sqlstate"] = exc.sqlstate
                record.append(entry)

        run("CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL, n int)")
        run("INSERT INTO notes (body, n) VALUES (%s, %s) RETURNING id", ("first note", 7))
        many = [("second", 1), ("third", 2), ("fourth", None)]
        cur.executemany("INSERT INTO notes (body, n) VALUES (%s, %s)", many)
        record.extend(  # executemany: one Execute each, in one pipeline
            {
                "query": "INSERT INTO notes (body, n) VALUES ($1, $2)",
                "protocol": "extended",
                "parameters": list(row),
                "binary": False,
                "tag": "INSERT 0 1",
                "pipelined": True,
            }
            for row in many
        )
        run("SELECT id, body, n FROM notes WHERE n IS NULL OR n > %s ORDER BY id", (0,))
        run("SELECT %b::int + 1 AS answer", (41,), binary=True)
        for n in (1, 2):
            run("SELECT body FROM notes WHERE id = %s", (n,), prepare=True)
        run("SELECT * FROM no_such_table")
        simple = psycopg.ClientCursor(conn)
        for query in ("SELECT 1 AS one; SELECT 2 AS two", "SELECT 1/0"):
            try:
                simple.execute(query)
                entry = statement(simple, query, simple=True)
            except psycopg.Error as exc:
                entry = statement(simple, query, simple=True)
                entry["sqlstate"] = exc.sqlstate
            record.append(entry)
        run("LISTEN agent_tasks")
        run("NOTIFY agent_tasks, 'task 17 ready'")
        notes.extend(
            {"channel": note.channel, "payload": note.payload}
            for note in conn.notifies(timeout=1.0, stop_after=1)
        )
        timer = threading.Timer(0.3, conn.cancel)
        timer.start()
        run("SELECT pg_sleep(5)")
        timer.join()
    try:
        psycopg.connect(
            f"host=127.0.0.1 port={PORT} user={USER} password=wrong dbname=postgres {tls}"
        ).close()
    except psycopg.OperationalError:
        record.append({"startup_refused": True, "sqlstate": "28P01"})


SQL = "SELECT id, body FROM notes WHERE n > 1 ORDER BY id"
MODEL_PORT = 54330


def answer_chat(request: dict[str, Any]) -> dict[str, Any]:
    """The model stub's ``/v1/chat/completions``: a ``run_sql`` tool call, or the final text
    once the conversation holds a tool result."""
    if any(m.get("role") == "tool" for m in request["messages"]):
        message: dict[str, Any] = {"role": "assistant", "content": "Two notes match."}
    else:
        message = genlib.tool_call_message("call_sql_1", "run_sql", {"sql": SQL})
    rid = f"chatcmpl-{len(request['messages'])}"
    return genlib.chat_completion(rid, request["model"], message, usage=(20, 5))


def agent(truth: dict[str, Any]) -> None:
    """The agent loop: ask the model, run the SQL it asks for, send the rows back."""
    import openai
    import psycopg

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{MODEL_PORT}/v1", api_key="sk-test")
    about = "Run a read-only SQL query on the notes database"
    tools: list[Any] = [genlib.function_tool("run_sql", about, sql="the query")]
    messages: list[Any] = [{"role": "user", "content": "Which notes have n > 1?"}]
    dsn = f"host=127.0.0.1 port={PORT} user={USER} password={PASSWORD} dbname=postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (id serial PRIMARY KEY, body text, n int)")
        conn.execute("INSERT INTO notes (body, n) VALUES ('a', 1), ('b', 2), ('c', 3)")
        first = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
        started = time.time()
        rows = conn.execute(arguments["sql"]).fetchall()
        result = json.dumps([list(r) for r in rows])
        truth["tool_calls"] = [
            {
                "id": call.id,
                "name": "run_sql",
                "arguments": arguments,
                "statement": arguments["sql"],
                "rows": len(rows),
                "started": started,
            }
        ]
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        final = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        truth["answer"] = final.choices[0].message.content


def capture_agent(tcpdump: str, folder: Path) -> None:
    pcap = folder / "capture.pcap"
    truth: dict[str, Any] = {
        "made_by": "scripts/make_pg_captures.py",
        "server": f"127.0.0.1:{PORT}",
        "password": PASSWORD,
    }
    stub = genlib.JsonStub(MODEL_PORT, {"/v1/chat/completions": answer_chat})
    with tempfile.TemporaryDirectory(prefix="agentshark-pg-") as tmp, stub:
        server = start_cluster(Path(tmp))
        capture = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
        capture.argv[-1] = f"tcp port {PORT} or tcp port {MODEL_PORT}"
        try:
            capture.start()
            agent(truth)
            counters = capture.stop()
        finally:
            genlib.stop_process(server)
    software = {**genlib.package_versions("psycopg", "openai"), "postgresql": server_version()}
    run = genlib.run_record(counters, pcap, software)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"pg_agent: {run['packets']} packets, {counters}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("pg_psycopg", "pg_agent", "pg_tls", "pg_direct_tls"))
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR, help="parent of the folders")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_pg_captures.py: run as root (tcpdump, runuser postgres)")
    tcpdump = genlib.ensure_tcpdump()
    if args.only in (None, "pg_psycopg"):
        capture_statements(tcpdump, args.out / "pg_psycopg")
    if args.only in (None, "pg_agent"):
        capture_agent(tcpdump, args.out / "pg_agent")
    if args.only in (None, "pg_tls"):
        capture_statements(tcpdump, args.out / "pg_tls", tls=True)
    if args.only in (None, "pg_direct_tls"):
        capture_statements(tcpdump, args.out / "pg_direct_tls", tls=True, direct=True)


def capture_statements(
    tcpdump: str, folder: Path, *, tls: bool = False, direct: bool = False
) -> None:
    """``pg_psycopg``, or with ``tls`` ``pg_tls``: the same session over TLS
    (``sslmode=require``), libpq writing the session keys to ``keys.log``
    (``sslkeylogfile``, libpq 18); with ``direct`` too, ``pg_direct_tls`` (through the relay)."""
    folder.mkdir(parents=True, exist_ok=True)
    pcap = folder / "capture.pcap"
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    options = f"sslmode=require sslkeylogfile={keylog}" if tls else ""
    port = RELAY_PORT if direct else PORT
    if direct:
        options += f" sslnegotiation=direct port={RELAY_PORT}"
    relay = None
    with tempfile.TemporaryDirectory(prefix="agentshark-pg-") as tmp:
        server = start_cluster(Path(tmp), tls=tls)
        if direct:
            relay = genlib.TlsRelay(
                Path(tmp) / "rsa.pem", Path(tmp) / "rsa.key", RELAY_PORT, PORT, "postgresql"
            )
        capture = genlib.Tcpdump(tcpdump, pcap, port, buffer_kib=65536)
        try:
            capture.start()
            record: list[dict[str, Any]] = []
            notes: list[dict[str, Any]] = []
            session(record, notes, options)
            counters = capture.stop()
        finally:
            if relay is not None:
                relay.close()
            genlib.stop_process(server)
    if tls and not keylog.exists():
        raise genlib.ToolError("libpq wrote no key log: sslkeylogfile needs libpq 18")
    truth = {
        "made_by": "scripts/make_pg_captures.py",
        "server": f"127.0.0.1:{port}",
        "user": USER,
        "password": PASSWORD,
        "statements": record,
        "notifications": notes,
    }
    software = {**genlib.package_versions("psycopg"), "postgresql": server_version()}
    run = genlib.run_record(counters, pcap, software)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    if tls:
        run["keylog"] = genlib.keylog_labels(keylog)
    genlib.log(f"{folder.name}: {run['packets']} packets, {len(record)} statements, {counters}")


def server_version() -> str:
    out = subprocess.run([str(pg_bin() / "postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.strip()


if __name__ == "__main__":
    main()
