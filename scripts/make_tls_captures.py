"""Make the small TLS and HTTP/2 test captures in ``tests/data/captures/<name>/``.

    python3 scripts/make_tls_captures.py                  # every capture
    python3 scripts/make_tls_captures.py --only tls13_hrr,h2c_upgrade
    python3 scripts/make_tls_captures.py --list

Real software on loopback, as ``bench/make_capture.py`` does it (and with its helpers,
``bench/genlib.py``): a hypercorn server running a small OpenAI-shaped ASGI app (``--serve``, in
the generator venv ``bench/.venv-gen``), with the TLS settings each case needs; a real client
(curl, ``openssl s_client``, httpx, Python's ``http.client`` over ``ssl``, or the ``h2`` library
driven by hand); ``tcpdump -i lo`` writing the capture, which must drop nothing. Each folder
gets:

* ``capture.pcap``: the loopback traffic of that case's port only;
* ``keys.log``: the NSS key log written by the client (curl and Python through
  ``SSLKEYLOGFILE`` / ``SSLContext.keylog_filename``, s_client through ``-keylogfile``);
* ``truth.json``: what happened, from the client's own records only (curl's ``-w %{json}`` and
  ``-v`` trace, s_client's ``-msg`` trace, Python's ``SSLSocket`` and httpx/h2 results), never
  read back from the pcap;
* ``run.json``: port, tcpdump counters, exit codes, key log labels, sizes;
* ``client.log`` where the client is a command-line tool: its own verbose trace.

The certificates (one RSA, one ECDSA P-256, self-signed for IP 127.0.0.1) are made by
``openssl req`` in a temporary folder at run time and thrown away: no private key is kept. The
script installs what it lacks (openssl and curl with apt-get, tcpdump through genlib, the
generator venv through pip; h2 comes with hypercorn) and re-runs itself in the generator venv.
``tests/data/captures/README.md`` is rewritten from the cases below and the outputs.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import http.client
import importlib
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators
from genlib import Receive, Scope, Send  # noqa: E402

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
SMALL_LIMIT = 200_000
LARGE_LIMIT = 2_000_000

MODEL = "workshop-mini"
REPLY_TEXT = "Packets on loopback are still packets, and keys in a log still open them."
DOWNLOAD_SEED = b"agentshark large download"


# =========================================================================== the server
#
# ``--serve SPEC.json`` runs hypercorn with this ASGI app. SPEC: port, certfile/keyfile (absent
# for cleartext), max_tls ("1.2"), ciphers (TLS 1.2 cipher string), groups (one group name for
# the key exchange), alpn, no_ticket, sse_delay_ms.


def download_bytes(n: int) -> bytes:
    """The deterministic, incompressible body of ``GET /download?bytes=n``."""
    return hashlib.shake_256(DOWNLOAD_SEED).digest(n)


def models_body() -> bytes:
    doc = {
        "object": "list",
        "data": [
            {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "agentshark"},
            {"id": "workshop-large", "object": "model", "created": 1700000000, "owned_by": "x"},
        ],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def completion_body(request: dict[str, Any]) -> bytes:
    messages = request.get("messages") or [{}]
    prompt = str(messages[-1].get("content", ""))
    doc = {
        "id": "chatcmpl-agentshark-0001",
        "object": "chat.completion",
        "created": 1700000000,
        "model": request.get("model", MODEL),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY_TEXT},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 14},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def stream_events(request: dict[str, Any]) -> list[bytes]:
    """OpenAI chat-completion chunks, one word of REPLY_TEXT each (cycled), ``max_tokens`` of
    them, then a finish chunk and ``data: [DONE]``."""
    words = REPLY_TEXT.split(" ")
    count = int(request.get("max_tokens") or len(words))
    events: list[bytes] = []
    for i in range(count):
        word = words[i % len(words)]
        piece = word if i == 0 else " " + word
        chunk = {
            "id": "chatcmpl-agentshark-0002",
            "object": "chat.completion.chunk",
            "model": request.get("model", MODEL),
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }
        events.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    last = {
        "id": "chatcmpl-agentshark-0002",
        "object": "chat.completion.chunk",
        "model": request.get("model", MODEL),
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    events.append(b"data: " + json.dumps(last, separators=(",", ":")).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def make_app(sse_delay: float) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def reply(send: Send, status: int, ctype: bytes, body: bytes) -> None:
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = await genlib.asgi_request_body(scope, receive, send)
        if body is None:
            return
        method, path = scope["method"], scope["path"]
        query = parse_qs(scope.get("query_string", b"").decode())
        if method == "GET" and path == "/v1/models":
            await reply(send, 200, b"application/json", models_body())
            return
        if method == "GET" and path == "/download":
            n = int(query.get("bytes", ["1048576"])[0])
            data = download_bytes(n)
            headers = [
                (b"content-type", b"application/octet-stream"),
                (b"content-length", str(n).encode()),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            step = 65536
            for off in range(0, n, step):
                more = off + step < n
                await send(
                    {
                        "type": "http.response.body",
                        "body": data[off : off + step],
                        "more_body": more,
                    }
                )
            return
        if method == "POST" and path == "/v1/chat/completions":
            try:
                request = json.loads(body)
            except ValueError:
                await reply(send, 400, b"application/json", b'{"error":{"message":"bad json"}}')
                return
            if not request.get("stream"):
                await reply(send, 200, b"application/json", completion_body(request))
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-cache"),
                    ],
                }
            )
            gone = asyncio.ensure_future(receive())  # http.disconnect when the client leaves
            try:
                for i, event in enumerate(stream_events(request)):
                    if i and sse_delay > 0:
                        await asyncio.sleep(sse_delay)
                    if gone.done():
                        return
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                gone.cancel()
            return
        await reply(send, 404, b"application/json", b'{"error":{"message":"not found"}}')

    return app


async def serve(spec: dict[str, Any]) -> None:
    import signal

    config_mod = importlib.import_module("hypercorn.config")
    hyper_asyncio = importlib.import_module("hypercorn.asyncio")
    config = config_mod.Config()
    config.bind = [f"127.0.0.1:{spec['port']}"]
    config.keep_alive_timeout = 30
    config.accesslog = None
    config.graceful_timeout = 2
    if spec.get("certfile"):
        config.certfile = spec["certfile"]
        config.keyfile = spec["keyfile"]
        config.alpn_protocols = spec.get("alpn", ["h2", "http/1.1"])
        if spec.get("ciphers"):
            config.ciphers = spec["ciphers"]
        base = config.create_ssl_context

        def create_ssl_context() -> ssl.SSLContext:
            ctx: ssl.SSLContext = base()
            if spec.get("max_tls") == "1.2":
                ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            if spec.get("groups"):
                ctx.set_ecdh_curve(spec["groups"])  # SSL_CTX_set1_groups with OpenSSL 3
            if spec.get("no_ticket"):
                ctx.options |= ssl.OP_NO_TICKET  # TLS 1.2 resumption by session ID
            return ctx

        config.create_ssl_context = create_ssl_context
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    app = make_app(float(spec.get("sse_delay_ms", 5)) / 1000)
    await hyper_asyncio.serve(app, config, shutdown_trigger=stop.wait)


# =========================================================================== tools and context


def first_line(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = (proc.stdout or proc.stderr).splitlines()
    return lines[0].strip() if lines else "unknown"


@dataclass
class Ctx:
    """What a client function gets: where to connect and where to write."""

    name: str
    port: int
    folder: Path
    keylog: Path
    certs: dict[str, Path]
    cafile: Path
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def client_context(ctx: Ctx, alpn: list[str] | None = None) -> ssl.SSLContext:
    """A verifying client context trusting the case's certificate, writing the key log (what
    ``SSLKEYLOGFILE`` makes httpx and urllib do)."""
    sslctx = ssl.create_default_context(cafile=str(ctx.cafile))
    sslctx.keylog_filename = str(ctx.keylog)
    if alpn:
        sslctx.set_alpn_protocols(alpn)
    return sslctx


def chat_request(content: str, *, stream: bool = False, max_tokens: int | None = None) -> bytes:
    doc: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": content}]}
    if stream:
        doc["stream"] = True
    if max_tokens is not None:
        doc["max_tokens"] = max_tokens
    return json.dumps(doc, separators=(",", ":")).encode()


def sse_facts(body: bytes) -> dict[str, Any]:
    """What a client reads from a chat SSE body: data events (``[DONE]`` included, by the
    event-stream rules), the marker, and the assembled text."""
    count = genlib.count_sse(body)
    text: list[str] = []
    for piece in genlib.split_sse_events(body):
        for line in piece.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:]).get("choices", [])
                text.extend(c.get("delta", {}).get("content") or "" for c in choices)
    return {
        "sse_data_events": count["data_events"],
        "done_marker": count["done_markers"] == 1,
        "assembled_text": "".join(text),
    }


def body_facts(raw: bytes, ctype: str | None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "response_body_bytes": len(raw),
        "response_sha256": hashlib.sha256(raw).hexdigest(),
    }
    if ctype and ctype.startswith("text/event-stream"):
        facts.update(sse_facts(raw))
    return facts


# =========================================================================== curl


@dataclass
class CurlReq:
    label: str
    method: str
    path: str
    body: bytes | None = None
    headers: tuple[str, ...] = ()


def run_curl(
    ctx: Ctx, reqs: list[CurlReq], options: list[str], *, scheme: str = "https"
) -> dict[str, Any]:
    """One curl invocation for all of ``reqs`` (``--next`` between them, the same TLS options
    on each so that curl may reuse its connection and TLS session). Returns the requests from
    curl's ``-w %{json}`` plus what its ``-v`` trace says about TLS and connections."""
    work = ctx.folder / ".curl"
    work.mkdir(exist_ok=True)
    argv = ["curl", "-sS", "-v"]
    for i, req in enumerate(reqs):
        if i:
            argv.append("--next")
        argv += [*options, "-o", str(work / f"{i}.body"), "-w", "%{json}\\n", "-X", req.method]
        if scheme == "https":
            argv += ["--cacert", str(ctx.cafile)]
        for h in req.headers:
            argv += ["-H", h]
        if req.body is not None:
            (work / f"{i}.req").write_bytes(req.body)
            argv += [
                "-H",
                "content-type: application/json",
                "--data-binary",
                f"@{work / f'{i}.req'}",
            ]
        argv.append(f"{scheme}://127.0.0.1:{ctx.port}{req.path}")
    env = {**os.environ, "SSLKEYLOGFILE": str(ctx.keylog)}
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=60)
    t1 = time.time()
    (ctx.folder / "client.log").write_text(proc.stderr)
    ctx.notes["client_rc"] = proc.returncode
    if proc.returncode != 0:
        raise genlib.ToolError(f"curl failed ({proc.returncode}): {proc.stderr[-2000:]}")
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(results) != len(reqs):
        raise genlib.ToolError(f"curl wrote {len(results)} results for {len(reqs)} requests")
    records: list[dict[str, Any]] = []
    for i, (req, res) in enumerate(zip(reqs, results, strict=True)):
        raw = (work / f"{i}.body").read_bytes()
        rec: dict[str, Any] = {
            "label": req.label,
            "method": req.method,
            "path": req.path,
            "status": res["http_code"],
            "http_version": "HTTP/" + res["http_version"],
            "content_type": res.get("content_type"),
            "client_port": res["local_port"],
            "new_connection": res["num_connects"] > 0,
            "request_body_bytes": len(req.body or b""),
            **body_facts(raw, res.get("content_type")),
            "curl_size_download": res["size_download"],
            "curl_size_upload": res["size_upload"],
        }
        records.append(rec)
    shutil.rmtree(work)
    trace = proc.stderr
    # HTTP/2 stream of each request: "Using Stream ID: N" for each new stream; the request
    # that was upgraded from HTTP/1.1 (101) is stream 1 and gets no such line.
    stream_ids = [int(n) for n in re.findall(r"Using Stream ID: (\d+)", trace)]
    h2_records = [r for r in records if r["http_version"] == "HTTP/2"]
    if len(stream_ids) == len(h2_records) - 1 and "Received 101" in trace:
        stream_ids.insert(0, 1)
    if len(stream_ids) == len(h2_records):
        for rec, sid in zip(h2_records, stream_ids, strict=True):
            rec["h2_stream_id"] = sid
    tls = re.findall(r"SSL connection using (\S+) / (\S+)", trace)
    handshake: collections.Counter[str] = collections.Counter(
        f"{m.group(1)} {m.group(2)}"
        for m in re.finditer(r"\((OUT|IN)\), TLS handshake, ([A-Za-z ]+?) \(\d+\):", trace)
    )
    return {
        "requests": records,
        "client_started": round(t0, 6),
        "client_ended": round(t1, 6),
        "curl_trace": {
            "tls_connections": [{"version": v, "cipher": c} for v, c in tls],
            "alpn_accepted": re.findall(r"ALPN: server accepted (\S+)", trace),
            "handshake_messages": dict(sorted(handshake.items())),
            "connections_reused": len(re.findall(r"Re-using existing connection", trace)),
            "session_id_reused": len(re.findall(r"SSL re-using session ID", trace)),
            "switching_protocols": len(re.findall(r"< HTTP/1\.1 101", trace)),
        },
    }


