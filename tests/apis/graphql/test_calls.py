"""GraphQL over HTTP, hand-written exchanges: the shapes of the GraphQL-over-HTTP draft
(https://graphql.github.io/graphql-over-http/draft/) the Strawberry capture does not hold
(``application/graphql-response+json``, ``application/graphql`` bodies, streamed responses),
request errors, what is not GraphQL, and a fuzz invariant: any body gives a call or nothing,
never an exception."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.graphql.calls import operations_of
from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from agentshark.model import Exchange
from tests.helpers import http_exchange

URL = "http://tools.test/api"
HASH = "ab" * 32


def exchange(
    request: Any,
    response: Any,
    *,
    method: str = "POST",
    url: str = URL,
    status: int = 200,
    content_type: str = "application/graphql-response+json",
    request_type: str = "application/json",
    complete: bool = True,
) -> Exchange:
    body = request if isinstance(request, bytes) else orjson.dumps(request) if request else b""
    resp = response if isinstance(response, bytes) else orjson.dumps(response)
    return http_exchange(
        method=method,
        url=url,
        target="/" + url.split("/", 3)[-1],
        request_body=body,
        request_headers=[("content-type", request_type)],
        response_pieces=[(1.0, resp)],
        status=status,
        response_headers=[("content-type", content_type)],
        response_complete=complete,
    )


def call_of(x: Exchange) -> Call:
    call = recognize(x, "c1")
    assert call is not None and call.api == "graphql"
    return call


def test_graphql_response_media_type_and_request_error() -> None:
    # the draft: a request error is a 4xx with application/graphql-response+json, no data
    x = exchange(
        {"query": "query Q($id: ID!) { user(id: $id) { name } }", "variables": {"id": 7}},
        {"errors": [{"message": "Variable '$id' got invalid value 7"}]},
        status=400,
    )
    call = call_of(x)
    (op,) = operations_of(call)
    assert (op["type"], op["name"], op["variables"]) == ("query", "Q", {"id": 7})
    assert "data" not in op and op["partial"] is False
    assert call.error is not None
    assert (call.error.status, call.error.type) == (400, "graphql")
    assert call.extras["graphql"]["response_media_type"] == "application/graphql-response+json"
    assert call.complete


def test_application_graphql_body() -> None:
    x = exchange(
        b'mutation { addNote(text: "hi") { id } }',
        {"data": {"addNote": {"id": "1"}}},
        request_type="application/graphql",
    )
    call = call_of(x)
    assert call.operation == "mutation"
    assert call.extras["graphql"]["transport"] == "post-graphql"
    assert operations_of(call)[0]["root_fields"] == ["addNote"]


def test_get_with_persisted_hash_only() -> None:
    ext = orjson.dumps({"persistedQuery": {"version": 1, "sha256Hash": HASH}}).decode()
    x = exchange(
        None,
        {"data": {"hero": {"name": "R2"}}},
        method="GET",
        url=f"{URL}?operationName=Hero&extensions={ext}",
    )
    call = call_of(x)
    (op,) = operations_of(call)
    assert op == {
        "name": "Hero",
        "persisted_query": HASH,
        "data": {"hero": {"name": "R2"}},
        "partial": False,
    }
    assert call.operation is None  # a hash says nothing of the operation's type


def test_aliases_fragments_and_selection() -> None:
    doc = "query A { x } query B { first: hero { name } ...F } fragment F on Query { y }"
    call = call_of(exchange({"query": doc, "operationName": "B"}, {"data": {}}))
    (op,) = operations_of(call)
    assert (op["name"], op["root_fields"]) == ("B", ["first=hero"])


def test_unselectable_operation_is_a_diagnostic() -> None:
    doc = "query A { x } query B { y }"
    for name, why in ((None, "names none"), ("C", "names no operation")):
        call = call_of(exchange({"query": doc, "operationName": name}, {"data": None}))
        (d,) = [d for d in call.diagnostics if d.code == "graphql.no_operation"]
        assert why in d.message
        assert call.operation is None and "type" not in operations_of(call)[0]


def test_not_graphql_is_not_claimed() -> None:
    for body in (
        {"query": "weather in Paris"},  # a search API's query text
        {"query": "type Query { x: Int }"},  # a schema, no operation
        {"query": "{ a }", "model": 3} | {"query": 5},  # not a string
        [{"query": "{ a }"}, {"q": 1}],  # a batch with a stranger
        {"extensions": {"persistedQuery": {"sha256Hash": "not-a-hash"}}},
    ):
        call = recognize(exchange(body, {"data": {}}), "c1")
        assert call is None or call.api != "graphql", body


def test_batch_count_mismatch_and_bad_items() -> None:
    batch = [{"query": "{ a }"}, {"query": "{ b }"}]
    call = call_of(exchange(batch, [{"data": {"a": 1}}]))
    assert not call.complete
    assert any("1 results for 2" in d.message for d in call.diagnostics)
    call = call_of(exchange(batch, [{"data": {"a": 1}}, {"nope": 1}]))
    assert not call.complete and operations_of(call)[0]["data"] == {"a": 1}
    assert [d.location for d in call.diagnostics] == ["x1 response body[1]"]


def test_errors_not_a_list_and_http_error_without_graphql() -> None:
    call = call_of(exchange({"query": "{ a }"}, {"data": None, "errors": "boom"}))
    assert [d.code for d in call.diagnostics] == ["graphql.bad_errors"]
    assert call.error is None
    call = call_of(exchange({"query": "{ a }"}, b"<html>bad gateway</html>", status=502))
    assert call.error is not None and (call.error.type, call.error.status) == ("http", 502)
    assert not call.complete and call.diagnostics[0].code == "graphql.bad_response"


def test_streamed_response_is_said_not_read() -> None:
    x = exchange(
        {"query": "subscription { ticks }"},
        b"event: next\ndata: {}\n\n",
        content_type="text/event-stream",
    )
    call = call_of(x)
    assert call.stream and not call.complete
    assert call.operation == "subscription"
    assert [d.code for d in call.diagnostics] == ["graphql.stream_not_read"]


def test_cut_response_is_incomplete() -> None:
    call = call_of(exchange({"query": "{ a }"}, {"data": {"a": 1}}, complete=False))
    assert not call.complete


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_query = st.sampled_from(["{ a }", "query Q { a }", "mutation { m }", "{", "x", "{ a } { b }"])


@settings(max_examples=100, deadline=None)
@given(
    query=_query | st.text(max_size=30),
    extra=st.dictionaries(
        st.sampled_from(["variables", "operationName", "extensions"]), _json, max_size=3
    ),
    response=_json,
    batch=st.booleans(),
)
def test_any_body_gives_a_call_or_nothing(
    query: str, extra: dict[str, Any], response: Any, batch: bool
) -> None:
    item = {"query": query, **extra}
    call = recognize(exchange([item] if batch else item, orjson.dumps(response)), "c1")
    if call is not None and call.api == "graphql":
        assert len(operations_of(call)) == 1
        assert call.complete is False or call.extras["graphql"]["operations"][0].keys() & {
            "data",
            "errors",
        }
