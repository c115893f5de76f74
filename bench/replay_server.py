"""A hypercorn server that answers each request with the response recorded for it.

Runs in the generator venv (``bench/.venv-gen``), started by ``genlib.start_replay_server``::

    bench/.venv-gen/bin/python bench/replay_server.py --pool POOL.json --port N [--sse-delay-ms 1]
        [--certfile CERT --keyfile KEY]     # TLS (ALPN h2, http/1.1): HTTP/1.1 or HTTP/2
        [--quic]                            # and HTTP/3 on UDP port N (needs aioquic)

``POOL.json`` is a list of ``genlib.PoolEntry`` (or an object with them in ``entries``). A
request is matched on (method, request target as sent: the raw path, percent-encoding kept, and
the query, body) exactly, so the wire carries nothing but what the recorded client sent. JSON
bodies go out in one write with a Content-Length; SSE bodies go out one event per write (an
HTTP/1.1 chunk, or an HTTP/2 or HTTP/3 DATA frame; over TLS, its own record; over QUIC, its
own packet) with ``--sse-delay-ms``
between events, as a real token stream does, so that each event is its own TCP segment; an
entry with ``chunk_ends`` (Gemini JSON-array streams, AWS event streams, ``bench/streams.py``)
goes out one piece per write the same way. An unmatched request gets a 599 JSON
error (the client counts it as a mismatch). The app is plain ASGI: no framework between
hypercorn and the bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import genlib
from genlib import Receive, Scope, Send


class Reply:
    __slots__ = ("chunks", "headers", "status", "stream")

    def __init__(self, entry: genlib.PoolEntry) -> None:
        body = genlib.response_bytes(entry)
        self.status = entry["status"]
        self.stream = entry["sse"]
        self.headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in entry["resp_headers"]
        ]
        if "chunk_ends" in entry:  # the other families' streams, cut where a real server writes
            self.stream = True
            starts = [0, *entry["chunk_ends"][:-1]]
            self.chunks = [body[a:b] for a, b in zip(starts, entry["chunk_ends"], strict=True)]
        elif entry["sse"]:
            self.chunks = genlib.split_sse_events(body)
        else:
            self.chunks = [body]
            self.headers.append((b"content-length", str(len(body)).encode()))


def load_table(pool_path: Path) -> dict[tuple[str, str, bytes], Reply]:
    data = json.loads(pool_path.read_text())
    entries: list[genlib.PoolEntry] = data["entries"] if isinstance(data, dict) else data
    table: dict[tuple[str, str, bytes], Reply] = {}
    for e in entries:
        query = e.get("query", "")
        target = f"{e['path']}?{query}" if query else e["path"]
        table.setdefault((e["method"], target, e["req_body"].encode()), Reply(e))
    return table


def make_app(
    table: dict[tuple[str, str, bytes], Reply], sse_delay: float
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = await genlib.asgi_request_body(scope, receive, send)
        if body is None:
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("latin-1")
        query: bytes = scope.get("query_string", b"")
        target = (raw_path + b"?" + query if query else raw_path).decode("latin-1")
        reply = table.get((scope["method"], target, body))
        if reply is None:
            body = b'{"error":{"message":"no recorded response for this request"}}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 599,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send(
            {"type": "http.response.start", "status": reply.status, "headers": reply.headers}
        )
        if not reply.stream:
            await send({"type": "http.response.body", "body": reply.chunks[0]})
            return
        for i, chunk in enumerate(reply.chunks):
            if i and sse_delay > 0:
                await asyncio.sleep(sse_delay)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


async def serve(
    pool_path: Path,
    port: int,
    sse_delay: float,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    quic: bool = False,
) -> None:
    config_mod = importlib.import_module("hypercorn.config")
    hyper_asyncio = importlib.import_module("hypercorn.asyncio")
    config = config_mod.Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.keep_alive_timeout = 120
    config.keep_alive_max_requests = 1_000_000
    config.accesslog = None
    config.graceful_timeout = 2
    if certfile and keyfile:  # hypercorn's own context: ALPN h2 and http/1.1, TLS >= 1.2
        config.certfile = str(certfile)
        config.keyfile = str(keyfile)
    if quic:  # hypercorn's HTTP/3 (aioquic) on the UDP port of the same number
        config.quic_bind = [f"127.0.0.1:{port}"]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    app = make_app(load_table(pool_path), sse_delay)
    await hyper_asyncio.serve(app, config, shutdown_trigger=stop.wait)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool", type=Path, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sse-delay-ms", type=float, default=1.0)
    ap.add_argument("--certfile", type=Path, help="serve TLS with this certificate")
    ap.add_argument("--keyfile", type=Path)
    ap.add_argument("--quic", action="store_true", help="HTTP/3 too, on UDP (with --certfile)")
    args = ap.parse_args()
    asyncio.run(
        serve(
            args.pool, args.port, args.sse_delay_ms / 1000, args.certfile, args.keyfile, args.quic
        )
    )


if __name__ == "__main__":
    main()
