"""Make a loopback capture of an agent that hands a task to a worker over a queue, in
``tests/data/captures/queue_agent_<broker>/``.

    python3 scripts/make_queue_agent_captures.py                  # every broker; needs root
    python3 scripts/make_queue_agent_captures.py --broker redis

The run (real software, every program on 127.0.0.1):

1. the agent (this process) asks a model stub (``genlib.JsonStub`` speaking Chat Completions)
   through the official ``openai`` SDK; the stub asks for the tool call ``enqueue_task``
   with a task text;
2. the agent enqueues the task on the broker with the broker's official client and sends
   the queue's answer (the message id) back as the tool result; the stub answers with text;
3. a worker process (this script with ``--worker``) reads the task, asks the model stub
   with the task in its prompt through the openai SDK; the stub asks for ``save_result``; the
   worker writes the row with ``psycopg`` into PostgreSQL, sends the tool result back, gets
   the stub's final text, then acks the message.

Each broker is captured twice: ``queue_agent_<broker>`` without trace context (the worker's
run is joined to the agent's by the task text its prompt holds), and
``queue_agent_<broker>_traceparent`` with W3C trace context as OpenTelemetry instrumentation
propagates it: a ``traceparent`` on the agent's model calls and in the message, which the
worker continues on its own model calls (one trace-id for both runs).

Brokers (:data:`BROKERS`; a broker is a class with ``start``/``stop``, the agent's
``publish`` and the worker's ``receive``/``ack``, so RabbitMQ or Kafka are one class each):

* ``redis``: Debian's ``redis-server`` (scripts/redis.sh), a stream ``agent:tasks`` with a
  consumer group, through redis-py: ``XADD`` by the agent, ``XREADGROUP`` and ``XACK`` by the
  worker.

PostgreSQL is Debian's (scripts/postgresql.sh), a throw-away cluster as
``scripts/make_pg_captures.py`` makes it. ``tcpdump -i lo`` writes the broker's, the
database's and the stub's ports only. ``truth.json`` holds the programs' own records, never
read back from the pcap: the agent's tool call (id, arguments), what the broker client
returned for the publish, the worker's delivery (id, fields), its tool call, the statement
and parameters it executed, the ack's reply, and both final answers; ``run.json`` the
tcpdump counters and the software versions.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
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
import make_pg_captures as pg  # noqa: E402

CAPTURES_DIR = SCRIPTS.parent / "tests" / "data" / "captures"
MODEL_PORT = 54341
PG_PORT = 54342
TASK = "Summarize the tide tables for Brest for the week of 14 December"
SUMMARY = "High tides near 06:10 and 18:30; spring tides mid-week, coefficient up to 96."
INSERT = "INSERT INTO task_results (task_id, summary) VALUES (%s, %s)"
PG_DSN = f"host=127.0.0.1 port={PG_PORT} user={pg.USER} password={pg.PASSWORD} dbname=postgres"


AGENT_TOOLS: list[Any] = [genlib.function_tool("enqueue_task", "Hand a task to the worker pool",
                                    task="what to do")]  # fmt: skip
WORKER_TOOLS: list[Any] = [
    genlib.function_tool(
        "save_result", "Store a task's result", task_id="the task's id", summary="the result"
    )
]


def answer_chat(request: dict[str, Any]) -> dict[str, Any]:
    """The model stub's ``/v1/chat/completions``: with ``enqueue_task`` offered, that tool
    call (then text once a tool result is in); with ``save_result`` offered, that tool call
    with the task id read from the prompt (then text)."""
    names = [t["function"]["name"] for t in request.get("tools") or []]
    answered = any(m.get("role") == "tool" for m in request["messages"])
    if answered:
        text = "Queued." if "enqueue_task" in names else "Saved the summary."
        message: dict[str, Any] = {"role": "assistant", "content": text}
    elif "enqueue_task" in names:
        message = genlib.tool_call_message("call_enqueue_1", "enqueue_task", {"task": TASK})
    else:
        prompt = request["messages"][-1]["content"]
        task_id = prompt.split("task id ", 1)[1].split(":", 1)[0]
        arguments = {"task_id": task_id, "summary": SUMMARY}
        message = genlib.tool_call_message("call_save_1", "save_result", arguments)
    rid = f"chatcmpl-{names[0] if names else 'x'}-{len(request['messages'])}"
    return genlib.chat_completion(rid, request["model"], message)


# -- brokers --------------------------------------------------------------------------------


class RedisBroker:
    """A Redis stream with a consumer group, through redis-py."""

    name = "redis"
    port = 63811
    stream = "agent:tasks"
    group = "workers"

    def __init__(self) -> None:
        self._server: subprocess.Popen[bytes] | None = None

    def start(self, folder: Path) -> None:
        server_bin = shutil.which("redis-server")
        if server_bin is None:
            raise SystemExit("make_queue_agent_captures.py: no redis-server; run scripts/redis.sh")
        self._server = subprocess.Popen(
            [server_bin, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        genlib.wait_listening(self.port, self._server)

    def prepare(self) -> None:
        """Before the capture: the stream and its group."""
        import redis

        r = redis.Redis(host="127.0.0.1", port=self.port)
        r.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        r.close()

    def stop(self) -> None:
        if self._server is not None:
            genlib.stop_process(self._server)

    def software(self) -> dict[str, str]:
        out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        return {**genlib.package_versions("redis"), "redis-server": out.stdout.strip()}

    def publish(self, task_id: str, task: str, headers: dict[str, str]) -> dict[str, Any]:
        """XADD the task; trace context (``headers``) as fields of the entry."""
        import redis

        r: Any = redis.Redis(host="127.0.0.1", port=self.port)
        entry: Any = r.xadd(self.stream, {"task_id": task_id, "task": task, **headers})
        r.close()
        return {"command": "XADD", "stream": self.stream, "entry_id": entry.decode()}

    def receive(self) -> tuple[Any, dict[str, Any]]:
        import redis

        r: Any = redis.Redis(host="127.0.0.1", port=self.port)
        reply: Any = r.xreadgroup(self.group, "worker-1", {self.stream: ">"}, count=1, block=10000)
        _, entries = reply[0]
        entry_id, fields = entries[0]
        message = {k.decode(): v.decode() for k, v in fields.items()}
        record = {"command": "XREADGROUP", "entry_id": entry_id.decode(), "fields": message}
        found = {"task_id": message["task_id"], "task": message["task"]}
        if "traceparent" in message:
            found["traceparent"] = message["traceparent"]
        return (r, entry_id), {**record, **found}

    def ack(self, handle: Any) -> dict[str, Any]:
        r, entry_id = handle
        acked = r.xack(self.stream, self.group, entry_id)
        r.close()
        return {"command": "XACK", "entry_id": entry_id.decode(), "reply": acked}


BROKERS = {"redis": RedisBroker}


# -- the programs ---------------------------------------------------------------------------


def traceparent(trace_id: str) -> str:
    """A W3C traceparent of ``trace_id`` with a new span id."""
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


def agent(broker: Any, truth: dict[str, Any], trace_id: str | None) -> None:
    """The agent; with ``trace_id``, W3C trace context on its model calls (one agent span)
    and on the message (the tool span's), as OpenTelemetry instrumentation propagates it."""
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{MODEL_PORT}/v1", api_key="sk-test")
    extra = {"traceparent": traceparent(trace_id)} if trace_id else {}
    messages: list[Any] = [{"role": "user", "content": "Get the Brest tides summarized."}]
    first = client.chat.completions.create(
        model="stub-1", messages=messages, tools=AGENT_TOOLS, extra_headers=extra
    )
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    headers = {"traceparent": traceparent(trace_id)} if trace_id else {}
    published = broker.publish("task-0001", arguments["task"], headers)
    truth["trace_context"] = {"agent": extra, "message": headers} if trace_id else None
    truth["agent"] = {"tool_call": {"id": call.id, "name": "enqueue_task", "arguments": arguments},
                      "published": published}  # fmt: skip
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(published)},
    ]
    final = client.chat.completions.create(
        model="stub-1", messages=messages, tools=AGENT_TOOLS, extra_headers=extra
    )
    truth["agent"]["answer"] = final.choices[0].message.content