# =========================================================================== httpx


@dataclass
class PyReq:
    label: str
    method: str
    path: str
    body: bytes | None = None


def run_httpx(ctx: Ctx, reqs: list[PyReq], *, http2: bool) -> dict[str, Any]:
    """httpx (one client, one connection) sends ``reqs`` in order; records from the responses
    and the TLS object of the connection."""
    httpx = importlib.import_module("httpx")
    sslctx = client_context(ctx)
    records: list[dict[str, Any]] = []
    conns: dict[int, dict[str, Any]] = {}
    limits = httpx.Limits(max_connections=1)
    with httpx.Client(
        base_url=ctx.base, verify=sslctx, http1=True, http2=http2, limits=limits, timeout=30
    ) as client:
        for req in reqs:
            headers = {"content-type": "application/json"} if req.body else {}
            t0 = time.time()
            with client.stream(req.method, req.path, content=req.body, headers=headers) as r:
                raw = b"".join(r.iter_raw())
                stream = r.extensions["network_stream"]
                tls = stream.get_extra_info("ssl_object")
                port = stream.get_extra_info("client_addr")[1]
                rec: dict[str, Any] = {
                    "label": req.label,
                    "method": req.method,
                    "path": req.path,
                    "status": r.status_code,
                    "http_version": r.http_version,
                    "h2_stream_id": r.extensions.get("stream_id"),
                    "content_type": r.headers.get("content-type"),
                    "client_port": port,
                    "request_body_bytes": len(req.body or b""),
                    **body_facts(raw, r.headers.get("content-type")),
                    "started": round(t0, 6),
                    "ended": round(time.time(), 6),
                }
            records.append(rec)
            conns.setdefault(
                port,
                {
                    "client_port": port,
                    "tls_version": tls.version(),
                    "cipher": tls.cipher()[0],
                    "alpn": tls.selected_alpn_protocol(),
                    "session_reused": tls.session_reused,
                },
            )
    return {"requests": records, "connections": list(conns.values())}


