"""Like-for-like benchmark pairs: the same model events over a streaming HTTP path and over
WebSocket or gRPC, segment for segment the same sizes and counts.

    python bench/make_pair_captures.py --mb 60   # bench/out/pair_{sse_h1,ws,sse_h2,grpc}_60mb.pcap
                                                 # (+ .truth.json: connections, calls, events)
    python bench/pairs.py --mb 60 --reps 3       # measures them, interleaved

Synthetic on purpose, like ``make_ws_capture.py`` and ``make_grpc_capture.py`` (whose packet
writer and HTTP/2 framing this reuses): the per-byte cost of a path, not a client's behaviour.

**HTTP/1 SSE against WebSocket.** One turn is one model response of 67 server events: the
OpenAI Responses stream (``POST /v1/responses``, ``stream: true``; chunked ``text/event-stream``,
each event ``event: <type>`` and ``data: <json>``, one chunk each) and the OpenAI Realtime
events of the same response on a WebSocket (``GET /v1/realtime`` Upgrade, one unmasked text frame
each). The events are the same in both, by type and order (Realtime's GA names are the
Responses ones, ``response.completed`` being ``response.done``): ``response.created``,
``output_item.added``, ``content_part.added``, 60 ``response.output_text.delta`` (one token
each), ``output_text.done``, ``content_part.done``, ``output_item.done``, and the terminal
event with usage. Their JSON is the same apart from each API's own fields (Responses:
``sequence_number``, ``logprobs``; Realtime: ``event_id``, ``response_id``), and the Realtime
``event_id`` is padded so that every WebSocket frame is exactly the size of the SSE chunk it
stands for (the first event's also counts the HTTP response head, sent in the same segment).
The client's turn is the HTTP request (head and JSON body) against a masked ``response.create``
padded to the same size. 20 turns a connection (HTTP/1.1 keep-alive; one Realtime session),
each server event its own TCP segment; the SSE response's last chunk carries the zero chunk.

**HTTP/2 SSE against gRPC.** One call is one streamed chat completion of 61 chunks: OpenAI Chat
Completions over h2c (``POST /v1/chat/completions``, ``text/event-stream``, each chunk one
``data:`` event, then ``data: [DONE]`` with END_STREAM) and xAI's ``/xai_api.Chat/
GetCompletionChunk`` (each chunk one length-prefixed ``GetChatCompletionChunk``, then the
``grpc-status: 0`` trailers), the same 60 one-token deltas (the first with the assistant role)
and a last chunk with the finish reason and usage, the same ids, model and created time. The
protobuf's ``system_fingerprint`` is padded so that every gRPC DATA frame is the size of the
SSE DATA frame it stands for. 200 calls a connection, one stream at a time, each DATA frame its
own TCP segment, HPACK literals without indexing on both (``make_grpc_capture.hpack``).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from make_grpc_capture import (
    _DATA,
    _END_HEADERS,
    _END_STREAM,
    _HEADERS,
    _PREFACE,
    _SETTINGS,
    _WINDOW_UPDATE,
    _varint,
    frame,
    grpc_frame,
    hpack,
)
from make_ws_capture import _ACK, _FIN, _MAGIC, _PSH, _SYN, Writer, ws_frame

TURNS_PER_SESSION = 20
DELTAS = 60
CALLS_PER_CONNECTION = 200
Send = Callable[[bool, bytes], None]


def _dumps(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _tokens(turn: int) -> list[str]:
    return [f"tok{turn % 97}_{k} " for k in range(DELTAS)]


def _connection(w: Writer, port: int, body: Callable[[Send], None]) -> None:
    """A TCP connection on loopback: handshake, ``body(send)``, FINs."""
    c, s = 1000, 5000

    def send(client: bool, data: bytes) -> None:
        nonlocal c, s
        if client:
            w.packet(port, 8080, c, s, _ACK | _PSH, data)
            c += len(data)
        else:
            w.packet(8080, port, s, c, _ACK | _PSH, data)
            s += len(data)

    w.packet(port, 8080, c, 0, _SYN, b"")
    w.packet(8080, port, s, c + 1, _SYN | _ACK, b"")
    c, s = c + 1, s + 1
    w.packet(port, 8080, c, s, _ACK, b"")
    body(send)
    w.packet(port, 8080, c, s, _ACK | _FIN, b"")
    w.packet(8080, port, s, c + 1, _ACK | _FIN, b"")


# -- the Responses / Realtime events of one turn -------------------------------------------


def turn_events(rid: str, turn: int) -> Iterator[dict[str, object]]:
    """The 67 server events of one response, without the per-API fields."""
    item_id = f"msg_{rid[5:]}"
    tokens = _tokens(turn)
    text = "".join(tokens)
    item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    done_item = {**item, "status": "completed", "content": [{**part, "text": text}]}
    yield {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
    yield {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}}
    yield {"type": "response.content_part.added", **where, "part": part}
    for token in tokens:
        yield {"type": "response.output_text.delta", **where, "delta": token}
    yield {"type": "response.output_text.done", **where, "text": text}
    yield {"type": "response.content_part.done", **where, "part": {**part, "text": text}}
    yield {"type": "response.output_item.done", "output_index": 0, "item": done_item}
    usage = {"input_tokens": 400, "output_tokens": DELTAS, "total_tokens": 400 + DELTAS}
    yield {
        "type": "response.completed",
        "response": {"id": rid, "status": "completed", "output": [done_item], "usage": usage},
    }


def _sse_response(rid: str, model: str, event: dict[str, object], seq: int) -> dict[str, object]:
    doc = {**event, "sequence_number": seq}
    if str(event["type"]).endswith(".delta"):
        doc["logprobs"] = []
    if "response" in doc:
        doc["response"] = {"object": "response", "model": model, "output": [], **doc["response"]}  # type: ignore[dict-item]
    return doc


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _ws_sized(doc: dict[str, object], size: int, *, masked: bool) -> bytes:
    """A text frame of ``doc`` with its ``event_id`` padded so that the frame is ``size``
    bytes."""
    pad = 0
    for _ in range(4):  # the frame head's length grows at 126 bytes of payload
        payload = _dumps({"event_id": "event_" + "x" * pad, **doc})
        got = len(ws_frame(payload, masked=masked))
        if got == size:
            return ws_frame(payload, masked=masked)
        pad += size - got
        if pad < 0:
            raise ValueError(f"a WebSocket frame of {size} bytes cannot hold {doc['type']}")
    raise ValueError(f"no padding makes {doc['type']} {size} bytes")


def sse_h1_segments(port: int, turn: int, model: str) -> list[bytes]:
    """The server's TCP segments of one SSE turn: the response head with the first event,
    one chunk per event, the zero chunk with the last."""
    rid = f"resp_{port}_{turn:06d}"
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    events = list(turn_events(rid, turn))
    segments = []
    for seq, event in enumerate(events):
        doc = _sse_response(rid, model, event, seq)
        data = f"event: {event['type']}\ndata: ".encode() + _dumps(doc) + b"\n\n"
        segments.append((head if seq == 0 else b"") + _chunk(data))
    segments[-1] += b"0\r\n\r\n"
    return segments


def sse_h1_session(port: int, first_turn: int) -> Callable[[Send], None]:
    model = "gpt-realtime"

    def body(send: Send) -> None:
        for turn in range(first_turn, first_turn + TURNS_PER_SESSION):
            send(True, h1_request(turn, model))
            for segment in sse_h1_segments(port, turn, model):
                send(False, segment)

    return body


def h1_request(turn: int, model: str) -> bytes:
    doc = {
        "model": model,
        "instructions": "Answer in one short paragraph.",
        "input": [{"role": "user", "content": f"Question number {turn}: what is next?"}],
        "stream": True,
    }
    data = _dumps(doc)
    head = (
        "POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1:8080\r\naccept: text/event-stream\r\n"
        "content-type: application/json\r\nauthorization: Bearer sk-example-not-a-real-key\r\n"
        f"user-agent: bench\r\ncontent-length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


def ws_session(port: int, first_turn: int) -> Callable[[Send], None]:
    """The same turns as :func:`sse_h1_session` as one Realtime session."""
    model = "gpt-realtime"

    def body(send: Send) -> None:
        send(
            True,
            (
                f"GET /v1/realtime?model={model} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Authorization: Bearer sk-example-not-a-real-key\r\n\r\n"
            ).encode(),
        )
        send(
            False,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        )
        created = {"type": "session.created", "session": {"model": model, "type": "realtime"}}
        send(False, ws_frame(_dumps({"event_id": "event_0", **created}), masked=False))
        for t in range(TURNS_PER_SESSION):
            turn = first_turn + t
            request = h1_request(turn, model)
            create: dict[str, object] = {
                "type": "response.create",
                "response": {
                    "instructions": "Answer in one short paragraph.",
                    "input": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [
                                {
                                    "type": "input_text",
                                    "text": f"Question number {turn}: what is next?",
                                }
                            ],
                        }
                    ],
                },
            }
            send(True, _ws_sized(create, len(request), masked=True))
            rid = f"resp_{port}_{turn:06d}"
            sizes = [len(segment) for segment in sse_h1_segments(port, turn, model)]
            for event, size in zip(turn_events(rid, turn), sizes, strict=True):
                doc = {**event, "response_id": rid} if "response" not in event else dict(event)
                if doc["type"] == "response.completed":
                    doc["type"] = "response.done"
                send(False, _ws_sized(doc, size, masked=False))
        send(True, ws_frame(b"\x03\xe8", masked=True, opcode=8))
        send(False, ws_frame(b"\x03\xe8", masked=False, opcode=8))

    return body


# -- Chat Completions chunks over h2 SSE and xAI chunks over gRPC ---------------------------


def _pb_bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _pb_int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def chat_chunks(call: int) -> Iterator[tuple[str | None, bool, bool]]:
    """(token, first, last) for the 61 chunks of one call."""
    for k, token in enumerate(_tokens(call)):
        yield token, k == 0, False
    yield None, False, True


def sse_chunk(cid: str, model: str, token: str | None, first: bool, last: bool) -> bytes:
    delta: dict[str, object] = {} if token is None else {"content": token}
    if first:
        delta = {"role": "assistant", **delta}
    doc: dict[str, object] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1796000000,
        "model": model,
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if last else None}],
    }
    if last:
        doc["usage"] = {"prompt_tokens": 400, "completion_tokens": DELTAS, "total_tokens": 460}
    return b"data: " + _dumps(doc) + b"\n\n"


def grpc_chunk(
    cid: str, model: str, token: str | None, first: bool, last: bool, size: int
) -> bytes:
    """A length-prefixed ``GetChatCompletionChunk`` of ``size`` bytes in all."""
    delta = b"" if token is None else _pb_bytes(1, token.encode())
    if first:
        delta += _pb_int(2, 2)  # ROLE_ASSISTANT
    output = _pb_bytes(1, delta) + (_pb_int(3, 3) if last else b"")  # REASON_STOP; index 0
    head = _pb_bytes(1, cid.encode()) + _pb_bytes(2, output)
    head += _pb_bytes(3, _pb_int(1, 1796000000)) + _pb_bytes(4, model.encode())
    tail = b""
    if last:
        tail = _pb_bytes(6, _pb_int(1, DELTAS) + _pb_int(2, 400) + _pb_int(3, 460))
    pad = 0
    for _ in range(4):
        message = head + _pb_bytes(5, b"fp_bench" + b"x" * pad) + tail
        got = len(grpc_frame(message))
        if got == size:
            return grpc_frame(message)
        pad += size - got
        if pad < 0:
            raise ValueError(f"a gRPC message of {size} bytes cannot hold chunk {cid}")
    raise ValueError(f"no padding makes chunk {cid} {size} bytes")


def h2_session(grpc: bool, first_call: int) -> Callable[[Send], None]:
    model = "grok-4"

    def body(send: Send) -> None:
        send(True, _PREFACE + frame(_SETTINGS, 0, 0, b""))
        send(False, frame(_SETTINGS, 0, 0, b"") + frame(_SETTINGS, 1, 0, b""))
        send(True, frame(_SETTINGS, 1, 0, b""))
        for n in range(CALLS_PER_CONNECTION):
            client, server = h2_call(grpc, 1 + 2 * n, first_call + n, model)
            send(True, client[0])
            for data in server:
                send(False, data)
            send(True, client[1])

    return body


def h2_call(grpc: bool, stream: int, call: int, model: str) -> tuple[list[bytes], list[bytes]]:
    """(client segments, server segments) of one call over h2c."""
    cid = f"chatcmpl-{call:08d}"
    question = f"Question number {call}: what is next?"
    common = [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1:8080")]
    sse = [sse_chunk(cid, model, *c) for c in chat_chunks(call)]
    if grpc:
        req_headers = [
            *common,
            (":path", "/xai_api.Chat/GetCompletionChunk"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("user-agent", "grpc-python/1.76.0"),
        ]
        user = _pb_bytes(1, _pb_bytes(1, question.encode())) + _pb_int(2, 1)  # ROLE_USER
        body = grpc_frame(_pb_bytes(1, user) + _pb_bytes(2, model.encode()))
        datas = [
            grpc_chunk(cid, model, *c, len(s)) for c, s in zip(chat_chunks(call), sse, strict=True)
        ]
        resp_headers = [(":status", "200"), ("content-type", "application/grpc")]
        end = frame(_HEADERS, _END_STREAM | _END_HEADERS, stream, hpack([("grpc-status", "0")]))
    else:
        req_headers = [
            *common,
            (":path", "/v1/chat/completions"),
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
            ("user-agent", "OpenAI/Python 2.8.0"),
        ]
        doc = {"model": model, "messages": [{"role": "user", "content": question}], "stream": True}
        body = _dumps(doc)
        datas = sse
        resp_headers = [(":status", "200"), ("content-type", "text/event-stream")]
        end = frame(_DATA, _END_STREAM, stream, b"data: [DONE]\n\n")
    client = [
        frame(_HEADERS, _END_HEADERS, stream, hpack(req_headers))
        + frame(_DATA, _END_STREAM, stream, body)
    ]
    server = [frame(_HEADERS, _END_HEADERS, stream, hpack(resp_headers))]
    server += [frame(_DATA, 0, stream, d) for d in datas]
    server.append(end)
    client.append(frame(_WINDOW_UPDATE, 0, 0, struct.pack("!I", sum(len(d) for d in datas))))
    return client, server


# -- writing ------------------------------------------------------------------------------

KINDS: dict[str, tuple[str, int]] = {
    # name: (kind, calls per connection)
    "sse_h1": ("sse_h1", TURNS_PER_SESSION),
    "ws": ("ws", TURNS_PER_SESSION),
    "sse_h2": ("sse_h2", CALLS_PER_CONNECTION),
    "grpc": ("grpc", CALLS_PER_CONNECTION),
}


def write(out: Path, kind: str, connections: int) -> dict[str, int]:
    per = KINDS[kind][1]
    with out.open("wb") as f:
        f.write(_MAGIC)
        w = Writer(f)
        for n in range(connections):
            port = 20000 + n
            if kind == "sse_h1":
                body = sse_h1_session(port, n * per)
            elif kind == "ws":
                body = ws_session(port, n * per)
            else:
                body = h2_session(kind == "grpc", n * per)
            _connection(w, port, body)
    events = 3 + DELTAS + 4 if kind in ("sse_h1", "ws") else DELTAS + 1
    return {
        "connections": connections,
        "calls": connections * per,
        "events": connections * per * events,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=60.0, help="each capture's size in MB (60)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for pair in (("sse_h1", "ws"), ("sse_h2", "grpc")):
        # the HTTP capture sets the connection count; its twin gets the same
        probe = args.out / f"pair_{pair[0]}_probe.pcap"
        write(probe, pair[0], 1)
        size_one = probe.stat().st_size
        probe.unlink()
        connections = max(1, round(args.mb * 1e6 / size_one))
        for kind in pair:
            path = args.out / f"pair_{kind}_{int(args.mb)}mb.pcap"
            truth = write(path, kind, connections)
            truth["bytes"] = path.stat().st_size
            path.with_suffix(".truth.json").write_text(json.dumps(truth) + "\n")
            print(f"{path}: {truth['bytes']:,} bytes, {truth}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
