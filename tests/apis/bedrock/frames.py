"""Bedrock test exchanges: AWS event stream frames written by hand (the layout of
``framing/eventstream.py``'s docstring), and exchanges that carry them."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

from agentshark.model import Body, Exchange, Request, Response

HOST = "https://bedrock-runtime.us-east-1.amazonaws.com"


def _string_header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    block = b"".join(_string_header(k, v) for k, v in headers.items())
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + block + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(name: str, data: Any) -> bytes:
    """A ConverseStream event (with the ``p`` padding Bedrock adds)."""
    payload = json.dumps({**data, "p": "abcdefgh"}).encode()
    return frame(
        {":event-type": name, ":content-type": "application/json", ":message-type": "event"},
        payload,
    )


def chunk(data: Any) -> bytes:
    """An InvokeModelWithResponseStream ``chunk`` event with ``data`` as base64 JSON."""
    raw = base64.b64encode(json.dumps(data).encode()).decode()
    return frame(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        json.dumps({"bytes": raw}).encode(),
    )


def exception(name: str, message: str, **extra: Any) -> bytes:
    return frame(
        {
            ":exception-type": name,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message, **extra}).encode(),
    )


def converse_events(lines: list[dict[str, Any]]) -> bytes:
    """vercel/ai's ``*.chunks.txt`` lines (``{"<event>": {...}}``) as event stream frames."""
    return b"".join(event(*next(iter(line.items()))) for line in lines)


def exchange(
    path: str,
    request: Any,
    body: bytes,
    *,
    status: int = 200,
    content_type: str = "application/json",
    headers: list[tuple[str, str]] | None = None,
    request_headers: list[tuple[str, str]] | None = None,
    name: str = "x1",
    complete: bool = True,
) -> Exchange:
    req = json.dumps(request).encode() if request is not None else b""
    return Exchange(
        id=name,
        source=0,
        connection=None,
        transport="http/1.1",
        request=Request(
            method="POST",
            target=path,
            url=HOST + path,
            version="HTTP/1.1",
            headers=[("content-type", "application/json"), *(request_headers or [])],
            body=Body(pieces=[(1.0, req)]),
            started=1.0,
            ended=1.0,
            complete=True,
        ),
        response=Response(
            status=status,
            reason="OK" if status < 400 else "Bad Request",
            version="HTTP/1.1",
            headers=[
                ("content-type", content_type),
                ("x-amzn-requestid", "req-1"),
                *(headers or []),
            ],
            body=Body(pieces=[(2.0, body)]),
            started=2.0,
            ended=3.0 if complete else None,
            complete=complete,
        ),
    )
