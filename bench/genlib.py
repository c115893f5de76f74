"""Shared machinery for the capture generators (``bench/make_capture.py`` and
``scripts/make_example_capture.py``).

Both generators make packet captures with real third-party software on loopback: a hypercorn
server (``bench/replay_server.py``) answers with response bodies recorded in the corpus, an
httpx client sends the matching recorded request bodies, and tcpdump on ``lo`` writes the
capture. This module holds what they share:

* the tool bootstrap: tcpdump from Debian's packages, hypercorn/httpx/PyYAML in a generator
  venv under ``bench/.venv-gen`` (never in the project's own ``.venv``);
* corpus cassettes to :class:`PoolEntry` records (one request with its recorded response),
  with credentials left out;
* SSE event splitting and counting, as the WHATWG event-stream rules define them;
* starting and stopping tcpdump and the replay server;
* the glue every case-driven generator script repeats (``scripts/make_*.py``): a venv with
  pinned requirements to re-run in, the ``--only/--list/--serve/--attempts`` options, the
  attempts loop over the cases and the README table of what was made.

It imports only the standard library (PyYAML inside functions), so it loads in any Python.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, TypeVar

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
OUT_DIR = BENCH_DIR / "out"
CORPUS_DIR = Path(os.environ.get("AGENTSHARK_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))
GEN_VENV = BENCH_DIR / ".venv-gen"
GEN_PYTHON = GEN_VENV / "bin" / "python"
REPLAY_SERVER = BENCH_DIR / "replay_server.py"

# Pinned to the versions the reference benchmark was built with (shared/reference/perf-anchors.md).
GEN_REQUIREMENTS = ("hypercorn==0.18.0", "httpx==0.28.1", "h11==0.16.0", "PyYAML>=6.0")
# The HTTP/3 capture's venv (``make_capture.py --h3``): the same, with aioquic, which hypercorn
# serves HTTP/3 with (its ``quic_bind``) and the client speaks it with. A venv of its own, so
# that the h1/h2 captures run with exactly the software they were measured with.
GEN_H3_VENV = BENCH_DIR / ".venv-gen-h3"
GEN_H3_REQUIREMENTS = (*GEN_REQUIREMENTS, "aioquic==1.7.2")

FAKE_BEARER = "Bearer sk-example-not-a-real-key"
FAKE_ANTHROPIC_KEY = "sk-ant-example-not-a-real-key"

# Request headers copied from a cassette: what an SDK sends about itself. Credentials, cookies,
# host and framing headers are never copied; the generator adds a fake credential itself.
_REQUEST_HEADER_KEEP = (
    "accept",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
    "traceparent",
)
_REQUEST_HEADER_KEEP_PREFIX = ("x-stainless-",)
# Response headers copied from a cassette; the server adds its own date/server/framing.
_RESPONSE_HEADER_KEEP = (
    "content-type",
    "content-encoding",
    "x-request-id",
    "request-id",
    "openai-processing-ms",
    "openai-version",
)
_SECRET_IN_BODY = re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}")


class PoolEntry(TypedDict):
    """One recorded exchange, ready to replay: the client sends ``req_*``, the server answers
    ``status``/``resp_*``. ``resp_body`` is text, or base64 of the bytes when ``resp_b64``
    (gzip bodies, AWS event streams).

    Entries of the families other than OpenAI/Anthropic (``bench/pool.py``) add their
    ``family``, the recorded ``query`` (what the client requests after the path), the
    response's ``framing`` (``json``, ``sse``, ``json-array``, ``eventstream``) and, for a
    stream, ``chunk_ends``: where each of the server's writes ends in the body
    (``bench/streams.py``). The default pool's entries have none of these."""

    id: int
    source: str
    method: str
    path: str
    req_headers: list[list[str]]
    req_body: str
    status: int
    resp_headers: list[list[str]]
    resp_body: str
    resp_b64: bool
    sse: bool
    family: NotRequired[str]
    query: NotRequired[str]
    framing: NotRequired[str]
    chunk_ends: NotRequired[list[int]]


