"""Make loopback captures of the official ``openai`` SDK's Realtime client in
``tests/data/captures/<name>/``.

    python3 scripts/make_ws_captures.py              # every capture
    python3 scripts/make_ws_captures.py --only ws_sdk_realtime_deflate
    python3 scripts/make_ws_captures.py --list

The client is the ``openai`` SDK's ``AsyncOpenAI().realtime.connect()`` (its own WebSocket
layer) in this process; the server is a ``websockets`` server on 127.0.0.1 in the same event
loop that plays the Realtime API's GA events: ``session.created``, ``session.updated``, then
for each ``response.create`` a response built from what the client asked (text deltas, a
function call's arguments in deltas, audio deltas with their transcript, ``response.done``
with usage). The client runs a tool loop: a user message, a response that calls a function,
the function's output sent back, a second response with text and audio.

The cases differ in what the WebSocket layer does: no compression, ``permessage-deflate``
with context takeover (the ``websockets`` default), without context takeover, and over TLS
1.3 (``wss``) with the key log the client's SSL context writes. ``tcpdump -i lo`` writes the
case's port only. ``truth.json`` holds, from the client's side only, every event it sent
(type, event id, JSON size) and every event the SDK parsed (type, event id, and for deltas
and ``response.done`` the values the SDK objects carry), and the negotiated extension; never
anything read back from the pcap.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
MADE_BY = "scripts/make_ws_captures.py"
WS_VENV = SCRIPT.parent / ".venv-ws"
WS_REQUIREMENTS = (
    "openai==3.57.0",
    "websockets==17.4",
    "hypercorn==0.18.0",
    "h2==4.3.0",
    "wsproto==1.3.2",
)
FAKE_KEY = "sk-proj-example-not-a-real-key-realtime0000"
MODEL = "gpt-realtime-workshop"
AUDIO = bytes(range(256)) * 24  # 6 KiB of "PCM16", 128 ms at 24 kHz


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    compression: str  # "none", "deflate", "deflate-no-context"
    tls: bool = False
    h2: bool = False  # RFC 8441: the WebSocket on an HTTP/2 stream (extended CONNECT)


CASES = (
    Case("ws_sdk_realtime_plain", 18791, "none"),
    Case("ws_sdk_realtime_deflate", 18792, "deflate"),
    Case("ws_sdk_realtime_nocontext", 18793, "deflate-no-context"),
    Case("ws_sdk_realtime_tls13", 18794, "deflate", tls=True),
    Case("ws_h2_realtime", 18795, "none", h2=True),
)


# -- the server -------------------------------------------------------------------------------


class Player:
    """The server's side: answers the client's events with Realtime GA events."""

    def __init__(self) -> None:
        self.n = 0
        self.responses = 0

    def event(self, kind: str, **fields: Any) -> str:
        self.n += 1
        return json.dumps({"type": kind, "event_id": f"event_{self.n:04d}", **fields})

    def answer(self, sent: dict[str, Any]) -> list[str]:
        kind = sent.get("type")
        if kind == "session.update":
            return [self.event("session.updated", session=sent.get("session", {}))]
        if kind == "conversation.item.create":
            item = {**sent.get("item", {}), "id": f"item_{self.n:04d}", "status": "completed"}
            return [self.event("conversation.item.added", item=item)]
        if kind == "response.create":
            self.responses += 1
            return self._tool_call() if self.responses == 1 else self._text_and_audio()
        return [
            self.event(
                "error", error={"type": "invalid_request_error", "message": f"unknown event {kind}"}
            )
        ]

    def _usage(self, inp: int, out: int) -> dict[str, Any]:
        return {"total_tokens": inp + out, "input_tokens": inp, "output_tokens": out}

    def _tool_call(self) -> list[str]:
        rid = "resp_0001"
        call = {
            "type": "function_call",
            "id": "item_fc01",
            "call_id": "call_weather1",
            "name": "get_weather",
            "arguments": "",
        }
        args = ['{"city": "Sh', 'enzhen", "unit": "c"}']
        out = [
            self.event(
                "response.created",
                response={
                    "id": rid,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "output": [],
                },
            ),
            self.event("response.output_item.added", response_id=rid, output_index=0, item=call),
        ]
        out += [
            self.event(
                "response.function_call_arguments.delta",
                response_id=rid,
                item_id="item_fc01",
                output_index=0,
                call_id="call_weather1",
                delta=piece,
            )
            for piece in args
        ]
        full = "".join(args)
        out.append(
            self.event(
                "response.function_call_arguments.done",
                response_id=rid,
                item_id="item_fc01",
                output_index=0,
                call_id="call_weather1",
                name="get_weather",
                arguments=full,
            )
        )
        done_item = {**call, "arguments": full, "status": "completed"}
        out.append(
            self.event("response.output_item.done", response_id=rid, output_index=0, item=done_item)
        )
        out.append(
            self.event(
                "response.done",
                response={
                    "id": rid,
                    "object": "realtime.response",
                    "status": "completed",
                    "output": [done_item],
                    "usage": self._usage(412, 23),
                },
            )
        )
        return out

    def _text_and_audio(self) -> list[str]:
        rid = "resp_0002"
        item = {"type": "message", "id": "item_msg02", "role": "assistant", "content": []}
        words = ["It is ", "24 degrees ", "and sunny ", "in Shenzhen."]
        out = [
            self.event(
                "response.created",
                response={
                    "id": rid,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "output": [],
                },
            ),
            self.event("response.output_item.added", response_id=rid, output_index=0, item=item),
        ]
        out += [
            self.event(
                "response.output_audio_transcript.delta",
                response_id=rid,
                item_id="item_msg02",
                output_index=0,
                content_index=0,
                delta=w,
            )
            for w in words
        ]
        for k in range(3):
            chunk = AUDIO[k * 2048 : (k + 1) * 2048]
            out.append(
                self.event(
                    "response.output_audio.delta",
                    response_id=rid,
                    item_id="item_msg02",
                    output_index=0,
                    content_index=0,
                    delta=base64.b64encode(chunk).decode(),
                )
            )
        transcript = "".join(words)
        out.append(
            self.event(
                "response.output_audio.done",
                response_id=rid,
                item_id="item_msg02",
                output_index=0,
                content_index=0,
            )
        )
        out.append(
            self.event(
                "response.output_audio_transcript.done",
                response_id=rid,
                item_id="item_msg02",
                output_index=0,
                content_index=0,
                transcript=transcript,
            )
        )
        done_item = {
            **item,
            "status": "completed",
            "content": [{"type": "output_audio", "transcript": transcript}],
        }
        out.append(
            self.event("response.output_item.done", response_id=rid, output_index=0, item=done_item)
        )
        out.append(
            self.event(
                "response.done",
                response={
                    "id": rid,
                    "object": "realtime.response",
                    "status": "completed",
                    "output": [done_item],
                    "usage": self._usage(468, 61),
                },
            )
        )
        return out


async def serve(case: Case, certs: dict[str, Path]) -> Any:
    from websockets.asyncio.server import serve as ws_serve
    from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

    async def handler(ws: Any) -> None:
        player = Player()
        await ws.send(player.event("session.created", session={"type": "realtime", "model": MODEL}))
        async for message in ws:
            for reply in player.answer(json.loads(message)):
                await ws.send(reply)

    extensions = None
    compression: str | None = "deflate"
    if case.compression == "none":
        compression = None
    elif case.compression == "deflate-no-context":
        compression = None
        extensions = [
            ServerPerMessageDeflateFactory(
                server_no_context_takeover=True, client_no_context_takeover=True
            )
        ]
    ctx = None
    if case.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(certs["ecdsa"], certs["ecdsa_key"])
    return await ws_serve(
        handler, "127.0.0.1", case.port, compression=compression, extensions=extensions, ssl=ctx
    )


# -- the client -------------------------------------------------------------------------------


async def client(case: Case, certs: dict[str, Path], keylog: Path) -> dict[str, Any]:
    from openai import AsyncOpenAI

    scheme = "wss" if case.tls else "ws"
    api = AsyncOpenAI(
        api_key=FAKE_KEY,
        base_url=f"http://127.0.0.1:{case.port}/v1",
        websocket_base_url=f"{scheme}://127.0.0.1:{case.port}/v1",
    )
    options: dict[str, Any] = {}
    if case.tls:
        ctx = ssl.create_default_context(cafile=str(certs["ecdsa"]))
        ctx.keylog_filename = str(keylog)
        options["ssl"] = ctx
    if case.compression == "none":
        options["compression"] = None
    elif case.compression == "deflate":  # the SDK leaves it off by default (no max_size)
        options["compression"] = "deflate"
    else:
        from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

        options["compression"] = None
        options["extensions"] = [
            ClientPerMessageDeflateFactory(
                server_no_context_takeover=True, client_no_context_takeover=True
            )
        ]
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []
    async with api.realtime.connect(model=MODEL, websocket_connection_options=options) as conn:  # type: ignore[arg-type]

        async def send(event: dict[str, Any]) -> None:
            await conn.send(event)  # type: ignore[arg-type]
            sent.append(
                {
                    "t": round(time.time(), 6),
                    "type": event["type"],
                    "event_id": event.get("event_id"),
                }
            )

        async def until_done() -> None:
            async for ev in conn:
                received.append(parsed(ev))
                if ev.type == "response.done":
                    return

        first = await conn.recv()
        received.append(parsed(first))
        await send(
            {
                "type": "session.update",
                "event_id": "evt_c001",
                "session": {
                    "type": "realtime",
                    "instructions": "You are a weather agent. Answer briefly.",
                    "tools": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Current weather in a city",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "city": {"type": "string"},
                                    "unit": {"type": "string"},
                                },
                                "required": ["city"],
                            },
                        }
                    ],
                },
            }
        )
        received.append(parsed(await conn.recv()))
        await send(
            {
                "type": "conversation.item.create",
                "event_id": "evt_c002",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "What is the weather in Shenzhen?"}],
                },
            }
        )
        received.append(parsed(await conn.recv()))
        await send({"type": "response.create", "event_id": "evt_c003"})
        await until_done()
        await send(
            {
                "type": "conversation.item.create",
                "event_id": "evt_c004",
                "item": {
                    "type": "function_call_output",
                    "call_id": "call_weather1",
                    "output": '{"temperature_c": 24, "sky": "sunny"}',
                },
            }
        )
        received.append(parsed(await conn.recv()))
        await send(
            {
                "type": "response.create",
                "event_id": "evt_c005",
                "response": {"output_modalities": ["audio"]},
            }
        )
        await until_done()
        ws = getattr(conn, "_connection", None) or getattr(conn, "ws", None)
        protocol = getattr(ws, "protocol", None)
        extensions = [
            {"name": e.name, **{k: v for k, v in vars(e).items() if isinstance(v, (bool, int))}}
            for e in getattr(protocol, "extensions", [])
        ]
    return {"sent": sent, "received": received, "extensions": extensions}


def parsed(ev: Any) -> dict[str, Any]:
    """What the SDK's event object says (its own parsing, not the wire's bytes)."""
    out: dict[str, Any] = {
        "t": round(time.time(), 6),
        "type": ev.type,
        "event_id": getattr(ev, "event_id", None),
    }
    for name in ("delta", "arguments", "transcript", "call_id", "name"):
        value = getattr(ev, name, None)
        if isinstance(value, str):
            out[name] = (
                value
                if name != "delta" or not ev.type.endswith("audio.delta")
                else {"base64_bytes": len(value), "pcm_bytes": len(base64.b64decode(value))}
            )
    response = getattr(ev, "response", None)
    if ev.type == "response.done" and response is not None:
        usage = response.usage
        out["response"] = {
            "id": response.id,
            "status": response.status,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
            if usage
            else None,
        }
    return out


# -- RFC 8441: the same session on an HTTP/2 stream ------------------------------------------


def h2_server(case: Case, stop: Any) -> Any:
    """hypercorn (HTTP/2 cleartext with prior knowledge; it offers extended CONNECT in its
    SETTINGS) running an ASGI WebSocket app that plays the same events."""
    from hypercorn.asyncio import serve as hc_serve
    from hypercorn.config import Config

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        player = Player()
        created = player.event("session.created", session={"type": "realtime", "model": MODEL})
        await send({"type": "websocket.send", "text": created})
        while True:
            msg = await receive()
            if msg["type"] == "websocket.disconnect":
                return
            for reply in player.answer(json.loads(msg.get("text") or "{}")):
                await send({"type": "websocket.send", "text": reply})

    config = Config()
    config.bind = [f"127.0.0.1:{case.port}"]
    config.accesslog = None
    return hc_serve(app, config, shutdown_trigger=stop.wait)


def h2_client(case: Case) -> dict[str, Any]:
    """The h2 library driven by hand: a CONNECT with ``:protocol: websocket`` (RFC 8441 §4),
    then wsproto's client frames on the stream's DATA."""
    import socket

    import h2.config
    import h2.connection
    import h2.events
    from wsproto.frame_protocol import FrameProtocol, Opcode

    sock = socket.create_connection(("127.0.0.1", case.port))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    ws = FrameProtocol(client=True, extensions=[])
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []
    state: dict[str, Any] = {"settings": False, "status": None}

    def pump(until: Any) -> None:
        while not until():
            data = sock.recv(65536)
            if not data:
                raise genlib.ToolError("the server closed the connection")
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RemoteSettingsChanged):
                    state["settings"] = True
                elif isinstance(ev, h2.events.ResponseReceived):
                    state["status"] = dict(ev.headers).get(b":status")
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    ws.receive_bytes(ev.data)
                    for frame in ws.received_frames():
                        if frame.opcode is Opcode.TEXT:
                            event = json.loads(str(frame.payload))
                            received.append(
                                {
                                    "t": round(time.time(), 6),
                                    "type": event["type"],
                                    "event_id": event["event_id"],
                                }
                            )
            sock.sendall(conn.data_to_send())

    pump(lambda: state["settings"])
    sid = conn.get_next_available_stream_id()
    path = f"/v1/realtime?model={MODEL}"
    conn.send_headers(
        sid,
        [
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "http"),
            (":path", path),
            (":authority", f"127.0.0.1:{case.port}"),
            ("sec-websocket-version", "13"),
            ("authorization", f"Bearer {FAKE_KEY}"),
        ],
    )
    sock.sendall(conn.data_to_send())
    pump(lambda: state["status"] is not None)
    if state["status"] != b"200":
        raise genlib.ToolError(f"extended CONNECT answered {state['status']!r}")

    def send(event: dict[str, Any], then: int) -> None:
        conn.send_data(sid, bytes(ws.send_data(json.dumps(event))))
        sock.sendall(conn.data_to_send())
        sent.append(
            {"t": round(time.time(), 6), "type": event["type"], "event_id": event["event_id"]}
        )
        want = len(received) + then
        pump(lambda: len(received) >= want)

    pump(lambda: len(received) >= 1)  # session.created
    send(
        {
            "type": "session.update",
            "event_id": "evt_h001",
            "session": {"type": "realtime", "instructions": "Be brief."},
        },
        1,
    )
    send(
        {
            "type": "conversation.item.create",
            "event_id": "evt_h002",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather in Shenzhen?"}],
            },
        },
        1,
    )
    send({"type": "response.create", "event_id": "evt_h003"}, 7)
    conn.send_data(sid, bytes(ws.close(1000, "done")), end_stream=True)
    sock.sendall(conn.data_to_send())
    time.sleep(0.2)
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    sock.close()
    return {"sent": sent, "received": received, "extensions": [], "path": path}


def run_h2(case: Case) -> dict[str, Any]:
    import threading

    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()

    def serve_forever() -> None:
        asyncio.set_event_loop(loop)
        task = loop.create_task(h2_server(case, stop))
        loop.call_later(0.3, ready.set)
        loop.run_until_complete(task)

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    ready.wait(5)
    try:
        return h2_client(case)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)


# -- one case ---------------------------------------------------------------------------------


def run_case(case: Case, tcpdump: str, certs: dict[str, Path]) -> None:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    pcap = folder / "capture.pcap"
    capture = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)

    async def main() -> dict[str, Any]:
        server = await serve(case, certs)
        try:
            capture.start()
            return await client(case, certs, keylog)
        finally:
            server.close()
            await server.wait_closed()

    t0 = time.time()
    if case.h2:
        capture.start()
        result = run_h2(case)
    else:
        result = asyncio.run(main())
    counters = capture.stop(linger=0.7)
    truth = {
        "capture": case.name,
        "made_by": MADE_BY,
        "port": case.port,
        "uri": f"{'wss' if case.tls else 'ws'}://127.0.0.1:{case.port}/v1/realtime?model={MODEL}",
        "compression": case.compression,
        "tls": case.tls,
        "client": (
            "h2 by hand (extended CONNECT, RFC 8441) with wsproto frames"
            if case.h2
            else "openai AsyncOpenAI().realtime.connect() "
            + genlib.package_versions("openai", "websockets")["openai"]
        ),
        "server": ("hypercorn (HTTP/2 cleartext) ASGI app" if case.h2 else "websockets server")
        + " playing Realtime GA events (scripts/make_ws_captures.py)",
        "client_started": round(t0, 6),
        "fake_credentials": {"authorization_bearer": FAKE_KEY},
        **result,
    }
    run = {
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": pcap.stat().st_size,
        "keylog_labels": genlib.keylog_labels(keylog) if case.tls else None,
        "software": genlib.package_versions("openai", "websockets"),
    }
    if not case.tls:
        keylog.unlink(missing_ok=True)
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {run['pcap_bytes']:,} bytes, {run['packets']} packets, "
        f"{len(result['sent'])} sent, {len(result['received'])} received, tcpdump {counters}"
    )
    if not run["capture_complete"]:
        raise genlib.ToolError(f"{case.name}: tcpdump dropped packets")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for c in CASES:
            print(c.name, c.compression, "tls" if c.tls else "")
        return 0
    genlib.reexec_in_venv(
        SCRIPT, WS_VENV, lambda: genlib.ensure_venv(WS_VENV, WS_REQUIREMENTS, "python3.11")
    )
    tcpdump = genlib.ensure_tcpdump()
    with tempfile.TemporaryDirectory(prefix="agentshark-ws-") as tmp:
        certs = genlib.make_test_certs(Path(tmp))  # thrown away with the folder
        for case in CASES:
            if not args.only or case.name in args.only:
                run_case(case, tcpdump, certs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
