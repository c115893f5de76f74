"""Make loopback captures of the official Gemini, Bedrock and Ollama SDKs in
``tests/data/captures/<name>/``.

    python3 scripts/make_vendor_captures.py                  # every capture
    python3 scripts/make_vendor_captures.py --only bedrock_converse_tls13
    python3 scripts/make_vendor_captures.py --list

The client is the vendor's own SDK in this process (google-genai, boto3 ``bedrock-runtime``,
ollama); the server is a stub (hypercorn, ``--serve``) on 127.0.0.1 that answers each request
with the next recorded response of a corpus cassette (``../shared/corpus``), in order: status,
the vendor's own response headers (framing, date, cookies and ``alt-svc`` left out), and the
body byte for byte as the cassette holds it (SSE events, NDJSON lines and AWS event-stream
frames sent one a piece; ``Content-Length`` from the body actually sent, never the recorded
one). Where the cassette holds only ``parsed_body`` (pydantic-ai re-serializes JSON bodies) the
body is that mapping serialized by ``json.dumps`` and the truth says so. The SDK calls are
built from the cassette's recorded requests, so that the SDK sends what it sent when the
cassette was made (a tool loop: the model's call, the tool's result, the model's answer).
``tcpdump -i lo`` writes the case's port only (nothing may be dropped). The TLS cases are
TLS 1.3 with a throwaway self-signed certificate for 127.0.0.1 and the key log the SDK's own
SSL context writes through ``SSLKEYLOGFILE``.

The cases (``--list``): Gemini ``generate_content`` (a tool loop) and
``generate_content_stream`` (``alt=sse``) over HTTP/1.1, the stream again over HTTP/2 (httpx
``http2=True`` through ``http_options.client_args``), Gemini errors in Vertex AI mode; Bedrock
``converse``, ``converse_stream``, ``invoke_model`` and ``invoke_model_with_response_stream``
(Anthropic on Bedrock) tool loops, and ValidationException errors; an Ollama ``/api/chat``
NDJSON stream and a reply to a history holding tool calls, over cleartext HTTP/1.1.

The script makes a dedicated venv, ``scripts/.venv-vendors`` (python3.11, from the package
registry: google-genai, boto3, ollama, httpx with http2, hypercorn, PyYAML), and re-runs itself
in it. Each folder gets ``capture.pcap``, ``keys.log`` (TLS cases), ``truth.json`` and
``run.json``. ``truth.json`` holds, per HTTP exchange, what the client's HTTP layer saw (httpx
event hooks for google-genai and ollama, botocore's ``before-send`` event and response metadata
for boto3: method, path, HTTP version, status, request body size and SHA-256, the SigV4 headers
boto3 signed with its fake credentials), what the SDK parsed (from the SDK's returned objects
only: text, function / tool calls with their arguments, finish / stop reasons, usage, response
ids, model versions, errors), and what the stub sent (cassette, interaction, body size and
SHA-256); never anything read back from the pcap. A section of
``tests/data/captures/README.md`` (between markers) is rewritten from the cases below.
"""

import base64
import contextlib
import hashlib
import importlib
import json
import logging
import os
import ssl
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
CORPUS = genlib.CORPUS_DIR
VENDORS_VENV = SCRIPT.parent / ".venv-vendors"
VENDORS_REQUIREMENTS = (
    "google-genai==3.6.1",
    "boto3==1.44.8",
    "ollama==0.6.3",
    "httpx[http2]==0.28.1",
    "hypercorn==0.18.0",
    "PyYAML==6.0.4",
)
SIZE_LIMIT = 150_000
MADE_BY = "scripts/make_vendor_captures.py"
README_BEGIN = "<!-- begin: vendor SDK captures (scripts/make_vendor_captures.py) -->"
README_END = "<!-- end: vendor SDK captures -->"
PIECE_DELAY = 0.005

# Fake credentials: the SDKs send them (SigV4 signs with them), redaction must hide them.
FAKE_GEMINI_KEY = "AIzaSyExample-not-a-real-key-0123456789"
FAKE_VERTEX_TOKEN = "ya29.a0Example-fake-vertex-access-token-not-real-7c1d"
FAKE_AWS = {
    "aws_access_key_id": "AKIDEXAMPLE",
    "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "aws_session_token": "FwoGZXIvYXdzEXAMPLE-session-token-not-a-real-one-4f2a9c",
}
AWS_REGION = "us-east-1"

OTEL_BOTO = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation/"
    "opentelemetry-instrumentation-botocore/tests/cassettes"
)
PYD_GOOGLE = "pydantic__pydantic-ai/tests/models/cassettes/test_google"
VERTEX = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-vertexai/tests/cassettes"
)
OLLAMA_CHAT = "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes"

# Response headers the stub never copies: framing and connection (the server makes its own),
# the date, cookies (scrubbed placeholders in the cassettes) and alt-svc (points at port 443).
_DROP_RESPONSE_HEADERS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "date",
        "server",
        "set-cookie",
        "alt-svc",
        "content-encoding",
    }
)


# =========================================================================== the venv


def ensure_vendors_venv() -> Path:
    return genlib.ensure_venv(VENDORS_VENV, VENDORS_REQUIREMENTS, "python3.11")


