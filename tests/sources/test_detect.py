"""Format sniffing and document classification: by content and shape, never by file name."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import orjson
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentshark.errors import Diagnostic, InputError, UnsupportedFormatError
from agentshark.model import Exchange
from agentshark.sources.detect import SNIFF_BYTES, classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.stdio import sniff_stdio
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

DATA = Path(__file__).resolve().parent.parent / "data" / "documents"
WHAT_WE_READ = (
    "agentshark reads pcap, pcapng, HAR 1.2, vcrpy cassettes, mitmproxy flow files, "
    "pydantic-ai WebSocket message logs and xAI gRPC cassettes, and MCP stdio transcripts"
)

# --- sniff_format --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (bytes.fromhex("d4c3b2a1 0200 0400") + bytes(56), "pcap"),  # little-endian, µs
        (bytes.fromhex("a1b2c3d4 0002 0004") + bytes(56), "pcap"),  # big-endian, µs
        (bytes.fromhex("4d3cb2a1 0200 0400") + bytes(56), "pcap"),  # little-endian, ns
        (bytes.fromhex("a1b23c4d 0002 0004") + bytes(56), "pcap"),  # big-endian, ns
        (bytes.fromhex("0a0d0d0a 1c000000 4d3c2b1a") + bytes(52), "pcapng"),
        (b'{"log": {"entries": []}}', "json"),
        (b"\xef\xbb\xbf \r\n\t[1, 2]", "json"),  # BOM and whitespace first
        (b"interactions:\n- request:\n    body: null\n", "text"),
        (b"STDIN: {}\nSTDOUT: {}\n", "text"),
        ("version: 1\n# caf\u00e9 \u2603".encode()[:-1], "text"),  # head cuts a character
        (b"\x1b[1mbold\x1b[0m transcript\n", "text"),
        (b"", "unknown"),
        (b" \n\t", "unknown"),
        (b"\x00\x01\x02\x03 binary", "unknown"),
        (b"\xff\xfe\x00\x00", "unknown"),
        (b"PK\x03\x04 zip", "unknown"),
    ],
)
def test_sniff_format(head: bytes, expected: str) -> None:
    assert sniff_format(head) == expected


def test_sniff_format_reads_the_corpus_captures_by_magic_not_by_extension() -> None:
    # The README warns: some .pcapng files are libpcap and some .pcap files are pcapng.
    if not (CORPUS / "manifest.jsonl").exists():
        pytest.skip("corpus not available")
    seen = set()
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["format"] != "pcap":
            continue
        with (CORPUS / entry["file"]).open("rb") as f:
            fmt = sniff_format(f.read(SNIFF_BYTES))
        expected = "pcapng" if entry["format_detail"].startswith("pcapng") else "pcap"
        assert fmt == expected, entry["file"]
        seen.add((fmt, Path(entry["file"]).suffix))
    assert ("pcapng", ".pcap") in seen  # the lying extension really is there


@given(st.binary(max_size=SNIFF_BYTES))
def test_sniff_format_takes_any_bytes(head: bytes) -> None:
    assert sniff_format(head) in {"pcap", "pcapng", "json", "text", "unknown"}


# --- classify_document: what we read ---------------------------------------------------------


def test_har_by_shape_whatever_the_name() -> None:
    data = (DATA / "chat_and_ws.har").read_bytes()
    kind, doc = classify_document(data, "recording.yaml")
    assert kind == "har"
    assert len(doc["log"]["entries"]) == 2


def test_yaml_cassette() -> None:
    kind, doc = classify_document((DATA / "openai_gzip.yaml").read_bytes(), "x.json")
    assert kind == "vcr"
    # the C loader turns !!binary into bytes
    assert doc["interactions"][0]["response"]["body"]["string"][:2] == b"\x1f\x8b"


def test_json_cassette() -> None:
    kind, doc = classify_document((DATA / "cassette.json").read_bytes(), "cassette.json")
    assert kind == "vcr"
    assert doc["interactions"][0]["request"]["method"] == "POST"


def test_cassette_with_no_interactions_is_a_vcr_cassette() -> None:
    assert classify_document(b"version: 1\ninteractions: []\n", "empty.xai.yaml").kind == "vcr"


def test_bom_is_ignored() -> None:
    data = b"\xef\xbb\xbf" + orjson.dumps({"log": {"entries": []}})
    assert classify_document(data, "x.har").kind == "har"


def test_interactions_with_some_malformed_items_are_still_a_cassette() -> None:
    # classify by the cassette's shape; the reader reports the bad item with its path
    data = b"interactions:\n- 42\n- request: {method: GET, uri: 'http://a/'}\n  response: {}\n"
    assert classify_document(data, "c.yaml").kind == "vcr"


# --- classify_document: recognized, not supported ---------------------------------------------


@pytest.mark.parametrize(
    ("data", "phrase"),
    [
        (
            b'{"id": "msg_1", "type": "message", "role": "assistant", "content": [],'
            b' "stop_reason": "end_turn"}',
            "response-only fixture",
        ),
        (b'{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}', "response-only fixture"),
        (b'{"id": "skill_1", "created_at": "2026-02-26T03:59:39Z"}', "response-only fixture"),
        (b'[{"candidates": []}, {"candidates": [], "usageMetadata": {}}]', "JSON array of"),
        (
            b'{"type":"response.created"}\n{"type":"response.completed"}\n',
            "one JSON event per line",
        ),
        (  # a truncated event among good ones: still a chunk file
            b'{"type":"a"}\n{"type":"b","x":{\n{"type":"c"}\n',
            "one JSON event per line",
        ),
        (
            b'{"status": 200, "headers": {"content-type": "text/plain"}, "body": "Hello"}',
            "recorded response ({status, headers, body}) without its request",
        ),
        (
            b'{"analysis_metadata": {}, "summary": {}, "data_timeline": []}',
            "agentsight eBPF",
        ),
    ],
)
def test_recognized_unsupported_shapes(data: bytes, phrase: str) -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        classify_document(data, "sample.file")
    message = str(info.value)
    assert message.startswith("sample.file ")
    assert phrase in message


# --- classify_document: not ours ------------------------------------------------------------


def test_a_websocket_message_log_is_read() -> None:
    data = b"interactions:\n- kind: message\n  direction: sent\n  data: {type: session.update}\n"
    assert classify_document(data, "log.yaml").kind == "wslog"


def test_other_json_names_both_formats() -> None:
    with pytest.raises(InputError) as info:
        classify_document(b'{"hello": "world"}', "x.json")
    assert type(info.value) is InputError
    assert str(info.value) == (
        "x.json is JSON but neither a HAR file (no log.entries) nor a VCR cassette (no "
        f"interactions): {WHAT_WE_READ}"
    )


@pytest.mark.parametrize(
    "data",
    [
        b"just: a mapping\n",
        b"- a\n- list\n",
        b"plain text, parsed by YAML as one string\n",
        b"log:\n  entries: 3\n",
    ],
)
def test_other_yaml_is_an_input_error(data: bytes) -> None:
    with pytest.raises(InputError, match=r"^notes\.md is YAML but neither a HAR file") as info:
        classify_document(data, "notes.md")
    assert type(info.value) is InputError


def test_json_syntax_error_names_line_and_column() -> None:
    with pytest.raises(InputError) as info:
        classify_document(b'{\n  "log": {\n    "entries": [,]\n  }\n}\n', "broken.har")
    assert type(info.value) is InputError
    assert str(info.value).startswith("broken.har is not valid JSON: line 3, column 17: ")


def test_yaml_syntax_error_names_line_column_and_expectation() -> None:
    data = b"interactions:\n- request:\n    uri: [unclosed\n  response: {}\n"
    with pytest.raises(InputError) as info:
        classify_document(data, "bad.yaml")
    message = str(info.value)
    assert message.startswith("bad.yaml is not valid YAML: line 4, column 11: ")
    assert "expected ',' or ']'" in message


@pytest.mark.parametrize(
    ("data", "phrase"),
    [
        (b"", "is empty"),
        (b" \n ", "is empty"),
        (b"\xff\xfe\xfd not utf-8", "UTF-8"),
        (b"interactions: 3\n", "not a list"),
        (b"interactions:\n- {foo: 1}\n", "none has a request and a response"),
        (b"--- 1\n--- 2\n", "not valid YAML"),
        (b"x: !!python/object:os.system ls\n", "not valid YAML"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
    ],
)
def test_input_errors(data: bytes, phrase: str) -> None:
    with pytest.raises(InputError) as info:
        classify_document(data, "f")
    assert type(info.value) is InputError
    assert str(info.value).startswith("f ")
    assert phrase in str(info.value)


@given(st.binary(max_size=300))
def test_classify_any_bytes_raises_only_input_errors(data: bytes) -> None:
    try:
        kind, doc = classify_document(data, "fuzz")
    except InputError:
        return
    assert kind in ("har", "vcr")
    assert isinstance(doc, dict)


# Documents built from the names the classifier and readers look at, so that fuzzing reaches
# past the first dictionary lookup.
KEYS = st.sampled_from(
    [
        "log",
        "entries",
        "interactions",
        "request",
        "response",
        "status",
        "code",
        "headers",
        "body",
        "string",
        "parsed_body",
        "method",
        "uri",
        "url",
        "content",
        "text",
        "kind",
        "direction",
        "request_sample",
        "data_timeline",
        "choices",
        "name",
        "value",
    ]
)
shaped_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=25,
)


@given(shaped_values, st.booleans())
def test_classify_and_read_any_document(value: object, as_yaml: bool) -> None:
    """Whatever the document, detection raises only InputError and the readers yield only
    exchanges and diagnostics."""
    data = yaml.safe_dump(value).encode() if as_yaml else orjson.dumps(value)
    try:
        kind, doc = classify_document(data, "fuzz")
    except InputError:
        return
    reader = read_har if kind == "har" else read_vcr
    for item in reader(doc, "fuzz", 0, lambda: "x"):
        assert isinstance(item, Exchange | Diagnostic)


# --- every shape of the corpus ---------------------------------------------------------------


@cache
def _corpus_examples() -> dict[str, str]:
    """The first corpus file of each manifest ``format_detail`` that is not a capture."""
    examples: dict[str, str] = {}
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["format"] != "pcap":
            examples.setdefault(entry["format_detail"], entry["file"])
    return examples


EXPECTED_BY_DETAIL = {
    "HAR 1.2": "har",
    "vcrpy": "vcr",
    "vcr (no interactions)": "vcr",
    "websocket message log": "wslog",
    "xAI gRPC": "xai",
    "response body only": "response-only fixture",
    "stream chunks": "one JSON event per line",
    "recorded response": "recorded response",
    "MCP stdio transcript": "stdio",
    "agentsight": "agentsight eBPF",
}


@pytest.mark.skipif(not (CORPUS / "manifest.jsonl").exists(), reason="corpus not available")
def test_one_corpus_example_of_every_shape() -> None:
    examples = _corpus_examples()
    for detail, file in examples.items():
        expected = next(v for k, v in EXPECTED_BY_DETAIL.items() if detail.startswith(k))
        data = (CORPUS / file).read_bytes()
        if expected == "stdio":  # read by sources.stdio, before classify_document
            assert sniff_stdio(data) == "stdio-goose", file
        elif expected in ("har", "vcr", "wslog", "xai"):
            assert classify_document(data, file).kind == expected, file
        else:
            with pytest.raises(UnsupportedFormatError, match=expected):
                classify_document(data, file)
    assert len(examples) >= len(EXPECTED_BY_DETAIL)
