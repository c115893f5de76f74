"""The AMQP capture made by scripts/make_amqp_captures.py (pika and Celery against a real
RabbitMQ broker on loopback): every publish, delivery, get and settlement against the
clients' own record, confirms, the dead letter's ``x-death``, the Celery task, the method
counts against tshark's AMQP dissector, the password nowhere in the report."""

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
from agentshark.wire.amqp import AmqpSession
from agentshark.wire.amqp_frames import BY_NAME
from agentshark.wire.events import Operation, QueueMessage
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures" / "amqp_pika"
_PROPS = ("message_id", "correlation_id", "reply_to", "timestamp")


def truth(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return data


@functools.cache
def items(folder: Path) -> list[object]:
    return list(agentshark.pipeline.run([str(folder / "capture.pcap")]))


@functools.cache
def by_port(folder: Path) -> dict[str, list[Operation]]:
    """The operations of each connection, by the client's port."""
    ports = {
        r.connection.id: str(r.connection.client[1])
        for r in items(folder)
        if isinstance(r, ConnectionReport)
    }
    out: dict[str, list[Operation]] = {}
    for i in items(folder):
        if type(i) is Exchange and i.operation is not None and i.connection is not None:
            out.setdefault(ports[i.connection], []).append(i.operation)
    return out


def messages(ops: list[Operation], *actions: str) -> list[QueueMessage]:
    return [m for o in ops for m in o.messages if m.action in actions]


def same_message(msg: QueueMessage, given: dict[str, Any]) -> None:
    props = given["properties"]
    assert msg.routing_key == given["routing_key"]
    assert msg.payload == json.loads(given["body"]) and msg.size == len(given["body"].encode())
    assert msg.headers == props.get("headers", {})
    for name in _PROPS:
        assert getattr(msg, name) == props.get(name), name
    for name in ("content_type", "content_encoding", "delivery_mode", "app_id"):
        assert msg.details.get(name) == props.get(name), name


def check(folder: Path) -> None:
    t = truth(folder)
    seen = by_port(folder)
    ports = [p for p in t["connections"] if p != "celery"]
    assert set(ports) <= set(seen)
    for port in ports:
        records, ops = t["connections"][port], seen[port]
        assert all(o.request_complete and o.response_complete for o in ops)
        sent = [r for r in records if r["op"] == "publish"]
        published = [o for o in ops if o.command == "basic.publish"]
        assert len(published) == len(sent)
        for op, given in zip(published, sent, strict=True):
            same_message(op.messages[0], given)
            assert op.messages[0].destination == given["exchange"]
            assert op.result == "basic.ack" and op.role == "queue.publish"  # every one confirmed
        returned = [o for o in ops if o.command == "basic.return"]
        assert [(o.error or {}).get("code") for o in returned] == [
            code for r in sent for code in r.get("returned", [])
        ]
        got = [r for r in records if r["op"] in ("deliver", "get") and "delivery_tag" in r]
        delivered = messages(ops, "deliver")
        assert len(delivered) == len(got)
        for msg, given in zip(delivered, got, strict=True):
            same_message(msg, given)
            assert (msg.delivery_tag, msg.redelivered) == (
                given["delivery_tag"],
                given["redelivered"],
            )
            assert msg.details["exchange"] == given["exchange"]
            assert msg.details.get("consumer_tag") == given.get("consumer_tag")
        settled = [r for r in records if r["op"] in ("ack", "nack", "reject")]
        ours = messages(ops, "ack", "nack", "reject")
        assert [(m.action, m.delivery_tag, m.requeue) for m in ours] == [
            (r["op"], r["delivery_tag"], r.get("requeue")) for r in settled
        ]
        empties = [r for r in records if r["op"] == "get" and r.get("empty")]
        assert sum(o.result == "basic.get-empty" for o in ops) == len(empties)
        closes = [r for r in records if r["op"] == "channel.close"]
        errors = [o.error for o in ops if o.command == "channel.close" and o.error]
        assert [(e["code"], e["message"]) for e in errors] == [
            (r["code"], r["text"]) for r in closes
        ]


def test_every_message_as_the_clients_saw_it() -> None:
    check(FOLDER)


def test_queues_of_deliveries_and_the_dead_letter() -> None:
    seen = by_port(FOLDER)
    delivered = [m for ops in seen.values() for m in messages(ops, "deliver")]
    assert [m.destination for m in delivered] == ["tasks"] * 6 + ["dead", "celery"]
    dead = delivered[6]
    (death,) = dead.headers["x-death"]
    assert (death["reason"], death["queue"], death["exchange"], death["count"]) == (
        "rejected", "tasks", "", 1)  # fmt: skip
    assert dead.message_id == "m3" and dead.details["exchange"] == "dlx"
    declares = [o for ops in seen.values() for o in ops if o.command == "queue.declare"]
    tasks = next(o for o in declares if o.details["arguments"]["queue"] == "tasks")
    assert tasks.details["arguments"]["arguments"] == {"x-dead-letter-exchange": "dlx"}
    failed = next(o for o in declares if o.details["arguments"]["queue"] == "no-such-queue")
    assert failed.error is not None and failed.error["code"] == 404


def test_the_celery_task_message() -> None:
    (sent,) = truth(FOLDER)["connections"]["celery"]
    published = [m for ops in by_port(FOLDER).values() for m in messages(ops, "publish")]
    celery = [m.details["celery"] for m in published if "celery" in m.details]
    delivered = [m for ops in by_port(FOLDER).values() for m in messages(ops, "deliver")]
    celery += [m.details["celery"] for m in delivered if "celery" in m.details]
    assert len(celery) == 2  # published by Celery, got by pika
    for task in celery:
        assert (task["protocol"], task["task"], task["id"], task["root_id"]) == (
            2, sent["task"], sent["id"], sent["id"])  # fmt: skip
        assert (task["args"], task["kwargs"]) == (sent["args"], sent["kwargs"])
        assert task["argsrepr"] == "['doc-7']"


def test_the_password_is_nowhere_in_the_report() -> None:
    password = truth(FOLDER)["password"]
    starts = 0
    for item in items(FOLDER):
        if type(item) is Exchange:
            assert password not in json.dumps(exchange_json(item, RenderOptions(events=True)))
            op = item.operation
            if op is not None and op.command == "connection.start":
                assert op.details["secret_arguments"] == 1
                starts += 1
    assert starts == len(by_port(FOLDER))


def method_counts(ops: list[Operation], connection: str) -> tuple[Counter[str], set[object]]:
    """The method frames the operations stand for: each one's method and its reply (a
    broker's confirm once, however many publishes it confirms)."""
    count: Counter[str] = Counter()
    confirms: set[object] = set()
    for op in ops:
        count[str(op.command)] += 1
        confirm = op.details.get("confirm")
        if isinstance(confirm, dict):
            confirms.add(
                (connection, op.details["channel"], confirm["method"], confirm["delivery_tag"])
            )
        elif op.result in BY_NAME and not (op.error and op.result == "channel.close"):
            count[op.result] += 1
    return count, confirms


def test_method_counts_agree_with_tshark() -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    port = truth(FOLDER)["server"].rsplit(":", 1)[1]
    out = subprocess.run(
        ["tshark", "-r", str(FOLDER / "capture.pcap"), "-d", f"tcp.port=={port},amqp",
         "-Y", "amqp", "-T", "fields", "-e", "amqp.method.class", "-e", "amqp.method.method",
         "-e", "amqp.type"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    theirs: Counter[str] = Counter()
    names = {f"{c}.{m}": name for name, (c, m) in BY_NAME.items()}
    headers = 0  # content header frames: one per message with content
    for line in out.splitlines():
        classes, methods, types = [*line.split("\t"), "", ""][:3]
        headers += types.split(",").count("2")
        for c, m in zip(classes.split(","), methods.split(","), strict=False):
            if c:
                theirs[names[f"{c}.{m}"]] += 1
    ours: Counter[str] = Counter()
    confirms: set[Any] = set()
    for conn, ops in by_port(FOLDER).items():
        count, conf = method_counts(ops, conn)
        ours += count
        confirms |= conf
    ours.update(c[2] for c in confirms)
    assert ours == theirs
    assert sum(theirs.values()) == 105
    contents = [
        m for ops in by_port(FOLDER).values() for m in messages(ops, "publish", "deliver", "return")
    ]
    assert len(contents) == headers == 16


def test_fresh_capture_of_a_real_broker(tmp_path: Path) -> None:
    """scripts/make_amqp_captures.py run now against the broker scripts/rabbitmq.sh installs."""
    if os.geteuid() != 0:
        pytest.skip("not root: scripts/make_amqp_captures.py needs tcpdump")
    if not Path("/usr/lib/rabbitmq/bin/rabbitmq-server").exists():
        pytest.skip("no rabbitmq-server: run scripts/rabbitmq.sh (as root)")
    script = ROOT / "scripts" / "make_amqp_captures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True,
                   capture_output=True, timeout=400)  # fmt: skip
    run = json.loads((tmp_path / "amqp_pika" / "run.json").read_text())
    if not run["capture_complete"]:
        pytest.skip(f"tcpdump dropped packets: {run['tcpdump']}")
    check(tmp_path / "amqp_pika")


@pytest.mark.parametrize("chunk", [None, 1, 333])
def test_the_capture_fed_three_ways(chunk: int | None) -> None:
    """Each connection's bytes in capture order: as captured, byte by byte, in 333-byte
    pieces (and, whole, with trailing bytes of a frame never finished): the same operations."""
    from tests.fuzz.seeds import streams
    from tests.wire import pg_messages as m
    from tests.wire.test_amqp import facts

    for steps in streams(FOLDER / "capture.pcap").values():
        whole, _ = m.feed(lambda: AmqpSession("c"), steps)
        cut, _ = m.feed(lambda: AmqpSession("c"), steps, chunk=chunk)
        assert facts(cut) == facts(whole) and whole
    steps = [*next(iter(streams(FOLDER / "capture.pcap").values())), (0, b"\x01\x00\x01\x00")]
    ops, dec = m.feed(lambda: AmqpSession("c"), steps)
    assert [d.code for d in dec.diagnostics] == ["amqp.truncated"]
    assert all(o.response_complete for o in ops)
