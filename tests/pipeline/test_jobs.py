"""``--jobs N``: the report of N worker processes is the one of one process, byte for byte;
a worker that fails or dies is said in one line, never as a traceback."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentshark.cli import main
from agentshark.net.segment import ACK, PSH, SYN
from agentshark.pipeline import jobs
from tests.helpers import CAPTURES
from tests.net.test_packet import DST4, DST6, SRC4, SRC6, eth, ipv4, ipv6, tcp

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "data" / "captures"
EXAMPLE = REPO / "examples" / "agent_chat.pcap"


def _captures() -> list[tuple[str, list[str]]]:
    """Every corpus capture, with the key logs beside it."""
    found: list[tuple[str, list[str]]] = [(str(EXAMPLE), [])]
    for folder in sorted([*OWN.iterdir(), *CAPTURES.iterdir()]):
        if not folder.is_dir():
            continue
        keys = [str(p) for p in sorted(folder.iterdir()) if p.name in ("keys.log", "keylog.txt")]
        captures = [p for p in sorted(folder.iterdir()) if p.suffix in (".pcap", ".pcapng")]
        found.extend((str(capture), keys) for capture in captures)
    return found


CAPTURE_RUNS = _captures()


def _report(tmp_path: Path, args: list[str], n: int) -> bytes:
    out = tmp_path / f"jobs{n}.out"
    assert main([*args, "--jobs", str(n), "-o", str(out)]) in (0, 1)
    return out.read_bytes()


@pytest.mark.parametrize(
    ("capture", "keys"),
    CAPTURE_RUNS,
    ids=[str(Path(c).relative_to(Path(c).parents[1])) for c, _ in CAPTURE_RUNS],
)
def test_the_report_is_the_same_for_any_number_of_jobs(
    tmp_path: Path, capture: str, keys: list[str]
) -> None:
    args = ["analyze", capture, "--format", "json", "--no-progress"]
    for key in keys:
        args += ["--keylog", key]
    one = _report(tmp_path, args, 1)
    assert _report(tmp_path, args, 2) == one
    assert _report(tmp_path, args, 3) == one


@pytest.mark.parametrize("command", ["exchanges", "calls", "analyze"])
def test_several_inputs_of_several_kinds(tmp_path: Path, command: str) -> None:
    """Captures split, a HAR file and an MCP stdio transcript read whole by the first worker:
    ids numbered across all of them as one process does, connections per input."""
    inputs = [
        str(EXAMPLE),
        str(OWN / "proxy_sdk_run" / "recording.har"),
        str(OWN / "mcp_streamable_sessions" / "capture.pcap"),
        str(REPO / "tests" / "data" / "secrets" / "stdio" / "transcript.jsonl"),
        str(CAPTURES / "https_tls13_h2" / "capture.pcap"),
    ]
    for fmt in ("json", "text"):
        args = [command, *inputs, "--format", fmt, "--no-progress", "--wide"]
        args += ["--keylog", str(CAPTURES / "https_tls13_h2" / "keylog.txt")]
        one = _report(tmp_path, args, 1)
        assert b"e1" in one or fmt == "text"
        assert _report(tmp_path, args, 2) == one


def test_a_failing_worker_is_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = jobs.packet_owner  # type: ignore[attr-defined]

    def owner(linktype: int, data: bytes, n: int) -> int:
        if os.getpid() != parent and n == 2 and len(data) > 100:
            raise RuntimeError("the hash broke")
        return real(linktype, data, n)

    parent = os.getpid()
    monkeypatch.setattr(jobs, "packet_owner", owner)
    status = main(["exchanges", str(EXAMPLE), "--jobs", "2", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback" not in err
    assert err.startswith("agentshark: worker ")
    assert "failed on " + str(EXAMPLE) in err
    assert "RuntimeError: the hash broke" in err
    assert "--jobs 1" in err


def test_a_worker_that_dies_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = jobs.packet_owner  # type: ignore[attr-defined]
    parent = os.getpid()

    def owner(linktype: int, data: bytes, n: int) -> int:
        if os.getpid() != parent:
            os._exit(9)  # as the kernel's OOM killer would leave it
        return real(linktype, data, n)

    monkeypatch.setattr(jobs, "packet_owner", owner)
    status = main(["calls", str(EXAMPLE), "--jobs", "2", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback" not in err
    assert "stopped before the end of the input (exit status 9" in err


def test_one_job_or_no_capture_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert jobs.can_share([str(EXAMPLE)])
    assert not jobs.can_share([str(OWN / "proxy_sdk_run" / "recording.har")])
    assert not jobs.can_share(["-", str(EXAMPLE)])
    assert jobs.default_jobs() >= 1


_SLOW = """
import sys, time
import agentshark.pipeline.jobs as jobs
real = jobs.packet_owner
def slow(*args):
    time.sleep(0.2)  # 90 packets: 18 s a worker
    return real(*args)
