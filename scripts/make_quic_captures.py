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
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import (
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    PushPromiseReceived,
)
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # make_ws_captures' Realtime player
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
    port: int = 0  # a fixed UDP port (0: any free one)
    push: bool = False  # the server pushes the model's entry before answering GET /v1/models
    websocket: bool = False  # a Realtime session over an extended CONNECT (RFC 9220)
    datagrams: bool = False  # HTTP datagrams (RFC 9297) on an extended CONNECT stream
    first_version: int | None = None  # the client's first Initial: a version the server lacks


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
    Case(
        name="h3_push_ws_datagram",
        what="QUIC v1: GET /v1/models answered after a server push (PUSH_PROMISE, push stream) "
        "of /v1/models/gpt-4o-mini; a Realtime-style WebSocket session over an extended "
        "CONNECT (RFC 9220); a CONNECT with :protocol connect-udp carrying HTTP datagrams "
        "(RFC 9297) both ways",
        requests=STANDARD[:1],
        port=44331,
        push=True,
        websocket=True,
        datagrams=True,
    ),
    Case(
        name="h3_version_negotiation",
        what="the client's first Initial is of QUIC version 2, which the server lacks: it "
        "answers Version Negotiation offering version 1, the client starts again in version 1 "
        "(RFC 9368 §2.2, incompatible version negotiation); GET /v1/models",
        requests=STANDARD[:1],
        port=44332,
        first_version=QuicProtocolVersion.VERSION_2,
    ),
]
PUSHED = "/v1/models/" + MODEL
DATAGRAM_PATH = "/.well-known/masque/udp/127.0.0.1/9/"


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
        self._sockets: dict[int, Any] = {}  # extended CONNECT streams: a wsproto frame reader
        self._player: Any = None
        self._tunnels: set[int] = set()
        self._text: list[str] = []  # a text message's pieces (wsproto hands out partial frames)

    def quic_event_received(self, event: QuicEvent) -> None:
        if self._h3 is None:
            self._h3 = H3Connection(self._quic, enable_webtransport=self.h3_datagrams)
        for ev in self._h3.handle_event(event):
            self._http(ev)

    def _http(self, ev: H3Event) -> None:
        if isinstance(ev, HeadersReceived):
            fields = dict(ev.headers)
            if fields.get(b":method") == b"CONNECT":
                self._connect(ev.stream_id, fields.get(b":protocol", b""))
                return
            self._requests[ev.stream_id] = (ev.headers, bytearray())
            if ev.stream_ended:
                self._spawn(ev.stream_id)
        elif isinstance(ev, DataReceived) and ev.stream_id in self._sockets:
            self._websocket(ev.stream_id, ev.data, ev.stream_ended)
        elif isinstance(ev, DataReceived) and ev.stream_id in self._tunnels:
            if ev.stream_ended:
                self._send(ev.stream_id, None, b"", True)
        elif isinstance(ev, DataReceived):
            self._requests[ev.stream_id][1].extend(ev.data)
            if ev.stream_ended:
                self._spawn(ev.stream_id)
        elif isinstance(ev, DatagramReceived):
            assert self._h3 is not None
            self._h3.send_datagram(ev.stream_id, b"echo:" + ev.data)
            self.transmit()

    def _connect(self, sid: int, protocol: bytes) -> None:
        """An extended CONNECT (RFC 9220 §3, RFC 9297 §3): 200, then the stream is the
        protocol's (WebSocket frames, or capsules beside the datagrams)."""
        from wsproto.frame_protocol import FrameProtocol

        self._send(sid, [(b":status", b"200")], None, False)
        if protocol == b"websocket":
            from make_ws_captures import Player

            self._sockets[sid] = FrameProtocol(client=False, extensions=[])
            self._player = Player()
            created = self._player.event(
                "session.created", session={"type": "realtime", "model": "gpt-realtime"}
            )
            self._send(sid, None, bytes(self._sockets[sid].send_data(created)), False)
        else:
            self._tunnels.add(sid)

    def _websocket(self, sid: int, data: bytes, ended: bool) -> None:
        from wsproto.frame_protocol import Opcode

        ws = self._sockets[sid]
        ws.receive_bytes(data)
        for frame in ws.received_frames():
            if frame.opcode in (Opcode.TEXT, Opcode.CONTINUATION):
                self._text.append(str(frame.payload))
                if not frame.message_finished:
                    continue
                sent = json.loads("".join(self._text))
                self._text.clear()
                for reply in self._player.answer(sent):
                    self._send(sid, None, bytes(ws.send_data(reply)), False)
            elif frame.opcode is Opcode.CLOSE:
                self._send(sid, None, bytes(ws.close(1000, "bye")), True)
                return
        if ended:
            self._send(sid, None, b"", True)

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
        if path == "/v1/models" and self.push:
            self._push(sid)
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

    push = False  # set for a case with a server push
    h3_datagrams = False  # set for a case with HTTP datagrams (SETTINGS_H3_DATAGRAM, RFC 9297)

    def _push(self, sid: int) -> None:
        """HTTP/3 server push (RFC 9114 §4.6): PUSH_PROMISE on the request stream, then the
        response on a push stream."""
        assert self._h3 is not None
        request = [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1"),
            (b":path", PUSHED.encode()),
        ]
        pushed = self._h3.send_push_promise(sid, request)
        entry = {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "system"}
        self._json(pushed, entry)

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
    h3_datagrams = False  # set for a case with HTTP datagrams (SETTINGS_H3_DATAGRAM, RFC 9297)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=self.h3_datagrams)
        self.events: dict[int, list[tuple[float, H3Event]]] = {}
        self.done: dict[int, asyncio.Future[None]] = {}
        self.on_data: Any = None
        self.promises: list[dict[str, Any]] = []
        self.pushed: dict[int, list[tuple[float, H3Event]]] = {}  # by push id
        self.datagrams: list[dict[str, Any]] = []
        self.tunnel: dict[int, list[tuple[float, H3Event]]] = {}  # extended CONNECT streams

    def quic_event_received(self, event: QuicEvent) -> None:
        for ev in self.h3.handle_event(event):
            now = time.time()
            if isinstance(ev, PushPromiseReceived):
                self.promises.append(
                    {
                        "push_id": ev.push_id,
                        "stream": ev.stream_id,
                        "path": dict(ev.headers)[b":path"].decode(),
                        "t": now,
                    }
                )
                continue
            if isinstance(ev, (HeadersReceived, DataReceived)) and ev.push_id is not None:
                self.pushed.setdefault(ev.push_id, []).append((now, ev))
                continue
            if isinstance(ev, DatagramReceived):
                self.datagrams.append(
                    {"stream": ev.stream_id, "direction": "server", "size": len(ev.data), "t": now}
                )
                continue
            if isinstance(ev, (HeadersReceived, DataReceived)) and ev.stream_id in self.tunnel:
                self.tunnel[ev.stream_id].append((now, ev))
                continue
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

    async def _connect(self, protocol: str, path: str, port: int) -> int:
        """An extended CONNECT (RFC 9220 §3): its stream, once the server said 200."""
        sid = self._quic.get_next_available_stream_id()
        self.tunnel[sid] = []
        headers = [
            (b":method", b"CONNECT"),
            (b":protocol", protocol.encode()),
            (b":scheme", b"https"),
            (b":authority", f"127.0.0.1:{port}".encode()),
            (b":path", path.encode()),
        ]
        if protocol == "websocket":
            headers += [
                (b"sec-websocket-version", b"13"),
                (b"authorization", b"Bearer sk-test-not-a-key"),
            ]
        else:
            headers.append((b"capsule-protocol", b"?1"))
        self.h3.send_headers(sid, headers)
        self.transmit()
        await self._until(lambda: any(isinstance(e, HeadersReceived) for _, e in self.tunnel[sid]))
        return sid

    async def _until(self, done: Any) -> None:
        for _ in range(3000):
            if done():
                return
            await asyncio.sleep(0.01)
        raise SystemExit("the server did not answer in 30 s")

    async def realtime(self, port: int) -> dict[str, Any]:
        """A Realtime-style session (the WebSocket captures' player answers): a tool call,
        its output, a text answer; then a close."""
        from wsproto.frame_protocol import FrameProtocol, Opcode

        path = "/v1/realtime?model=gpt-realtime"
        sid = await self._connect("websocket", path, port)
        ws = FrameProtocol(client=True, extensions=[])
        sent: list[dict[str, Any]] = []
        received: list[dict[str, Any]] = []
        read = [0]
        text: list[str] = []  # a text message's pieces (wsproto hands out partial frames)

        def pump() -> None:
            events = self.tunnel[sid]
            for now, ev in events[read[0] :]:
                if isinstance(ev, DataReceived):
                    ws.receive_bytes(ev.data)
                    for frame in ws.received_frames():
                        if frame.opcode in (Opcode.TEXT, Opcode.CONTINUATION):
                            text.append(str(frame.payload))
                            if frame.message_finished:
                                event = json.loads("".join(text))
                                text.clear()
                                received.append({"t": now, "type": event["type"]})
            read[0] = len(events)

        def count(kind: str) -> int:
            pump()
            return sum(r["type"] == kind for r in received)

        async def send(event: dict[str, Any], until: str, n: int) -> None:
            self.h3.send_data(sid, bytes(ws.send_data(json.dumps(event))), end_stream=False)
            self.transmit()
            sent.append({"t": time.time(), "type": event["type"]})
            await self._until(lambda: count(until) >= n)

        await self._until(lambda: count("session.created") >= 1)
        await send(
            {"type": "session.update", "session": {"type": "realtime", "instructions": "Brief."}},
            "session.updated",
            1,
        )
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What is the weather in Shenzhen?"}],
        }
        await send({"type": "conversation.item.create", "item": item}, "conversation.item.added", 1)
        await send({"type": "response.create"}, "response.done", 1)
        output = {"type": "function_call_output", "call_id": "call_weather01", "output": "26C"}
        await send(
            {"type": "conversation.item.create", "item": output}, "conversation.item.added", 2
        )
        await send({"type": "response.create"}, "response.done", 2)
        self.h3.send_data(sid, bytes(ws.close(1000, "done")), end_stream=True)
        self.transmit()
        await self._until(
            lambda: any(getattr(e, "stream_ended", False) for _, e in self.tunnel[sid])
        )
        pump()
        return {"stream": sid, "path": path, "sent": sent, "received": received}

    async def datagram_session(self, port: int) -> dict[str, Any]:
        """Three HTTP datagrams on an extended CONNECT stream, each echoed by the server."""
        sid = await self._connect("connect-udp", DATAGRAM_PATH, port)
        for size in (12, 300, 1100):
            self.h3.send_datagram(sid, bytes(range(256)) * (size // 256) + bytes(size % 256))
            self.transmit()
            self.datagrams.append(
                {"stream": sid, "direction": "client", "size": size, "t": time.time()}
            )
            await self._until(
                lambda: (
                    sum(d["direction"] == "server" for d in self.datagrams)
                    >= sum(d["direction"] == "client" for d in self.datagrams)
                )
            )
        self.h3.send_data(sid, b"", end_stream=True)
        self.transmit()
        await self._until(
            lambda: any(getattr(e, "stream_ended", False) for _, e in self.tunnel[sid])
        )
        return {"stream": sid, "path": DATAGRAM_PATH, "datagrams": self.datagrams}


def _finished_pushes(client: Client) -> list[int]:
    return [
        push_id
        for push_id, events in client.pushed.items()
        if any(getattr(ev, "stream_ended", False) for _, ev in events)
    ]


def _pushes(client: Client) -> list[dict[str, Any]]:
    """What the client was pushed: each promise with its response, from its own events."""
    out = []
    for promise in client.promises:
        events = client.pushed.get(promise["push_id"], [])
        head = next(ev for _, ev in events if isinstance(ev, HeadersReceived))
        body = b"".join(ev.data for _, ev in events if isinstance(ev, DataReceived))
        out.append(
            {
                **promise,
                "status": int(dict(head.headers)[b":status"]),
                "response_bytes": len(body),
                "response_sha256": hashlib.sha256(body).hexdigest(),
                "ended": any(getattr(ev, "stream_ended", False) for _, ev in events),
            }
        )
    return out


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
    Server.push = case.push
    Server.h3_datagrams = case.datagrams
    Client.h3_datagrams = case.datagrams
    if case.datagrams:
        sconf.max_datagram_frame_size = 65536
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
        # aioquic's client starts only in a version it supports: it offers both
        supported_versions=[case.first_version, case.version]
        if case.first_version is not None
        else [case.version],
        original_version=case.first_version,
        max_datagram_frame_size=65536 if case.datagrams else None,
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
        if case.push:
            await client._until(lambda: len(_finished_pushes(client)) == len(client.promises))
            facts["pushes"] = _pushes(client)
        if case.websocket:
            facts["websocket"] = await client.realtime(port)
        if case.datagrams:
            facts["datagram_session"] = await client.datagram_session(port)
        if case.first_version is not None:
            facts["first_version"] = f"0x{case.first_version:08x}"
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
    port = case.port or _free_port()
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
    try:
        with tempfile.TemporaryDirectory() as tmp:
            truth = asyncio.run(_run(case, folder, Path(tmp), port, server_port))
    except BaseException:
        dump.send_signal(signal.SIGINT)
        dump.communicate(timeout=10)
        raise
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


MIDWAY_FROM, MIDWAY_SKIP = "h3_openai", 3


def make_midway() -> None:
    """``h3_midway``: ``h3_openai``'s capture from its 4th datagram on, as if tcpdump had
    started once the handshake was over (the first three datagrams are the only long-header
    ones: the client's Initial, the server's Initial and Handshake, the client's Handshake).
    A cut of a real capture, not a new one: the truth is the source's, with what was cut."""
    source = OUT / MIDWAY_FROM
    raw = (source / "capture.pcap").read_bytes()
    pos, n = 24, 0
    while n < MIDWAY_SKIP:
        incl = int.from_bytes(raw[pos + 8 : pos + 12], "little")
        pos += 16 + incl
        n += 1
    folder = OUT / "h3_midway"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "capture.pcap").write_bytes(raw[:24] + raw[pos:])
    (folder / "keys.log").write_bytes((source / "keys.log").read_bytes())
    records, at = 0, 24
    while at < len(raw):
        at += 16 + int.from_bytes(raw[at + 8 : at + 12], "little")
        records += 1
    truth = {
        "made_by": "scripts/make_quic_captures.py (make_midway)",
        "case": "h3_midway",
        "what": f"{MIDWAY_FROM}'s capture without its first {MIDWAY_SKIP} datagrams (every "
        "long-header packet): a QUIC connection seen mid-way",
        "from": MIDWAY_FROM,
        "skipped_datagrams": MIDWAY_SKIP,
        "datagrams": records - MIDWAY_SKIP,
        "server_port": json.loads((source / "run.json").read_text())["port"],
    }
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print("h3_midway", records - MIDWAY_SKIP, "datagrams")


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
    if not wanted or "h3_midway" in wanted:
        make_midway()


if __name__ == "__main__":
    main()