def software() -> dict[str, str]:
    return {
        **genlib.package_versions(
            "google-genai",
            "boto3",
            "botocore",
            "urllib3",
            "ollama",
            "httpx",
            "httpcore",
            "h2",
            "hypercorn",
            "pydantic",
        ),
        "python": sys.version.split()[0],
        "python_ssl": ssl.OPENSSL_VERSION,
    }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# =========================================================================== corpus replies


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """One cassette interaction: the recorded request (to rebuild the SDK call from) and the
    response the stub replays."""

    source: str
    index: int
    method: str
    path: str
    query: str
    request_body: bytes | None
    request_json: Any
    status: int
    headers: list[list[str]]
    body: bytes
    body_origin: str  # "recorded bytes" | "parsed_body re-serialized (json.dumps)"
    framing: str  # "json" | "sse" | "ndjson" | "aws-eventstream"

    def pieces(self) -> list[bytes]:
        """The body cut where a real server flushes: one SSE event, NDJSON line or
        event-stream frame a piece; a JSON body whole."""
        if self.framing == "sse":
            return genlib.split_sse_events(self.body)
        if self.framing == "ndjson":
            return self.body.splitlines(keepends=True)
        if self.framing == "aws-eventstream":
            return eventstream_frames(self.body)
        return [self.body]

    def stub_facts(self) -> dict[str, Any]:
        return {
            "cassette": self.source,
            "interaction": self.index,
            "recorded_path": self.path + (f"?{self.query}" if self.query else ""),
            "status": self.status,
            "headers": self.headers,
            "body_bytes": len(self.body),
            "body_sha256": sha256(self.body),
            "body_origin": self.body_origin,
            "framing": self.framing,
            "pieces": len(self.pieces()),
        }


def eventstream_frames(body: bytes) -> list[bytes]:
    """AWS event-stream messages, cut by each prelude's total length (the first 4 bytes, big
    endian; https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html).
    A tail shorter than its prelude says stays one last piece."""
    out: list[bytes] = []
    pos = 0
    while pos + 4 <= len(body):
        total = int.from_bytes(body[pos : pos + 4], "big")
        if total < 16 or pos + total > len(body):
            break
        out.append(body[pos : pos + total])
        pos += total
    if pos < len(body):
        out.append(body[pos:])
    return out


def _header_list(headers: object) -> list[list[str]]:
    out: list[list[str]] = []
    if not isinstance(headers, dict):
        return out
    for name, value in headers.items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, bytes):
                v = v.decode("latin-1")
            out.append([str(name).lower(), str(v)])
    return out


def load_recorded(relpath: str) -> list[Recorded]:
    """Every interaction of the cassette ``relpath`` (under the corpus)."""
    out: list[Recorded] = []
    for i, it in enumerate(genlib.load_cassette(CORPUS / relpath)):
        rq, rs = it["request"], it["response"]
        url = urlsplit(str(rq["uri"]))
        req_body: bytes | None = None
        if rq.get("parsed_body") is not None:
            req_json = rq["parsed_body"]
        else:
            raw = rq.get("body")
            raw = raw.get("string") if isinstance(raw, dict) else raw
            req_body = raw.encode() if isinstance(raw, str) else raw
            req_json = json.loads(req_body) if req_body else None
        if rs.get("parsed_body") is not None:
            body = json.dumps(rs["parsed_body"], ensure_ascii=False).encode()
            origin = "parsed_body re-serialized (json.dumps)"
        else:
            raw = rs["body"]
            raw = raw.get("string") if isinstance(raw, dict) else raw
            body = raw.encode() if isinstance(raw, str) else bytes(raw or b"")
            origin = "recorded bytes"
        rheaders = _header_list(rs.get("headers"))
        ctype = next((v for k, v in rheaders if k == "content-type"), "")
        framing = (
            "sse"
            if "event-stream" in ctype and "amazon" not in ctype
            else "aws-eventstream"
            if "vnd.amazon.eventstream" in ctype
            else "ndjson"
            if "ndjson" in ctype
            else "json"
        )
        out.append(
            Recorded(
                source=relpath,
                index=i,
                method=str(rq["method"]).upper(),
                path=url.path,
                query=url.query,
                request_body=req_body,
                request_json=req_json,
                status=int(rs["status"]["code"]),
                headers=[h for h in rheaders if h[0] not in _DROP_RESPONSE_HEADERS],
                body=body,
                body_origin=origin,
                framing=framing,
            )
        )
    return out


# =========================================================================== the stub server
#
# ``--serve SPEC.json``: hypercorn on 127.0.0.1:port (TLS when certfile is given, ALPN h2 and
# http/1.1) answering the n-th request with the n-th reply of SPEC["replies"] (status,
# headers, body pieces in base64, whether it is a stream). A request past the last reply is
# answered 599 so that the generator notices.


