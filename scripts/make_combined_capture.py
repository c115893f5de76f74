"""Make a loopback capture of one agent run whose tools are a vector store, a queue and a
database, in ``tests/data/captures/combined_agent_run/``.

    python3 scripts/make_combined_capture.py            # needs root (tcpdump, runuser)
    python3 scripts/make_combined_capture.py --out DIR  # the parent of the case folder

The run (real software, every program on 127.0.0.1; the script makes its venv,
``scripts/.venv-combined``, and re-runs itself in it):

1. the agent (this process) asks a model stub (``genlib.JsonStub``, Chat Completions)
   through the official ``openai`` SDK; the stub asks for ``search_docs(query, k)``;
2. the agent runs it as a query of the real Chroma server (``chroma run``, from the
   ``chromadb`` package) with ``query_texts``: the collection's embedding function calls the
   stub's ``/v1/embeddings`` through the same SDK, then ``chromadb.HttpClient`` sends the
   vector; the documents go back to the stub;
3. the stub asks for ``enqueue_task(task)`` with a task made from the best document; the
   agent publishes it with pika (publisher confirms) on a queue of Debian's RabbitMQ
   (scripts/rabbitmq.sh; a throw-away node as ``scripts/make_amqp_captures.py`` makes it); a
   worker process (this script with ``--worker``, consuming since before the run) receives
   it (``basic.deliver``) and acks it (``basic.ack``);
4. the stub asks for ``log_task(task_id, note)``; the agent writes the row with psycopg into
   Debian's PostgreSQL (scripts/postgresql.sh; a throw-away cluster as
   ``scripts/make_pg_captures.py`` makes it): ``INSERT ... RETURNING id``;
5. the stub answers with text from the three results.

Set up before the capture starts: the cluster and its table, the broker and its queue, the
Chroma collection and its documents (their embeddings through the stub). ``tcpdump -i lo``
writes the stub's, Chroma's, the broker's and the cluster's ports only. ``truth.json`` is the
programs' own record, never read back from the pcap: each tool call (id, name, arguments)
with the agent's clock around its execution, what Chroma's client parsed, the vector the
embedding function got, the message as published and pika's confirm, the worker's delivery
and ack (with its clock), the statement, parameters, command tag and returned id, and the
answer; ``run.json`` the tcpdump counters, the ports and the software versions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS.parent / "bench"))
sys.path.insert(0, str(SCRIPTS))
import genlib  # noqa: E402
import make_amqp_captures as amqp  # noqa: E402
import make_pg_captures as pg  # noqa: E402
import make_retrieval_captures as retrieval  # noqa: E402

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = SCRIPTS.parent / "tests" / "data" / "captures"
VENV = SCRIPTS / ".venv-combined"
REQUIREMENTS = (
    "chromadb==1.5.9",
    "openai==3.57.0",
    "psycopg[binary]==3.3.9",
    "pika==1.4.4",
)
MODEL_PORT = 54350
CHROMA_PORT = 54351
AMQP_PORT = 54352  # the node's distribution port and its epmd's are the next two
PG_PORT = 54355
MODEL = "gpt-stub-combined"
QUEUE = "agent-tasks"
TASK_ID = "task-0001"
NOTE = "tasting card handed to the worker pool"
INSERT = "INSERT INTO task_log (task_id, note) VALUES (%s, %s) RETURNING id"
FAKE_KEY = "sk-proj-example-not-a-real-key-combined0"

TOOLS = [
    genlib.function_tool("search_docs", "Search the tea notes", query="what to look for",
                         k="how many documents"),
    genlib.function_tool("enqueue_task", "Hand a task to the worker pool", task="what to do"),
    genlib.function_tool("log_task", "Record a handed-over task", task_id="the task's id",
                         note="what was done"),
]  # fmt: skip


def answer_chat(request: dict[str, Any]) -> dict[str, Any]:
    """The model: one tool per turn, in order, each made from the previous tool's result."""
    results = [json.loads(m["content"]) for m in request["messages"] if m.get("role") == "tool"]
    turn = len(results)
    if turn == 0:
        message = genlib.tool_call_message(
            "call_search_1", "search_docs", {"query": "how is matcha made", "k": "2"}
        )
    elif turn == 1:
        best = results[0][0]
        task = f"Write a tasting card from {best['id']}: {best['text']}"
        message = genlib.tool_call_message("call_enqueue_1", "enqueue_task", {"task": task})
    elif turn == 2:
        arguments = {"task_id": results[1]["message_id"], "note": NOTE}
        message = genlib.tool_call_message("call_log_1", "log_task", arguments)
    else:
        text = (
            f"{results[0][0]['text']} A worker is writing the tasting card "
            f"({results[1]['message_id']}), logged as row {results[2]['row_id']}."
        )
        message = {"role": "assistant", "content": text}
    usage = (40 + 30 * turn, 12)
    return genlib.chat_completion(f"chatcmpl-combined-{turn + 1}", MODEL, message, usage=usage)


