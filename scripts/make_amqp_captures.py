"""Make a loopback capture of the official RabbitMQ client for Python (pika) and of Celery
talking to a real RabbitMQ broker, in ``tests/data/captures/amqp_pika/``.

    python3 scripts/make_amqp_captures.py             # needs root (tcpdump)
    python3 scripts/make_amqp_captures.py --out DIR   # the parent of the case folder

The broker is Debian's ``rabbitmq-server`` (scripts/rabbitmq.sh installs it), started here
as a throw-away node: its own node name, AMQP port on 127.0.0.1, distribution and epmd
ports, config, data and log directories in a temporary directory, a user of its own made
at first boot; it and its epmd are stopped at the end. ``tcpdump -i lo`` writes its AMQP
port only.

The clients: pika's BlockingConnection declares a dead-letter exchange and its queue, a
work queue whose ``x-dead-letter-exchange`` names it, turns publisher confirms on and
publishes four JSON messages with properties and headers (``traceparent``), one mandatory
message nothing routes (returned), then consumes: it acks the first, nacks the second with
requeue (and acks its redelivery), rejects the third without requeue (dead-lettered) and
acks the fourth; a basic.get takes a fifth, another finds the queue empty; a passive
declare of a missing queue closes the channel (404). A second connection consumes the
dead letter (its ``x-death`` header) and acks it. Celery (its py-amqp transport) sends one
task message, which pika gets from the ``celery`` queue and acks.

``truth.json`` is the clients' own record, from their return values and callbacks (pika's
method frames and properties as it parsed them, Celery's task id), never read back from the
pcap: per connection (its local port), in order, every method the script called or
received; and the user's password, which the report must never show.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
import genlib  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
PORT = 56729
USER = "agent"
PASSWORD = "amqp-s3cret-never-shown"  # a throw-away broker's password
TRACEPARENT = "00-" + "4bf92f3577b34da6a3ce929d0e0e4736" + "-" + "00f067aa0ba902b7" + "-01"

Log = dict[str, list[dict[str, Any]]]


def plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, datetime.datetime):  # pika reads a 'T' field as a datetime
        return int(value.replace(tzinfo=datetime.UTC).timestamp())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def port_of(conn: Any) -> str:
    """The local port of a pika BlockingConnection's socket."""
    return str(conn._impl._transport._sock.getsockname()[1])


def props_of(props: Any) -> dict[str, Any]:
    names = ("content_type", "content_encoding", "headers", "delivery_mode", "priority",
             "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type",
             "user_id", "app_id")  # fmt: skip
    return {n: plain(getattr(props, n)) for n in names if getattr(props, n) is not None}


def delivery(method: Any, props: Any, body: bytes, op: str = "deliver") -> dict[str, Any]:
    out = {"op": op, "delivery_tag": method.delivery_tag, "redelivered": method.redelivered,
           "exchange": method.exchange, "routing_key": method.routing_key,
           "properties": props_of(props), "body": body.decode()}  # fmt: skip
    if op == "deliver":
        out["consumer_tag"] = method.consumer_tag
    return out