def make_stub(spec: dict[str, Any]) -> Callable[..., Any]:
    import asyncio

    replies = spec["replies"]
    served = {"n": 0}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if await genlib.asgi_request_body(scope, receive, send) is None:
            return
        n = served["n"]
        served["n"] += 1
        if n >= len(replies):
            await send({"type": "http.response.start", "status": 599, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        reply = replies[n]
        pieces = [base64.b64decode(p) for p in reply["pieces"]]
        headers = [(k.encode(), v.encode()) for k, v in reply["headers"]]
        if not reply["stream"]:
            headers.append((b"content-length", str(sum(map(len, pieces))).encode()))
        print(f"reply {n}: {scope['method']} {scope['path']} -> {reply['status']}", flush=True)
        await send({"type": "http.response.start", "status": reply["status"], "headers": headers})
        for i, piece in enumerate(pieces):
            if i:
                await asyncio.sleep(PIECE_DELAY)
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def serve(spec: dict[str, Any]) -> None:
    import asyncio
    import signal

    hyper_serve = importlib.import_module("hypercorn.asyncio").serve
    config = importlib.import_module("hypercorn.config").Config()
    config.bind = [f"127.0.0.1:{spec['port']}"]
    config.keep_alive_timeout = 30
    config.accesslog = None
    config.graceful_timeout = 2
    if spec.get("certfile"):
        config.certfile = spec["certfile"]
        config.keyfile = spec["keyfile"]
        config.alpn_protocols = ["h2", "http/1.1"]

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await hyper_serve(make_stub(spec), config, shutdown_trigger=stop.wait)

    asyncio.run(main())


def stub_spec(replies: list[Recorded], port: int) -> dict[str, Any]:
    return {
        "port": port,
        "replies": [
            {
                "status": r.status,
                "headers": r.headers,
                "stream": r.framing != "json",
                "pieces": [base64.b64encode(p).decode() for p in r.pieces()],
            }
            for r in replies
        ],
    }


# =========================================================================== client records


@dataclass
class Ctx:
    """What an SDK driver gets, and what it records."""

    name: str
    port: int
    tls: bool
    cafile: Path | None
    replies: list[Recorded]
    http: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


def httpx_hooks(ctx: Ctx) -> dict[str, list[Callable[[Any], None]]]:
    """httpx event hooks writing each exchange into ``ctx.http`` as the client saw it."""

    not_read = importlib.import_module("httpx").RequestNotRead

    def on_request(request: Any) -> None:
        try:
            body: bytes | None = request.content
        except not_read:  # a streamed request body: not seen here (the SDKs send bytes)
            body = None
        ctx.http.append(
            {
                "method": request.method,
                "path": request.url.raw_path.decode(),
                "request_body_bytes": None if body is None else len(body),
                "request_body_sha256": None if body is None else sha256(body),
                "request_headers": sorted(
                    k for k in request.headers if k.lower() not in ("content-length", "host")
                ),
            }
        )

    def on_response(response: Any) -> None:
        rec = ctx.http[-1]
        rec["status"] = response.status_code
        rec["http_version"] = response.http_version
        rec["response_content_type"] = response.headers.get("content-type")
        stream = response.extensions.get("network_stream")
        ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
        client_addr = stream.get_extra_info("client_addr") if stream is not None else None
        if client_addr:
            rec["client_port"] = client_addr[1]
        if ssl_object is not None:
            rec["tls_version"] = ssl_object.version()
            rec["cipher"] = ssl_object.cipher()[0]
            rec["alpn"] = ssl_object.selected_alpn_protocol()

    return {"request": [on_request], "response": [on_response]}


def dump(obj: Any) -> Any:
    """An SDK object as JSON-able data (pydantic models in Python field names, bytes as their
    length)."""
    if hasattr(obj, "model_dump"):
        return dump(obj.model_dump(exclude_none=True))
    if isinstance(obj, dict):
        return {str(k): dump(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [dump(v) for v in obj]
    if isinstance(obj, bytes):
        return {"bytes": len(obj)}
    if hasattr(obj, "value") and hasattr(obj, "name"):  # enums
        return obj.value
    return obj


def run_call(ctx: Ctx, label: str, fn: Callable[..., dict[str, Any]], *args: Any) -> None:
    """One SDK call, ``fn(*args)``: its parsed facts, or the error it raised (type and
    message)."""
    try:
        facts = fn(*args)
        ctx.calls.append({"call": label, **facts})
    except Exception as exc:  # noqa: BLE001 - the SDK's error is part of the truth
        ctx.calls.append({"call": label, "error": sdk_error(exc)})


def sdk_error(exc: Exception) -> dict[str, Any]:
    """What the SDK's exception says: its type and text, and the fields of google-genai's
    ``APIError`` (code, status, message, details) and botocore's ``ClientError`` (the parsed
    ``Error`` and the response metadata)."""
    out: dict[str, Any] = {"type": type(exc).__name__, "text": str(exc)[:500]}
    for key in ("code", "status", "message", "details"):  # google.genai.errors.APIError
        value = getattr(exc, key, None)
        if value is not None and not callable(value):
            out[key] = dump(value)
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore.exceptions.ClientError
        out["error"] = response.get("Error")
        meta = response.get("ResponseMetadata") or {}
        out["request_id"] = meta.get("RequestId")
        out["http_status"] = meta.get("HTTPStatusCode")
    return out


# =========================================================================== google-genai


def genai_client(ctx: Ctx, *, http2: bool = False, vertex: bool = False) -> Any:
    """A google-genai client pointed at the stub: Gemini API mode with the fake API key, or
    Vertex AI mode (project ``fake-project``, ``us-central1``, OAuth2 credentials holding a
    fake access token with no expiry, sent as ``Authorization: Bearer``) when ``vertex``."""
    genai = importlib.import_module("google.genai")
    types = genai.types
    client_args: dict[str, Any] = {"event_hooks": httpx_hooks(ctx)}
    if http2:
        client_args["http2"] = True
    options = types.HttpOptions(
        base_url=ctx.base,
        # the recorded requests' versions (a custom base_url gets v1 otherwise)
        api_version="v1" if vertex else "v1beta",
        client_args=client_args,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    if vertex:
        oauth2 = importlib.import_module("google.oauth2.credentials")
        return genai.Client(
            vertexai=True,
            project="fake-project",
            location="us-central1",
            credentials=oauth2.Credentials(token=FAKE_VERTEX_TOKEN),
            http_options=options,
        )
    return genai.Client(api_key=FAKE_GEMINI_KEY, http_options=options)


def genai_request(rec: Recorded) -> tuple[str, Any, Any]:
    """The model, contents and config of the google-genai call that sends ``rec``'s request
    (validated from the recorded JSON, camelCase and base64 bytes as the REST API has them)."""
    types = importlib.import_module("google.genai.types")
    req = rec.request_json
    model = rec.path.rsplit("/", 1)[1].split(":", 1)[0]
    contents = [types.Content.model_validate_json(json.dumps(c)) for c in req["contents"]]
    cfg: dict[str, Any] = dict(req.get("generationConfig") or {})
    for key in ("systemInstruction", "tools", "toolConfig", "safetySettings"):
        if key in req:
            cfg[key] = req[key]
    config = types.GenerateContentConfig.model_validate_json(json.dumps(cfg))
    config.automatic_function_calling = types.AutomaticFunctionCallingConfig(disable=True)
    return model, contents, config


def genai_facts(resp: Any) -> dict[str, Any]:
    """What a GenerateContentResponse says: candidates (finish reason, parts), the SDK's
    ``function_calls`` and ``text``, usage, ids."""
    cands = []
    for c in resp.candidates or []:
        parts = []
        for p in (c.content.parts if c.content else None) or []:
            part: dict[str, Any] = {}
            if p.text is not None:
                part["text"] = p.text
            if p.thought:
                part["thought"] = True
            if p.function_call is not None:
                part["function_call"] = dump(p.function_call)
            if p.thought_signature is not None:
                part["thought_signature_bytes"] = len(p.thought_signature)
            parts.append(part)
        cands.append(
            {
                "index": c.index,
                "finish_reason": dump(c.finish_reason),
                "role": c.content.role if c.content else None,
                "parts": parts,
            }
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .text warns when there are non-text parts
        text = resp.text
    return {
        "response_id": resp.response_id,
        "model_version": resp.model_version,
        "candidates": cands,
        "function_calls": [dump(fc) for fc in resp.function_calls or []],
        "text": text,
        "usage": dump(resp.usage_metadata),
        "prompt_feedback": dump(resp.prompt_feedback),
    }


def drive_gemini_generate(ctx: Ctx, *, vertex: bool = False) -> dict[str, Any]:
    client = genai_client(ctx, vertex=vertex)
    with client:
        for rec in ctx.replies:
            run_call(ctx, "models.generate_content", gemini_generate, client, *genai_request(rec))
    if vertex:
        return {"sdk": "google-genai Client(vertexai=True, OAuth2 token, base_url)"}
    return {"sdk": "google-genai Client(api_key, http_options.base_url)"}


def gemini_generate(client: Any, model: str, contents: Any, config: Any) -> dict[str, Any]:
    resp = client.models.generate_content(model=model, contents=contents, config=config)
    return {"model": model, **genai_facts(resp)}


def drive_gemini_stream(ctx: Ctx, *, http2: bool = False) -> dict[str, Any]:
    client = genai_client(ctx, http2=http2)
    with client:
        for rec in ctx.replies:
            request = genai_request(rec)
            run_call(ctx, "models.generate_content_stream", gemini_stream, client, *request)
    return {"sdk": f"google-genai Client(http_options.client_args http2={http2})"}


def gemini_stream(client: Any, model: str, contents: Any, config: Any) -> dict[str, Any]:
    """Every chunk's facts, and the stream put together: text (None when no chunk had any),
    function calls, the last finish reason, the last chunk's usage and ids."""
    stream = client.models.generate_content_stream(model=model, contents=contents, config=config)
    chunks = [genai_facts(ch) for ch in stream]
    finish = [c["finish_reason"] for ch in chunks for c in ch["candidates"]]
    texts = [ch["text"] for ch in chunks if ch["text"] is not None]
    return {
        "model": model,
        "chunks": chunks,
        "assembled": {
            "text": "".join(texts) if texts else None,
            "function_calls": [fc for ch in chunks for fc in ch["function_calls"]],
            "finish_reason": next((f for f in reversed(finish) if f), None),
            "usage": chunks[-1]["usage"] if chunks else None,
            "response_id": chunks[-1]["response_id"] if chunks else None,
            "model_version": chunks[-1]["model_version"] if chunks else None,
        },
    }


# =========================================================================== boto3


def bedrock_client(ctx: Ctx) -> Any:
    boto3 = importlib.import_module("boto3")
    config = importlib.import_module("botocore.config").Config
    client = boto3.client(
        "bedrock-runtime",
        region_name=AWS_REGION,
        endpoint_url=ctx.base,
        verify=str(ctx.cafile),
        config=config(retries={"max_attempts": 1, "mode": "standard"}),
        **FAKE_AWS,
    )

    def before_send(request: Any, **_: Any) -> None:
        body = request.body or b""
        body = body.encode() if isinstance(body, str) else bytes(body)
        split = urlsplit(request.url)
        headers = {k.lower(): v for k, v in request.headers.items()}
        ctx.http.append(
            {
                "method": request.method,
                "path": split.path + (f"?{split.query}" if split.query else ""),
                "request_body_bytes": len(body),
                "request_body_sha256": sha256(body),
                "request_headers": sorted(headers),
                "sigv4": {
                    "authorization": as_text(headers.get("authorization")),
                    "x-amz-security-token": as_text(headers.get("x-amz-security-token")),
                    "x-amz-date": as_text(headers.get("x-amz-date")),
                },
            }
        )

    session = client._endpoint.http_session  # botocore's URLLib3Session
    send = session.send

    def recording_send(request: Any) -> Any:
        """The response as botocore's urllib3 session returned it: status, version."""
        response = send(request)
        rec = ctx.http[-1]
        rec["status"] = response.status_code
        version = getattr(response.raw, "version", 0)  # urllib3: 10, 11
        rec["http_version"] = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(version, str(version))
        rec["response_content_type"] = response.headers.get("content-type")
        return response

    session.send = recording_send
    client.meta.events.register("before-send.bedrock-runtime.*", before_send)
    return client


def as_text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def boto_meta(resp: dict[str, Any]) -> dict[str, Any]:
    meta = resp["ResponseMetadata"]
    return {"request_id": meta.get("RequestId"), "http_status": meta["HTTPStatusCode"]}


def model_id(rec: Recorded) -> str:
    return unquote(rec.path.split("/")[2])


def drive_bedrock(ctx: Ctx) -> dict[str, Any]:
    """Each reply's operation, as the recorded path names it, through boto3's own method."""
    operations: dict[str, tuple[str, Callable[[Any, dict[str, Any]], dict[str, Any]]]] = {
        "converse": ("converse", bedrock_converse),
        "converse-stream": ("converse_stream", bedrock_converse_stream),
        "invoke": ("invoke_model", bedrock_invoke),
        "invoke-with-response-stream": (
            "invoke_model_with_response_stream",
            bedrock_invoke_stream,
        ),
    }
    client = bedrock_client(ctx)
    for rec in ctx.replies:
        label, fn = operations[rec.path.rsplit("/", 1)[1]]
        if rec.path.endswith(("/converse", "/converse-stream")):
            params = {"modelId": model_id(rec), **rec.request_json}
        else:
            assert rec.request_body is not None
            params = {"modelId": model_id(rec), "body": rec.request_body}
        run_call(ctx, label, fn, client, params)
    client.close()
    return {"sdk": "boto3.client('bedrock-runtime', endpoint_url, verify=CA)"}


def bedrock_converse(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    resp = client.converse(**params)
    return {
        **boto_meta(resp),
        "model_id": params["modelId"],
        "output": dump(resp["output"]),
        "stop_reason": resp["stopReason"],
        "usage": resp["usage"],
        "metrics": resp.get("metrics"),
    }


def bedrock_converse_stream(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The events boto3 decoded, in order, and the message they make: content blocks by
    index (text concatenated; toolUse input strings joined, then parsed when there are any),
    role, stop reason, usage, metrics; any other event kept whole."""
    resp = client.converse_stream(**params)
    events: list[str] = []
    blocks: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for event in resp["stream"]:
        ((kind, body),) = event.items()
        events.append(kind)
        if kind == "contentBlockStart" and "toolUse" in body["start"]:
            blocks[body["contentBlockIndex"]] = {"toolUse": {**body["start"]["toolUse"]}}
        elif kind == "contentBlockDelta":
            block = blocks.setdefault(body["contentBlockIndex"], {})
            delta = body["delta"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "toolUse" in delta:
                tool = block["toolUse"]
                tool["input"] = tool.get("input", "") + delta["toolUse"]["input"]
        elif kind == "messageStart":
            out["role"] = body["role"]
        elif kind == "messageStop":
            out["stop_reason"] = body["stopReason"]
        elif kind == "metadata":
            out["usage"] = body.get("usage")
            out["metrics"] = body.get("metrics")
        elif kind != "contentBlockStop":
            out.setdefault("other_events", []).append({kind: dump(body)})
    for block in blocks.values():
        if block.get("toolUse", {}).get("input"):
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    return {
        **boto_meta(resp),
        "model_id": params["modelId"],
        "events": events,
        "content": [blocks[i] for i in sorted(blocks)],
        **out,
    }


def bedrock_invoke(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    resp = client.invoke_model(**params)
    body = resp["body"].read()
    return {
        **boto_meta(resp),
        "model_id": params["modelId"],
        "content_type": resp.get("contentType"),
        "body_bytes": len(body),
        "body_sha256": sha256(body),
        "body": json.loads(body),
    }


def bedrock_invoke_stream(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    resp = client.invoke_model_with_response_stream(**params)
    chunks = []
    for event in resp["body"]:
        ((kind, body),) = event.items()
        if kind == "chunk":
            chunks.append(json.loads(body["bytes"]))
        else:
            chunks.append({"event": kind, "body": dump(body)})
    return {
        **boto_meta(resp),
        "model_id": params["modelId"],
        "content_type": resp.get("contentType"),
        "chunk_types": [c.get("type", c.get("event")) for c in chunks],
        **anthropic_assembled(chunks),
    }


def anthropic_assembled(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """An Anthropic Messages stream (the chunks boto3 decoded) put together: message id and
    model, content blocks (text concatenated, tool input JSON joined and parsed), stop
    reason, usage, and Bedrock's invocation metrics."""
    out: dict[str, Any] = {"content": []}
    usage: dict[str, Any] = {}
    for c in chunks:
        kind = c.get("type")
        if kind == "message_start":
            msg = c["message"]
            out["message_id"], out["model"] = msg.get("id"), msg.get("model")
            usage.update(msg.get("usage") or {})
        elif kind == "content_block_start":
            out["content"].append(dict(c["content_block"]))
        elif kind == "content_block_delta":
            block, delta = out["content"][c["index"]], c["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                block["input_json"] = block.get("input_json", "") + delta["partial_json"]
        elif kind == "message_delta":
            out["stop_reason"] = c["delta"].get("stop_reason")
            usage.update(c.get("usage") or {})
        if "amazon-bedrock-invocationMetrics" in c:
            out["invocation_metrics"] = c["amazon-bedrock-invocationMetrics"]
    for block in out["content"]:
        joined = block.pop("input_json", "")
        if joined:  # else the input stays what content_block_start said
            block["input"] = json.loads(joined)
    out["usage"] = usage
    return out


# =========================================================================== ollama


def drive_ollama(ctx: Ctx) -> dict[str, Any]:
    ollama = importlib.import_module("ollama")
    client = ollama.Client(host=ctx.base, event_hooks=httpx_hooks(ctx))
    with client:
        for rec in ctx.replies:
            run_call(ctx, "chat", ollama_chat, client, rec.request_json)
    return {"sdk": "ollama.Client(host)"}


def ollama_chat(client: Any, req: dict[str, Any]) -> dict[str, Any]:
    """``client.chat`` with the recorded request's model, messages and options; a stream's
    chunks put together (content concatenated, tool calls in order, the last chunk's
    done / done_reason / counts / durations)."""
    keys = ("tools", "format", "options", "keep_alive")
    kwargs = {k: req[k] for k in keys if req.get(k)}
    model, messages = req["model"], req["messages"]
    if not req.get("stream", True):
        whole = client.chat(model=model, messages=messages, stream=False, **kwargs)
        return {"stream": False, **ollama_facts(whole)}
    chunks = [
        ollama_facts(r) for r in client.chat(model=model, messages=messages, stream=True, **kwargs)
    ]
    last = chunks[-1] if chunks else {}
    return {
        "stream": True,
        "chunk_count": len(chunks),
        "assembled": {
            "content": "".join(c["content"] or "" for c in chunks),
            "tool_calls": [t for c in chunks for t in c["tool_calls"]],
            **{k: v for k, v in last.items() if k not in ("content", "tool_calls")},
        },
    }


def ollama_facts(r: Any) -> dict[str, Any]:
    msg = r.message
    return {
        "model": r.model,
        "created_at": r.created_at,
        "role": msg.role,
        "content": msg.content,
        "thinking": msg.thinking,
        "tool_calls": [dump(t) for t in msg.tool_calls or []],
        "done": r.done,
        "done_reason": r.done_reason,
        "prompt_eval_count": r.prompt_eval_count,
        "eval_count": r.eval_count,
        "total_duration": r.total_duration,
        "load_duration": r.load_duration,
        "prompt_eval_duration": r.prompt_eval_duration,
        "eval_duration": r.eval_duration,
    }


# =========================================================================== the cases


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    summary: str
    cassettes: tuple[str, ...]
    driver: Callable[[Ctx], dict[str, Any]]
    tls: bool = True
    errors: bool = False  # every call answered with an error the SDK raises


CASES: tuple[Case, ...] = (
    Case(
        "gemini_generate_tls13_h1",
        18741,
        "google-genai models.generate_content, TLS 1.3 + HTTP/1.1: a tool loop of two calls, "
        "each answered by a functionCall (get_user_country with no args, then final_result "
        "with args)",
        (f"{PYD_GOOGLE}/test_google_tool_output.yaml",),
        drive_gemini_generate,
    ),
    Case(
        "gemini_stream_tls13_h1",
        18742,
        "google-genai models.generate_content_stream (alt=sse, CRLF events), TLS 1.3 + "
        "HTTP/1.1: a tool loop of three streamed calls (functionCall get_capital, functionCall "
        "get_temperature, text in two chunks)",
        (f"{PYD_GOOGLE}/test_google_model_iter_stream.yaml",),
        drive_gemini_stream,
    ),
    Case(
        "gemini_stream_tls13_h2",
        18743,
        "google-genai models.generate_content_stream over HTTP/2 (httpx http2=True through "
        "http_options.client_args), TLS 1.3: gemini-3-pro-preview functionCall with a "
        "thoughtSignature, then the answer in three chunks (history carries the signature)",
        (f"{PYD_GOOGLE}/test_google_streaming_tool_call_thought_signature.yaml",),
        lambda ctx: drive_gemini_stream(ctx, http2=True),
    ),
    Case(
        "bedrock_converse_tls13",
        18744,
        "boto3 bedrock-runtime converse (amazon.nova-micro-v1:0), TLS 1.3 + HTTP/1.1, SigV4 "
        "with fake credentials and a session token: toolUse for two cities, then the answer "
        "after the toolResults",
        (f"{OTEL_BOTO}/test_converse_tool_call_with_content.yaml",),
        drive_bedrock,
    ),
    Case(
        "bedrock_converse_stream_tls13",
        18745,
        "boto3 bedrock-runtime converse_stream (amazon.nova-micro-v1:0), TLS 1.3 + HTTP/1.1: "
        "AWS event-stream frames (messageStart, contentBlockStart/Delta/Stop, messageStop, "
        "metadata) with toolUse, then the answer after the toolResults",
        (f"{OTEL_BOTO}/test_converse_stream_with_content_tool_call.yaml",),
        drive_bedrock,
    ),
    Case(
        "bedrock_invoke_tls13",
        18746,
        "boto3 bedrock-runtime invoke_model with an Anthropic Messages body "
        "(us.anthropic.claude-3-5-sonnet-20240620-v1:0), TLS 1.3 + HTTP/1.1: tool_use, then "
        "the answer after the tool_result",
        (f"{OTEL_BOTO}/test_invoke_model_with_content_tool_call[anthropic.claude].yaml",),
        drive_bedrock,
    ),
    Case(
        "bedrock_invoke_stream_tls13",
        18747,
        "boto3 bedrock-runtime invoke_model_with_response_stream, Anthropic on Bedrock, TLS "
        "1.3 + HTTP/1.1: event-stream chunk frames whose base64 bytes are Anthropic stream "
        "events (tool_use with input_json_delta), then the answer after the tool_result",
        (
            f"{OTEL_BOTO}/test_invoke_model_with_response_stream_with_content_tool_call"
            "[anthropic.claude].yaml",
        ),
        drive_bedrock,
    ),
    Case(
        "gemini_vertex_errors_tls13_h1",
        18749,
        "google-genai in Vertex AI mode (a fake OAuth2 access token as Authorization: Bearer), "
        "TLS 1.3 + HTTP/1.1: generate_content answered 400 INVALID_ARGUMENT (temperature 1000), "
        "then 404 NOT_FOUND (unknown publisher model); the SDK raises ClientError",
        (
            f"{VERTEX}/test_generate_content_invalid_temperature.yaml",
            f"{VERTEX}/test_generate_content_missing_model.yaml",
        ),
        lambda ctx: drive_gemini_generate(ctx, vertex=True),
        errors=True,
    ),
    Case(
        "bedrock_errors_tls13",
        18750,
        "boto3 bedrock-runtime converse and converse_stream with an unknown model id, TLS 1.3 "
        "+ HTTP/1.1: both answered 400 with x-amzn-ErrorType ValidationException and a JSON "
        "message; boto3 raises ValidationException",
        (
            f"{OTEL_BOTO}/test_converse_with_invalid_model.yaml",
            f"{OTEL_BOTO}/test_converse_stream_with_invalid_model.yaml",
        ),
        drive_bedrock,
        errors=True,
    ),
    Case(
        "ollama_chat_ndjson",
        18748,
        "ollama Python client chat over cleartext HTTP/1.1: a streamed /api/chat "
        "(application/x-ndjson, done_reason stop), then a non-streamed /api/chat whose "
        "history holds the assistant's tool_calls and the tool's result",
        (
            f"{OLLAMA_CHAT}/test_chat/test_ollama_streaming_chat_legacy.yaml",
            f"{OLLAMA_CHAT}/test_chat/test_ollama_chat_tool_calls_legacy.yaml",
        ),
        drive_ollama,
        tls=False,
    ),
)


def check_exchanges(case: Case, ctx: Ctx) -> list[str]:
    """What went wrong between the client's records and the stub's replies (empty: none)."""
    problems: list[str] = []
    if len(ctx.http) != len(ctx.replies):
        problems.append(f"{len(ctx.http)} client exchanges for {len(ctx.replies)} replies")
    for rec, rep in zip(ctx.http, ctx.replies, strict=False):
        if rec.get("status") != rep.status:
            problems.append(f"{rec['path']}: status {rec.get('status')} != {rep.status}")
        if urlsplit(rec["path"]).path != rep.path:
            problems.append(f"path {rec['path']} is not the recorded {rep.path}")
    if case.errors:
        problems += [f"{c['call']}: no error" for c in ctx.calls if "error" not in c]
    else:
        problems += [f"{c['call']}: {c['error']}" for c in ctx.calls if "error" in c]
    return problems


def run_case(case: Case, tcpdump: str, certs: dict[str, Path], tmp: Path) -> dict[str, Any]:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    replies = [r for path in case.cassettes for r in load_recorded(path)]
    spec = stub_spec(replies, case.port)
    if case.tls:
        spec["certfile"] = str(certs["ecdsa"])
        spec["keyfile"] = str(certs["ecdsa_key"])
    log_path = tmp / f"{case.name}.server.log"
    server = genlib.start_serve_process(
        sys.executable, SCRIPT, spec, tmp / f"{case.name}.spec.json", log_path
    )
    ctx = Ctx(case.name, case.port, case.tls, certs["ecdsa"] if case.tls else None, replies)
    pcap = folder / "capture.pcap"
    capture = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    env = {"SSLKEYLOGFILE": str(keylog), "SSL_CERT_FILE": str(certs["ecdsa"])}
    client_error = None
    result: dict[str, Any] = {}
    try:
        genlib.wait_listening(case.port, server)
        capture.start()
        t0 = time.time()
        with patched_environ(env if case.tls else {}):
            try:
                result = case.driver(ctx)
            except Exception as exc:  # noqa: BLE001 - recorded in run.json, the case fails
                client_error = "".join(traceback.format_exception(exc))[-3000:]
        t1 = time.time()
        counters = capture.stop(linger=0.7)
    finally:
        server_rc = genlib.stop_process(server)
    problems = check_exchanges(case, ctx)
    size = pcap.stat().st_size
    exchanges = [
        {**rec, "stub": rep.stub_facts()} for rec, rep in zip(ctx.http, replies, strict=False)
    ]
    truth: dict[str, Any] = {
        "capture": case.name,
        "made_by": MADE_BY,
        "description": case.summary,
        "port": case.port,
        "base_url": ctx.base,
        "server": "hypercorn stub replaying corpus responses in order "
        "(scripts/make_vendor_captures.py --serve)",
        "client": result.get("sdk"),
        "client_started": round(t0, 6),
        "client_ended": round(t1, 6),
        "http_exchange_count": len(exchanges),
        "http_exchanges": exchanges,
        "sdk_calls": ctx.calls,
    }
    if case.tls:
        truth["server_certificate"] = "self-signed ECDSA P-256, SAN IP:127.0.0.1 (thrown away)"
    if case.name.startswith("gemini_vertex"):
        truth["fake_credentials"] = {"authorization_bearer": FAKE_VERTEX_TOKEN}
    elif case.name.startswith("gemini"):
        truth["fake_credentials"] = {"x-goog-api-key": FAKE_GEMINI_KEY}
    if case.name.startswith("bedrock"):
        truth["fake_credentials"] = dict(FAKE_AWS)
    run = {
        "name": case.name,
        "port": case.port,
        "tls": case.tls,
        "client_error": client_error,
        "problems": problems,
        "server_rc": server_rc,
        "server_log_tail": log_path.read_text(errors="replace")[-1500:] or None,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": size,
        "keylog_labels": genlib.keylog_labels(keylog) if case.tls else None,
        "stub_bodies": [
            {"body_sha256": r.stub_facts()["body_sha256"], "body_bytes": len(r.body)}
            for r in replies
        ],
        "software": software(),
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {size:,} bytes, {run['packets']} packets, {len(exchanges)} exchanges, "
        f"keylog {run['keylog_labels']}, tcpdump {counters}"
    )
    if client_error or problems:
        genlib.log(f"{case.name}: {client_error or ''} {problems}")
        raise genlib.ToolError(f"{case.name}: the client failed or disagreed with the stub")
    if case.tls and not run["keylog_labels"]:
        raise genlib.ToolError(f"{case.name}: the client wrote no key log")
    if size > SIZE_LIMIT:
        genlib.log(f"warning: {case.name} is {size:,} bytes, over {SIZE_LIMIT:,}")
    return run


@contextlib.contextmanager
def patched_environ(values: dict[str, str]) -> Any:
    """``os.environ`` with ``values`` set (and the AWS config files and instance metadata
    turned off, so that boto3 reads nothing but the fake credentials it is given)."""
    values = {
        **values,
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# =========================================================================== README


README_INTRO = """\
## Vendor SDK captures: Gemini, Bedrock, Ollama

Made by `scripts/make_vendor_captures.py` (run it again to remake them, or `--only NAME`): the
vendors' own SDKs on loopback, in the venv `scripts/.venv-vendors` (python3.11; google-genai
3.6.1, boto3 1.44.8, ollama 0.6.3, httpx 0.28.1 with h2, hypercorn 0.18.0). The server is a
hypercorn stub that answers the n-th request with the n-th response of a corpus cassette
(`../shared/corpus`; which one is in each `truth.json`): the recorded status, the vendor's
response headers (framing, date, cookies, alt-svc left out), the body byte for byte (one SSE
event, NDJSON line or AWS event-stream frame a piece, 5 ms apart; `Content-Length` from the
body sent). The SDK calls are rebuilt from the cassettes' recorded requests, so the SDKs send
what they sent when the cassettes were made: tool loops. tcpdump on `lo` captured each case's
port only, with nothing dropped. TLS cases: TLS 1.3, a throwaway self-signed ECDSA certificate
for 127.0.0.1, and `keys.log` written by the SDK's own SSL context through `SSLKEYLOGFILE`.
`truth.json` is from the client side only: `http_exchanges` (method, path, HTTP version,
status, request body size and SHA-256, TLS version, cipher, ALPN, client port where httpx says
them; for boto3 the SigV4 headers it signed; `stub` the cassette, interaction and the SHA-256
of the body the stub sent) and `sdk_calls`, what the SDK parsed from its own returned objects
(text, function / tool calls with arguments, finish / stop reasons, usage, ids, model
versions, errors). Fake credentials (in `truth.json`): a Gemini API key sent as
`x-goog-api-key`, a Vertex OAuth2 access token sent as `Authorization: Bearer`, and for
Bedrock `AKIDEXAMPLE` with a secret and a session token (SigV4 `Authorization`,
`X-Amz-Security-Token`). Each driver closes its SDK client at the end, so every connection
ends inside the capture.

| capture | size | what happened |
|---|---|---|
"""


README_NOTES = """
Things worth knowing (what the clients recorded in these runs):
- `gemini_generate_tls13_h1`: the cassette (pydantic-ai) holds the responses as `parsed_body`
  only, so the stub's bodies are `json.dumps` of them (`body_origin` in the truth), not the
  service's own bytes; the other Gemini bodies are the recorded bytes (CRLF SSE events,
  `data: ` JSON whole, no `[DONE]`). The functionCalls carry no `id` (google-genai reports
  none), so a parser links them to the next request's functionResponse by name and order. A
  chunk holding only function calls has no text: the SDK's `text` is null, not "".
- `gemini_stream_tls13_h2`: google-genai's httpx client does HTTP/2 when given
  `http_options.client_args={"http2": True}`: ALPN h2, each call one stream of one connection.
  The first reply's functionCall has a `thoughtSignature` (1,055 bytes once base64-decoded);
  the second request's history sends it back, in the URL-safe base64 alphabet (`-`, `_`)
  where the service used the standard one (`+`, `/`): the same bytes, a different string (the
  cassette's own recorded request has it so too).
- Bedrock: boto3 signs with SigV4 (`Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/...`)
  and sends `X-Amz-Security-Token` (the fake session token); the model id is URL-encoded in
  the path (`amazon.nova-micro-v1%3A0`). botocore's urllib3 offers ALPN `http/1.1` only, and
  sends no SNI for an IP address; the stream responses are chunked. Converse-stream payloads
  carry the random padding field `p`; invoke-with-response-stream frames are `chunk` events
  whose `bytes` are base64 Anthropic stream events, the last (`message_stop`) with
  `amazon-bedrock-invocationMetrics`.
- `gemini_vertex_errors_tls13_h1`: google-genai in Vertex AI mode posts to
  `/v1/projects/fake-project/locations/us-central1/publishers/google/models/...:generateContent`
  with no query (the cassettes were recorded by the older Vertex SDK, which asked for
  `$alt=json;enum-encoding=int`) and `Authorization: Bearer <fake token>`. The error bodies are
  Google's `{"error": {code, message, status, details}}`; the SDK raises `ClientError` with
  that code, status and message.
- `bedrock_errors_tls13`: the 400s carry `x-amzn-ErrorType:
  ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/` and a body
  `{"message": ...}` (lower-case `message`); boto3 raises `ValidationException` with the
  request id from `x-amzn-RequestId`. converse_stream's error is a plain JSON 400, not an
  event stream. The corpus holds no event-stream `exception` frame (a modelStreamErrorException
  mid-stream): no capture has one.
- `ollama_chat_ndjson`: no cassette of the corpus holds an Ollama-native response carrying
  `tool_calls` (the tool-call cassettes hold them in the request history only), so the tool
  call is in the second request's `messages` (assistant `tool_calls` without ids, then a `tool`
  message) and the replies are text: an NDJSON stream ending `done: true, done_reason: stop`,
  and a JSON reply.
"""


def write_readme() -> None:
    rows = genlib.case_table_rows(CASES, CAPTURES_DIR)
    section = f"{README_BEGIN}\n{README_INTRO}" + "\n".join(rows) + "\n" + README_NOTES
    section += README_END + "\n"
    path = CAPTURES_DIR / "README.md"
    text = path.read_text() if path.exists() else ""
    if README_BEGIN in text and README_END in text:
        head, _, rest = text.partition(README_BEGIN)
        _, _, tail = rest.partition(README_END)
        text = head + section.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


# =========================================================================== main


def main() -> int:
    ap = genlib.case_arguments(__doc__, "capture", attempts_help="tries when a case fails")
    args = ap.parse_args()
    if args.serve:
        serve(json.loads(args.serve.read_text()))
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<30} port {case.port}  {case.summary}")
        return 0
    wanted = genlib.wanted_cases(ap, args.only, CASES, "capture")
    genlib.ensure_debian_commands("openssl")
    genlib.reexec_in_venv(SCRIPT, VENDORS_VENV, ensure_vendors_venv)
    tcpdump = genlib.ensure_tcpdump()
    warnings.simplefilter("ignore")
    logging.getLogger("google_genai").setLevel(logging.ERROR)  # .text on function calls warns
    with tempfile.TemporaryDirectory(prefix="agentshark-vendors-") as tmpdir:
        tmp = Path(tmpdir)
        certs = genlib.make_test_certs(tmp)
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, tcpdump, certs, tmp)
        )
    write_readme()
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
