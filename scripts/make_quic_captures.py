"""Make the HTTP/3 test captures in ``tests/data/captures/<name>/``.

    .venv/bin/python scripts/make_quic_captures.py              # every case
    .venv/bin/python scripts/make_quic_captures.py --only h3_openai

Real software on loopback: an aioquic HTTP/3 server answering like the OpenAI API
(``GET /v1/models``, ``POST /v1/chat/completions`` as JSON, or as an SSE stream ending in
``data: [DONE]`` when the body says ``"stream": true``) and an aioquic HTTP/3 client, in one
asyncio loop; ``tcpdump -i lo -s 0`` writes the capture of the case's UDP port, which must drop
nothing. The client writes the key log (``QuicConfiguration(secrets_log_file=...)``). The lossy
case puts a UDP relay between them that drops and reorders datagrams toward the client
(tcpdump sees the client's side of the relay only: the drops are losses before the capture
point, the reordering is seen as it happened). Each folder gets ``capture.pcap``,
``keys.log``, ``truth.json`` (from the client's own records only: per request the method,
path, status, body size and SHA-256, the SSE data events and the arrival time of each DATA
chunk; the client's QUIC version, cipher suite, ALPN, key updates, Retry) and ``run.json``
(port, tcpdump counters, relay counters).

The certificate (ECDSA P-256, self-signed for 127.0.0.1) is made with ``cryptography`` in a
temporary folder and thrown away. aioquic is a test dependency (``pip install -e '.[test]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import ipaddress
import json
import random
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
MODEL = "gpt-4o-mini"
WORDS = [
    "Hello",
    " from",
    " HTTP",
    "/3",
    " over",
    " QUIC",
    ":",
    " one",
    " token",
    " at",
    " a",
    " time",
    ".",
]


@dataclass(kw_only=True)
class Case:
    name: str
    what: str
    version: int = QuicProtocolVersion.VERSION_1
    suites: list[CipherSuite] | None = None
    retry: bool = False
    key_update: bool = False  # the client asks for a key update in the middle of the stream
    new_cid: bool = False  # the client moves to a new connection ID the server issued
    lossy: bool = False  # a relay drops and reorders datagrams toward the client
    requests: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)


STANDARD = [
    ("GET", "/v1/models", None),
    (
        "POST",
        "/v1/chat/completions",
        {"model": MODEL, "messages": [{"role": "user", "content": "Say hello"}]},
    ),
    (
        "POST",
        "/v1/chat/completions",
        {
            "model": MODEL,
            "stream": True,
            "messages": [{"role": "user", "content": "Stream a hello"}],
        },
    ),
]
CASES = [
    Case(
        name="h3_openai",
        what="QUIC v1, TLS_AES_128_GCM_SHA256, one HTTP/3 connection: GET /v1/models, a chat "
        "completion, a chat SSE stream",
        requests=STANDARD,
    ),
    Case(
        name="h3_v2_chacha_keyupdate",
        what="QUIC v2 (RFC 9369), TLS_CHACHA20_POLY1305_SHA256, a Retry first, a client key "
        "update in the middle of the SSE stream, the client moving to a new connection ID; "
        "the same three requests",
        version=QuicProtocolVersion.VERSION_2,
        suites=[CipherSuite.CHACHA20_POLY1305_SHA256],
        retry=True,
        key_update=True,
        new_cid=True,
        requests=STANDARD,
    ),
    Case(
        name="h3_lossy",
        what="QUIC v1 through a relay that drops every 7th and swaps every 5th datagram toward "
        "the client: aioquic retransmits; the same three requests and a second SSE stream",
        lossy=True,
        requests=[*STANDARD, STANDARD[2]],
    ),
]


# -- the server -------------------------------------------------------------------------------


def _chunk(
    i: int, content: str | None, finish: str | None, usage: dict[str, int] | None = None
) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    if i == 0:
        delta["role"] = "assistant"
    chunk: dict[str, Any] = {
        "id": "chatcmpl-h3",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class Server(QuicConnectionProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._h3: H3Connection | None = None
        self._requests: dict[int, tuple[list[tuple[bytes, bytes]], bytearray]] = {}
        self._tasks: set[asyncio.Future[None]] = set()

    def quic_event_received(self, event: QuicEvent) -> None:
        if self._h3 is None:
            self._h3 = H3Connection(self._quic)
        for ev in self._h3.handle_event(event):
            self._http(ev)

    def _http(self, ev: H3Event) -> None:
        if isinstance(ev, HeadersReceived):
            self._requests[ev.stream_id] = (ev.headers, bytearray())
            if ev.stream_ended:
                self._spawn(ev.stream_id)
        elif isinstance(ev, DataReceived):
            self._requests[ev.stream_id][1].extend(ev.data)
            if ev.stream_ended:
                self._spawn(ev.stream_id)

    def _spawn(self, sid: int) -> None:
        task = asyncio.ensure_future(self._answer(sid))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(
        self, sid: int, headers: list[tuple[bytes, bytes]] | None, data: bytes | None, end: bool
    ) -> None:
        assert self._h3 is not None
        if headers is not None:
            self._h3.send_headers(sid, headers, end_stream=end and data is None)
        if data is not None:
            self._h3.send_data(sid, data, end_stream=end)
        self.transmit()

    async def _answer(self, sid: int) -> None:
        headers, body = self._requests.pop(sid)
        path = dict(headers)[b":path"].decode()
        if path == "/v1/models":
            payload = {
                "object": "list",
                "data": [
                    {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "system"}
                ],
            }
            self._json(sid, payload)
            return
        request = json.loads(body)
        usage = {
            "prompt_tokens": 9,
            "completion_tokens": len(WORDS),
            "total_tokens": 9 + len(WORDS),
        }
        if not request.get("stream"):
            self._json(
                sid,
                {
                    "id": "chatcmpl-h3json",
                    "object": "chat.completion",
                    "created": 1700000000,
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(WORDS)},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                },
            )
            return
        self._send(
            sid,
            [
                (b":status", b"200"),
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
            ],
            None,
            False,
        )
        for i, word in enumerate(WORDS):
            await asyncio.sleep(0.03)
            self._send(sid, None, _chunk(i, word, None), False)
        self._send(sid, None, _chunk(len(WORDS), None, "stop", usage), False)
        await asyncio.sleep(0.03)
        self._send(sid, None, b"data: [DONE]\n\n", True)

    def _json(self, sid: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self._send(
            sid,
            [
                (b":status", b"200"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            body,
            True,
        )


# -- the client -------------------------------------------------------------------------------


class Client(QuicConnectionProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.events: dict[int, list[tuple[float, H3Event]]] = {}
        self.done: dict[int, asyncio.Future[None]] = {}
        self.on_data: Any = None

    def quic_event_received(self, event: QuicEvent) -> None:
        for ev in self.h3.handle_event(event):
            if isinstance(ev, (HeadersReceived, DataReceived)) and ev.stream_id in self.events:
                self.events[ev.stream_id].append((time.time(), ev))
                if isinstance(ev, DataReceived) and self.on_data is not None:
                    self.on_data(ev)
                if ev.stream_ended:
                    self.done[ev.stream_id].set_result(None)

    async def request(
        self, method: str, path: str, body: dict[str, Any] | None, port: int
    ) -> dict[str, Any]:
        sid = self._quic.get_next_available_stream_id()
        self.events[sid] = []
        self.done[sid] = asyncio.get_running_loop().create_future()
        data = json.dumps(body).encode() if body is not None else None
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", f"127.0.0.1:{port}".encode()),
            (b":path", path.encode()),
            (b"user-agent", b"aioquic-capture/1"),
        ]
        if data is not None:
            headers += [
                (b"content-type", b"application/json"),
                (b"authorization", b"Bearer sk-test-not-a-key"),
            ]
        started = time.time()
        self.h3.send_headers(sid, headers, end_stream=data is None)
        if data is not None:
            self.h3.send_data(sid, data, end_stream=True)
        self.transmit()
        await asyncio.wait_for(self.done[sid], 30)
        return _record(sid, method, path, data, started, self.events[sid])


def _record(
    sid: int,
    method: str,
    path: str,
    data: bytes | None,
    started: float,
    events: list[tuple[float, H3Event]],
) -> dict[str, Any]:
    head = next(ev for _, ev in events if isinstance(ev, HeadersReceived))
    chunks = [(ts, ev.data) for ts, ev in events if isinstance(ev, DataReceived) and ev.data]
    body = b"".join(d for _, d in chunks)
    out: dict[str, Any] = {
        "stream": sid,
        "method": method,
        "path": path,
        "status": int(dict(head.headers)[b":status"]),
        "request_bytes": len(data or b""),
        "request_sha256": hashlib.sha256(data or b"").hexdigest(),
        "response_bytes": len(body),
        "response_sha256": hashlib.sha256(body).hexdigest(),
        "started": started,
        "data_arrivals": [ts for ts, _ in chunks],
        "ended": events[-1][0],
    }
    if dict(head.headers).get(b"content-type") == b"text/event-stream":
        lines = [line[6:] for line in body.decode().split("\n") if line.startswith("data: ")]
        out["sse_data_events"] = len(lines)
        out["sse_done"] = lines[-1] == "[DONE]"
        out["text"] = "".join(
            json.loads(x)["choices"][0]["delta"].get("content", "") for x in lines if x != "[DONE]"
        )
    return out


# -- the relay --------------------------------------------------------------------------------


class Relay(asyncio.DatagramProtocol):
    """client <-> relay port <-> server; drops every 7th and swaps every 5th datagram toward
    the client (after the first 6, so the handshake's first flight gets through)."""

    def __init__(self, server_port: int) -> None:
        self.server = ("127.0.0.1", server_port)
        self.client: tuple[str, int] | None = None
        self.transport: asyncio.DatagramTransport | None = None
        self.upstream: asyncio.DatagramTransport | None = None
        self.held: bytes | None = None
        self.counts = {"to_client": 0, "dropped": 0, "swapped": 0, "to_server": 0}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a datagram endpoint's

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.client = addr
        self.counts["to_server"] += 1
        assert self.upstream is not None
        self.upstream.sendto(data, self.server)

    def from_server(self, data: bytes) -> None:
        assert self.transport is not None and self.client is not None
        n = self.counts["to_client"] = self.counts["to_client"] + 1
        if n > 6 and n % 7 == 0:
            self.counts["dropped"] += 1
            return
        if n > 6 and n % 5 == 0 and self.held is None:
            self.held = data
            return
        self.transport.sendto(data, self.client)
        if self.held is not None:
            self.counts["swapped"] += 1
            self.transport.sendto(self.held, self.client)
            self.held = None


class Upstream(asyncio.DatagramProtocol):
    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.relay.from_server(data)


# -- running a case ---------------------------------------------------------------------------


def _certificate(folder: Path) -> tuple[Path, Path]:
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
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _run(case: Case, folder: Path, tmp: Path, port: int, server_port: int) -> dict[str, Any]:
    cert, key = _certificate(tmp)
    sconf = QuicConfiguration(
        is_client=False, alpn_protocols=H3_ALPN, supported_versions=[case.version]
    )
    sconf.load_cert_chain(cert, key)
    if case.suites:
        sconf.cipher_suites = case.suites
    server = await serve(
        "127.0.0.1", server_port, configuration=sconf, create_protocol=Server, retry=case.retry
    )
    relay: Relay | None = None
    if case.lossy:
        loop = asyncio.get_running_loop()
        relay = Relay(server_port)
        await loop.create_datagram_endpoint(lambda: relay, local_addr=("127.0.0.1", port))
        upstream, _ = await loop.create_datagram_endpoint(
            lambda: Upstream(relay), local_addr=("127.0.0.1", 0)
        )
        relay.upstream = upstream
    keylog = (folder / "keys.log").open("w")
    cconf = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        secrets_log_file=keylog,
        verify_mode=0,
        supported_versions=[case.version],
    )
    if case.suites:
        cconf.cipher_suites = case.suites
    results = []
    facts: dict[str, Any] = {}
    async with connect("127.0.0.1", port, configuration=cconf, create_protocol=Client) as client:
        assert isinstance(client, Client)
        quic = client._quic
        if case.key_update or case.new_cid:
            seen = [0]

            def on_data(ev: DataReceived) -> None:
                seen[0] += 1
                if seen[0] == 5 and case.key_update:
                    quic.request_key_update()
                    facts["key_update_requested"] = time.time()
                if seen[0] == 8 and case.new_cid:
                    quic.change_connection_id()
                    facts["connection_id_changed"] = time.time()
                client.transmit()

            client.on_data = on_data
        for method, path, body in case.requests:
            results.append(await client.request(method, path, body, port))
        facts["version"] = f"0x{quic._version:08x}"
        facts["cipher_suite"] = (
            quic.tls.key_schedule.cipher_suite.name if quic.tls.key_schedule else None
        )
        facts["alpn"] = quic.tls.alpn_negotiated
        facts["retry"] = case.retry
        client.close()
        await client.wait_closed()
    keylog.close()
    server.close()
    out = {
        "made_by": "scripts/make_quic_captures.py",
        "case": case.name,
        "what": case.what,
        "connection": facts,
        "requests": results,
    }
    if relay is not None:
        out["relay"] = relay.counts
    return out