def publisher(log: Log, params: Any) -> None:
    import pika
    import pika.exceptions

    conn = pika.BlockingConnection(params)
    rec = log.setdefault(port_of(conn), [])
    ch = conn.channel()
    ch.exchange_declare("dlx", exchange_type="fanout", durable=False)
    ch.queue_declare("dead", durable=False)
    ch.queue_bind("dead", "dlx")
    args = {"x-dead-letter-exchange": "dlx"}
    ch.queue_declare("tasks", durable=False, arguments=args)
    rec.append({"op": "queue.declare", "queue": "tasks", "arguments": args})
    ch.confirm_delivery()

    def publish(body: dict[str, Any], mid: str, key: str = "tasks", **kw: Any) -> None:
        props = pika.BasicProperties(
            content_type="application/json", delivery_mode=2, message_id=mid,
            correlation_id=f"corr-{mid}", reply_to="replies", app_id="agent-7",
            timestamp=1_760_000_000, headers={"traceparent": TRACEPARENT, "attempt": 1},
        )  # fmt: skip
        entry: dict[str, Any] = {"op": "publish", "exchange": "", "routing_key": key}
        entry.update(body=json.dumps(body), properties=props_of(props))
        rec.append(entry)
        try:
            ch.basic_publish("", key, entry["body"].encode(), props, **kw)
            entry["confirmed"] = True
        except pika.exceptions.UnroutableError as exc:
            entry["returned"] = [m.method.reply_code for m in exc.messages]

    for n in range(1, 5):
        publish({"task": "summarize", "doc": n}, f"m{n}")
    publish({"task": "lost"}, "m-unroutable", key="nowhere", mandatory=True)
    ch.basic_qos(prefetch_count=10)
    for handled, (method, props, body) in enumerate(ch.consume("tasks", inactivity_timeout=5), 1):
        if method is None:
            break
        rec.append(delivery(method, props, body))
        mid, tag = props.message_id, method.delivery_tag
        if mid == "m2" and not method.redelivered:
            ch.basic_nack(tag, requeue=True)
            rec.append({"op": "nack", "delivery_tag": tag, "requeue": True})
        elif mid == "m3":
            ch.basic_reject(tag, requeue=False)
            rec.append({"op": "reject", "delivery_tag": tag, "requeue": False})
        else:
            ch.basic_ack(tag)
            rec.append({"op": "ack", "delivery_tag": tag})
        if handled == 5:
            break
    ch.cancel()
    publish({"task": "fetch", "doc": 5}, "m5")
    method, props, body = ch.basic_get("tasks")
    rec.append(delivery(method, props, body, "get"))
    ch.basic_ack(method.delivery_tag)
    rec.append({"op": "ack", "delivery_tag": method.delivery_tag})
    method, _, _ = ch.basic_get("tasks")
    rec.append({"op": "get", "empty": method is None})
    try:
        ch.queue_declare("no-such-queue", passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        rec.append({"op": "channel.close", "code": exc.reply_code, "text": exc.reply_text})
    conn.close()


def dead_letter_reader(log: Log, params: Any) -> None:
    import pika

    conn = pika.BlockingConnection(params)
    rec = log.setdefault(port_of(conn), [])
    ch = conn.channel()
    for method, props, body in ch.consume("dead", inactivity_timeout=5):
        if method is None:
            break
        rec.append(delivery(method, props, body))
        ch.basic_ack(method.delivery_tag)
        rec.append({"op": "ack", "delivery_tag": method.delivery_tag})
        break
    ch.cancel()
    conn.close()


def celery_task(log: Log, params: Any) -> None:
    import celery
    import pika

    app = celery.Celery("agents", broker=f"pyamqp://{USER}:{PASSWORD}@127.0.0.1:{PORT}//")
    result = app.send_task("agents.summarize", args=["doc-7"], kwargs={"words": 50})
    log.setdefault("celery", []).append(
        {
            "op": "send_task",
            "task": "agents.summarize",
            "id": result.id,
            "args": ["doc-7"],
            "kwargs": {"words": 50},
        }
    )
    app.pool.force_close_all()
    conn = pika.BlockingConnection(params)
    rec = log.setdefault(port_of(conn), [])
    ch = conn.channel()
    method, props, body = ch.basic_get("celery")
    rec.append(delivery(method, props, body, "get"))
    ch.basic_ack(method.delivery_tag)
    rec.append({"op": "ack", "delivery_tag": method.delivery_tag})
    conn.close()


def start_broker(home: Path) -> subprocess.Popen[bytes]:
    (home / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = 127.0.0.1:{PORT}\ndefault_user = {USER}\n"
        f"default_pass = {PASSWORD}\nloopback_users = none\n"
    )
    (home / "enabled_plugins").write_text("[].\n")
    env = broker_env(home)
    proc = subprocess.Popen([str(SERVER)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 180
    while not genlib.is_listening(PORT):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_broker(proc, home)
            raise SystemExit(f"make_amqp_captures.py: the broker did not start (logs: {home})")
        time.sleep(0.5)
    return proc


def broker_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "RABBITMQ_NODENAME": "agentshark-capture@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(PORT),
        "RABBITMQ_DIST_PORT": str(PORT + 1),
        "ERL_EPMD_PORT": str(PORT + 2),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_MNESIA_BASE": str(home / "mnesia"),
        "RABBITMQ_LOG_BASE": str(home / "log"),
        "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(home / "pid"),
    }


def stop_broker(proc: subprocess.Popen[bytes], home: Path) -> None:
    """The broker's process group, then the epmd it started on its own port."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    epmd = shutil.which("epmd")
    if epmd is not None:
        subprocess.run([epmd, "-kill"], env=broker_env(home), capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_amqp_captures.py: run as root (tcpdump)")
    if not SERVER.exists():
        raise SystemExit("make_amqp_captures.py: no rabbitmq-server; run scripts/rabbitmq.sh")
    import pika

    tcpdump = genlib.ensure_tcpdump()
    folder = args.out / "amqp_pika"
    pcap = folder / "capture.pcap"
    params = pika.ConnectionParameters(
        "127.0.0.1", PORT, credentials=pika.PlainCredentials(USER, PASSWORD)
    )
    log: Log = {}
    with tempfile.TemporaryDirectory(prefix="agentshark-rabbitmq-") as tmp:
        home = Path(tmp)
        broker = start_broker(home)
        try:
            capture = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
            capture.start()
            publisher(log, params)
            dead_letter_reader(log, params)
            celery_task(log, params)
            time.sleep(0.5)
            counters = capture.stop()
        finally:
            stop_broker(broker, home)
    genlib.write_json(
        folder / "truth.json",
        {
            "made_by": "scripts/make_amqp_captures.py",
            "server": f"127.0.0.1:{PORT}",
            "user": USER,
            "password": PASSWORD,
            "connections": log,
        },
    )
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"],
                             capture_output=True, text=True, check=False).stdout  # fmt: skip
    genlib.write_json(
        folder / "run.json",
        {
            "tcpdump": counters,
            "capture_complete": genlib.capture_complete(counters),
            "packets": genlib.pcap_packet_count(pcap),
            "software": {
                **genlib.package_versions("pika", "celery", "kombu", "amqp"),
                "rabbitmq-server": version.strip(),
            },
        },
    )
    genlib.log(f"amqp_pika: {sum(map(len, log.values()))} records, {counters}")


if __name__ == "__main__":
    main()
