"""Make loopback captures of MySQL clients for Python talking to a real MariaDB server, in
``tests/data/captures/mysql_pymysql/``, ``mysql_tls/``, ``mysql_connector/``,
``mysql_compressed/`` and ``mysql_agent/``.

    python3 scripts/make_mysql_captures.py                 # all; needs root (tcpdump)
    python3 scripts/make_mysql_captures.py --only mysql_agent

The server is Debian's ``mariadb-server`` (scripts/mysql.sh installs it): a throw-away data
directory made with ``mariadb-install-db`` in a temporary folder, run as the ``mysql`` user
on 127.0.0.1:33061 with a self-signed certificate, a user ``agent`` with a
``mysql_native_password`` password. ``tcpdump -i lo`` writes that port only (and the model
stub's, for the agent run).

``mysql_pymysql``: PyMySQL (the text protocol: it quotes parameters into the SQL itself) on
one connection: DDL, inserts, a batched ``executemany``, a select with rows, a missing table
(1146), a syntax error (1064), a multi-statement string, COM_PING, COM_INIT_DB, COM_QUIT;
then a connection whose password is wrong (1045). ``mysql_tls`` is that session over TLS: an
SSLRequest, then TLS 1.3 with Python's ``ssl`` writing the session keys to ``keys.log``
(``SSLContext.keylog_filename``). ``mysql_connector``: mysql-connector-python (pure Python)
with server-side prepared statements (COM_STMT_PREPARE/EXECUTE, binary parameters and rows);
``mysql_compressed`` the same with ``compress=True`` (CLIENT_COMPRESS, zlib).

``truth.json`` holds each client's own record of each statement, in order: the SQL as the
client sent it, its parameters, ``rowcount``, ``lastrowid``, the columns and rows it
fetched, the error number (and the SQLSTATE where the client gives it), and the password,
which the report must never show. Nothing in it is read back from the pcap.

``mysql_agent`` is an agent run: the official ``openai`` SDK against the model stub of
scripts/make_pg_captures.py, asking for a ``run_sql`` tool; the agent runs the SQL with
PyMySQL and sends the rows back. ``truth.json`` holds the tool call and the statement's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import genlib  # noqa: E402
from make_pg_captures import answer_chat  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
PORT = 33061
MODEL_PORT = 33062
USER = "agent"
PASSWORD = "my-s3cret-never-shown"
DATABASE = "notes_db"


def start_server(folder: Path) -> subprocess.Popen[bytes]:
    """mariadbd on a fresh data directory in ``folder``, TLS on, the ``agent`` user made."""
    if not genlib.port_is_free(PORT):
        raise genlib.ToolError(f"127.0.0.1:{PORT} is in use: stop what listens there")
    data = folder / "data"
    data.mkdir()
    certs = genlib.make_test_certs(folder)
    for path in (folder, data, certs["rsa"], certs["rsa_key"]):
        shutil.chown(path, "mysql", "mysql")
    subprocess.run(
        ["mariadb-install-db", f"--datadir={data}", "--user=mysql", "--skip-test-db"],
        check=True,
        capture_output=True,
    )
    sock = folder / "mysqld.sock"
    server = subprocess.Popen(
        [
            "/usr/sbin/mariadbd",
            "--no-defaults",
            f"--datadir={data}",
            "--user=mysql",
            f"--port={PORT}",
            "--bind-address=127.0.0.1",
            f"--socket={sock}",
            f"--pid-file={folder / 'mysqld.pid'}",
            f"--ssl-cert={certs['rsa']}",
            f"--ssl-key={certs['rsa_key']}",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=16M",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        if sock.exists() and genlib.is_listening(PORT):
            break
        time.sleep(0.1)
    else:
        server.terminate()
        raise genlib.ToolError("mariadbd did not start")
    setup = (
        f"CREATE DATABASE {DATABASE}; CREATE DATABASE other_db;"
        f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED VIA mysql_native_password"
        f" USING PASSWORD('{PASSWORD}');"
        f"GRANT ALL ON *.* TO '{USER}'@'127.0.0.1';"
    )
    subprocess.run(["mariadb", f"--socket={sock}", "-u", "root", "-e", setup], check=True)
    return server


def pymysql_statement(cur: Any, query: str, params: Any = None) -> dict[str, Any]:
    """Run one statement with PyMySQL; what it knows it sent and got."""
    import pymysql

    entry: dict[str, Any] = {"parameters": list(params or [])}
    entry["query"] = cur.mogrify(query, params)
    try:
        cur.execute(query, params)
    except pymysql.MySQLError as exc:
        entry["errno"] = exc.args[0]
        return entry
    results = []
    while True:
        result: dict[str, Any] = {"rowcount": cur.rowcount}
        if cur.description is not None:
            rows = cur.fetchall()
            result["rows"] = len(rows)
            result["columns"] = [d[0] for d in cur.description]
            result["values"] = [[None if v is None else str(v) for v in r] for r in rows]
        else:
            result["lastrowid"] = cur.lastrowid
        results.append(result)
        if not cur.nextset():
            break
    entry.update(results[0])
    if len(results) > 1:
        entry["results"] = results
    return entry


def pymysql_session(record: list[dict[str, Any]], context: ssl.SSLContext | None) -> None:
    import pymysql
    from pymysql.constants import CLIENT

    conn = pymysql.connect(
        host="127.0.0.1",
        port=PORT,
        user=USER,
        password=PASSWORD,
        database=DATABASE,
        autocommit=True,
        client_flag=CLIENT.MULTI_STATEMENTS,
        ssl=context,
        ssl_disabled=context is None,  # PyMySQL asks for TLS whenever the server offers it
        program_name="agentshark-test",
    )
    cur = conn.cursor()
    run = [
        ("CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body TEXT NOT NULL, n INT)", None),
        ("INSERT INTO notes (body, n) VALUES (%s, %s)", ("first note", 7)),
        ("SELECT id, body, n FROM notes WHERE n IS NULL OR n > %s ORDER BY id", (0,)),
        ("SELECT * FROM no_such_table", None),
        ("SELEC 1", None),
        ("SELECT 1 AS one; SELECT 2 AS two", None),
        ("UPDATE notes SET n = n + 1 WHERE body = %s", ("first note",)),
    ]
    for query, params in run[:2]:
        record.append(pymysql_statement(cur, query, params))
    many = [("second", 1), ("third", 2), ("fourth", None)]
    cur.executemany("INSERT INTO notes (body, n) VALUES (%s, %s)", many)
    record.append(
        {
            "query": bytes(cur._executed).decode(),
            "parameters": [],
            "rowcount": cur.rowcount,
            "batched": True,
        }
    )
    for query, params in run[2:]:
        record.append(pymysql_statement(cur, query, params))
    conn.ping(reconnect=False)
    record.append({"command": "PING"})
    conn.select_db("other_db")
    record.append({"command": "INIT_DB", "database": "other_db"})
    conn.close()
    record.append({"command": "QUIT"})
    try:
        pymysql.connect(
            host="127.0.0.1",
            port=PORT,
            user=USER,
            password="wrong",
            ssl=context,
            ssl_disabled=context is None,
        )
    except pymysql.MySQLError as exc:
        record.append({"refused": True, "errno": exc.args[0]})


def connector_session(record: list[dict[str, Any]], *, compress: bool) -> None:
    import datetime

    import mysql.connector

    conn = mysql.connector.connect(
        host="127.0.0.1",
        port=PORT,
        user=USER,
        password=PASSWORD,
        database=DATABASE,
        use_pure=True,
        compress=compress,
        autocommit=True,
        ssl_disabled=True,
    )
    plain = conn.cursor()
    plain.execute(
        "CREATE TABLE items (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40),"
        " price DOUBLE, qty INT UNSIGNED, made DATE)"
    )
    record.append({"query": plain.statement, "prepared": False, "rowcount": plain.rowcount})
    cur = conn.cursor(prepared=True)
    runs: list[tuple[str, tuple[Any, ...]]] = [
        (
            "INSERT INTO items (name, price, qty, made) VALUES (%s, %s, %s, %s)",
            ("lamp", 19.5, 3, datetime.date(2024, 5, 1)),
        ),
        (
            "INSERT INTO items (name, price, qty, made) VALUES (%s, %s, %s, %s)",
            ("desk", 120.0, None, datetime.date(2023, 1, 9)),
        ),
        ("SELECT id, name, price, qty, made FROM items WHERE price > %s ORDER BY id", (1.5,)),
        ("SELECT name FROM items WHERE id = %s", (2,)),
        ("SELECT name FROM no_such_items WHERE id = %s", (1,)),
    ]
    for query, params in runs:
        entry: dict[str, Any] = {
            "query": query.replace("%s", "?"),
            "prepared": True,
            "parameters": [
                p if p is None or isinstance(p, (int, float, str)) else str(p) for p in params
            ],
        }
        try:
            cur.execute(query, params)
            if cur.description is not None:
                rows = cur.fetchall()
                entry["rows"] = len(rows)
                entry["columns"] = [d[0] for d in cur.description]
            entry["rowcount"] = cur.rowcount
            entry["lastrowid"] = cur.lastrowid
        except mysql.connector.Error as exc:
            entry.update(errno=exc.errno, sqlstate=exc.sqlstate)
        record.append(entry)
    conn.close()


def capture(tcpdump: str, folder: Path, kind: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pcap = folder / "capture.pcap"
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    record: list[dict[str, Any]] = []
    truth: dict[str, Any] = {
        "made_by": "scripts/make_mysql_captures.py",
        "server": f"127.0.0.1:{PORT}",
        "user": USER,
        "password": PASSWORD,
    }
    with tempfile.TemporaryDirectory(prefix="agentshark-mysql-") as tmp:
        server = start_server(Path(tmp))
        cap = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
        if kind == "agent":
            cap.argv[-1] = f"tcp port {PORT} or tcp port {MODEL_PORT}"
        try:
            cap.start()
            if kind in ("pymysql", "tls"):
                context = None
                if kind == "tls":
                    context = ssl.create_default_context(cafile=str(Path(tmp) / "rsa.pem"))
                    context.minimum_version = ssl.TLSVersion.TLSv1_3
                    context.keylog_filename = str(keylog)
                pymysql_session(record, context)
            elif kind in ("connector", "compressed"):
                connector_session(record, compress=kind == "compressed")
            else:
                agent(truth)
            counters = cap.stop()
        finally:
            genlib.stop_process(server)
    if record:
        truth["statements"] = record
    run: dict[str, Any] = {
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "software": {
            **genlib.package_versions("PyMySQL", "mysql-connector-python", "openai"),
            "mariadb": server_version(),
        },
    }
    if keylog.exists():
        run["keylog"] = genlib.keylog_labels(keylog)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"{folder.name}: {run['packets']} packets, {len(record)} records, {counters}")


SQL = "SELECT id, body FROM notes WHERE n > 1 ORDER BY id"


def agent(truth: dict[str, Any]) -> None:
    """The agent loop: ask the model, run the SQL it asks for, send the rows back."""
    import openai
    import pymysql

    with genlib.JsonStub(MODEL_PORT, {"/v1/chat/completions": answer_chat}):
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{MODEL_PORT}/v1", api_key="sk-test")
        tools: list[Any] = [
            {
                "type": "function",
                "function": {
                    "name": "run_sql",
                    "description": "Run a read-only SQL query on the notes database",
                    "parameters": {
                        "type": "object",
                        "properties": {"sql": {"type": "string"}},
                        "required": ["sql"],
                    },
                },
            }
        ]
        messages: list[Any] = [{"role": "user", "content": "Which notes have n > 1?"}]
        conn = pymysql.connect(
            host="127.0.0.1",
            port=PORT,
            user=USER,
            password=PASSWORD,
            database=DATABASE,
            autocommit=True,
            ssl_disabled=True,
        )
        cur = conn.cursor()
        cur.execute("CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body TEXT, n INT)")
        cur.execute("INSERT INTO notes (body, n) VALUES ('a', 1), ('b', 2), ('c', 3)")
        first = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
        cur.execute(arguments["sql"])
        rows = cur.fetchall()
        truth["tool_calls"] = [
            {
                "id": call.id,
                "name": "run_sql",
                "arguments": arguments,
                "statement": arguments["sql"],
                "rows": len(rows),
            }
        ]
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(list(rows))},
        ]
        final = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        truth["answer"] = final.choices[0].message.content
        conn.close()


def server_version() -> str:
    out = subprocess.run(["/usr/sbin/mariadbd", "--version"], capture_output=True, text=True)
    return out.stdout.strip()


NAMES = {
    "mysql_pymysql": "pymysql",
    "mysql_tls": "tls",
    "mysql_connector": "connector",
    "mysql_compressed": "compressed",
    "mysql_agent": "agent",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=tuple(NAMES))
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR, help="parent of the folders")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_mysql_captures.py: run as root (tcpdump, mariadbd as mysql)")
    if not Path("/usr/sbin/mariadbd").exists():
        raise SystemExit("make_mysql_captures.py: no MariaDB server; run scripts/mysql.sh")
    tcpdump = genlib.ensure_tcpdump()
    for name, kind in NAMES.items():
        if args.only in (None, name):
            capture(tcpdump, args.out / name, kind)


if __name__ == "__main__":
    main()
