"""A local HTTPS upstream for the proxy's tests and bench: uvicorn on 127.0.0.1 with a
self-signed certificate, answering with recorded responses.

The replies are the exchanges of a shared capture (``../shared/captures/llm_sdk_*``: real
SDK runs against a stub server, TLS decrypted with their key logs), read with agentshark's
own pipeline: a request gets the next recorded response of the same method, path and
``stream`` flag (and whether it declares tools), in recorded order. SSE bodies go out one
event per write with ``sse_delay`` seconds between them, as a token stream does; other
bodies in one write. The server keeps every request it received (``received``), so a test
can check what reached it, and when it sent each chunk (``sent``, for the bench). A request
with no reply left gets a 599. A WebSocket session gets each text message back, prefixed
``echo: ``. With ``http2=True`` the server is hypercorn instead, offering ``h2`` and
``http/1.1`` by ALPN (uvicorn speaks HTTP/1 only), for the proxy's HTTP/2 tests.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import secrets
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from agentshark.pipeline import Options, run

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "captures"
Key = tuple[str, str, bool, bool]


@dataclass(slots=True)
class Reply:
    status: int
    headers: list[tuple[bytes, bytes]]
    chunks: list[bytes]


@dataclass(slots=True)
class Received:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Replies:
    by_key: dict[Key, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    count: int = 0


def _key(method: str, path: str, body: bytes) -> Key:
    try:
        doc = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    return (method, path.split("?")[0], bool(doc.get("stream")), bool(doc.get("tools")))


_HOP = {"content-length", "transfer-encoding", "connection", "date", "server", "keep-alive"}


def replies_from_capture(name: str) -> Replies:
    """The recorded responses of shared capture ``name``, by request key."""
    base = CAPTURES / name
    return replies_from_pcap(base / "capture.pcap", base / "keylog.txt")


def replies_from_pcap(pcap: Path, keylog: Path) -> Replies:
    """The recorded responses of a capture and its key log, by request key."""
    out = Replies()
    for item in run([str(pcap)], Options(keylogs=[str(keylog)])):
        if not isinstance(item, Exchange) or item.request is None or item.response is None:
            continue
        req, resp = item.request, item.response
        body = decode_body(req.body, header(req.headers, "content-encoding")).data()
        data = resp.body.data()
        stream = (header(resp.headers, "content-type") or "").startswith("text/event-stream")
        chunks = _sse_events(data) if stream else [data]
        headers = [
            (k.lower().encode(), v.encode()) for k, v in resp.headers if k.lower() not in _HOP
        ]
        out.by_key[_key(req.method, req.target, body)].append(Reply(resp.status, headers, chunks))
        out.count += 1
    return out


def replies_from_har(path: Path) -> Replies:
    """The recorded responses of a HAR file, by request key (bodies as ``content.text``)."""
    out = Replies()
    for entry in json.loads(path.read_text())["log"]["entries"]:
        req, resp = entry["request"], entry["response"]
        body = req.get("postData", {}).get("text", "").encode()
        target = req["url"].split("/", 3)[3] if req["url"].count("/") >= 3 else ""
        data = resp["content"].get("text", "").encode()
        stream = resp["content"].get("mimeType", "").startswith("text/event-stream")
        headers = [
            (h["name"].lower().encode(), h["value"].encode())
            for h in resp["headers"]
            if h["name"].lower() not in _HOP | {"content-encoding"}
        ]
        chunks = _sse_events(data) if stream else [data]
        out.by_key[_key(req["method"], "/" + target, body)].append(
            Reply(resp["status"], headers, chunks)
        )
        out.count += 1
    return out


def _sse_events(data: bytes) -> list[bytes]:
    events, rest = [], data
    while rest:
        cut = rest.find(b"\n\n")
        if cut < 0:
            events.append(rest)
            break
        events.append(rest[: cut + 2])
        rest = rest[cut + 2 :]
    return events


def make_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (its own CA), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    # a name of its own: OpenSSL finds a trusted certificate by its subject
    common_name = f"agentshark test upstream {secrets.token_hex(4)}"
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "upstream-cert.pem", directory / "upstream-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class Upstream:
    """The server, on a free port of 127.0.0.1, in a thread (a context manager)."""

    def __init__(
        self,
        replies: Replies,
        directory: Path,
        *,
        sse_delay: float = 0.005,
        repeat: bool = False,
        http2: bool = False,
    ) -> None:
        self.replies = replies
        self.received: list[Received] = []
        self.sent: list[list[float]] = []  # per request: perf_counter() as each chunk went out
        self.cert, key = make_cert(directory)
        self.sse_delay = sse_delay
        self.repeat = repeat  # answer every request of a key with its first reply (the bench)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.http_versions: list[str] = []  # per request, as the server saw it
        self._stop = threading.Event()
        self._started: threading.Event | None = None
        if http2:
            self._thread = threading.Thread(target=self._hypercorn, args=(key,), daemon=True)
            self._started = threading.Event()
            return
        import uvicorn

        config = uvicorn.Config(
            self._app,
            log_level="warning",
            ssl_certfile=str(self.cert),
            ssl_keyfile=str(key),
            lifespan="off",
            interface="asgi3",
            ws="wsproto",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def _hypercorn(self, key: Path) -> None:
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.certfile, config.keyfile = str(self.cert), str(key)
        config.alpn_protocols = ["h2", "http/1.1"]
        config.loglevel = "WARNING"
        self._sock.close()  # hypercorn binds the port itself

        async def main() -> None:
            loop = asyncio.get_running_loop()
            stopped = asyncio.Event()
            threading.Thread(
                target=lambda: (self._stop.wait(), loop.call_soon_threadsafe(stopped.set)),
                daemon=True,
            ).start()
            await serve(self._app, config, shutdown_trigger=stopped.wait)

        asyncio.run(main())

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> Upstream:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._listening() and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def _listening(self) -> bool:
        if self._started is None:
            return bool(self._server.started)
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def __exit__(self, *exc: object) -> None:
        if self._started is not None:
            self._stop.set()
        else:
            self._server.should_exit = True
        self._thread.join(10)

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await self._echo(receive, send)
            return
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["raw_path"].decode() + (
            "?" + scope["query_string"].decode() if scope["query_string"] else ""
        )
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        self.received.append(Received(scope["method"], path, headers, body))
        self.http_versions.append(str(scope.get("http_version")))
        queue = self.replies.by_key.get(_key(scope["method"], path, body))
        if not queue:
            await send({"type": "http.response.start", "status": 599, "headers": []})
            await send({"type": "http.response.body", "body": b"no reply recorded"})
            return
        reply = queue.popleft() if not self.repeat else queue[0]
        sent: list[float] = []
        self.sent.append(sent)
        await send(
            {"type": "http.response.start", "status": reply.status, "headers": reply.headers}
        )
        for i, chunk in enumerate(reply.chunks):
            if i and self.sse_delay:
                await asyncio.sleep(self.sse_delay)
            last = i == len(reply.chunks) - 1
            sent.append(time.perf_counter())
            await send({"type": "http.response.body", "body": chunk, "more_body": not last})
        if not reply.chunks:
            await send({"type": "http.response.body", "body": b""})

    async def _echo(self, receive: Any, send: Any) -> None:
        """A WebSocket session that answers each text message with ``echo: `` + it."""
        while True:
            message = await receive()
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.accept"})
            elif message["type"] == "websocket.receive" and message.get("text") is not None:
                await send({"type": "websocket.send", "text": "echo: " + message["text"]})
            elif message["type"] == "websocket.disconnect":
                return
