"""Make a loopback capture of psycopg 3 with the ``pgvector`` package's adapters talking to a
real PostgreSQL server with the pgvector extension, in ``tests/data/captures/pgvector_psycopg/``.

    python3 scripts/make_pgvector_captures.py        # needs root (tcpdump, runuser postgres)

The server is PyPI's ``pgserver`` (its wheel bundles PostgreSQL 16 with pgvector's ``vector``
extension; Debian bookworm has no pgvector package), which scripts/pgvector.sh installs into
``.venv-pgvector`` with psycopg, pgvector, numpy and openai; this script runs itself again
with that venv's Python. Only its binaries are used: a throw-away cluster made with
``initdb`` in a temporary folder, SCRAM-SHA-256 passwords, on 127.0.0.1 only, TLS off,
started as the ``postgres`` user. ``tcpdump -i lo`` writes the cluster's port and the model
stub's only.

The client, on one connection: ``CREATE EXTENSION vector``, a table with a ``vector(3)``
column, inserts (a pipelined ``executemany`` whose vectors are numpy arrays, which the
adapter sends as binary ``vector`` values, and one with a literal vector), an HNSW index,
then similarity searches: ``<->`` (L2) with a binary bound vector and the distance selected
as an alias, ``<=>`` (cosine) with a text parameter cast ``$1::vector``, a ``WHERE`` filter and
a bound ``LIMIT``, ``<#>`` (negative inner product) with a literal vector, a simple-protocol
search (a ``ClientCursor``), a search whose vector has the wrong size (an error, 22000), and a
plain ``count(*)``. Then an agent run: the official ``openai`` SDK asks a model stub
(``genlib.JsonStub``) which asks for a ``search_docs`` tool call; the agent embeds the query
text with the stub's ``/v1/embeddings``, searches with that vector and the tool's category,
sends the rows back and gets the final answer.

``truth.json`` holds the client's own record of each statement in order (the query as
psycopg sent it, ``$n`` placeholders, the literal text for a ``ClientCursor``; the parameters
as Python gave them, vectors as lists; the command tag; the rows psycopg returned; the
SQLSTATE of an error), and the agent's tool call, its embedding and the rows it got. Nothing
in it is read back from the pcap.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import genlib  # noqa: E402

CAPTURES_DIR = ROOT / "tests" / "data" / "captures"
VENV = ROOT / ".venv-pgvector"
PORT = 55432
MODEL_PORT = 55433
USER = "agent"
PASSWORD = "pgv-s3cret-never-shown"

ITEMS = [  # content, category, embedding
    ("apple pie recipe", "fruit", [1.0, 0.0, 0.0]),
    ("banana bread", "fruit", [0.9, 0.1, 0.0]),
    ("tomato soup", "vegetable", [0.5, 0.5, 0.0]),
    ("carrot cake", "vegetable", [0.0, 1.0, 0.0]),
    ("grilled fish", "fish", [0.0, 0.0, 1.0]),
]
LITERAL_ITEM = ("cherry tart", "fruit", "[0.8,0.2,0.1]")
QUERY_TEXT = "sweet fruit desserts"
QUERY_EMBEDDING = [0.875, 0.125, 0.0625]  # exact in float32: the stub's embedding


def pg_bin() -> Path:
    """pgserver's PostgreSQL binaries in .venv-pgvector (scripts/pgvector.sh)."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")  # not imported: its import sets up dirs
    origin = spec.origin if spec is not None else None
    found = Path(origin or "/nonexistent").parent / "pginstall" / "bin"
    if not (found / "postgres").exists():
        raise SystemExit("make_pgvector_captures.py: no pgserver binaries; run scripts/pgvector.sh")
    return found