# =========================================================================== http.client


class _SessionHTTPSConnection(http.client.HTTPSConnection):
    """``http.client`` over a TLS socket that may resume ``session``."""

    def __init__(
        self, host: str, port: int, sslctx: ssl.SSLContext, session: ssl.SSLSession | None
    ) -> None:
        super().__init__(host, port, context=sslctx, timeout=30)
        self.sslctx = sslctx
        self.tls_session = session
        self.tls: ssl.SSLSocket | None = None

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.tls = self.sslctx.wrap_socket(
            self.sock, server_hostname=self.host, session=self.tls_session
        )
        self.sock = self.tls


def run_resumption(ctx: Ctx) -> dict[str, Any]:
    """Two TLS 1.2 connections: the second resumes the first one's session (abbreviated
    handshake); each carries HTTP/1.1 requests and ends with close_notify."""
    sslctx = client_context(ctx, ["http/1.1"])  # http.client's own context offers http/1.1
    sslctx.maximum_version = ssl.TLSVersion.TLSv1_2
    plan = [
        [
            PyReq("models", "GET", "/v1/models"),
            PyReq("chat", "POST", "/v1/chat/completions", chat_request("first connection")),
        ],
        [
            PyReq("chat_resumed", "POST", "/v1/chat/completions", chat_request("resumed")),
            PyReq("models_resumed", "GET", "/v1/models"),
        ],
    ]
    session: ssl.SSLSession | None = None
    records: list[dict[str, Any]] = []
    conns: list[dict[str, Any]] = []
    for n, reqs in enumerate(plan, 1):
        conn = _SessionHTTPSConnection("127.0.0.1", ctx.port, sslctx, session)
        conn.connect()
        tls = conn.tls
        assert tls is not None
        port = tls.getsockname()[1]
        for req in reqs:
            t0 = time.time()
            headers = {"content-type": "application/json"} if req.body else {}
            conn.request(req.method, req.path, body=req.body, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            ctype = resp.getheader("content-type")
            records.append(
                {
                    "label": req.label,
                    "connection": n,
                    "method": req.method,
                    "path": req.path,
                    "status": resp.status,
                    "http_version": "HTTP/1.1" if resp.version == 11 else str(resp.version),
                    "content_type": ctype,
                    "client_port": port,
                    "request_body_bytes": len(req.body or b""),
                    **body_facts(raw, ctype),
                    "started": round(t0, 6),
                    "ended": round(time.time(), 6),
                }
            )
        sess = tls.session
        assert sess is not None
        conns.append(
            {
                "connection": n,
                "client_port": port,
                "tls_version": tls.version(),
                "cipher": (tls.cipher() or ("",))[0],
                "alpn": tls.selected_alpn_protocol(),
                "session_reused": tls.session_reused,
                "session_id": sess.id.hex(),
                "session_has_ticket": sess.has_ticket,
            }
        )
        session = sess
        tls.unwrap().close()  # close_notify, so that the session stays resumable
        conn.sock = None
        conn.close()
        time.sleep(0.2)
    return {"requests": records, "connections": conns}


# =========================================================================== openssl s_client


class _Pipe:
    """Collects a child's stdout in a thread; :meth:`wait_for` waits for a predicate on it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.buf = bytearray()
        self.cond = threading.Condition()
        self.eof = False
        self.proc = proc
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            with self.cond:
                self.buf += chunk
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def wait_for(self, pred: Callable[[bytes], Any], timeout: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = pred(bytes(self.buf))
                if got:
                    return got
                if self.eof or time.monotonic() > deadline:
                    raise genlib.ToolError(
                        f"s_client output ended or timed out: {self.buf[-500:]!r}"
                    )
                self.cond.wait(0.1)


def parse_h1_response(buf: bytes, start: int) -> tuple[int, dict[str, Any]] | None:
    """(end offset, facts) of the Content-Length delimited HTTP/1.1 response at ``start``, or
    None while it is incomplete."""
    head_end = buf.find(b"\r\n\r\n", start)
    if head_end < 0:
        return None
    lines = buf[start:head_end].decode("latin-1").split("\r\n")
    version, status = lines[0].split(" ")[:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    length = int(headers.get("content-length", "0"))
    end = head_end + 4 + length
    if len(buf) < end:
        return None
    body = buf[head_end + 4 : end]
    facts = {
        "status": int(status),
        "http_version": version,
        "content_type": headers.get("content-type"),
        **body_facts(body, headers.get("content-type")),
    }
    return end, facts


def msg_messages(msgs: str) -> list[tuple[str, str, bytes]]:
    """(``>>>`` sent or ``<<<`` received, name, bytes) of each handshake message in an s_client
    ``-msg`` trace (the hex lines under a message line are its bytes)."""
    out: list[tuple[str, str, bytes]] = []
    lines = msgs.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(<<<|>>>) TLS [\d.]+, Handshake \[length [0-9a-f]+\], (\w+)$", line)
        if not m:
            continue
        hexes: list[str] = []
        for nxt in lines[i + 1 :]:
            if not nxt.startswith("    "):
                break
            hexes += nxt.split()
        out.append((m.group(1), m.group(2), bytes.fromhex("".join(hexes))))
    return out


def alpn_from_encrypted_extensions(message: bytes | None) -> str | None:
    """The protocol in the ALPN extension (16) of a TLS 1.3 EncryptedExtensions message."""
    if not message or message[0] != 8:
        return None
    pos, end = 6, 6 + int.from_bytes(message[4:6], "big")
    while pos + 4 <= end:
        ext, size = (
            int.from_bytes(message[pos : pos + 2], "big"),
            int.from_bytes(message[pos + 2 : pos + 4], "big"),
        )
        if ext == 16:
            body = message[pos + 4 : pos + 4 + size]
            return body[3 : 3 + body[2]].decode()
        pos += 4 + size
    return None


def run_s_client_keyupdate(ctx: Ctx) -> dict[str, Any]:
    """``openssl s_client`` (TLS 1.3, ALPN http/1.1) sends HTTP/1.1 requests typed on its
    stdin; between them the interactive commands ``K`` (KeyUpdate, update_requested: the server
    answers with its own KeyUpdate) and ``k`` (KeyUpdate, update_not_requested)."""
    msgfile = ctx.folder / ".msg"
    argv = [
        "openssl",
        "s_client",
        "-connect",
        f"127.0.0.1:{ctx.port}",
        "-tls1_3",
        "-alpn",
        "http/1.1",
        "-CAfile",
        str(ctx.cafile),
        "-verify_return_error",
        "-brief",
        "-keylogfile",
        str(ctx.keylog),
        "-msg",
        "-msgfile",
        str(msgfile),
    ]
    steps: list[tuple[str, str, str, bytes | None]] = [
        ("request", "models", "/v1/models", None),
        ("command", "K", "", None),
        ("request", "chat_after_K", "/v1/chat/completions", chat_request("after K")),
        ("command", "k", "", None),
        ("request", "models_after_k", "/v1/models", None),
        ("request", "chat_again", "/v1/chat/completions", chat_request("still the new keys")),
    ]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stderr is not None
    out = _Pipe(proc)
    err_text: list[bytes] = []
    err_thread = threading.Thread(
        target=lambda: err_text.append(proc.stderr.read() if proc.stderr else b""), daemon=True
    )
    err_thread.start()
    records: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    offset = 0
    time.sleep(0.5)  # handshake done and the session tickets read
    try:
        for kind, label, path, body in steps:
            if kind == "command":
                proc.stdin.write(label.encode() + b"\n")
                proc.stdin.flush()
                commands.append({"command": label, "at": round(time.time(), 6)})
                time.sleep(0.3)
                continue
            method = "POST" if body else "GET"
            head = [
                f"{method} {path} HTTP/1.1",
                f"Host: 127.0.0.1:{ctx.port}",
                "User-Agent: openssl-s_client",
                "Accept: application/json",
            ]
            if body:
                head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
            wire = ("\r\n".join(head) + "\r\n\r\n").encode() + (body or b"")
            t0 = time.time()
            proc.stdin.write(wire)
            proc.stdin.flush()
            start = offset

            def response_at(buf: bytes, s: int = start) -> tuple[int, dict[str, Any]] | None:
                return parse_h1_response(buf, s)

            end, facts = out.wait_for(response_at)
            offset = end
            records.append(
                {
                    "label": label,
                    "method": method,
                    "path": path,
                    **facts,
                    "request_body_bytes": len(body or b""),
                    "started": round(t0, 6),
                    "ended": round(time.time(), 6),
                }
            )
            time.sleep(0.2)
        proc.stdin.close()  # EOF: s_client says DONE, sends close_notify and exits
        rc = proc.wait(15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err_thread.join(5)
    stderr = b"".join(err_text).decode(errors="replace")
    msgs = msgfile.read_text(errors="replace")
    msgfile.unlink()
    (ctx.folder / "client.log").write_text(stderr + "\n--- -msg ---\n" + msgs)
    ctx.notes["client_rc"] = rc
    if rc != 0:
        raise genlib.ToolError(f"s_client exited with {rc}: {stderr[-1000:]}")
    brief = {
        k.strip(): v.strip()
        for k, _, v in (ln.partition(":") for ln in stderr.splitlines() if ":" in ln)
    }
    messages = msg_messages(msgs)
    updates = [(d, body) for d, name, body in messages if name == "KeyUpdate"]
    sent = sum(d == ">>>" for d, _ in updates)
    received = sum(d == "<<<" for d, _ in updates)
    return {
        "requests": records,
        "connections": [
            {
                "tls_version": brief.get("Protocol version"),
                "cipher": brief.get("Ciphersuite"),
                "alpn": next(
                    (
                        alpn_from_encrypted_extensions(body)
                        for _, name, body in messages
                        if name == "EncryptedExtensions"
                    ),
                    None,
                ),
                "server_temp_key": brief.get("Server Temp Key"),
            }
        ],
        "key_updates": {
            "commands": commands,
            "client_sent": sent,
            "client_received": received,
            "s_client_said_KEYUPDATE": stderr.count("KEYUPDATE"),
            "in_order": [
                {
                    "direction": "client->server" if d == ">>>" else "server->client",
                    "request_update": "update_requested"
                    if body[-1:] == b"\x01"
                    else "update_not_requested",
                }
                for d, body in updates
            ],
            "handshake_messages": [f"{d} {name}" for d, name, _ in messages],
        },
    }


# =========================================================================== h2 by hand


class H2Client:
    """The ``h2`` library driven by hand over a TLS socket (ALPN h2)."""

    def __init__(self, ctx: Ctx) -> None:
        h2_connection = importlib.import_module("h2.connection")
        h2_config = importlib.import_module("h2.config")
        self.ev = importlib.import_module("h2.events")
        self.ctx = ctx
        sslctx = client_context(ctx, ["h2"])
        raw = socket.create_connection(("127.0.0.1", ctx.port))
        self.tls = sslctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.client_port: int = self.tls.getsockname()[1]
        self.conn = h2_connection.H2Connection(
            config=h2_config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.conn.initiate_connection()
        self.flush()
        self.streams: dict[int, dict[str, Any]] = {}
        self.events: collections.Counter[str] = collections.Counter()
        self.reset_by_peer: list[int] = []

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.tls.sendall(data)

    def request(self, label: str, method: str, path: str, body: bytes | None = None) -> int:
        sid: int = self.conn.get_next_available_stream_id()
        headers = [
            (":method", method),
            (":scheme", "https"),
            (":authority", f"127.0.0.1:{self.ctx.port}"),
            (":path", path),
            ("user-agent", "agentshark-test h2-by-hand"),
            ("accept", "application/json, text/event-stream"),
        ]
        if body:
            headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        self.conn.send_headers(sid, headers, end_stream=not body)
        if body:
            self.conn.send_data(sid, body, end_stream=True)
        self.flush()
        self.streams[sid] = {
            "label": label,
            "method": method,
            "path": path,
            "h2_stream_id": sid,
            "request_body_bytes": len(body or b""),
            "status": None,
            "headers": {},
            "data": bytearray(),
            "data_frames": 0,
            "ended": False,
            "started": round(time.time(), 6),
        }
        return sid

    def pump(self, until: Callable[[], bool], timeout: float = 15.0) -> None:
        """Read and handle frames until ``until()`` or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.tls.settimeout(left)
            try:
                data = self.tls.recv(65536)
            except TimeoutError:
                return
            if not data:
                return
            for event in self.conn.receive_data(data):
                self.handle(event)
            self.flush()

    def handle(self, event: Any) -> None:
        ev = self.ev
        self.events[type(event).__name__] += 1
        sid = getattr(event, "stream_id", None)
        st = self.streams.get(sid) if sid else None
        if isinstance(event, ev.ResponseReceived) and st is not None:
            st["headers"] = dict(event.headers)
            st["status"] = int(st["headers"][":status"])
        elif isinstance(event, ev.DataReceived):
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if st is not None:
                st["data"] += event.data
                st["data_frames"] += 1
        elif isinstance(event, ev.StreamEnded) and st is not None:
            st["ended"] = True
            st["ended_at"] = round(time.time(), 6)
        elif isinstance(event, ev.StreamReset):
            self.reset_by_peer.append(event.stream_id)

    def record(self, sid: int) -> dict[str, Any]:
        st = self.streams[sid]
        raw = bytes(st["data"])
        ctype = st["headers"].get("content-type")
        return {
            "label": st["label"],
            "method": st["method"],
            "path": st["path"],
            "h2_stream_id": sid,
            "status": st["status"],
            "http_version": "HTTP/2",
            "client_port": self.client_port,
            "content_type": ctype,
            "request_body_bytes": st["request_body_bytes"],
            **body_facts(raw, ctype),
            "data_frames_received": st["data_frames"],
            "stream_ended_by_server": st["ended"],
            "started": st["started"],
            "ended": st.get("ended_at"),
        }

    def close(self) -> None:
        self.conn.close_connection()
        self.flush()
        time.sleep(0.1)
        self.tls.close()


def run_h2_rst_stream(ctx: Ctx) -> dict[str, Any]:
    """Stream 1: a chat completion. Stream 3: a long streamed completion (400 tokens, one SSE
    event every 50 ms) that the client cancels with RST_STREAM(CANCEL) once it has read 5 data
    events. Stream 5: GET /v1/models afterwards, on the same connection."""
    h2_errors = importlib.import_module("h2.errors")
    c = H2Client(ctx)
    tls_info = {
        "client_port": c.client_port,
        "tls_version": c.tls.version(),
        "cipher": (c.tls.cipher() or ("",))[0],
        "alpn": c.tls.selected_alpn_protocol(),
    }
    s1 = c.request("chat", "POST", "/v1/chat/completions", chat_request("one answer please"))
    c.pump(lambda: bool(c.streams[s1]["ended"]))
    s3 = c.request(
        "chat_stream_cancelled",
        "POST",
        "/v1/chat/completions",
        chat_request("a very long story", stream=True, max_tokens=400),
    )
    c.pump(lambda: genlib.count_sse(bytes(c.streams[s3]["data"]))["data_events"] >= 5)
    got_before = bytes(c.streams[s3]["data"])
    c.conn.reset_stream(s3, error_code=h2_errors.ErrorCodes.CANCEL)
    c.flush()
    reset_at = time.time()
    c.pump(lambda: False, timeout=0.4)  # frames already in flight for stream 3 are dropped
    s5 = c.request("models_after_cancel", "GET", "/v1/models")
    c.pump(lambda: bool(c.streams[s5]["ended"]))
    c.close()
    rec3 = c.record(s3)
    rec3.update(body_facts(got_before, rec3["content_type"]))
    rec3["data_frames_received"] = c.streams[s3]["data_frames"]
    rec3["cancelled"] = {
        "rst_stream_error_code": "CANCEL (0x8)",
        "at": round(reset_at, 6),
        "sse_data_events_read_before_cancel": genlib.count_sse(got_before)["data_events"],
    }
    return {
        "requests": [c.record(s1), rec3, c.record(s5)],
        "connections": [tls_info],
        "h2": {
            "events_seen": dict(sorted(c.events.items())),
            "streams_reset_by_server": c.reset_by_peer,
            "rst_stream_sent": [{"stream_id": s3, "error_code": "CANCEL"}],
            "goaway_sent": True,
        },
    }


# =========================================================================== the cases


@dataclass
class Case:
    name: str
    port: int
    summary: str
    server: dict[str, Any]
    client: Callable[[Ctx], dict[str, Any]]
    cert: str = "rsa"
    tls: bool = True
    limit: int = SMALL_LIMIT
    client_software: str = ""


def _tls13_chacha20(ctx: Ctx) -> dict[str, Any]:
    opts = ["--tlsv1.3", "--tls13-ciphers", "TLS_CHACHA20_POLY1305_SHA256", "--http1.1"]
    return run_curl(
        ctx,
        [
            CurlReq("models", "GET", "/v1/models"),
            CurlReq("chat", "POST", "/v1/chat/completions", chat_request("hello over chacha")),
            CurlReq(
                "chat_stream_sse",
                "POST",
                "/v1/chat/completions",
                chat_request("stream it", stream=True),
            ),
        ],
        opts,
    )


def _tls12(ctx: Ctx) -> dict[str, Any]:
    return run_httpx(
        ctx,
        [
            PyReq("models", "GET", "/v1/models"),
            PyReq("chat", "POST", "/v1/chat/completions", chat_request("hello over TLS 1.2")),
            PyReq(
                "chat_stream_sse",
                "POST",
                "/v1/chat/completions",
                chat_request("stream it", stream=True),
            ),
        ],
        http2=False,
    )


def _hrr(ctx: Ctx) -> dict[str, Any]:
    # The first ClientHello carries an X25519 key share only; the server takes P-256 only.
    opts = ["--tlsv1.3", "--curves", "X25519:P-256", "--http1.1"]
    result = run_curl(
        ctx,
        [
            CurlReq("models", "GET", "/v1/models"),
            CurlReq("chat", "POST", "/v1/chat/completions", chat_request("after a retry")),
        ],
        opts,
    )
    seen = result["curl_trace"]["handshake_messages"]
    result["hello_retry_request"] = {
        "client_groups": "X25519:P-256 (OpenSSL sends a key share for the first only)",
        "server_groups": "P-256 (secp256r1) only",
        "client_hellos_sent": seen.get("OUT Client hello", 0),
        "server_hellos_received": seen.get("IN Server hello", 0),
        "happened": seen.get("OUT Client hello", 0) == 2,
    }
    return result


def _h2c_upgrade(ctx: Ctx) -> dict[str, Any]:
    return run_curl(
        ctx,
        [
            CurlReq("models_upgrade", "GET", "/v1/models"),
            CurlReq("chat_on_stream_3", "POST", "/v1/chat/completions", chat_request("now h2")),
            CurlReq(
                "chat_stream_sse_on_stream_5",
                "POST",
                "/v1/chat/completions",
                chat_request("stream it", stream=True),
            ),
        ],
        ["--http2"],
        scheme="http",
    )


def _large_download(ctx: Ctx) -> dict[str, Any]:
    return run_httpx(
        ctx,
        [
            PyReq("models", "GET", "/v1/models"),
            PyReq("download_1mib", "GET", "/download?bytes=1048576"),
            PyReq("chat", "POST", "/v1/chat/completions", chat_request("got the file")),
        ],
        http2=True,
    )


CASES: tuple[Case, ...] = (
    Case(
        "tls13_chacha20_h1",
        18701,
        "TLS 1.3 with TLS_CHACHA20_POLY1305_SHA256 (curl --tls13-ciphers), one HTTP/1.1 "
        "keep-alive connection: GET /v1/models, a chat completion, a chat SSE stream",
        {"alpn": ["http/1.1"]},
        _tls13_chacha20,
        client_software="curl",
    ),
    Case(
        "tls12_chacha20_h1",
        18702,
        "TLS 1.2 with ECDHE-ECDSA-CHACHA20-POLY1305 (server limited to it and to TLS 1.2, "
        "ECDSA P-256 certificate), httpx HTTP/1.1: models, chat, chat SSE stream",
        {"alpn": ["http/1.1"], "max_tls": "1.2", "ciphers": "ECDHE-ECDSA-CHACHA20-POLY1305"},
        _tls12,
        cert="ecdsa",
        client_software="httpx",
    ),
    Case(
        "tls12_aes256gcm_h1",
        18703,
        "TLS 1.2 with ECDHE-RSA-AES256-GCM-SHA384 (server limited to it and to TLS 1.2, RSA "
        "certificate), httpx HTTP/1.1: models, chat, chat SSE stream",
        {"alpn": ["http/1.1"], "max_tls": "1.2", "ciphers": "ECDHE-RSA-AES256-GCM-SHA384"},
        _tls12,
        client_software="httpx",
    ),
    Case(
        "tls13_keyupdate",
        18704,
        "TLS 1.3 (openssl s_client, HTTP/1.1 typed on its stdin): a request, 'K' (client "
        "KeyUpdate with update_requested, the server answers with its own), a request, 'k' "
        "(client KeyUpdate, not requested), two more requests; 3 KeyUpdates in all",
        {"alpn": ["http/1.1"]},
        run_s_client_keyupdate,
        client_software="openssl s_client",
    ),
    Case(
        "tls13_hrr",
        18705,
        "TLS 1.3 HelloRetryRequest: curl offers X25519:P-256 with an X25519 key share, the "
        "server accepts P-256 only, so the second ClientHello carries a P-256 share; then "
        "HTTP/1.1 models and chat",
        {"alpn": ["http/1.1"], "groups": "prime256v1"},
        _hrr,
        client_software="curl",
    ),
    Case(
        "tls12_resumption",
        18706,
        "TLS 1.2 session resumption by session ID (server without tickets): connection 1 a full "
        "handshake, connection 2 abbreviated with the same session; two HTTP/1.1 requests on "
        "each (Python http.client over ssl)",
        {"alpn": ["http/1.1"], "max_tls": "1.2", "no_ticket": True},
        run_resumption,
        client_software="python http.client + ssl",
    ),
    Case(
        "h2c_upgrade",
        18707,
        "cleartext HTTP/1.1 GET with Upgrade: h2c answered 101, the response on HTTP/2 stream "
        "1, then a chat completion (stream 3) and a chat SSE stream (stream 5) on the same "
        "connection (curl --http2 against hypercorn)",
        {},
        _h2c_upgrade,
        tls=False,
        client_software="curl",
    ),
    Case(
        "h2_rst_stream",
        18708,
        "TLS 1.3 + h2 (the h2 library by hand): a chat completion on stream 1, a long chat SSE "
        "stream on stream 3 that the client cancels with RST_STREAM(CANCEL) after 5 events, "
        "GET /v1/models on stream 5, GOAWAY",
        {"alpn": ["h2", "http/1.1"], "sse_delay_ms": 50},
        run_h2_rst_stream,
        client_software="h2 (hand-driven) over python ssl",
    ),
    Case(
        "h2_large_download_tls13",
        18709,
        "TLS 1.3 + h2 (httpx http2=True): GET /v1/models, GET /download of 1 MiB of "
        "incompressible bytes (many DATA frames and TLS records, WINDOW_UPDATEs), a chat "
        "completion",
        {"alpn": ["h2", "http/1.1"]},
        _large_download,
        limit=LARGE_LIMIT,
        client_software="httpx",
    ),
)


# =========================================================================== running a case


def software(tcpdump: str) -> dict[str, str]:
    return {
        **genlib.package_versions("hypercorn", "httpx", "httpcore", "h2", "h11"),
        "python": sys.version.split()[0],
        "python_ssl": ssl.OPENSSL_VERSION,
        "openssl_cli": first_line(["openssl", "version"]),
        "curl": first_line(["curl", "--version"]),
        "tcpdump": genlib.tcpdump_version(tcpdump),
    }


def run_case(case: Case, tcpdump: str, certs: dict[str, Path], tmp: Path) -> dict[str, Any]:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    for stale in ("keys.log", "client.log"):
        (folder / stale).unlink(missing_ok=True)
    spec = {"port": case.port, "sse_delay_ms": 5, **case.server}
    tls = case.tls
    if tls:
        spec["certfile"] = str(certs[case.cert])
        spec["keyfile"] = str(certs[f"{case.cert}_key"])
    spec_path = tmp / f"{case.name}.spec.json"
    log_path = tmp / f"{case.name}.server.log"
    server = genlib.start_serve_process(genlib.GEN_PYTHON, SCRIPT, spec, spec_path, log_path)
    ctx = Ctx(
        name=case.name,
        port=case.port,
        folder=folder,
        keylog=folder / "keys.log",
        certs=certs,
        cafile=certs[case.cert],
    )
    pcap = folder / "capture.pcap"
    dump = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    try:
        genlib.wait_listening(case.port, server)
        dump.start()
        t0 = time.time()
        result = case.client(ctx)
        t1 = time.time()
        counters = dump.stop(linger=0.7)
    finally:
        server_rc = genlib.stop_process(server)
    if server_rc not in (0, -15):
        genlib.log(f"{case.name}: server exited with {server_rc}: {log_path.read_text()[-800:]}")
    size = pcap.stat().st_size
    labels = genlib.keylog_labels(ctx.keylog)
    truth: dict[str, Any] = {
        "capture": case.name,
        "made_by": "scripts/make_tls_captures.py",
        "description": case.summary,
        "port": case.port,
        "base_url": f"{'https' if tls else 'http'}://127.0.0.1:{case.port}",
        "server": "hypercorn, plain ASGI app (scripts/make_tls_captures.py --serve)",
        "server_settings": {k: v for k, v in spec.items() if k not in ("certfile", "keyfile")}
        | ({"certificate": f"self-signed {case.cert.upper()}, SAN IP:127.0.0.1"} if tls else {}),
        "client": case.client_software,
        "client_started": round(t0, 6),
        "client_ended": round(t1, 6),
        **result,
        "request_count": len(result["requests"]),
    }
    if not tls:
        truth.pop("server_settings")
    run = {
        "name": case.name,
        "port": case.port,
        "tls": tls,
        "client_rc": ctx.notes.get("client_rc", 0),
        "server_rc": server_rc,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": size,
        "keylog_labels": labels,
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    if tls and not labels:
        raise genlib.ToolError(f"{case.name}: the client wrote no key log")
    if not tls:
        ctx.keylog.unlink(missing_ok=True)
    genlib.log(
        f"{case.name}: {size:,} bytes, {run['packets']} packets, "
        f"{len(result['requests'])} requests, keylog {labels}, tcpdump {counters}"
    )
    if size > case.limit:
        genlib.log(f"warning: {case.name} is {size:,} bytes, over {case.limit:,}")
    return run


# =========================================================================== README


README_HEAD = """\
# TLS and HTTP/2 test captures

Made by `scripts/make_tls_captures.py` (run it again to remake them all, or `--only NAME`):
real software on loopback, a hypercorn server with a small OpenAI-shaped ASGI app
(`/v1/models`, `/v1/chat/completions` as JSON or as an SSE stream ending in `data: [DONE]`,
`/download?bytes=N`), and a real client: curl, `openssl s_client`, httpx, Python's
`http.client` over `ssl`, or the `h2` library driven by hand. tcpdump on `lo` captured each
case's port only, with nothing dropped. Certificates were self-signed for 127.0.0.1 at run time
and thrown away.

Each folder holds:
- `capture.pcap`: `tcpdump -i lo -s 0` (Linux loopback: Ethernet with zeroed MACs, segments up
  to 64 KiB).
- `keys.log`: the NSS key log the client wrote (TLS 1.3: five labels per connection;
  TLS 1.2: `CLIENT_RANDOM`). None for `h2c_upgrade` (cleartext).
- `truth.json`: what happened, from the client's own records only (curl's `-w %{json}` and `-v`
  trace, s_client's `-msg` trace, Python's `SSLSocket`, httpx and h2 results): per request the
  method, path, status, HTTP version, body sizes and SHA-256, SSE data events (`[DONE]`
  counted) and assembled text; per connection the TLS version, cipher suite, ALPN; and what is
  special about the case. Timestamps are epoch seconds on the pcap's clock.
- `run.json`: port, tcpdump counters, exit codes, key log labels, size.
- `client.log` (curl and s_client cases): the client's own verbose trace.

| capture | size | what happened |
|---|---|---|
"""


def write_readme() -> None:
    """Rewrite this script's part of the README (the head, the table, the notes); the sections
    other scripts own (between their ``<!-- begin: … -->`` and ``<!-- end: … -->`` marks, after
    this part) are kept as they are."""
    path = CAPTURES_DIR / "README.md"
    old = path.read_text() if path.exists() else ""
    others = old.find("<!-- begin:")
    kept = "\n" + old[others:] if others >= 0 else ""
    rows = genlib.case_table_rows(CASES, CAPTURES_DIR)
    path.write_text(README_HEAD + "\n".join(rows) + "\n" + README_TAIL + kept)


README_TAIL = """
Things worth knowing:
- `tls13_keyupdate`: the client's KeyUpdate after `K` asks the server to update too, so the
  client->server direction changes its application traffic secret twice (generations 0, 1, 2)
  and the server->client direction once. The next secret is HKDF-Expand-Label(secret,
  "traffic upd", "", Hash.length) of the one before. OpenSSL's key log also holds
  `CLIENT_TRAFFIC_SECRET_N` / `SERVER_TRAFFIC_SECRET_N` lines (literally `_N`, not an NSS label
  of the standard set), one per update in order, equal to those derived secrets: a reader must
  not choke on them and must not need them. tshark 4.0 decrypts every record.
- `tls13_hrr`: the HelloRetryRequest is a ServerHello whose random is the fixed
  SHA-256("HelloRetryRequest") value; both ClientHellos carry the same client random (the one
  in the key log), and the handshake transcript starts with a message_hash message.
- `tls12_resumption`: the second connection has no Certificate, ServerKeyExchange or
  ClientKeyExchange; its master secret is the first connection's. The key log holds a
  `CLIENT_RANDOM` line for each connection's client random with that same secret; a reader
  that had only the first line would have to match the session ID (in `truth.json`).
- `h2c_upgrade`: the upgraded request's response is HTTP/2 stream 1 (half-closed from the
  client side from the start); the client's connection preface follows the 101 on the same
  connection. No key log: cleartext. curl 7.88 sent RST_STREAM(STREAM_CLOSED) on stream 1 as
  soon as it had the Content-Length's worth of body, before the server's empty DATA frame with
  END_STREAM: the client had the whole body (188 bytes), but the stream ended with a reset.
- `h2_rst_stream`: the client sends RST_STREAM(CANCEL) on stream 3 after 5 SSE events of a
  400-token stream; the server stops (hypercorn turns the reset into `http.disconnect`). The
  truth's body for stream 3 is what the client had read when it cancelled; DATA frames already
  in flight would have been dropped by the h2 library (none were, at 50 ms between events).
"""


# =========================================================================== main


def add_software(case: Case, versions: dict[str, str]) -> None:
    """Write the software versions into a complete capture's ``truth.json``."""
    truth_path = CAPTURES_DIR / case.name / "truth.json"
    truth = json.loads(truth_path.read_text())
    truth["software"] = versions
    genlib.write_json(truth_path, truth)


def main() -> int:
    ap = genlib.case_arguments(__doc__, "capture", attempts_help="tries when tcpdump loses packets")
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(json.loads(args.serve.read_text())))
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<26} port {case.port}  {case.summary}")
        return 0
    wanted = genlib.wanted_cases(ap, args.only, CASES, "capture")
    genlib.ensure_debian_commands("openssl", "curl")
    genlib.reexec_in_gen_venv(SCRIPT)
    tcpdump = genlib.ensure_tcpdump()
    importlib.import_module("h2")  # installed with hypercorn
    with tempfile.TemporaryDirectory(prefix="agentshark-tls-") as tmpdir:
        tmp = Path(tmpdir)
        certs = genlib.make_test_certs(tmp)
        versions = software(tcpdump)
        failures = genlib.run_cases(
            CASES,
            wanted,
            args.attempts,
            lambda case: run_case(case, tcpdump, certs, tmp),
            after=lambda case: add_software(case, versions),
        )
    write_readme()
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
