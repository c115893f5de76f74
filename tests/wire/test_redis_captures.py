"""The Redis captures made by scripts/make_redis_captures.py (redis-py against a real
redis-server on loopback; ``redis_py_tls`` the same session over TLS, decrypted with the key
log Python's ssl module wrote): every command and reply against the client's own record, the
counts against tshark's RESP dissector, the password nowhere in the report."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import ConnectionReport
from agentshark.wire.events import Operation
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures" / "redis_py"
TLS = ROOT / "tests" / "data" / "captures" / "redis_py_tls"


def truth(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return data


@functools.cache
def items(folder: Path) -> list[object]:
    keylog = folder / "keys.log"
    options = agentshark.pipeline.Options(keylogs=[str(keylog)] if keylog.exists() else [])
    return list(agentshark.pipeline.run([str(folder / "capture.pcap")], options))


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


def check(folder: Path) -> None:
    t = truth(folder)
    seen = by_port(folder)
    assert sorted(seen) == sorted(t["connections"])
    for port, records in t["connections"].items():
        sent = [r["command"] for r in records if "command" in r]
        answers = [r for r in records if "command" not in r]
        commands = [o for o in seen[port] if o.kind == "command"]
        assert len(commands) == len(sent)
        for op, given in zip(commands, sent, strict=True):
            args = [*str(given[0]).split(), *given[1:]]  # redis-py packs "XGROUP CREATE" as 2
            assert op.command == args[0].upper()
            expected = [str(a) for a in args[1:]]
            if op.command == "AUTH":
                expected = expected[:-1]  # the password, never kept
            if op.command == "HELLO" and "AUTH" in expected:
                del expected[expected.index("AUTH") + 2]
            assert op.parameters == expected
            assert op.request_complete and op.response_complete
        errors = [a["error"] for a in answers if "error" in a]
        ours = [str(o.error["message"]) for o in commands if o.error]
        # redis-py drops the generic "ERR " code from the message it raises
        assert [e.removeprefix("ERR ") for e in ours] == errors
    pushes = [o for ops in seen.values() for o in ops if o.kind == "push"]
    assert [(p.statement, p.parameters[-1]) for p in pushes] == [("news", "agent 7 finished")]


@pytest.mark.parametrize("folder", [FOLDER, TLS], ids=["cleartext", "tls"])
def test_every_command_as_the_client_sent_it(folder: Path) -> None:
    check(folder)


def test_over_tls_every_connection_decrypted() -> None:
    reports = [r for r in items(TLS) if isinstance(r, ConnectionReport)]
    assert len(reports) == len(truth(TLS)["connections"]) == 3
    for report in reports:
        assert report.protocol == "redis" and report.tls is not None
        assert (report.tls["version"], report.tls["decrypted"]) == ("TLS 1.3", True)
        assert report.diagnostics == []
    exchanges = [i for i in items(TLS) if type(i) is Exchange]
    assert exchanges and all(e.tls is not None and e.operation is not None for e in exchanges)
    assert {e.transport for e in exchanges} == {"redis"}
    # the same commands as the cleartext session, in the same order
    plain = [o.command for ops in by_port(FOLDER).values() for o in ops]
    assert [o.command for ops in by_port(TLS).values() for o in ops] == plain


def test_queue_roles_and_values() -> None:
    ops = [o for ops in by_port(FOLDER).values() for o in ops]
    roles = {o.command: o.role for o in ops if o.role}
    assert roles == {
        "LPUSH": "queue.publish",
        "BRPOP": "queue.consume",
        "XADD": "queue.publish",
        "XREADGROUP": "queue.consume",
        "XACK": "queue.ack",
        "SUBSCRIBE": "pubsub.subscribe",
        "PUBLISH": "pubsub.publish",
        "MESSAGE": "pubsub.deliver",
    }
    hgetall = next(o for o in ops if o.command == "HGETALL")
    assert hgetall.values == [[[["name", "agent"], ["runs", "3"]]]]  # a RESP3 map


@pytest.mark.parametrize("folder", [FOLDER, TLS], ids=["cleartext", "tls"])
def test_the_password_is_nowhere_in_the_report(folder: Path) -> None:
    password = truth(folder)["password"]
    for item in items(folder):
        if type(item) is Exchange:
            assert password not in json.dumps(exchange_json(item, RenderOptions(events=True)))


def test_counts_agree_with_tshark() -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    port = truth(FOLDER)["server"].rsplit(":", 1)[1]
    out = subprocess.run(
        ["tshark", "-r", str(FOLDER / "capture.pcap"), "-d", f"tcp.port=={port},resp",
         "-Y", "resp", "-T", "fields", "-e", "tcp.srcport", "-e", "resp.array.length",
         "-e", "resp.error"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    commands = errors = 0
    for line in out.splitlines():
        src, arrays, errs = [*line.split("\t"), "", ""][:3]
        if src != port:  # a client's commands: flat arrays, one per command
            commands += len(arrays.split(",")) if arrays else 0
        errors += len(errs.split(",")) if errs else 0
    ops = [o for ops in by_port(FOLDER).values() for o in ops]
    assert sum(o.kind == "command" for o in ops) == commands
    assert sum(o.error is not None for o in ops) == errors


def test_tls_connections_agree_with_tshark() -> None:
    """tshark 4.0's RESP dissector is registered on TCP ports only (no ``tls.port`` entry to
    decode as): over TLS, only the connections with a ClientHello are compared."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    port = truth(TLS)["server"].rsplit(":", 1)[1]
    pcap, keylog = TLS / "capture.pcap", TLS / "keys.log"
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-o", f"tls.keylog_file:{keylog}",
         "-d", f"tcp.port=={port},tls", "-Y", "tls.handshake.type == 1",
         "-T", "fields", "-e", "tcp.stream"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    reports = [r for r in items(TLS) if isinstance(r, ConnectionReport)]
    assert len(set(out.split())) == len(reports) == 3


def test_fresh_capture_of_a_real_server(tmp_path: Path) -> None:
    """scripts/make_redis_captures.py run now against the server scripts/redis.sh installs."""
    if os.geteuid() != 0:
        pytest.skip("not root: scripts/make_redis_captures.py needs tcpdump")
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server: run scripts/redis.sh (as root)")
    script = ROOT / "scripts" / "make_redis_captures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    for name in ("redis_py", "redis_py_tls"):  # the cleartext session, then over TLS
        run = json.loads((tmp_path / name / "run.json").read_text())
        if not run["capture_complete"]:
            pytest.skip(f"tcpdump dropped packets: {run['tcpdump']}")
        check(tmp_path / name)
