"""What kind of input a file is, decided from its content, never from its name.

Two steps. :func:`sniff_format` looks at the first bytes only and tells captures (``pcap``,
``pcapng``) and mitmproxy flow files (``mitm``: tnetstrings, :mod:`agentshark.sources.mitm`)
from documents (``json``, ``text``). :func:`classify_document` parses a document
once and decides by its *shape* whether it is a HAR file, a vcrpy cassette, a pydantic-ai
WebSocket message log or a pydantic-ai xAI gRPC cassette, returning the parsed document with
its kind. Corpus file names lie (``.pcap`` files that are pcapng, JSON
fixtures named ``.txt``), shapes do not.

Shapes that are recognized but not read yet raise :class:`UnsupportedFormatError` saying
what the file is and what agentshark reads instead; anything else raises
:class:`InputError`.
"""

from __future__ import annotations

import codecs
import re
from typing import Any, Literal, NamedTuple

import orjson
import yaml

from agentshark.errors import InputError, UnsupportedFormatError
from agentshark.sources.mitm import is_flow_file
from agentshark.sources.pcap import MAGICS as PCAP_MAGICS
from agentshark.sources.xai_cassette import is_xai_cassette

SniffedFormat = Literal["pcap", "pcapng", "mitm", "json", "text", "unknown"]
DocumentKind = Literal["har", "vcr", "wslog", "xai"]

SNIFF_BYTES = 64
"""How many leading bytes :func:`sniff_format` wants (fewer only when the file is shorter)."""

_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"  # Section Header Block type, the same in both byte orders
_BOM = codecs.BOM_UTF8
_WHITESPACE = b" \t\r\n"
# C0 controls that never appear in a text document (tab, LF, VT, FF, CR and ESC may).
_BINARY_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")

_WHAT_WE_READ = (
    "agentshark reads pcap, pcapng, HAR 1.2, vcrpy cassettes, mitmproxy flow files, "
    "pydantic-ai WebSocket message logs and xAI gRPC cassettes, and MCP stdio transcripts"
)


class Document(NamedTuple):
    """A parsed document and what kind of source it is."""

    kind: DocumentKind
    doc: dict[str, Any]


def sniff_format(head: bytes) -> SniffedFormat:
    """The format of a file from its first bytes (pass at least :data:`SNIFF_BYTES`)."""
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    if head[:4] == _PCAPNG_MAGIC:
        return "pcapng"
    if is_flow_file(head):
        return "mitm"
    text = head.removeprefix(_BOM)
    stripped = text.lstrip(_WHITESPACE)
    if stripped[:1] in (b"{", b"["):
        return "json"
    if not stripped:
        return "unknown"
    try:
        # ``final=False``: the head may cut a multi-byte character in two.
        decoded = codecs.getincrementaldecoder("utf-8")().decode(text, final=False)
    except UnicodeDecodeError:
        return "unknown"
    if _BINARY_CONTROLS.search(decoded):
        return "unknown"
    return "text"


def classify_document(data: bytes, name: str) -> Document:
    """Parse a text or JSON document and say whether it is a HAR file or a VCR cassette.

    Raises :class:`UnsupportedFormatError` for shapes agentshark recognizes but does not
    read yet, :class:`InputError` for syntax errors and anything else.
    """
    text = data.removeprefix(_BOM)
    stripped = text.lstrip(_WHITESPACE)
    if not stripped:
        raise InputError(f"{name} is empty: {_WHAT_WE_READ}")
    if stripped[:1] in (b"{", b"["):
        return _classify(_load_json(text, name), name, "JSON")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{name} is neither a packet capture nor a UTF-8 text document "
            f"(byte {e.start} is not UTF-8): {_WHAT_WE_READ}"
        ) from None
    return _classify(_load_yaml(text, name), name, "YAML")


# --- parsing -------------------------------------------------------------------------------