# -- ASGI apps of the generators' servers ----------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


async def asgi_request_body(scope: Scope, receive: Receive, send: Send) -> bytes | None:
    """An ASGI app's prologue: answers the lifespan protocol, then reads an HTTP request's
    whole body. None when there is no HTTP request to answer (lifespan, websocket, the
    client gone before its body ended)."""
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return None
    if scope["type"] != "http":
        return None
    parts: list[bytes] = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return None
        parts.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(parts)


class ToolError(RuntimeError):
    """A tool the generator needs could not be installed or did not behave."""


# --------------------------------------------------------------------------- tool bootstrap


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ensure_tcpdump() -> str:
    """Path of tcpdump, installed from Debian's packages when it is absent."""
    found = shutil.which("tcpdump") or (
        "/usr/bin/tcpdump" if Path("/usr/bin/tcpdump").exists() else None
    )
    if found:
        return found
    log("tcpdump is missing: apt-get install tcpdump")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "tcpdump"], check=True, env=env)
    found = shutil.which("tcpdump") or "/usr/bin/tcpdump"
    if not Path(found).exists():
        raise ToolError("apt-get install tcpdump did not provide tcpdump")
    return found


def ensure_debian_commands(*commands: str) -> None:
    """Install the Debian packages named like the missing ``commands`` (openssl, curl)."""
    missing = [c for c in commands if shutil.which(c) is None]
    if not missing:
        return
    log(f"missing {', '.join(missing)}: apt-get install")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)
    still = [c for c in missing if shutil.which(c) is None]
    if still:
        raise ToolError(f"apt-get did not provide {', '.join(still)}")


def make_test_certs(folder: Path) -> dict[str, Path]:
    """Throwaway self-signed certificates for 127.0.0.1 made by ``openssl req`` in ``folder``
    (meant to be a temporary one): ``rsa``/``rsa_key`` (RSA 2048) and ``ecdsa``/``ecdsa_key``
    (P-256). Each certificate is its own trust anchor (``cafile``)."""
    ensure_debian_commands("openssl")
    out: dict[str, Path] = {}
    for kind, keyopts in (
        ("rsa", ["-newkey", "rsa:2048"]),
        ("ecdsa", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]),
    ):
        cert, key = folder / f"{kind}.pem", folder / f"{kind}.key"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                *keyopts,
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "7",
                "-subj",
                f"/CN=agentshark test {kind}",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ],
            check=True,
            capture_output=True,
        )
        out[kind] = cert
        out[f"{kind}_key"] = key
    return out


def keylog_labels(path: Path) -> dict[str, int]:
    """How many lines of each label an NSS key log holds."""
    if not path.exists():
        return {}
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            label = line.split(" ", 1)[0]
            counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items()))


def pip_install(python: Path, requirements: Sequence[str]) -> None:
    """``python -m pip install -q --disable-pip-version-check`` the ``requirements``."""
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
        check=True,
    )


def ensure_venv(venv: Path, requirements: Sequence[str], python: str = sys.executable) -> Path:
    """The python of the venv ``venv``, which holds ``requirements``: when its marker file
    (``.requirements``, the requirements one a line) says otherwise, the venv is made again
    from scratch by ``python -m venv --clear`` and the requirements installed with pip."""
    venv_python = venv / "bin" / "python"
    marker = venv / ".requirements"
    wanted = "\n".join(requirements)
    if venv_python.exists() and marker.exists() and marker.read_text() == wanted:
        return venv_python
    log(f"creating the venv {venv} ({', '.join(requirements)})")
    subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True)
    pip_install(venv_python, requirements)
    marker.write_text(wanted)
    return venv_python


def ensure_gen_venv() -> Path:
    """The generator venv's python, creating the venv and installing into it when needed."""
    return ensure_venv(GEN_VENV, GEN_REQUIREMENTS)


def ensure_gen_h3_venv() -> Path:
    """The HTTP/3 generator venv's python (``GEN_H3_REQUIREMENTS``), made when needed."""
    return ensure_venv(GEN_H3_VENV, GEN_H3_REQUIREMENTS)


