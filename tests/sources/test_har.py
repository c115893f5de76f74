"""HAR 1.2 entries -> exchanges: fields, bodies, timings, custom fields, malformed entries."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.har import http_transport, http_version, read_har

DATA = Path(__file__).resolve().parent.parent / "data" / "documents"
T0 = datetime(2025, 1, 2, 2, 4, 5, 250000, tzinfo=UTC).timestamp()


def entry(**changes: Any) -> dict[str, Any]:
    """A minimal valid entry; ``changes`` replace top-level fields (None deletes)."""
    e: dict[str, Any] = {
        "startedDateTime": "2025-01-02T02:04:05.250Z",
        "time": 30,
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions?x=1&y=2",
            "httpVersion": "HTTP/1.1",
            "headers": [
                {"name": "Host", "value": "api.openai.com"},
                {"name": "Content-Type", "value": "application/json"},
            ],
            "postData": {"mimeType": "application/json", "text": '{"model":"gpt-4o"}'},
            "bodySize": 18,
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": 11, "mimeType": "application/json", "text": '{"id":"c1"}'},
            "bodySize": 11,
        },
        "timings": {"send": 1, "wait": 20, "receive": 9},
    }
    for key, value in changes.items():
        if value is None:
            e.pop(key, None)
        else:
            e[key] = value
    return e


def with_(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``base`` with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    e = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = e
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    key: Any = int(last) if isinstance(node, list) else last
    if value is ...:
        del node[key]
    else:
        node[key] = value
    return e


def read(*entries: Any, name: str = "t.har") -> list[Exchange | Diagnostic]:
    ids = itertools.count(1)
    return list(read_har({"log": {"entries": list(entries)}}, name, 7, lambda: f"x{next(ids)}"))


def one(e: dict[str, Any]) -> Exchange:
    (x,) = read(e)
    assert isinstance(x, Exchange)
    return x


def codes(x: Exchange) -> list[str]:
    return [d.code for d in x.diagnostics]


# --- the basic mapping ----------------------------------------------------------------------


def test_basic_entry() -> None:
    x = one(entry(connection="12"))
    assert (x.id, x.source, x.connection, x.transport) == ("x1", 7, "12", "http/1.1")
    assert x.tls is None and x.upgrade is None and x.diagnostics == []
    assert x.complete
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert req.method == "POST"
    assert req.url == "https://api.openai.com/v1/chat/completions?x=1&y=2"
    assert req.target == "/v1/chat/completions?x=1&y=2"
    assert req.version == "HTTP/1.1"
    assert req.headers == [("Host", "api.openai.com"), ("Content-Type", "application/json")]
    assert req.body.data() == b'{"model":"gpt-4o"}'
    assert req.body.pieces == [(T0, b'{"model":"gpt-4o"}')]
    assert req.body.content_decoded is False  # a request body is as sent
    assert req.body.transfer_bytes == 18
    assert (resp.status, resp.reason, resp.version) == (200, "OK", "HTTP/1.1")
    assert resp.headers == [("Content-Type", "application/json")]
    assert resp.body.data() == b'{"id":"c1"}'
    assert resp.body.content_decoded is True  # HAR content.text is decoded
    assert resp.body.transfer_bytes == 11
    assert req.complete and resp.complete


def test_ids_are_drawn_only_for_exchanges() -> None:
    out = read(entry(), {"request": 1}, entry())
    assert [o.id for o in out if isinstance(o, Exchange)] == ["x1", "x2"]


@pytest.mark.parametrize(
    ("given_version", "transport", "version"),
    [
        ("HTTP/1.1", "http/1.1", "HTTP/1.1"),
        ("http/1.1", "http/1.1", "HTTP/1.1"),
        ("HTTP/1.0", "http/1.0", "HTTP/1.0"),
        ("h2", "h2", "HTTP/2"),
        ("HTTP/2", "h2", "HTTP/2"),
        ("HTTP/2.0", "h2", "HTTP/2"),
        ("http/2.0", "h2", "HTTP/2"),
        ("h3", "h3", "HTTP/3"),
        ("HTTP/3", "h3", "HTTP/3"),
        ("SPDY/3.1", "spdy/3.1", "SPDY/3.1"),
        ("", "unknown", ""),
    ],
)
def test_versions(given_version: str, transport: str, version: str) -> None:
    assert (http_transport(given_version), http_version(given_version)) == (transport, version)
    e = with_(entry(), "request.httpVersion", given_version)
    x = one(with_(e, "response.httpVersion", given_version))
    assert x.transport == transport
    assert x.request is not None and x.request.version == version


def test_response_version_falls_back_to_the_request() -> None:
    x = one(with_(with_(entry(), "response.httpVersion", ""), "request.httpVersion", "h2"))
    assert x.response is not None and x.response.version == "HTTP/2"


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("https://h/", "/"),
        ("https://h", "/"),
        ("https://h/a/b?c=d%20e", "/a/b?c=d%20e"),
        ("https://h/a#frag", "/a"),
        ("http://[::1]:8080/x", "/x"),
    ],
)
def test_target_is_path_and_query(url: str, target: str) -> None:
    x = one(with_(entry(), "request.url", url))
    assert x.request is not None and (x.request.url, x.request.target) == (url, target)


def test_http2_pseudo_headers_are_kept() -> None:
    headers = [
        {"name": ":method", "value": "POST"},
        {"name": ":authority", "value": "api.anthropic.com"},
        {"name": ":path", "value": "/v1/messages"},
    ]
    x = one(with_(entry(), "request.headers", headers))
    assert x.request is not None
    assert x.request.headers[:2] == [(":method", "POST"), (":authority", "api.anthropic.com")]


@pytest.mark.parametrize(("connection", "expected"), [("", None), (None, None), (5, "5")])
def test_connection(connection: Any, expected: str | None) -> None:
    e = entry()
    e["connection"] = connection
    assert one(e).connection == expected


# --- bodies ---------------------------------------------------------------------------------


def test_base64_content_is_decoded() -> None:
    content = {
        "size": 4,
        "mimeType": "application/octet-stream",
        "text": "AAEC/w==",
        "encoding": "base64",
    }
    x = one(with_(entry(), "response.content", content))
    assert x.response is not None and x.response.body.data() == b"\x00\x01\x02\xff"
    assert x.response.complete


def test_base64_post_data_is_decoded() -> None:
    # pcap2har writes postData with "encoding": "base64"
    post = {
        "mimeType": "application/x-www-form-urlencoded",
        "text": "YT0xJmI9Mg==",
        "encoding": "base64",
    }
    x = one(with_(entry(), "request.postData", post))
    assert x.request is not None and x.request.body.data() == b"a=1&b=2"


def test_bad_base64_is_a_diagnostic() -> None:
    content = {"size": 3, "text": "A", "encoding": "base64"}
    x = one(with_(entry(), "response.content", content))
    assert codes(x) == ["har.bad_base64"]
    assert x.response is not None and x.response.body.size == 0 and not x.response.complete
    assert x.diagnostics[0].location == "log.entries[0].response.content.text"


def test_text_is_utf8() -> None:
    x = one(with_(entry(), "response.content.text", "caf\u00e9 \u2603"))
    assert x.response is not None and x.response.body.data() == "caf\u00e9 \u2603".encode()


def test_no_post_data_is_an_empty_body() -> None:
    for size in (0, -1, ...):  # no body sent, its size unknown, or not said
        e = with_(with_(entry(), "request.postData", ...), "request.bodySize", size)
        x = one(e)
        assert x.request is not None and x.request.body.pieces == [] and x.request.complete
        assert x.diagnostics == []


def test_body_sent_and_not_recorded_is_incomplete() -> None:
    """bodySize 18 and no postData: the request had a body that the file does not hold."""
    for post in (..., {"mimeType": "application/json"}):
        x = one(with_(entry(), "request.postData", post))
        assert x.request is not None and x.request.body.pieces == []
        assert not x.request.complete and not x.complete
        assert codes(x) == ["har.body_not_recorded"]
        assert x.diagnostics[0].location == "log.entries[0].request.postData"
        assert "18-byte body" in x.diagnostics[0].message


def test_post_params_without_text() -> None:
    params = [{"name": "q", "value": "1"}, {"name": "file", "fileName": "a.txt"}]
    post = {"mimeType": "multipart/form-data", "params": params}
    x = one(with_(entry(), "request.postData", post))
    assert x.extras["har_post_params"] == params
    assert codes(x) == ["har.post_params"]
    assert x.diagnostics[0].severity == "info"
    assert x.request is not None and x.request.body.size == 0
    assert not x.request.complete  # bodySize 18: the bytes sent are not here
    assert "18-byte request is marked incomplete" in x.diagnostics[0].message
    x = one(with_(with_(entry(), "request.postData", post), "request.bodySize", -1))
    assert x.request is not None and x.request.complete


def test_post_params_with_text_use_the_text() -> None:
    post = {
        "mimeType": "application/x-www-form-urlencoded",
        "text": "q=1",
        "params": [{"name": "q", "value": "1"}],
    }
    x = one(with_(entry(), "request.postData", post))
    assert x.request is not None and x.request.body.data() == b"q=1"
    assert "har_post_params" not in x.extras and x.diagnostics == []


def test_body_not_recorded() -> None:
    x = one(with_(entry(), "response.content", {"size": 5120, "mimeType": "text/event-stream"}))
    assert x.response is not None and not x.response.complete and not x.complete
    assert codes(x) == ["har.body_not_recorded"]
    assert "5120-byte body" in x.diagnostics[0].message


def test_empty_body_without_text_is_complete() -> None:
    x = one(with_(entry(), "response.content", {"size": 0, "mimeType": "x-unknown"}))
    assert x.response is not None and x.response.complete and x.diagnostics == []


def test_transfer_bytes() -> None:
    e = with_(entry(), "response.bodySize", -1)
    x = one(e)
    assert x.response is not None and x.response.body.transfer_bytes is None
    e["response"]["_transferSize"] = 300
    e["response"]["headersSize"] = 120
    x = one(e)
    assert x.response is not None and x.response.body.transfer_bytes == 180
    assert x.extras["_transferSize"] == 300
    x = one(with_(entry(), "request.bodySize", -1))
    assert x.request is not None and x.request.body.transfer_bytes is None


# --- timestamps -----------------------------------------------------------------------------


def test_timings() -> None:
    timings = {
        "blocked": 1.5,
        "dns": -1,
        "connect": 20,
        "ssl": 15,
        "send": 0.5,
        "wait": 998,
        "receive": 500.5,
    }
    x = one(entry(timings=timings, time=1520.5))
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert req.started == T0
    assert req.ended == pytest.approx(T0 + 0.022)  # ssl is inside connect: not counted twice
    assert resp.started == pytest.approx(T0 + 1.020)
    assert resp.ended == pytest.approx(T0 + 1.5205)
    assert x.started == T0
    assert resp.body.pieces[0][0] == resp.started


@pytest.mark.parametrize(
    "stamp",
    [
        "2025-01-02T02:04:05.250Z",
        "2025-01-02T03:04:05.250+01:00",
        "2025-01-01T21:04:05.25-05:00",
        "2025-01-02T02:04:05.250000000Z",
    ],
)
def test_started_date_time_forms(stamp: str) -> None:
    x = one(entry(startedDateTime=stamp))
    assert x.request is not None and x.request.started == pytest.approx(T0)


def test_naive_timestamp_is_read_as_utc() -> None:
    x = one(entry(startedDateTime="2025-01-02T02:04:05.250"))
    assert x.request is not None and x.request.started == pytest.approx(T0)
    assert codes(x) == ["har.naive_timestamp"]


@pytest.mark.parametrize("stamp", [None, "yesterday", 12])
def test_unreadable_timestamp(stamp: Any) -> None:
    x = one(entry(startedDateTime=stamp))
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert (req.started, req.ended, resp.started, resp.ended) == (None, None, None, None)
    assert codes(x) == ["har.bad_timestamp"]
    assert req.body.pieces[0][0] == 0.0


def test_missing_timings_use_time() -> None:
    x = one(entry(timings=None, time=1500))
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert (req.started, req.ended, resp.started) == (T0, None, None)
    assert resp.ended == pytest.approx(T0 + 1.5)


def test_unknown_wait_uses_time() -> None:
    # pcap2har writes wait/receive -1 when it could not tell them apart
    timings = {
        "blocked": 0,
        "connect": 0,
        "dns": 0,
        "receive": -1,
        "send": 0.0,
        "ssl": 0,
        "wait": -1,
    }
    x = one(entry(timings=timings, time=1070.1))
    resp = x.response
    assert resp is not None and resp.started is None
    assert resp.ended == pytest.approx(T0 + 1.0701)


def test_timings_of_the_wrong_type() -> None:
    x = one(entry(timings=[1, 2], time=None))
    assert codes(x) == ["har.bad_timings"]
    assert x.response is not None and x.response.ended is None


def test_non_numeric_timing_is_not_applicable() -> None:
    x = one(entry(timings={"send": "1", "wait": True, "receive": 3}, time=None))
    assert x.request is not None and x.request.ended == T0
    assert x.response is not None and x.response.started is None


# --- no response, upgrades, custom fields -----------------------------------------------------


def test_status_zero_means_no_response() -> None:
    e = with_(
        entry(),
        "response",
        {
            "status": 0,
            "statusText": "",
            "httpVersion": "",
            "headers": [],
            "content": {"size": 0, "text": ""},
        },
    )
    x = one(e)
    assert x.response is None and not x.complete
    assert x.request is not None and x.request.complete
    assert codes(x) == ["har.no_response"]
    assert x.diagnostics[0].location == "log.entries[0].response.status"


def test_websocket_entry_from_file() -> None:
    kind, doc = classify_document((DATA / "chat_and_ws.har").read_bytes(), "chat_and_ws.har")
    assert kind == "har"
    ids = itertools.count()
    first, ws = read_har(doc, "chat_and_ws.har", 0, lambda: str(next(ids)))
    assert isinstance(first, Exchange) and isinstance(ws, Exchange)
    assert first.transport == "h2" and first.connection == "4711"
    assert first.extras["serverIPAddress"] == "160.79.104.10"
    assert first.extras["_eventSourceMessages"] == [
        {
            "time": 1735783446.5,
            "eventName": "message_stop",
            "eventId": "",
            "data": '{"type":"message_stop"}',
        }
    ]
    assert "comment" not in first.extras
    assert first.response is not None
    assert first.response.body.data().startswith(b"event: message_stop\r\n")
    assert first.response.body.content_decoded is True  # despite content-encoding: gzip
    assert ws.upgrade == "websocket"
    assert ws.response is not None and ws.response.status == 101
    assert ws.extras["_resourceType"] == "websocket"
    assert "_webSocketMessages" not in ws.extras  # read into the exchange's messages
    assert ws.messages is not None
    kinds = [(r.message.direction, r.message.kind, r.message.payload) for r in ws.messages]
    assert kinds == [(0, "text", b'{"type":"session.update"}'), (1, "binary", b"\x00\x01\x02")]
    assert ws.request is not None and ws.request.url.startswith("wss://")
    assert ws.complete


def test_custom_fields_of_entry_and_response_are_kept_raw() -> None:
    e = entry(_priority="High", _initiator={"type": "script"}, _webSocketMessages=None)
    e["response"]["_fetchedViaServiceWorker"] = False
    e["request"]["comment"] = "ignored"
    x = one(e)
    assert x.extras == {
        "_priority": "High",
        "_initiator": {"type": "script"},
        "_fetchedViaServiceWorker": False,
    }


# --- malformed entries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "location"),
    [
        ("request", ..., "log.entries[1].request"),
        ("request", "GET /", "log.entries[1].request"),
        ("response", ..., "log.entries[1].response"),
        ("response.status", ..., "log.entries[1].response.status"),
        ("response.status", "200", "log.entries[1].response.status"),
        ("response.status", True, "log.entries[1].response.status"),
        ("request.method", 5, "log.entries[1].request.method"),
        ("request.url", ..., "log.entries[1].request.url"),
        ("request.url", "http://[::1/", "log.entries[1].request.url"),
        ("request.headers", {"Host": "a"}, "log.entries[1].request.headers"),
        ("request.headers.1", ["Host", "a"], "log.entries[1].request.headers[1]"),
        ("request.headers.1.value", 3, "log.entries[1].request.headers[1].value"),
        ("request.postData", "text", "log.entries[1].request.postData"),
        ("request.postData.text", {"a": 1}, "log.entries[1].request.postData.text"),
        ("response.content", [], "log.entries[1].response.content"),
        ("response.content.text", 5, "log.entries[1].response.content.text"),
        ("response.statusText", 5, "log.entries[1].response.statusText"),
        ("request.httpVersion", 1.1, "log.entries[1].request.httpVersion"),
    ],
)
def test_malformed_entry_is_skipped_with_its_path(path: str, value: Any, location: str) -> None:
    out = read(entry(), with_(entry(), path, value), entry())
    assert [type(o) for o in out] == [Exchange, Diagnostic, Exchange]
    diag = out[1]
    assert isinstance(diag, Diagnostic)
    assert (diag.code, diag.location, diag.severity) == ("har.malformed_entry", location, "error")
    assert diag.message.startswith(f"t.har: {location} ")
    assert diag.message.endswith(": entry skipped")


def test_entry_that_is_not_an_object() -> None:
    (d,) = read([1, 2])
    assert isinstance(d, Diagnostic) and d.location == "log.entries[0]"
    assert "is a list, expected an object" in d.message


def test_entries_missing() -> None:
    (d,) = read_har({"log": {}}, "t.har", 0, lambda: "x")
    assert isinstance(d, Diagnostic) and d.code == "har.no_entries"


def test_null_headers_and_content_are_tolerated() -> None:
    e = with_(with_(entry(), "request.headers", None), "response.content", None)
    x = one(e)
    assert x.request is not None and x.request.headers == []
    assert x.response is not None and x.response.body.size == 0


# --- the fuzz invariant ---------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = [
    "request",
    "response",
    "startedDateTime",
    "time",
    "timings",
    "connection",
    "request.method",
    "request.url",
    "request.httpVersion",
    "request.headers",
    "request.postData",
    "request.bodySize",
    "response.status",
    "response.headers",
    "response.content",
    "response.content.text",
    "response.content.encoding",
    "response.content.size",
    "response.bodySize",
    "timings.wait",
]


@given(st.lists(st.tuples(st.sampled_from(FIELDS), json_values), max_size=4), json_values)
def test_any_entry_gives_only_exchanges_and_diagnostics(
    changes: list[tuple[str, Any]], junk: Any
) -> None:
    e = entry()
    for path, value in changes:
        try:
            e = with_(e, path, value)
        except (KeyError, TypeError, IndexError, ValueError):
            continue  # a parent was replaced by a non-container
    out = read(e, junk)
    assert len(out) == 2
    assert all(isinstance(o, Exchange | Diagnostic) for o in out)