def worker(broker: Any, out: Path) -> None:
    """The worker process: receive, ask the model, write the row, ack."""
    import openai
    import psycopg

    handle, delivered = broker.receive()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{MODEL_PORT}/v1", api_key="sk-test")
    parent = delivered.get("traceparent")  # the producer's context: continued by the worker
    extra = {"traceparent": traceparent(parent.split("-")[1])} if parent else {}
    prompt = f"Do the task id {delivered['task_id']}: {delivered['task']}"
    messages: list[Any] = [{"role": "user", "content": prompt}]
    first = client.chat.completions.create(
        model="stub-1", messages=messages, tools=WORKER_TOOLS, extra_headers=extra
    )
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        cur = conn.execute(INSERT, (arguments["task_id"], arguments["summary"]))
        status = cur.statusmessage
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": status or ""},
    ]
    final = client.chat.completions.create(
        model="stub-1", messages=messages, tools=WORKER_TOOLS, extra_headers=extra
    )
    acked = broker.ack(handle)
    record = {
        "delivered": delivered,
        "prompt": prompt,
        "tool_call": {"id": call.id, "name": "save_result", "arguments": arguments},
        "statement": INSERT,
        "parameters": [arguments["task_id"], arguments["summary"]],
        "command_tag": status,
        "answer": final.choices[0].message.content,
        "acked": acked,
        "trace_context": extra or None,
    }
    out.write_text(json.dumps(record))