def in_venv(venv: Path) -> bool:
    """Whether this process runs under the venv ``venv``."""
    return Path(sys.prefix).resolve() == venv.resolve()


def in_gen_venv() -> bool:
    return in_venv(GEN_VENV)


def reexec_in_venv(script: Path, venv: Path, ensure: Callable[[], Path]) -> None:
    """Make sure tcpdump exists, then run ``script`` again with this process's arguments under
    the python that ``ensure`` returns (making ``venv`` as it needs); returns only when already
    running under ``venv``."""
    if in_venv(venv):
        return
    ensure_tcpdump()
    python = ensure()
    sys.stderr.flush()
    os.execv(python, [str(python), str(script), *sys.argv[1:]])


def reexec_in_gen_venv(script: Path) -> None:
    """Make sure the tools exist, then run ``script`` again under the generator venv's python
    (returns only when already running there)."""
    reexec_in_venv(script, GEN_VENV, ensure_gen_venv)


def package_versions(*names: str) -> dict[str, str]:
    from importlib import metadata

    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def tcpdump_version(tcpdump: str) -> str:
    proc = subprocess.run([tcpdump, "--version"], capture_output=True, text=True, check=False)
    first = (proc.stdout or proc.stderr).splitlines()
    return first[0].removeprefix("tcpdump version ").strip() if first else "unknown"


# --------------------------------------------------------------------------- corpus → entries


def load_cassette(path: Path) -> list[dict[str, Any]]:
    """The interactions of a vcrpy YAML cassette (empty for anything else)."""
    import yaml

    with path.open("rb") as f:
        doc = yaml.load(f, Loader=yaml.CSafeLoader)
    if not isinstance(doc, dict):
        return []
    items = doc.get("interactions")
    if not isinstance(items, list):
        return []
    return [it for it in items if isinstance(it, dict) and isinstance(it.get("request"), dict)]


def header_pairs(headers: object) -> list[tuple[str, str]]:
    """A cassette's ``{name: [values]}`` (values may be one string, or ``!!binary``) as pairs."""
    if not isinstance(headers, dict):
        return []
    pairs: list[tuple[str, str]] = []
    for name, value in headers.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bytes):
                v = v.decode("latin-1")
            if isinstance(v, str | int | float):
                pairs.append((str(name), str(v)))
    return pairs


def first_header(pairs: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in pairs if k.lower() == name), None)


def scrub_secrets(text: str) -> str:
    """Replace anything shaped like an API key in a request body with an obviously fake one."""
    return _SECRET_IN_BODY.sub("sk-example-not-a-real-key", text)


def client_headers(pairs: list[tuple[str, str]], path: str) -> list[list[str]]:
    """The request headers the replay client sends: the SDK's own self-description from the
    cassette, the JSON content type, and a fake credential (Bearer, or x-api-key for Anthropic
    Messages) so that redaction has something to show."""
    out: list[list[str]] = []
    for name, value in pairs:
        low = name.lower()
        if low in _REQUEST_HEADER_KEEP or low.startswith(_REQUEST_HEADER_KEEP_PREFIX):
            out.append([low, value])
    out.append(["content-type", "application/json"])
    if path.endswith("/v1/messages"):
        out.append(["x-api-key", FAKE_ANTHROPIC_KEY])
    else:
        out.append(["authorization", FAKE_BEARER])
    return out


def request_body_text(request: dict[str, Any]) -> str | None:
    """The request body as text: the recorded string, or a ``parsed_body`` mapping serialized
    the way httpx's ``json=`` does (compact, UTF-8)."""
    if "parsed_body" in request and request["parsed_body"] is not None:
        return json.dumps(request["parsed_body"], ensure_ascii=False, separators=(",", ":"))
    body = request.get("body")
    if isinstance(body, dict):  # older vcrpy: {"string": ...}
        body = body.get("string")
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body if isinstance(body, str) and body else None


