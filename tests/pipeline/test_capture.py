"""``agentshark capture`` on loopback during a real SDK run.

The traffic: the real ``openai`` SDK (a process of its own, ``openai_sdk_client.py``) calls
a stdlib HTTPS server on 127.0.0.1 (TLS 1.3, a certificate made for the test) once plainly
and once streamed, with ``SSLKEYLOGFILE`` naming a key log that does not exist when the
capture starts: the capture must follow it as the SDK writes it, hold the TLS connection
until its secrets are there, print the calls while it still runs, and leave a pcapng with
the secrets embedded that ``agentshark analyze`` (without the key log) and ``tshark`` both
decrypt. Needs root (or the capture capability) and tcpdump; skipped otherwise.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import queue
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agentshark.pipeline.tcpdump import CaptureError, TcpdumpChild

HERE = Path(__file__).parent
MODEL = "gpt-4o-mini-2024-07-18"
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
ENV.pop("SSLKEYLOGFILE", None)


def _can_capture() -> str:
    """Why tcpdump cannot capture on lo here ("" when it can)."""
    if shutil.which("tcpdump") is None:
        return "tcpdump is not installed"
    try:
        child = TcpdumpChild("lo", "tcp port 9")
    except CaptureError as exc:
        return str(exc)
    child.close()
    return ""


pytestmark = pytest.mark.skipif(bool(_can_capture()), reason=_can_capture() or "can capture")


def _certificate(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _sse(text: str) -> list[bytes]:
    base = {"id": "chatcmpl-cap1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    words = text.split(" ")
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    events += [
        {**base, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
        for w in [words[0], *(" " + w for w in words[1:])]
    ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [*(f"data: {json.dumps(e)}\n\n".encode() for e in events), b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in _sse("Hello from the captured wire"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        answer = {
            "id": "chatcmpl-cap2",
            "object": "chat.completion",
            "created": 2,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Hello, plainly."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def https_stub(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    cert, key = _certificate(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], cert
    server.shutdown()
    server.server_close()


class _Capture:
    """``agentshark capture`` as a child; its stdout lines as they come. Every one made is
    stopped at the end of its test, however the test ended (:func:`_no_capture_left`)."""

    made: ClassVar[list[_Capture]] = []

    def __init__(self, args: list[str]) -> None:
        _Capture.made.append(self)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentshark", "capture", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert self.proc.stderr is not None and self.proc.stdout is not None
        self.started = self.proc.stderr.readline()
        self.lines: queue.Queue[str] = queue.Queue()
        self.out: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def wait_for(self, text: str, times: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.out) < times:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line, f"capture ended before {times} lines with {text!r}: {self.out}"
            self.out.append(line)

    def stop(self) -> tuple[str, str, int]:
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        rc = self.proc.wait(timeout=30)
        while (line := self.lines.get(timeout=10)) != "":
            self.out.append(line)
        return "".join(self.out), self.started + err, rc


@pytest.fixture(autouse=True)
def _no_capture_left() -> Iterator[None]:
    """A test that failed half way (an SDK run timed out...) leaves no capture (and its
    tcpdump) running."""
    yield
    while _Capture.made:
        proc = _Capture.made.pop().proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _sdk_run(port: int, cert: Path, keys: Path) -> list[dict[str, str]]:
    env = {**ENV, "SSLKEYLOGFILE": str(keys), "SSL_CERT_FILE": str(cert)}
    done = subprocess.run(
        [sys.executable, str(HERE / "openai_sdk_client.py"), f"https://127.0.0.1:{port}/v1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    records: list[dict[str, str]] = json.loads(done.stdout)
    return records


def _analyze(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentshark", "analyze", str(path)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    return done.stdout


def _analyze_json(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentshark", "analyze", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    return done.stdout


def _calls(path: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "agentshark", "calls", str(path), "--format", "json"],
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    calls: list[dict[str, Any]] = json.loads(done.stdout)["calls"]
    return calls


def test_capture_follows_a_keylog_written_after_it_started(
    https_stub: tuple[int, Path], tmp_path: Path
) -> None:
    port, cert = https_stub
    keys, out = tmp_path / "keys.log", tmp_path / "out.pcapng"
    capture = _Capture(["-i", "lo", "--port", str(port), "--keylog", str(keys), "-w", str(out)])
    assert capture.started.startswith("agentshark: capturing on lo (tcp and (port ")
    assert not keys.exists()  # the SDK writes it later
    records = _sdk_run(port, cert, keys)
    assert records == [
        {"model": MODEL, "text": "Hello, plainly."},
        {"model": MODEL, "text": "Hello from the captured wire"},
    ]
    capture.wait_for("openai.chat", 2)  # printed while the capture still runs
    assert capture.proc.poll() is None
    stdout, stderr, rc = capture.stop()
    assert rc == 130
    assert "agentshark: stopped by SIGINT: captured on lo for " in stderr
    # one keep-alive connection: its five TLS 1.3 secrets (RFC 9850 §3), no more of the log
    assert f"wrote {out} with 5 TLS secrets embedded" in stderr
    # the final output is what `analyze` says of the file written, without the key log
    final = _analyze(out)
    assert "2 calls" in final
    assert stdout.endswith("\n" + final)
    calls = _calls(out)
    assert [c["api"] for c in calls] == ["openai.chat", "openai.chat"]
    texts = [
        "".join(
            p["content"] for m in c["output_messages"] for p in m["parts"] if p["type"] == "text"
        )
        for c in calls
    ]
    assert texts == [r["text"] for r in records]
    assert [c["response_model"] for c in calls] == [r["model"] for r in records]
    assert [c["stream"] for c in calls] == [False, True]
    assert all(c["complete"] for c in calls), stderr  # tcpdump's counters: drops?
    decoded = subprocess.run(
        [
            "tshark",
            "-r",
            str(out),
            "-d",
            f"tcp.port=={port},tls",
            "-Y",
            "http",
            "-T",
            "fields",
            "-e",
            "http.request.uri",
            "-e",
            "http.response.code",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [line.split("\t") for line in decoded.stdout.splitlines()]
    assert ["/v1/chat/completions", ""] in rows
    assert sum(r == ["/v1/chat/completions", ""] for r in rows) == 2
    assert sum(r[1:] == ["200"] for r in rows) == 2


def test_capture_without_a_keylog_is_analyze_of_its_file(
    https_stub: tuple[int, Path], tmp_path: Path
) -> None:
    port, cert = https_stub
    out = tmp_path / "plain.pcapng"
    capture = _Capture(["-i", "lo", "--port", str(port), "-w", str(out)])
    _sdk_run(port, cert, tmp_path / "unused.log")
    stdout, stderr, rc = capture.stop()
    assert rc == 130
    final = _analyze(out)
    assert "0 calls" in final
    assert stdout.endswith("\n" + final)
    assert "tls.no_keys" in _analyze_json(out)
    assert "TLS secrets" not in stderr