def capture(broker_name: str, tcpdump: str, folder: Path, *, context: bool) -> None:
    import psycopg

    broker = BROKERS[broker_name]()
    pcap = folder / "capture.pcap"
    truth: dict[str, Any] = {"made_by": "scripts/make_queue_agent_captures.py",
                             "broker": broker_name}  # fmt: skip
    trace_id = secrets.token_hex(16) if context else None
    stub = genlib.JsonStub(MODEL_PORT, {"/v1/chat/completions": answer_chat})
    pg.PORT = PG_PORT
    with tempfile.TemporaryDirectory(prefix="agentshark-queue-") as tmp, stub:
        database = pg.start_cluster(Path(tmp))
        dump: genlib.Tcpdump | None = None
        try:
            broker.start(Path(tmp))
            broker.prepare()
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute("CREATE TABLE task_results (task_id text, summary text)")
            ports = (broker.port, PG_PORT, MODEL_PORT)
            dump = genlib.Tcpdump(tcpdump, pcap, broker.port, buffer_kib=65536)
            dump.argv[-1] = " or ".join(f"tcp port {p}" for p in ports)
            dump.start()
            record = Path(tmp) / "worker.json"
            work = subprocess.Popen(
                [sys.executable, __file__, "--worker", broker_name, "--record", str(record)]
            )
            time.sleep(0.5)  # the worker is waiting on the queue
            agent(broker, truth, trace_id)
            if work.wait(60) != 0:
                raise genlib.ToolError(f"the worker exited with {work.returncode}")
            counters = dump.stop()
            truth["worker"] = json.loads(record.read_text())
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                truth["rows"] = [list(r) for r in conn.execute("SELECT * FROM task_results")]
        finally:
            if dump is not None:  # a run that failed leaves no tcpdump behind
                dump.abort()
            broker.stop()
            genlib.stop_process(database)
    software = {
        **genlib.package_versions("openai", "psycopg"),
        **broker.software(),
        "postgresql": pg.server_version(),
    }
    named = {"broker": broker.port, "postgresql": PG_PORT, "model": MODEL_PORT}
    run = genlib.run_record(counters, pcap, software, ports=named)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"{folder.name}: {run['packets']} packets, {counters}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", choices=sorted(BROKERS))
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR, help="parent of the folders")
    parser.add_argument("--worker", choices=sorted(BROKERS), help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(BROKERS[args.worker](), args.record)
        return
    if os.geteuid() != 0:
        raise SystemExit("make_queue_agent_captures.py: run as root (tcpdump, runuser postgres)")
    tcpdump = genlib.ensure_tcpdump()
    for name in [args.broker] if args.broker else sorted(BROKERS):
        capture(name, tcpdump, args.out / f"queue_agent_{name}", context=False)
        capture(name, tcpdump, args.out / f"queue_agent_{name}_traceparent", context=True)


if __name__ == "__main__":
    main()