def recorded_response_body(response: dict[str, Any]) -> bytes | None:
    """A cassette response's body as bytes (``parsed_body`` serialized as JSON), or None."""
    if "parsed_body" in response and response["parsed_body"] is not None:
        return json.dumps(response["parsed_body"], ensure_ascii=False).encode()
    body = response.get("body")
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes):
        return body
    return None


def entry_from_interaction(
    interaction: dict[str, Any], source: str, *, path: str | None = None, entry_id: int = 0
) -> PoolEntry | None:
    """A replayable entry for one cassette interaction, or None when it cannot be replayed as a
    plain HTTP/1.1 JSON or SSE exchange (binary bodies, no response body). ``path`` overrides
    the request path (gateway prefixes normalized to ``/v1/...``)."""
    from urllib.parse import urlsplit

    request = interaction["request"]
    response = interaction.get("response")
    if not isinstance(response, dict):
        return None
    method = str(request.get("method", "")).upper()
    req_path = path or urlsplit(str(request.get("uri", ""))).path
    req_text = request_body_text(request)
    status = (response.get("status") or {}).get("code")
    body = recorded_response_body(response)
    if req_text is None or body is None or not isinstance(status, int) or not body:
        return None
    rpairs = header_pairs(response.get("headers"))
    ctype = first_header(rpairs, "content-type") or ""
    cenc = (first_header(rpairs, "content-encoding") or "").strip().lower()
    is_gzip = body[:2] == b"\x1f\x8b"
    sse = "text/event-stream" in ctype.lower()
    if is_gzip and cenc != "gzip":
        return None
    if is_gzip and sse:
        return None  # a gzip token stream cannot be sent event by event
    if not is_gzip:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not ctype:
        sse = body.lstrip().startswith((b"data:", b"event:"))
        ctype = "text/event-stream; charset=utf-8" if sse else "application/json"
    resp_headers: list[list[str]] = []
    for name, value in rpairs:
        low = name.lower()
        if low not in _RESPONSE_HEADER_KEEP or (low == "content-encoding" and not is_gzip):
            continue
        if low == "content-type" and any(h[0] == "content-type" for h in resp_headers):
            continue
        resp_headers.append([low, value])
    if not any(h[0] == "content-type" for h in resp_headers):
        resp_headers.insert(0, ["content-type", ctype])
    return PoolEntry(
        id=entry_id,
        source=source,
        method=method,
        path=req_path,
        req_headers=client_headers(header_pairs(request.get("headers")), req_path),
        req_body=scrub_secrets(req_text),
        status=status,
        resp_headers=resp_headers,
        resp_body=base64.b64encode(body).decode() if is_gzip else body.decode("utf-8"),
        resp_b64=is_gzip,
        sse=sse,
    )


def response_bytes(entry: PoolEntry) -> bytes:
    """The recorded response body exactly as the server sends it (before HTTP framing)."""
    if entry["resp_b64"]:
        return base64.b64decode(entry["resp_body"])
    return entry["resp_body"].encode("utf-8")


def decoded_response_bytes(entry: PoolEntry) -> bytes:
    """The response body with gzip undone (base64 bodies that are not gzip stay as they are)."""
    body = response_bytes(entry)
    return gzip.decompress(body) if entry["resp_b64"] and body[:2] == b"\x1f\x8b" else body


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)


# --------------------------------------------------------------------------- SSE

# One line and its terminator: CRLF, CR or LF (event-stream rules; str.splitlines is wrong here).
_SSE_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _sse_lines(body: bytes) -> Iterator[tuple[bytes, bool]]:
    """(line content, terminated) for each line of ``body``."""
    for m in _SSE_LINE.finditer(body):
        line = m.group()
        stripped = line.rstrip(b"\r\n")
        yield stripped, len(stripped) != len(line)


