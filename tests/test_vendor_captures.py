"""The vendor SDK captures of tests/data/captures (google-genai, boto3 ``bedrock-runtime``, the
ollama client on loopback against a stub replaying corpus responses; made by
scripts/make_vendor_captures.py) against the client's own record, truth.json.

At the exchange level: with the key log every connection decrypts and every exchange the
client's HTTP layer saw is there, in order, with its method, path, HTTP version, status and
request body (size and SHA-256), and a response body equal to the bytes the stub sent (the
SHA-256 in truth.json and run.json, which are the corpus cassette's bytes where the cassette
holds bytes); the stream framing cuts the body into as many events as the SDK parsed (SSE
chunks, AWS event-stream messages of the same types, NDJSON documents). Without the key log
the TLS captures stay encrypted with the ``tls.no_keys`` diagnostic. The fake credentials the
SDKs sent (SigV4 ``Authorization`` and ``X-Amz-Security-Token``, the Gemini API key) are in no
command's output in either format, and are there with ``--no-redact`` (so the check can fail).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from typing import Any

import pytest
import yaml

from agentshark.cli import main
from agentshark.framing import decode_stream
from agentshark.framing.events import EventStreamMessage, JsonDocument, SseEvent
from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from tests.helpers import CORPUS, ROOT, Collected

OWN = ROOT / "tests" / "data" / "captures"
MADE_BY = "scripts/make_vendor_captures.py"
NAMES = sorted(
    p.name
    for p in OWN.iterdir()
    if (p / "truth.json").exists()
    and json.loads((p / "truth.json").read_text())["made_by"] == MADE_BY
)
TLS_NAMES = [n for n in NAMES if (OWN / n / "keys.log").exists()]
WITH_CREDENTIALS = [
    n for n in NAMES if "fake_credentials" in json.loads((OWN / n / "truth.json").read_text())
]
EXPECTED = (
    "bedrock_converse_stream_tls13",
    "bedrock_converse_tls13",
    "bedrock_errors_tls13",
    "bedrock_invoke_stream_tls13",
    "bedrock_invoke_tls13",
    "gemini_generate_tls13_h1",
    "gemini_stream_tls13_h1",
    "gemini_stream_tls13_h2",
    "gemini_vertex_errors_tls13_h1",
    "ollama_chat_ndjson",
)


def load(name: str, what: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((OWN / name / what).read_text())
    return data


@functools.cache
def collected(name: str, *, keys: bool = True) -> Collected:
    from agentshark.pipeline import Options

    keylog = OWN / name / "keys.log"
    opts = Options(keylogs=[str(keylog)] if keys and keylog.exists() else [])
    return Collected([str(OWN / name / "capture.pcap")], opts)


def exchanges(name: str) -> list[Exchange]:
    return sorted(collected(name).exchanges, key=lambda e: e.started or 0.0)


def response_body(ex: Exchange) -> bytes:
    assert ex.response is not None
    decoded = decode_body(ex.response.body, header(ex.response.headers, "content-encoding"))
    return b"".join(p for _, p in decoded.pieces)


def request_body(ex: Exchange) -> bytes:
    assert ex.request is not None
    return b"".join(p for _, p in ex.request.body.pieces)


def test_every_case_is_there() -> None:
    assert tuple(NAMES) == EXPECTED
    for name in NAMES:
        run = load(name, "run.json")
        assert run["capture_complete"] and not run["problems"] and run["client_error"] is None


@pytest.mark.parametrize("name", NAMES)
def test_capture_decrypts_to_what_the_client_saw(name: str) -> None:
    truth, run = load(name, "truth.json"), load(name, "run.json")
    got = collected(name)
    assert all(not d for s in got.sources for d in s.diagnostics)
    for conn in got.connections:
        assert not conn.diagnostics
        if run["tls"]:
            assert conn.tls is not None and conn.tls["decrypted"] is True
            assert conn.tls["version"] == "TLS 1.3"
    client_port = {c.connection.id: c.connection.client[1] for c in got.connections}
    exs = exchanges(name)
    assert len(exs) == truth["http_exchange_count"] == len(run["stub_bodies"])
    for ex, want, stub in zip(exs, truth["http_exchanges"], run["stub_bodies"], strict=True):
        assert ex.request is not None and ex.response is not None and ex.complete
        assert (ex.request.method, ex.request.target) == (want["method"], want["path"])
        assert ex.response.status == want["status"] == want["stub"]["status"]
        version = "HTTP/2" if ex.transport == "h2" else ex.response.version
        assert version == want["http_version"]
        if "alpn" in want:  # httpx's record of the connection
            assert ex.connection is not None
            tls = next(c.tls for c in got.connections if c.connection.id == ex.connection)
            assert tls is not None and tls["alpn"] == want["alpn"]
        if "client_port" in want:
            assert ex.connection is not None and client_port[ex.connection] == want["client_port"]
        sent = request_body(ex)
        assert len(sent) == want["request_body_bytes"]
        assert hashlib.sha256(sent).hexdigest() == want["request_body_sha256"]
        body = response_body(ex)
        assert len(body) == want["stub"]["body_bytes"] == stub["body_bytes"]
        assert hashlib.sha256(body).hexdigest() == want["stub"]["body_sha256"]
        assert want["stub"]["body_sha256"] == stub["body_sha256"]
        assert header(ex.response.headers, "content-type") == want["response_content_type"]


@pytest.mark.parametrize("name", TLS_NAMES)
def test_tls_without_the_key_log_stays_encrypted(name: str) -> None:
    got = collected(name, keys=False)
    assert got.exchanges == []
    assert got.connections and all(c.protocol == "tls" for c in got.connections)
    for conn in got.connections:
        assert conn.tls is not None and conn.tls["decrypted"] is False
        assert [d.code for d in conn.diagnostics] == ["tls.no_keys"]
        assert conn.tls["version"] == "TLS 1.3"


@pytest.mark.parametrize("name", [n for n in TLS_NAMES if n.startswith("bedrock")])
def test_botocore_offers_http1_only(name: str) -> None:
    got = collected(name)
    assert [c.tls["alpn_offered"] for c in got.connections if c.tls] == [["http/1.1"]]
    assert all(ex.transport != "h2" for ex in got.exchanges)


def test_h2_case_is_one_connection_with_streams() -> None:
    exs = exchanges("gemini_stream_tls13_h2")
    assert {ex.transport for ex in exs} == {"h2"}
    assert len({ex.connection for ex in exs}) == 1
    assert [ex.stream for ex in exs] == [1, 3]
    truth = load("gemini_stream_tls13_h2", "truth.json")
    assert {x["alpn"] for x in truth["http_exchanges"]} == {"h2"}


def test_thought_signature_goes_back_in_the_other_base64_alphabet() -> None:
    """The service sends the thoughtSignature in standard base64, google-genai sends it back
    in the URL-safe alphabet: the same bytes, a different string."""
    first, second = exchanges("gemini_stream_tls13_h2")
    event = _framed(first, "sse")[0]
    got = json.loads(event.data)["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    history = json.loads(request_body(second))["contents"][1]["parts"][0]
    sent = history["thoughtSignature"]
    assert got != sent and ("+" in got or "/" in got) and not {"+", "/"} & set(sent)
    assert base64.b64decode(got) == base64.urlsafe_b64decode(sent)
    calls = load("gemini_stream_tls13_h2", "truth.json")["sdk_calls"]
    parts = calls[0]["chunks"][0]["candidates"][0]["parts"]
    assert parts[0]["thought_signature_bytes"] == len(base64.b64decode(got))


# -- the stub's bodies are the corpus's ---------------------------------------------------------


def _interaction(cassette: str, index: int) -> dict[str, Any]:
    """One interaction of a corpus cassette, read with PyYAML (not with agentshark's reader)."""
    with (CORPUS / cassette).open("rb") as f:
        doc = yaml.load(f, Loader=yaml.CSafeLoader)
    interaction: dict[str, Any] = doc["interactions"][index]
    return interaction


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not there")
@pytest.mark.parametrize("name", NAMES)
def test_stub_bodies_are_the_cassette_bytes(name: str) -> None:
    """Where the cassette holds the body itself, the stub sent exactly its bytes; where it
    holds only a parsed mapping, the body sent is that mapping as JSON."""
    for want in load(name, "truth.json")["http_exchanges"]:
        stub = want["stub"]
        response = _interaction(stub["cassette"], stub["interaction"])["response"]
        if stub["body_origin"] == "recorded bytes":
            body = response["body"]
            body = body.get("string") if isinstance(body, dict) else body
            recorded = body.encode() if isinstance(body, str) else body
            assert isinstance(recorded, bytes)
            assert hashlib.sha256(recorded).hexdigest() == stub["body_sha256"]
        else:
            sent = json.dumps(response["parsed_body"], ensure_ascii=False).encode()
            assert hashlib.sha256(sent).hexdigest() == stub["body_sha256"]


# -- stream framing against what the SDK parsed ---------------------------------------------------


def _framed(ex: Exchange, framing: str) -> list[Any]:
    assert ex.response is not None
    return [
        e
        for e in decode_stream(ex.response.body.pieces, framing)
        if isinstance(e, SseEvent | EventStreamMessage | JsonDocument)
    ]


@pytest.mark.parametrize("name", ["gemini_stream_tls13_h1", "gemini_stream_tls13_h2"])
def test_gemini_sse_events_are_the_sdk_chunks(name: str) -> None:
    calls = load(name, "truth.json")["sdk_calls"]
    for ex, call in zip(exchanges(name), calls, strict=True):
        events = _framed(ex, "sse")
        assert len(events) == len(call["chunks"])
        for event, chunk in zip(events, call["chunks"], strict=True):
            doc = json.loads(event.data)
            assert doc["responseId"] == chunk["response_id"]
            assert doc["modelVersion"] == chunk["model_version"]


def test_converse_stream_messages_are_the_sdk_events() -> None:
    name = "bedrock_converse_stream_tls13"
    calls = load(name, "truth.json")["sdk_calls"]
    for ex, call in zip(exchanges(name), calls, strict=True):
        messages = _framed(ex, "aws-eventstream")
        assert [m.event_type for m in messages] == call["events"]
        assert {m.message_type for m in messages} == {"event"}


def test_invoke_stream_chunks_are_the_sdk_chunks() -> None:
    name = "bedrock_invoke_stream_tls13"
    calls = load(name, "truth.json")["sdk_calls"]
    for ex, call in zip(exchanges(name), calls, strict=True):
        messages = _framed(ex, "aws-eventstream")
        assert [m.event_type for m in messages] == ["chunk"] * len(call["chunk_types"])
        types = [
            json.loads(base64.b64decode(json.loads(m.payload)["bytes"]))["type"] for m in messages
        ]
        assert types == call["chunk_types"]


def test_ollama_ndjson_documents_are_the_sdk_chunks() -> None:
    name = "ollama_chat_ndjson"
    stream, whole = load(name, "truth.json")["sdk_calls"]
    first, second = exchanges(name)
    docs = _framed(first, "ndjson")
    assert len(docs) == stream["chunk_count"]
    last = docs[-1].value()
    assert isinstance(last, dict)
    assert (last["done"], last["done_reason"]) == (True, stream["assembled"]["done_reason"])
    assert last["eval_count"] == stream["assembled"]["eval_count"]
    request = json.loads(request_body(second))
    assert [m["role"] for m in request["messages"]] == ["assistant", "tool"]
    assert request["messages"][0]["tool_calls"][0]["function"]["name"] == "get_current_weather"
    assert json.loads(response_body(second))["done_reason"] == whole["done_reason"]


# -- errors ------------------------------------------------------------------------------------


def test_gemini_errors_are_what_the_sdk_raised() -> None:
    name = "gemini_vertex_errors_tls13_h1"
    calls = load(name, "truth.json")["sdk_calls"]
    for ex, call in zip(exchanges(name), calls, strict=True):
        assert ex.response is not None and ex.request is not None
        assert "/publishers/google/models/" in ex.request.target
        error = json.loads(response_body(ex))["error"]
        want = call["error"]
        assert want["type"] == "ClientError"
        assert ex.response.status == error["code"] == want["code"]
        assert (error["status"], error["message"]) == (want["status"], want["message"])


def test_bedrock_errors_are_what_the_sdk_raised() -> None:
    name = "bedrock_errors_tls13"
    calls = load(name, "truth.json")["sdk_calls"]
    for ex, call in zip(exchanges(name), calls, strict=True):
        assert ex.response is not None
        want = call["error"]
        assert ex.response.status == want["http_status"] == 400
        errortype = header(ex.response.headers, "x-amzn-errortype")
        assert errortype is not None and errortype.split(":", 1)[0] == want["error"]["Code"]
        assert header(ex.response.headers, "x-amzn-requestid") == want["request_id"]
        assert json.loads(response_body(ex))["message"] == want["error"]["Message"]


# -- credentials ------------------------------------------------------------------------------


def credential_needles(name: str) -> list[str]:
    """What of the fake credentials must never be shown: the SigV4 signature of each request
    (and its first and last 10 hex digits), the access key id, the session token and its ends;
    the Gemini API key and its ends."""
    truth = load(name, "truth.json")
    found: set[str] = set()
    for secret in truth["fake_credentials"].values():
        if secret == truth["fake_credentials"].get("aws_secret_access_key"):
            continue  # never on the wire: it only makes the signature
        found |= {secret, secret[:10], secret[-10:]} if len(secret) > 20 else {secret}
    for ex in truth["http_exchanges"]:
        sigv4 = ex.get("sigv4")
        if sigv4:
            signature = sigv4["authorization"].rsplit("Signature=", 1)[1]
            found |= {signature, signature[:10], signature[-10:]}
            assert sigv4["x-amz-security-token"] == truth["fake_credentials"]["aws_session_token"]
    return sorted(found)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main([*argv, "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out + captured.err


def _inputs(name: str) -> list[str]:
    folder = OWN / name
    return [str(folder / "capture.pcap"), "--keylog", str(folder / "keys.log")]


@pytest.mark.parametrize("name", WITH_CREDENTIALS)
def test_no_view_shows_the_fake_credentials(capsys: pytest.CaptureFixture[str], name: str) -> None:
    needles = credential_needles(name)
    inputs = _inputs(name)
    commands = (["exchanges"], ["exchanges", "--events"], ["calls"], ["analyze"])
    outputs = [
        _cli(capsys, command[0], *inputs, *command[1:], "--format", fmt)
        for command in commands
        for fmt in ("text", "json")
    ]
    calls = json.loads(_cli(capsys, "calls", *inputs, "--format", "json"))["calls"]
    outputs += [
        _cli(capsys, "show", *inputs, "--call", call["id"], "--format", fmt)
        for call in calls
        for fmt in ("text", "json")
    ]
    leaked = sorted({n for out in outputs for n in needles if n in out})
    assert leaked == []
    report = json.loads(outputs[7])  # analyze --format json: every exchange is in it
    assert len(report["exchanges"]) == load(name, "truth.json")["http_exchange_count"]


@pytest.mark.parametrize("name", WITH_CREDENTIALS)
def test_the_credentials_are_on_the_wire(capsys: pytest.CaptureFixture[str], name: str) -> None:
    """With --no-redact the report shows them: the check above can fail."""
    out = _cli(capsys, "analyze", *_inputs(name), "--format", "json", "--no-redact")
    needles = credential_needles(name)
    assert needles and all(n in out for n in needles)


def test_sigv4_headers_are_redacted_not_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(capsys, "analyze", *_inputs("bedrock_converse_tls13"), "--format", "json")
    report = json.loads(out)
    for ex in report["exchanges"]:
        names = {k.lower(): v for k, v in ex["request"]["headers"]}
        assert names["authorization"].startswith("AWS4-HMAC-SHA256 [REDACTED")
        assert names["x-amz-security-token"].startswith("[REDACTED")