def answer_embeddings(request: dict[str, Any]) -> dict[str, Any]:
    inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
    data = [
        {"object": "embedding", "index": n, "embedding": retrieval.embed(text)}
        for n, text in enumerate(inputs)
    ]
    tokens = sum(len(t.split()) for t in inputs)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": retrieval.EMBED_MODEL, "usage": usage}


def amqp_params() -> Any:
    import pika

    credentials = pika.PlainCredentials(amqp.USER, amqp.PASSWORD)
    return pika.ConnectionParameters("127.0.0.1", AMQP_PORT, credentials=credentials)


def pg_dsn() -> str:
    return f"host=127.0.0.1 port={PG_PORT} user={pg.USER} password={pg.PASSWORD} dbname=postgres"


# -- the tools ------------------------------------------------------------------------------


def search_docs(kb: Any, ef: Any, arguments: dict[str, Any], truth: dict[str, Any]) -> Any:
    found = kb.query(query_texts=[arguments["query"]], n_results=int(arguments["k"]))
    truth["chroma_result"] = retrieval.query_result(found)
    truth["query_vector"] = [float(x) for x in ef.last[0]]
    return [
        {"id": i, "text": d} for i, d in zip(found["ids"][0], found["documents"][0], strict=True)
    ]


def enqueue_task(arguments: dict[str, Any], truth: dict[str, Any]) -> Any:
    import pika

    conn = pika.BlockingConnection(amqp_params())
    ch = conn.channel()
    ch.confirm_delivery()
    props = pika.BasicProperties(
        content_type="application/json", delivery_mode=2, message_id=TASK_ID,
        correlation_id="run-combined-1", app_id="tea-agent",
    )  # fmt: skip
    body = json.dumps({"task_id": TASK_ID, "task": arguments["task"]})
    ch.basic_publish("", QUEUE, body.encode(), props, mandatory=True)  # raises unless confirmed
    truth["published"] = {"exchange": "", "routing_key": QUEUE, "body": body,
                          "properties": amqp.props_of(props), "confirmed": True}  # fmt: skip
    conn.close()
    return {"queue": QUEUE, "message_id": TASK_ID, "confirmed": True}


def log_task(arguments: dict[str, Any], truth: dict[str, Any]) -> Any:
    import psycopg

    parameters = [arguments["task_id"], arguments["note"]]
    with psycopg.connect(pg_dsn(), autocommit=True) as conn:
        cur = conn.execute(INSERT, parameters)
        row = cur.fetchone()
        status = cur.statusmessage
    assert row is not None
    truth["sql"] = {"statement": INSERT, "parameters": parameters, "command_tag": status,
                    "returned": [row[0]]}  # fmt: skip
    return {"row_id": row[0], "status": status}