jobs.packet_owner = slow
from agentshark.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the workers")
def test_ctrl_c_stops_every_worker(tmp_path: Path) -> None:
    """Ctrl-C reaches the terminal's whole process group: the workers ignore it, the parent
    stops them and exits 130 with its one line."""
    command = [sys.executable, "-c", _SLOW, "calls", str(EXAMPLE), "--jobs", "2"]
    proc = subprocess.Popen(
        [*command, "-o", str(tmp_path / "out")],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "interrupted" in err
    for pid in workers:  # gone, or a zombie waiting for init
        assert _state(pid) in ("", "Z")


def _state(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _synthetic_capture() -> bytes:
    """HTTP/1.1 chat calls on 12 connections over IPv4, IPv6 and VLAN-tagged Ethernet,
    interleaved: one request in two IPv4 fragments, one packet cut by the snap length, ARP and
    UDP between them, half the connections still open at the end of the capture."""
    body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]}'
    answer = (
        b'{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    )
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(answer), answer)
    )
    fin = 0x01
    steps: list[list[bytes]] = []
    for i in range(12):
        port = 40000 + 2 * i
        v6 = i % 3 == 1
        tags = (0x8100,) if i % 4 == 2 else ()

        def frame(
            segment: bytes, *, up: bool, v6: bool = v6, tags: tuple[int, ...] = tags
        ) -> bytes:
            if v6:
                src, dst = (SRC6, DST6) if up else (DST6, SRC6)
                return eth(ipv6(segment, src=src, dst=dst), 0x86DD, tags=tags)
            src, dst = (SRC4, DST4) if up else (DST4, SRC4)
            return eth(ipv4(segment, src=src, dst=dst), tags=tags)

        def seg(
            payload: bytes, *, up: bool, seq: int, ack: int, flags: int, port: int = port
        ) -> bytes:
            sport, dport = (port, 8080) if up else (8080, port)
            return tcp(payload, sport=sport, dport=dport, seq=seq, ack=ack, flags=flags)

        c, s = 1000, 5000
        req = seg(request, up=True, seq=c + 1, ack=s + 1, flags=ACK | PSH)
        packets = [
            frame(seg(b"", up=True, seq=c, ack=0, flags=SYN), up=True),
            frame(seg(b"", up=False, seq=s, ack=c + 1, flags=SYN | ACK), up=False),
            frame(seg(b"", up=True, seq=c + 1, ack=s + 1, flags=ACK), up=True),
        ]
        if i == 3:  # the request in two fragments
            packets.append(eth(ipv4(req[:24], frag=0x2000, ident=99)))
            packets.append(eth(ipv4(req[24:], frag=3, ident=99)))
        else:
            packets.append(frame(req, up=True))
        resp = seg(response, up=False, seq=s + 1, ack=c + 1 + len(request), flags=ACK | PSH)
        packets.append(frame(resp, up=False)[:70] if i == 5 else frame(resp, up=False))
        if i % 2 == 0:
            end_c, end_s = c + 1 + len(request), s + 1 + len(response)
            packets.append(frame(seg(b"", up=True, seq=end_c, ack=end_s, flags=fin | ACK), up=True))
            packets.append(
                frame(seg(b"", up=False, seq=end_s, ack=end_c + 1, flags=fin | ACK), up=False)
            )
        steps.append(packets)
    records: list[bytes] = []
    for n in range(max(len(p) for p in steps)):
        records.extend(packets[n] for packets in steps if n < len(packets))
        records.append(eth(b"\x00" * 28, 0x0806))  # ARP
        records.append(eth(ipv4(b"\x00\x35\x00\x35\x00\x0c\x00\x00dns!", proto=17)))
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    for k, data in enumerate(records):
        wire = len(data) + (200 if len(data) == 70 else 0)
        out += struct.pack("<IIII", 1_700_000_000 + k, 0, len(data), wire) + data
    return out


def test_fragments_vlan_ipv6_and_open_connections(tmp_path: Path) -> None:
    capture = tmp_path / "synthetic.pcap"
    capture.write_bytes(_synthetic_capture())
    args = ["analyze", str(capture), "--format", "json", "--no-progress"]
    one = _report(tmp_path, args, 1)
    report = json.loads(one)
    assert [c["api"] for c in report["calls"]] == ["openai.chat"] * 12  # the fragmented one too
    assert report["sources"][0]["not_analyzed"] == {"arp": 7, "udp": 7, "ipv4-fragment-held": 1}
    for n in (2, 3, 4):
        assert _report(tmp_path, args, n) == one