def start_cluster(folder: Path) -> subprocess.Popen[bytes]:
    """A throw-away cluster in ``folder``, run as ``postgres``."""
    if not genlib.port_is_free(PORT):
        raise genlib.ToolError(f"127.0.0.1:{PORT} is in use: stop what listens there")
    pwfile = folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    shutil.chown(folder, "postgres")
    shutil.chown(pwfile, "postgres")
    runuser = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    auth = ["--auth=scram-sha-256", f"--pwfile={pwfile}"]
    subprocess.run(
        [*runuser, str(pg_bin() / "initdb"), "-D", str(data), "-U", USER, *auth],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = ["-k", str(folder), "-c", "listen_addresses=127.0.0.1", "-c", "ssl=off"]
    server = subprocess.Popen(
        [*runuser, str(pg_bin() / "postgres"), "-D", str(data), "-p", str(PORT), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    genlib.wait_pg_ready(pg_bin() / "pg_isready", PORT, server)
    return server


def placeholders(query: str) -> str:
    """The query as psycopg sends it on the extended protocol: ``%s`` become ``$n``."""
    parts = re.split(r"%[sb]", query)
    return parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))


def plain(value: Any) -> Any:
    """A parameter or a fetched value as JSON: a vector (numpy, pgvector.Vector) as a list."""
    if hasattr(value, "to_list"):
        return [float(x) for x in value.to_list()]
    if hasattr(value, "tolist"):
        return [float(x) for x in value.tolist()]
    return value


def statement(cur: Any, query: str, params: Any = None, *, simple: bool = False) -> dict[str, Any]:
    """What the client knows it sent and got for the cursor's last statement."""
    out: dict[str, Any] = {
        "query": query if simple else placeholders(query),
        **({"client_cursor": True} if simple else {}),
        "parameters": [plain(p) for p in params or []],
        "tag": cur.statusmessage,
    }
    if cur.description is not None and cur.pgresult is not None:
        out["columns"] = [c.name for c in cur.description]
        out["rows"] = [[plain(v) for v in row] for row in cur.fetchall()]
    return out


def session(record: list[dict[str, Any]]) -> None:
    import numpy as np  # type: ignore[import-not-found, unused-ignore]
    import psycopg
    from pgvector.psycopg import register_vector  # type: ignore[import-not-found, unused-ignore]

    dsn = f"host=127.0.0.1 port={PORT} user={USER} password={PASSWORD} dbname=postgres"
    with psycopg.connect(dsn, autocommit=True, application_name="agentshark-pgvector") as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        record.append({"query": "CREATE EXTENSION IF NOT EXISTS vector", "tag": "CREATE EXTENSION"})
        register_vector(conn)  # looks the vector type up: a query of its own
        record.append({"query": "register_vector", "adapter": True})
        cur = conn.cursor()

        def run(query: str, params: Any = None) -> None:
            try:
                cur.execute(query, params)
                record.append(statement(cur, query, params))
            except psycopg.Error as exc:
                entry = statement(cur, query, params)
                entry["sqlstate"] = exc.sqlstate
                record.append(entry)

        run(
            "CREATE TABLE items (id bigserial PRIMARY KEY, content text NOT NULL, "
            "category text, embedding vector(3))"
        )
        many = [(c, k, np.array(e, dtype=np.float32)) for c, k, e in ITEMS]
        cur.executemany(
            "INSERT INTO items (content, category, embedding) VALUES (%s, %s, %s)", many
        )
        record.extend(
            {
                "query": "INSERT INTO items (content, category, embedding) VALUES ($1, $2, $3)",
                "parameters": [c, k, e],
                "tag": "INSERT 0 1",
                "pipelined": True,
                "binary_vector": True,
            }
            for c, k, e in ITEMS
        )
        run(
            "INSERT INTO items (content, category, embedding) VALUES (%s, %s, %s::vector)",
            LITERAL_ITEM,
        )
        run("CREATE INDEX items_embedding_l2 ON items USING hnsw (embedding vector_l2_ops)")
        near = np.array([1.0, 0.1, 0.0], dtype=np.float32)
        run(
            "SELECT id, content, embedding <-> %s AS distance FROM items "
            "ORDER BY embedding <-> %s LIMIT 3",
            (near, near),
        )
        run(
            "SELECT id, category, embedding <=> %s::vector AS cosine_distance FROM items "
            "WHERE category = %s ORDER BY cosine_distance LIMIT %s",
            ("[0.5,0.5,0.1]", "vegetable", 2),
        )
        run(
            "SELECT id, content, (embedding <#> '[1,1,1]') * -1 AS inner_product FROM items "
            "ORDER BY embedding <#> '[1,1,1]' LIMIT 2"
        )
        simple = psycopg.ClientCursor(conn)
        query = "SELECT id FROM items ORDER BY embedding <-> '[0,0,0.9]' LIMIT 1"
        simple.execute(query)
        record.append(statement(simple, query, simple=True))
        run("SELECT id FROM items ORDER BY embedding <-> %s::vector LIMIT 1", ("[1,2]",))
        run("SELECT count(*) FROM items")


def answer_chat(request: dict[str, Any]) -> dict[str, Any]:
    """``/v1/chat/completions``: a ``search_docs`` tool call, or the final text once the
    conversation holds a tool result."""
    if any(m.get("role") == "tool" for m in request["messages"]):
        message: dict[str, Any] = {"role": "assistant", "content": "Try the apple pie."}
    else:
        arguments = {"query": QUERY_TEXT, "category": "fruit"}
        message = genlib.tool_call_message("call_pgv_1", "search_docs", arguments)
    rid = f"chatcmpl-pgv-{len(request['messages'])}"
    return genlib.chat_completion(rid, request["model"], message, usage=(24, 6))


def answer_embeddings(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": QUERY_EMBEDDING}],
        "model": request["model"],
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    }


SEARCH = (
    "SELECT id, content, embedding <=> %s AS distance FROM items "
    "WHERE category = %s ORDER BY embedding <=> %s LIMIT 2"
)


def agent(truth: dict[str, Any]) -> None:
    """The agent loop: ask the model, embed the query, search, send the rows back."""
    import numpy as np  # type: ignore[import-not-found, unused-ignore]
    import openai
    import psycopg
    from pgvector.psycopg import register_vector  # type: ignore[import-not-found, unused-ignore]

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{MODEL_PORT}/v1", api_key="sk-test")
    about = "Search the recipes by meaning, within one category"
    tools: list[Any] = [
        genlib.function_tool("search_docs", about, query="what to look for", category="a category")
    ]
    messages: list[Any] = [{"role": "user", "content": "A fruit dessert, please?"}]
    dsn = f"host=127.0.0.1 port={PORT} user={USER} password={PASSWORD} dbname=postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        first = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
        embedding = client.embeddings.create(model="stub-embed", input=arguments["query"])
        vector = np.array(embedding.data[0].embedding, dtype=np.float32)
        rows = conn.execute(SEARCH, (vector, arguments["category"], vector)).fetchall()
        result = json.dumps([[r[0], r[1], r[2]] for r in rows])
        truth["tool_calls"] = [
            {
                "id": call.id,
                "name": "search_docs",
                "arguments": arguments,
                "embedding": embedding.data[0].embedding,
                "statement": placeholders(SEARCH),
                "rows": [list(r) for r in rows],
            }
        ]
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        final = client.chat.completions.create(model="stub-1", messages=messages, tools=tools)
        truth["answer"] = final.choices[0].message.content


def capture(tcpdump: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pcap = folder / "capture.pcap"
    truth: dict[str, Any] = {
        "made_by": "scripts/make_pgvector_captures.py",
        "server": f"127.0.0.1:{PORT}",
        "user": USER,
        "password": PASSWORD,
    }
    record: list[dict[str, Any]] = []
    routes = {"/v1/chat/completions": answer_chat, "/v1/embeddings": answer_embeddings}
    with (
        tempfile.TemporaryDirectory(prefix="agentshark-pgv-") as tmp,
        genlib.JsonStub(MODEL_PORT, routes),
    ):
        server = start_cluster(Path(tmp))
        dump = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
        dump.argv[-1] = f"tcp port {PORT} or tcp port {MODEL_PORT}"
        try:
            dump.start()
            session(record)
            agent(truth)
            counters = dump.stop()
        finally:
            dump.abort()  # a run that failed leaves no tcpdump behind
            genlib.stop_process(server)
    truth["statements"] = record
    software = {
        **genlib.package_versions("psycopg", "pgvector", "pgserver", "openai"),
        "postgresql": server_version(),
        "vector": vector_version(),
    }
    run = genlib.run_record(counters, pcap, software, port=PORT, model_port=MODEL_PORT)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"{folder.name}: {run['packets']} packets, {len(record)} statements, {counters}")


def server_version() -> str:
    out = subprocess.run([str(pg_bin() / "postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.strip()


def vector_version() -> str:
    """The pgvector version the server's extension folder installs by default."""
    control = pg_bin().parent / "share" / "postgresql" / "extension" / "vector.control"
    found = re.search(r"default_version\s*=\s*'([^']+)'", control.read_text())
    return found.group(1) if found else "unknown"


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR, help="parent of the folder")
    args = parser.parse_args()
    if not in_venv():
        python = VENV / "bin" / "python"
        if not python.exists():
            raise SystemExit(
                "make_pgvector_captures.py: no .venv-pgvector; run scripts/pgvector.sh"
            )
        os.execv(str(python), [str(python), __file__, *sys.argv[1:]])
    if os.geteuid() != 0:
        raise SystemExit("make_pgvector_captures.py: run as root (tcpdump, runuser postgres)")
    capture(genlib.ensure_tcpdump(), args.out / "pgvector_psycopg")


if __name__ == "__main__":
    main()