def split_sse_events(body: bytes) -> list[bytes]:
    """``body`` cut after each blank line, so that each piece is one event (with its blank
    line); whatever follows the last blank line is the last piece. ``b"".join`` gives ``body``
    back."""
    pieces: list[bytes] = []
    start = 0
    pos = 0
    for m in _SSE_LINE.finditer(body):
        pos = m.end()
        if m.group() in (b"\n", b"\r\n", b"\r") and pos - start > len(m.group()):
            pieces.append(body[start:pos])
            start = pos
    if start < len(body):
        if pieces and not body[start:].strip(b"\r\n"):
            pieces[-1] += body[start:]
        else:
            pieces.append(body[start:])
    return pieces


class SseCount(TypedDict):
    data_events: int
    done_markers: int
    unterminated_tail: bool


def count_sse(body: bytes) -> SseCount:
    """Events with at least one ``data`` field that a conforming parser dispatches (a blank line
    ends each), how many of them are ``[DONE]``, and whether data was left after the last
    blank line (recorded bodies whose trailing newline was lost: not dispatched by the rules)."""
    events = 0
    done = 0
    data: list[bytes] | None = None
    for line, _terminated in _sse_lines(body):
        if not line:
            if data is not None:
                events += 1
                done += b"\n".join(data).strip() == b"[DONE]"
            data = None
            continue
        if line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if field == b"data":
            (data := data if data is not None else []).append(value.removeprefix(b" "))
    return SseCount(data_events=events, done_markers=done, unterminated_tail=data is not None)


# --------------------------------------------------------------------------- processes


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class TlsRelay:
    """A TLS server on 127.0.0.1:``front`` that passes each connection's plaintext on to
    127.0.0.1:``back`` in cleartext: TLS for a capture whose own server cannot speak it the
    way the client does (PostgreSQL 15 and direct TLS), or cannot write a key log (grpcio).
    ``alpn``: the protocol it selects; ``keylog``: where its TLS sessions' secrets are written
    (Python's ``SSLContext.keylog_filename``, on the server side). A connection whose first
    byte is not a TLS record is passed on as it comes (libpq's cleartext CancelRequest).

    It runs in a process of its own, spawned (not forked: the client's process may run
    grpcio's threads), so a client that blocks its process (libpq's cancel holds the GIL
    while it waits for the server to hang up) cannot stop it."""

    def __init__(
        self, cert: Path, key: Path, front: int, back: int, alpn: str, keylog: Path | None = None
    ) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        ready = context.Event()
        args = (str(cert), str(key), front, back, alpn, str(keylog) if keylog else None, ready)
        self.process = context.Process(target=_relay_main, args=args, daemon=True)
        self.process.start()
        if not ready.wait(30):
            self.close()
            raise ToolError(f"the TLS relay on 127.0.0.1:{front} did not start")

    def close(self) -> None:
        self.process.terminate()
        self.process.join()


def _relay_main(
    cert: str, key: str, front: int, back: int, alpn: str, keylog: str | None, ready: Any
) -> None:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols([alpn])
    if keylog is not None:
        context.keylog_filename = keylog
    listener = socket.create_server(("127.0.0.1", front))
    ready.set()
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=_relay_one, args=(context, raw, back), daemon=True).start()


def _relay_one(context: Any, raw: socket.socket, back: int) -> None:
    raw.settimeout(10)
    try:
        first = raw.recv(1, socket.MSG_PEEK)
        client = context.wrap_socket(raw, server_side=True) if first == b"\x16" else raw
    except OSError:
        raw.close()
        return
    client.settimeout(None)
    server = socket.create_connection(("127.0.0.1", back))
    ends = {client: server, server: client}
    try:  # both directions in this one thread: an SSL socket is not read and written from two
        while True:
            pending = hasattr(client, "pending") and client.pending()
            ready = [client] if pending else select.select(list(ends), [], [])[0]
            for src in ready:
                data = src.recv(65536)
                if not data:
                    return
                ends[src].sendall(data)
    except OSError:
        return
    finally:
        client.close()
        server.close()


