"""vcrpy cassettes -> exchanges: bodies, headers, parsed_body, content coding, malformed items."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.vcr import read_vcr

DATA = Path(__file__).resolve().parent.parent / "data" / "documents"


def interaction(**changes: Any) -> dict[str, Any]:
    """A minimal vcrpy interaction; ``changes`` are dotted paths (``...`` deletes)."""
    item: dict[str, Any] = {
        "request": {
            "body": '{"model":"gpt-4o"}',
            "headers": {"Content-Type": ["application/json"], "Accept": ["*/*"]},
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions?stream=false",
        },
        "response": {
            "body": {"string": '{"id":"c1"}'},
            "headers": {"Content-Type": ["application/json"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = item
        for p in parents:
            node = node[p]
        if value is ...:
            del node[last]
        else:
            node[last] = value
    return item


def read(*items: Any, name: str = "c.yaml") -> list[Exchange | Diagnostic]:
    ids = itertools.count(1)
    return list(read_vcr({"interactions": list(items)}, name, 3, lambda: f"v{next(ids)}"))


def one(item: dict[str, Any]) -> Exchange:
    (x,) = read(item)
    assert isinstance(x, Exchange)
    return x


# --- the basic mapping ----------------------------------------------------------------------


def test_basic_interaction() -> None:
    x = one(interaction())
    assert (x.id, x.source, x.connection, x.transport, x.upgrade) == (
        "v1",
        3,
        None,
        "http/1.1",
        None,
    )
    assert x.diagnostics == [] and x.extras == {} and x.complete
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert req.method == "POST"
    assert req.url == "https://api.openai.com/v1/chat/completions?stream=false"
    assert req.target == "/v1/chat/completions?stream=false"
    assert req.version == resp.version == "HTTP/1.1"
    assert req.headers == [("Content-Type", "application/json"), ("Accept", "*/*")]
    assert req.body.data() == b'{"model":"gpt-4o"}'
    assert req.body.content_decoded is False
    assert (resp.status, resp.reason) == (200, "OK")
    assert resp.body.data() == b'{"id":"c1"}'
    assert resp.body.content_decoded is False
    # cassettes hold no times
    assert (req.started, req.ended, resp.started, resp.ended) == (None, None, None, None)
    assert req.complete and resp.complete


def test_ids_are_drawn_only_for_exchanges() -> None:
    out = read(interaction(), interaction(response__status=...), interaction())
    assert [o.id for o in out if isinstance(o, Exchange)] == ["v1", "v2"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("text \u2603", "text \u2603".encode()),
        (b"\x00\xff raw", b"\x00\xff raw"),
        (None, b""),
        ({"string": "in a mapping"}, b"in a mapping"),
        ({"string": b"\x1f\x8b"}, b"\x1f\x8b"),
        ({"string": None}, b""),
        ({}, b""),
        ("", b""),
    ],
)
def test_body_forms(body: Any, expected: bytes) -> None:
    x = one(interaction(request__body=body, response__body=body))
    assert x.request is not None and x.response is not None
    assert x.request.body.data() == expected
    assert x.response.body.data() == expected
    assert x.request.body.size == len(expected)


def test_missing_body_is_empty() -> None:
    x = one(interaction(request__body=..., response__body=...))
    assert x.request is not None and x.request.body.size == 0
    assert x.response is not None and x.response.body.size == 0 and x.complete


# --- headers --------------------------------------------------------------------------------


def test_header_forms() -> None:
    x = one(
        interaction(
            response__headers={
                "Set-Cookie": ["a=1", "b=2"],
                "X-Single": "one",
                "User-Agent": [b"Boto3/1.34"],
                "X-Latin": [b"caf\xe9"],
                "Content-Length": [11],
                "X-Empty": [],
            }
        )
    )
    assert x.response is not None
    assert x.response.headers == [
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("X-Single", "one"),
        ("User-Agent", "Boto3/1.34"),
        ("X-Latin", "caf\u00e9"),
        ("Content-Length", "11"),
    ]


def test_no_headers() -> None:
    x = one(interaction(request__headers=None, response__headers={}))
    assert x.request is not None and x.request.headers == []
    assert x.response is not None and x.response.headers == []


# --- content coding -------------------------------------------------------------------------

GZ = gzip.compress(b'{"id":"c1"}', mtime=0)


@pytest.mark.parametrize(
    ("headers", "body", "decoded"),
    [
        ({"Content-Encoding": ["gzip"]}, GZ, None),  # real gzip bytes
        ({"content-encoding": ["gzip"]}, '{"id":"c1"}', None),  # already decoded, header kept
        ({"Content-Encoding": ["br"]}, b"\x0b\x02\x80", None),
        ({"Content-Encoding": ["identity"]}, "x", False),
        ({}, GZ, False),
    ],
)
def test_content_encoding_makes_decoding_unknown(
    headers: dict[str, Any], body: Any, decoded: bool | None
) -> None:
    x = one(interaction(response__headers=headers, response__body={"string": body}))
    assert x.response is not None and x.response.body.content_decoded is decoded


# --- pydantic-ai parsed_body ----------------------------------------------------------------


def test_parsed_body_is_reserialized() -> None:
    request_json = {
        "model": "claude",
        "messages": [{"role": "user", "content": "Hi \u2603"}],
        "max_tokens": 5,
    }
    response_json = {"id": "msg_1", "stop_reason": None, "usage": {"input_tokens": 3}}
    x = one(
        interaction(
            request__body=...,
            request__parsed_body=request_json,
            response__body=...,
            response__parsed_body=response_json,
            response__headers={"Content-Encoding": ["gzip"]},
        )
    )
    assert x.request is not None and x.response is not None
    assert orjson.loads(x.request.body.data()) == request_json
    assert x.request.body.data() == orjson.dumps(request_json)  # key order kept
    assert orjson.loads(x.response.body.data()) == response_json
    assert x.response.body.content_decoded is True  # built from parsed JSON: not encoded
    assert x.extras["reserialized_body"] == ["request", "response"]
    (d,) = x.diagnostics
    assert (d.code, d.severity, d.location) == (
        "vcr.reserialized_body",
        "info",
        "interactions[0].request.parsed_body",
    )
    assert "request and response" in d.message


def test_parsed_body_of_one_side() -> None:
    x = one(interaction(response__body=..., response__parsed_body=[1, "two", None]))
    assert x.response is not None and x.response.body.data() == b'[1,"two",null]'
    assert x.request is not None and x.request.body.content_decoded is False
    assert x.extras["reserialized_body"] == ["response"]


def test_parsed_body_with_yaml_only_values() -> None:
    x = one(interaction(request__body=..., request__parsed_body={1: b"\x00\x01", "s": {3}}))
    assert x.request is not None
    assert orjson.loads(x.request.body.data()) == {"1": "AAE=", "s": [3]}


def test_parsed_body_that_is_not_json_is_malformed() -> None:
    (d,) = read(interaction(request__body=..., request__parsed_body={"big": 2**70}))
    assert isinstance(d, Diagnostic) and d.location == "interactions[0].request.parsed_body"


# --- status and versions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "reason"),
    [
        ({"code": 404, "message": "Not Found"}, 404, "Not Found"),
        ({"code": 200, "message": None}, 200, ""),
        ({"code": 200}, 200, ""),
        ({"code": "429", "message": "Too Many Requests"}, 429, "Too Many Requests"),
        (503, 503, ""),
    ],
)
def test_status_forms(status: Any, code: int, reason: str) -> None:
    x = one(interaction(response__status=status))
    assert x.response is not None and (x.response.status, x.response.reason) == (code, reason)


def test_early_httpx_cassette_format() -> None:
    # vcrpy's first httpx stubs wrote status_code, http_version and content
    item = interaction()
    item["response"] = {
        "status_code": 200,
        "http_version": "HTTP/2",
        "headers": {"content-type": "application/json"},
        "content": '{"id":"c1"}',
    }
    x = one(item)
    assert x.transport == "h2"
    assert x.request is not None and x.request.version == "HTTP/2"
    assert x.response is not None and x.response.status == 200
    assert x.response.body.data() == b'{"id":"c1"}'


def test_switching_protocols_sets_upgrade() -> None:
    x = one(
        interaction(
            response__status={"code": 101, "message": "Switching Protocols"},
            response__headers={"Upgrade": ["WebSocket"]},
        )
    )
    assert x.upgrade == "websocket"


# --- malformed interactions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "location"),
    [
        ({"request": ...}, "interactions[1].request"),
        ({"response": "nope"}, "interactions[1].response"),
        ({"request__method": ...}, "interactions[1].request.method"),
        ({"request__uri": 5}, "interactions[1].request.uri"),
        ({"request__uri": "http://[::1/"}, "interactions[1].request.uri"),
        ({"response__status": ...}, "interactions[1].response.status"),
        ({"response__status": [200]}, "interactions[1].response.status"),
        ({"response__status__code": ...}, "interactions[1].response.status.code"),
        ({"response__status__code": "OK"}, "interactions[1].response.status.code"),
        ({"response__status__code": 42}, "interactions[1].response.status.code"),
        ({"response__status__code": True}, "interactions[1].response.status.code"),
        ({"response__status__message": 3}, "interactions[1].response.status.message"),
        ({"request__headers": ["Host: a"]}, "interactions[1].request.headers"),
        ({"request__headers": {"Accept": [{"a": 1}]}}, "interactions[1].request.headers.Accept[0]"),
        ({"response__headers": {"X": None}}, "interactions[1].response.headers.X"),
        ({"request__body": 12}, "interactions[1].request.body"),
        ({"response__body": {"string": [1]}}, "interactions[1].response.body.string"),
    ],
)
def test_malformed_interaction_is_skipped_with_its_path(
    changes: dict[str, Any], location: str
) -> None:
    out = read(interaction(), interaction(**changes), interaction())
    assert [type(o) for o in out] == [Exchange, Diagnostic, Exchange]
    d = out[1]
    assert isinstance(d, Diagnostic)
    assert (d.code, d.location, d.severity) == ("vcr.malformed_interaction", location, "error")
    assert d.message.startswith(f"c.yaml: {location} ")
    assert d.message.endswith(": interaction skipped")


def test_interaction_that_is_not_a_mapping() -> None:
    (d,) = read("GET /")
    assert isinstance(d, Diagnostic) and d.location == "interactions[0]"


def test_interactions_missing() -> None:
    (d,) = read_vcr({}, "c.yaml", 0, lambda: "x")
    assert isinstance(d, Diagnostic) and d.code == "vcr.no_interactions"


def test_empty_cassette() -> None:
    assert read() == []


# --- from files -----------------------------------------------------------------------------


def test_yaml_cassette_with_binary_body_and_header() -> None:
    data = (DATA / "openai_gzip.yaml").read_bytes()
    kind, doc = classify_document(data, "openai_gzip.yaml")
    assert kind == "vcr"
    ids = itertools.count()
    first, second = read_vcr(doc, "openai_gzip.yaml", 0, lambda: str(next(ids)))
    assert isinstance(first, Exchange) and isinstance(second, Exchange)
    assert first.request is not None and first.response is not None
    assert first.request.target == "/v1/chat/completions?api-version=1"
    assert ("User-Agent", "Boto3/1.34 md/Botocore#1.34") in first.request.headers
    body = first.response.body
    assert body.content_decoded is None and body.data()[:2] == b"\x1f\x8b"
    assert orjson.loads(gzip.decompress(body.data()))["choices"][0]["message"]["content"] == "Hi"
    assert first.response.headers[1:] == [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]
    # decoded text under a Content-Encoding header: unknown, the decoder sniffs
    assert second.request is not None and second.request.body.size == 0
    assert second.response is not None and second.response.body.content_decoded is None
    assert second.response.body.data() == b'{"object":"list","data":[]}'


def test_json_cassette() -> None:
    kind, doc = classify_document((DATA / "cassette.json").read_bytes(), "cassette.json")
    assert kind == "vcr"
    (x,) = read_vcr(doc, "cassette.json", 0, lambda: "j1")
    assert isinstance(x, Exchange) and x.request is not None and x.response is not None
    assert x.request.headers == [
        ("Content-Type", "application/json"),
        ("Accept", "application/x-ndjson"),
    ]
    assert x.response.body.data() == b'{"done":false}\n{"done":true}\n'


# --- the fuzz invariant ---------------------------------------------------------------------

yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.integers(), children, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = [
    "request",
    "response",
    "request__body",
    "request__parsed_body",
    "request__headers",
    "request__method",
    "request__uri",
    "response__status",
    "response__status__code",
    "response__status__message",
    "response__headers",
    "response__body",
    "response__parsed_body",
    "response__http_version",
]


@given(st.dictionaries(st.sampled_from(FIELDS), yaml_values, max_size=4), yaml_values)
def test_any_interaction_gives_only_exchanges_and_diagnostics(
    changes: dict[str, Any], junk: Any
) -> None:
    item = interaction()
    for path, value in changes.items():
        try:
            _set(item, path, value)
        except (KeyError, TypeError):
            continue  # a parent was replaced by a non-mapping
    out = read(item, junk)
    assert len(out) == 2
    assert all(isinstance(o, Exchange | Diagnostic) for o in out)


def _set(item: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split("__")
    node = item
    for p in parents:
        node = node[p]
    node[last] = value
    return item