def make(case: Case) -> None:
    folder = OUT / case.name
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    server_port = _free_port() if case.lossy else port
    pcap = folder / "capture.pcap"
    dump = subprocess.Popen(
        [
            "tcpdump",
            "-i",
            "lo",
            "-s",
            "0",
            "-U",
            "--immediate-mode",
            "-w",
            str(pcap),
            "udp",
            "port",
            str(port),
        ],
        stderr=subprocess.PIPE,
    )
    time.sleep(1.0)
    with tempfile.TemporaryDirectory() as tmp:
        truth = asyncio.run(_run(case, folder, Path(tmp), port, server_port))
    time.sleep(2.0)  # libpcap hands packets over in blocks: let the last one come
    dump.send_signal(signal.SIGINT)
    _, err = dump.communicate(timeout=10)
    counters = err.decode().strip().splitlines()[-3:]
    if not any(line.strip().startswith("0 packets dropped by kernel") for line in counters):
        raise SystemExit(f"{case.name}: tcpdump dropped packets: {counters}")
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    run = {
        "port": port,
        "server_port": server_port,
        "tcpdump": counters,
        "bytes": pcap.stat().st_size,
    }
    (folder / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    print(case.name, run["bytes"], "bytes", counters[0])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    random.seed(17)
    for case in CASES:
        if not wanted or case.name in wanted:
            make(case)


if __name__ == "__main__":
    main()