def is_listening(port: int, *, udp: bool = False) -> bool:
    """Whether something listens on 127.0.0.1:``port``, read from /proc/net/tcp so that the
    check itself sends no packet (a connect probe would end up in the capture); with ``udp``,
    whether a UDP socket is bound there too (/proc/net/udp, state 07: unconnected)."""
    want = f"0100007F:{port:04X}"
    tables = (("tcp", "0A"), ("udp", "07")) if udp else (("tcp", "0A"),)
    for table, state in tables:
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            return False
        fields = (ln.split() for ln in lines)
        if not any(f[1] == want and f[3] == state for f in fields if len(f) > 3):
            return False
    return True


def wait_listening(
    port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0, *, udp: bool = False
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_listening(port, udp=udp):
            return
        if proc.poll() is not None:
            raise ToolError(f"replay server exited with {proc.returncode} before listening")
        time.sleep(0.05)
    raise ToolError(f"replay server did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def wait_pg_ready(pg_isready: Path, port: int, server: subprocess.Popen[bytes]) -> None:
    """Wait up to 10 s for a PostgreSQL server on 127.0.0.1:``port`` to accept connections
    (``pg_isready``); else stop it and raise."""
    for _ in range(100):
        ready = subprocess.run(
            [str(pg_isready), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
        )
        if ready.returncode == 0:
            return
        time.sleep(0.1)
    stop_process(server)
    raise ToolError("postgres did not start")


def start_replay_server(
    pool_path: Path,
    port: int,
    sse_delay_ms: float,
    log_path: Path,
    *,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    quic: bool = False,
    python: Path = GEN_PYTHON,
) -> subprocess.Popen[bytes]:
    """hypercorn serving ``pool_path`` on 127.0.0.1:``port``, listening when this returns;
    over TLS (ALPN h2 and http/1.1) when ``certfile`` and ``keyfile`` are given, and with
    ``quic`` HTTP/3 on the UDP port of that number too (``python``'s venv must hold aioquic)."""
    if not port_is_free(port):
        raise ToolError(f"port {port} is busy on 127.0.0.1: pick another with --port")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    tls = ["--certfile", str(certfile), "--keyfile", str(keyfile)] if certfile and keyfile else []
    with log_path.open("wb") as logf:
        proc = subprocess.Popen(
            [
                str(python),
                str(REPLAY_SERVER),
                "--pool",
                str(pool_path),
                "--port",
                str(port),
                "--sse-delay-ms",
                str(sse_delay_ms),
                *tls,
                *(["--quic"] if quic else []),
            ],
            stdout=logf,
            stderr=subprocess.STDOUT,
        )
    wait_listening(port, proc, udp=quic)
    return proc


def start_serve_process(
    python: str | Path, script: Path, spec: Mapping[str, Any], spec_path: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    """``python script --serve spec_path`` (a generator script run as its own server), after
    writing ``spec`` to ``spec_path``; its output goes to ``log_path``. Raises
    :class:`ToolError` when ``spec["port"]`` is busy on 127.0.0.1. Does not wait for it to
    listen (:func:`wait_listening`)."""
    if not port_is_free(spec["port"]):
        raise ToolError(f"port {spec['port']} is busy")
    write_json(spec_path, spec)
    with log_path.open("wb") as logf:
        return subprocess.Popen(
            [str(python), str(script), "--serve", str(spec_path)],
            stdout=logf,
            stderr=subprocess.STDOUT,
        )


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class Tcpdump:
    """``tcpdump -i lo --immediate-mode -s 0 -U -B <KiB> -w FILE 'tcp port N'`` (``udp port N``
    with ``proto="udp"``: a QUIC capture), ready when
    :meth:`start` returns (it said "listening on"), stopped with SIGINT so that it flushes and
    prints its counters, which :meth:`stop` returns.

    Immediate mode matters: without it libpcap hands packets over a kernel block at a time, and
    the packets of a block not yet handed over when SIGINT arrives are lost (a small capture
    can come out empty)."""

    def __init__(
        self, tcpdump: str, out: Path, port: int, buffer_kib: int = 262144, proto: str = "tcp"
    ) -> None:
        self.argv = [
            tcpdump,
            "-i",
            "lo",
            "--immediate-mode",
            "-s",
            "0",
            "-U",
            "-B",
            str(buffer_kib),
            "-Z",
            "root",
            "-w",
            str(out),
            f"{proto} port {port}",
        ]
        self.out = out
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []

    def _pump(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def start(self, timeout: float = 15.0) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.unlink(missing_ok=True)
        self._proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line is None:
                raise ToolError(f"tcpdump exited early: {' / '.join(self._stderr)}")
            self._stderr.append(line)
            if "listening on" in line:
                return
        raise ToolError("tcpdump did not say 'listening on' in time")

    def abort(self) -> None:
        """Stop tcpdump if it still runs (a run that failed before :meth:`stop`)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def stop(self, linger: float = 0.5) -> dict[str, int]:
        """Stop after ``linger`` seconds (the last FIN/ACKs), return tcpdump's counters."""
        assert self._proc is not None
        time.sleep(linger)
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.terminate()
            self._proc.wait(10)
        while (line := self._lines.get(timeout=5)) is not None:
            self._stderr.append(line)
        counters: dict[str, int] = {}
        for line in self._stderr:
            m = re.match(
                r"(\d+) (packets? (?:captured|received by filter|dropped by kernel))", line
            )
            if m:
                counters[m.group(2).replace("packet ", "packets ")] = int(m.group(1))
        if "packets dropped by kernel" not in counters:
            raise ToolError(f"tcpdump printed no counters: {' / '.join(self._stderr)}")
        return counters


def capture_complete(counters: dict[str, int]) -> bool:
    """Whether tcpdump wrote every packet its filter accepted: nothing dropped by the kernel,
    and on ``lo`` (where the filter sees each packet twice, once outgoing and once incoming,
    and libpcap keeps one) captured is exactly half of received."""
    return (
        counters["packets dropped by kernel"] == 0
        and 2 * counters["packets captured"] == counters["packets received by filter"]
    )


def pcap_packet_count(path: Path) -> int:
    """Records in a classic pcap file (the generators' own output), read record by record."""
    with path.open("rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return 0
        endian = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        rec = struct.Struct(endian + "IIII")
        n = 0
        while len(hdr := f.read(16)) == 16:
            f.seek(rec.unpack(hdr)[2], os.SEEK_CUR)
            n += 1
    return n


# --------------------------------------------------------------------------- model stubs

# What a generator's model stub answers a request body with (``request -> response body``).
Answer = Callable[[dict[str, Any]], dict[str, Any]]


def function_tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    """A Chat Completions function tool whose parameters are the string ``properties``
    (name -> description), all required."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    k: {"type": "string", "description": v} for k, v in properties.items()
                },
                "required": list(properties),
            },
        },
    }


def tool_call_message(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of a Chat Completions answer that asks for one tool call."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def chat_completion(
    rid: str,
    model: str,
    message: dict[str, Any],
    *,
    usage: tuple[int, int] = (30, 8),
    created: int | None = None,
) -> dict[str, Any]:
    """A non-streamed Chat Completions response of one choice: ``message`` (its finish
    reason ``tool_calls`` when it holds tool calls, else ``stop``), ``usage`` as (prompt,
    completion) tokens."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


class JsonStub:
    """A model stub in this process: ``http.server`` on 127.0.0.1:``port`` in a thread,
    answering a ``POST`` to a path of ``routes`` (``/v1/chat/completions``...) with the JSON
    its function returns for the request's JSON body; 404 elsewhere. A context manager:
    serving inside the ``with``."""

    def __init__(self, port: int, routes: Mapping[str, Answer]) -> None:
        import http.server

        table = dict(routes)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                answer = table.get(self.path)
                if answer is None:
                    self.send_error(404)
                    return
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                body = json.dumps(answer(request)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's
                pass

        self.port = port
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def __enter__(self) -> JsonStub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def run_record(
    counters: dict[str, int], pcap: Path, software: Mapping[str, str], **extra: Any
) -> dict[str, Any]:
    """A capture's ``run.json``: tcpdump's counters, whether it wrote every packet, the
    packets in ``pcap``, the ``software`` versions, then ``extra`` (ports...)."""
    return {
        "tcpdump": counters,
        "capture_complete": capture_complete(counters),
        "packets": pcap_packet_count(pcap),
        **extra,
        "software": dict(software),
    }


# --------------------------------------------------------------------------- case runner


class NamedCase(Protocol):
    """What the case runner needs of a generator's case: its folder name and its summary."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...


CaseT = TypeVar("CaseT", bound=NamedCase)


def case_arguments(
    doc: str | None, noun: str, *, attempts_help: str | None = None
) -> argparse.ArgumentParser:
    """The options every case-driven generator takes: ``--only`` (comma-separated names),
    ``--list``, the hidden ``--serve SPEC.json`` (the script run as its own server) and
    ``--attempts`` (3). The description is the first paragraph of ``doc`` (the script's
    docstring); ``noun`` names a case in the help ("capture", "run")."""
    ap = argparse.ArgumentParser(
        description=(doc or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--only", help=f"comma-separated {noun} names")
    ap.add_argument("--list", action="store_true", help=f"list the {noun}s and exit")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    ap.add_argument(
        "--attempts",
        type=int,
        default=3,
        help=attempts_help or f"tries when a {noun} fails",
    )
    return ap


def wanted_cases(
    ap: argparse.ArgumentParser, only: str | None, cases: Iterable[NamedCase], noun: str
) -> list[str]:
    """The names ``--only`` asks for (empty: every case); an unknown one ends the program with
    a usage error."""
    wanted = [n.strip() for n in (only or "").split(",") if n.strip()]
    unknown = set(wanted) - {c.name for c in cases}
    if unknown:
        ap.error(f"unknown {noun}s: {', '.join(sorted(unknown))}")
    return wanted


def run_cases(
    cases: Iterable[CaseT],
    wanted: Collection[str],
    attempts: int,
    run_one: Callable[[CaseT], Mapping[str, Any]],
    *,
    after: Callable[[CaseT], None] | None = None,
) -> list[str]:
    """Run each case of ``cases`` named in ``wanted`` (all when it is empty) with ``run_one``,
    which returns the case's run record, up to ``attempts`` times: again when it raises a
    :class:`ToolError`, ``OSError`` or ``subprocess.SubprocessError`` (logged) or when its
    record says tcpdump lost packets (``capture_complete`` false). ``after`` is called on a
    case once it has a complete capture. Returns the names of the cases that never got one."""
    failures: list[str] = []
    for case in cases:
        if wanted and case.name not in wanted:
            continue
        for n in range(1, attempts + 1):
            try:
                run = run_one(case)
            except (ToolError, OSError, subprocess.SubprocessError) as exc:
                log(f"{case.name} attempt {n}: {type(exc).__name__}: {exc}")
                continue
            if run["capture_complete"]:
                if after is not None:
                    after(case)
                break
            log(f"{case.name} attempt {n}: tcpdump lost packets, again")
        else:
            failures.append(case.name)
    return failures


def exit_status(failures: Sequence[str]) -> int:
    """The generator's exit status: 1, with the failed cases logged, when there are any."""
    if failures:
        log(f"failed: {', '.join(failures)}")
        return 1
    return 0


def case_table_rows(cases: Iterable[NamedCase], out_dir: Path) -> list[str]:
    """The README table rows ``| `name` | size | summary |``, one a case, the size from the
    case's ``out_dir/<name>/run.json`` (``pcap_bytes``, ``packets``) or "not made"."""
    rows: list[str] = []
    for case in cases:
        run_path = out_dir / case.name / "run.json"
        if not run_path.exists():
            rows.append(f"| `{case.name}` | not made | {case.summary} |")
            continue
        run = json.loads(run_path.read_text())
        size = f"{run['pcap_bytes'] / 1000:.0f} KB, {run['packets']} packets"
        rows.append(f"| `{case.name}` | {size} | {case.summary} |")
    return rows