def agent(kb: Any, ef: Any, truth: dict[str, Any]) -> None:
    import openai

    client = openai.OpenAI(api_key=FAKE_KEY, base_url=f"http://127.0.0.1:{MODEL_PORT}/v1")
    ef.client = client
    messages: list[Any] = [{"role": "user", "content": "How is matcha made? Have a tasting card "
                            "written and keep a note of it."}]  # fmt: skip
    truth["tool_calls"] = []
    chat: Any = client.chat.completions
    while True:
        response = chat.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            truth["answer"] = message.content
            return
        call = message.tool_calls[0]
        arguments = json.loads(call.function.arguments)
        started = time.time()
        if call.function.name == "search_docs":
            result = search_docs(kb, ef, arguments, truth)
        elif call.function.name == "enqueue_task":
            result = enqueue_task(arguments, truth)
        else:
            result = log_task(arguments, truth)
        truth["tool_calls"].append(
            {"id": call.id, "name": call.function.name, "arguments": arguments,
             "result": result, "started": started, "ended": time.time()}
        )  # fmt: skip
        messages.append(message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


def worker(ready: Path, out: Path) -> None:
    """The worker process: consume one task, ack it, record what pika gave."""
    import pika

    conn = pika.BlockingConnection(amqp_params())
    ch = conn.channel()
    record: dict[str, Any] = {"local_port": amqp.port_of(conn)}

    def on_message(channel: Any, method: Any, props: Any, body: bytes) -> None:
        record["delivered"] = {**amqp.delivery(method, props, body), "at": time.time()}
        time.sleep(0.2)  # the work
        channel.basic_ack(method.delivery_tag)
        record["acked"] = {"delivery_tag": method.delivery_tag, "at": time.time()}
        channel.stop_consuming()

    record["consumer_tag"] = ch.basic_consume(QUEUE, on_message)
    ready.write_text("consuming")
    ch.start_consuming()
    conn.close()
    out.write_text(json.dumps(record))


# -- the capture ----------------------------------------------------------------------------


def prepare(tmp: Path, procs: dict[str, Any]) -> tuple[Any, Any]:
    """Servers, table, queue and collection, before the capture."""
    import pika
    import psycopg

    pg.PORT, amqp.PORT = PG_PORT, AMQP_PORT
    procs["postgresql"] = pg.start_cluster(tmp)
    (tmp / "rabbitmq").mkdir()
    procs["rabbitmq"] = amqp.start_broker(tmp / "rabbitmq")
    procs["chroma"] = retrieval.start_chroma(CHROMA_PORT, tmp / "chroma", tmp / "chroma.log")
    with psycopg.connect(pg_dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE task_log (id serial PRIMARY KEY, task_id text, note text)")
    conn_amqp = pika.BlockingConnection(amqp_params())
    conn_amqp.channel().queue_declare(QUEUE, durable=False)
    conn_amqp.close()
    import openai

    client = openai.OpenAI(api_key=FAKE_KEY, base_url=f"http://127.0.0.1:{MODEL_PORT}/v1")
    ef = retrieval.StubEmbedding(client)
    kb = retrieval.chroma_client(CHROMA_PORT).create_collection("tea-notes", embedding_function=ef)
    ids = list(retrieval.DOCS)
    docs = retrieval.DOCS
    kb.add(ids=ids, documents=[docs[i][0] for i in ids], metadatas=[docs[i][1] for i in ids])
    procs["collection_id"] = str(kb.id)
    return kb, ef


def capture(tcpdump: str, folder: Path) -> None:
    import psycopg

    pcap = folder / "capture.pcap"
    truth: dict[str, Any] = {"made_by": "scripts/make_combined_capture.py", "queue": QUEUE,
                             "passwords": [pg.PASSWORD, amqp.PASSWORD]}  # fmt: skip
    ports = {"model": MODEL_PORT, "chroma": CHROMA_PORT, "amqp": AMQP_PORT, "postgresql": PG_PORT}
    routes = {"/v1/chat/completions": answer_chat, "/v1/embeddings": answer_embeddings}
    procs: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="agentshark-combined-") as tmpdir,
        genlib.JsonStub(MODEL_PORT, routes),
    ):
        tmp = Path(tmpdir)
        dump: genlib.Tcpdump | None = None
        try:
            kb, ef = prepare(tmp, procs)
            truth["collection_id"] = procs["collection_id"]
            dump = genlib.Tcpdump(tcpdump, pcap, MODEL_PORT, buffer_kib=65536)
            dump.argv[-1] = " or ".join(f"tcp port {p}" for p in ports.values())
            dump.start()
            ready, record = tmp / "ready", tmp / "worker.json"
            work = subprocess.Popen(
                [sys.executable, str(SCRIPT), "--worker", str(ready), "--record", str(record)]
            )
            deadline = time.monotonic() + 30
            while not ready.exists():
                if work.poll() is not None or time.monotonic() > deadline:
                    raise genlib.ToolError("the worker did not start consuming")
                time.sleep(0.05)
            agent(kb, ef, truth)
            if work.wait(60) != 0:
                raise genlib.ToolError(f"the worker exited with {work.returncode}")
            counters = dump.stop()
            truth["worker"] = json.loads(record.read_text())
            with psycopg.connect(pg_dsn(), autocommit=True) as conn:
                truth["rows"] = [list(r) for r in conn.execute("SELECT * FROM task_log")]
        finally:
            if dump is not None:  # a run that failed leaves no tcpdump behind
                dump.abort()
            if "chroma" in procs:
                genlib.stop_process(procs["chroma"])
            if "rabbitmq" in procs:
                amqp.stop_broker(procs["rabbitmq"], tmp / "rabbitmq")
            if "postgresql" in procs:
                genlib.stop_process(procs["postgresql"])
    software = {
        **genlib.package_versions(*(r.split("==")[0].split("[")[0] for r in REQUIREMENTS)),
        "rabbitmq-server": amqp_version(),
        "postgresql": pg.server_version(),
        "tcpdump": genlib.tcpdump_version(tcpdump),
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", genlib.run_record(counters, pcap, software, ports=ports))
    genlib.log(f"{folder.name}: {genlib.pcap_packet_count(pcap)} packets, {counters}")


def amqp_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR, help="parent of the folder")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # its ready file
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.record)
        return
    if os.geteuid() != 0:
        raise SystemExit("make_combined_capture.py: run as root (tcpdump, runuser postgres)")
    if not amqp.SERVER.exists():
        raise SystemExit("make_combined_capture.py: no rabbitmq-server; run scripts/rabbitmq.sh")
    genlib.reexec_in_venv(SCRIPT, VENV, lambda: genlib.ensure_venv(VENV, REQUIREMENTS))
    capture(genlib.ensure_tcpdump(), args.out / "combined_agent_run")


if __name__ == "__main__":
    main()