def _load_json(text: bytes, name: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        error = e
    if _is_json_lines(text):
        raise UnsupportedFormatError(
            f"{name} holds one JSON event per line without SSE framing or a request (a "
            "stream-chunk fixture): agentshark reads streams inside whole exchanges; "
            f"{_WHAT_WE_READ}"
        )
    raise InputError(
        f"{name} is not valid JSON: line {error.lineno}, column {error.colno}: {error.msg}"
    ) from None


def _is_json_lines(text: bytes) -> bool:
    """One JSON value per line (a stream-chunk fixture), tolerating a minority of lines that
    do not parse: corpus fixtures hold hand-truncated events."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or any(line[:1] not in (b"{", b"[") for line in lines):
        return False
    parsed = 0
    for line in lines:
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        parsed += 1
    return parsed * 2 > len(lines)


def _load_yaml(text: bytes, name: str) -> Any:
    try:
        # CSafeLoader: libyaml's C parser, for speed on large cassettes; safe tags only,
        # ``!!binary`` becomes bytes.
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.MarkedYAMLError as e:
        where = ""
        mark = e.problem_mark or e.context_mark
        if mark is not None:
            where = f"line {mark.line + 1}, column {mark.column + 1}: "
        what = e.problem or "syntax error"
        if e.context:  # "while parsing a flow sequence", "expected a single document"...
            what = f"{e.context}, {what}"
        raise InputError(f"{name} is not valid YAML: {where}{what}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{name} is not valid YAML: {e}") from None
    except RecursionError:
        raise InputError(f"{name} is nested too deeply to be read as YAML") from None


# --- shapes --------------------------------------------------------------------------------

# Top-level keys of provider response bodies (OpenAI chat/responses/embeddings/images,
# Anthropic, Gemini, Bedrock Converse, Cohere, Vertex predictions, error envelopes...).
_RESPONSE_KEYS = frozenset(
    {
        "candidates",
        "choices",
        "content",
        "data",
        "embeddings",
        "error",
        "finish_reason",
        "model",
        "object",
        "output",
        "outputs",
        "predictions",
        "results",
        "steps",
        "stopReason",
        "stop_reason",
        "text",
        "usage",
        "usageMetadata",
    }
)


def _classify(doc: Any, name: str, syntax: str) -> Document:
    if isinstance(doc, dict):
        log = doc.get("log")
        if isinstance(log, dict) and isinstance(log.get("entries"), list):
            return Document("har", doc)
        if "interactions" in doc:
            return _classify_interactions(doc, name)
        _reject_known_mapping(doc, name)
    elif isinstance(doc, list) and doc and all(_looks_like_response(x) for x in doc):
        raise UnsupportedFormatError(
            f"{name} is a JSON array of provider response objects without requests (a "
            f"response-only fixture): {_WHAT_WE_READ}"
        )
    raise InputError(
        f"{name} is {syntax} but neither a HAR file (no log.entries) nor a VCR cassette "
        f"(no interactions): {_WHAT_WE_READ}"
    )


def _classify_interactions(doc: dict[str, Any], name: str) -> Document:
    items = doc["interactions"]
    if not isinstance(items, list):
        raise InputError(
            f"{name} has 'interactions' but it is a {type(items).__name__}, not a list: "
            "not a VCR cassette"
        )
    dicts = [x for x in items if isinstance(x, dict)]
    if any("kind" in x and "direction" in x for x in dicts):
        return Document("wslog", doc)  # pydantic-ai's WebSocket message logs
    if not items or any("request" in x and "response" in x for x in dicts):
        return Document("vcr", doc)
    if is_xai_cassette(dicts):
        return Document("xai", doc)  # pydantic-ai's xAI gRPC cassettes (sources.xai_cassette)
    raise InputError(
        f"{name} has interactions, but none has a request and a response: not a VCR "
        f"cassette; {_WHAT_WE_READ}"
    )


def _reject_known_mapping(doc: dict[str, Any], name: str) -> None:
    """Raise UnsupportedFormatError for the non-exchange mappings found in the corpus."""
    if isinstance(doc.get("data_timeline"), list):
        raise UnsupportedFormatError(
            f"{name} is an agentsight eBPF TLS-plaintext capture (post-processed JSON with "
            "data_timeline): agentshark does not read agentsight output yet; capture the "
            "traffic as pcapng with SSLKEYLOGFILE set instead"
        )
    if "request" in doc:
        return
    if isinstance(doc.get("status"), int) and "body" in doc and "headers" in doc:
        raise UnsupportedFormatError(
            f"{name} is a recorded response ({{status, headers, body}}) without its request: "
            f"agentshark reads whole exchanges; {_WHAT_WE_READ}"
        )
    if _looks_like_response(doc):
        raise UnsupportedFormatError(
            f"{name} looks like a provider response body saved on its own, without its "
            f"request or HTTP headers (a response-only fixture): agentshark reads whole "
            f"exchanges; {_WHAT_WE_READ}"
        )


def _looks_like_response(value: Any) -> bool:
    if not isinstance(value, dict) or "request" in value:
        return False
    if not _RESPONSE_KEYS.isdisjoint(value):
        return True
    # A created resource (file, skill, batch...): an id with its creation time.
    return "id" in value and ("created_at" in value or "created" in value)
