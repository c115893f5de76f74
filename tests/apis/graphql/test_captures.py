"""GraphQL over HTTP in the Strawberry capture (httpx -> Strawberry on loopback, made by
scripts/make_graphql_captures.py) against the client's own record, truth.json: every exchange
httpx saw is one ``graphql`` call, its variables as sent and its data and errors as httpx
parsed them; the operation type and name are what each request's document says."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from agentshark.apis.graphql.calls import operations_of
from agentshark.apis.model import Call
from agentshark.pipeline import Options
from tests.helpers import ROOT, Collected

Json = Any
FOLDER = ROOT / "tests" / "data" / "captures" / "graphql_strawberry"
SHA = "e3afd5894a88"  # the head of the persisted Weather query's SHA-256
# (type, name, root fields) of each exchange's operations, from the script's documents
EXPECTED: list[list[tuple[Json, Json, Json]]] = [
    [("query", "Weather", ["weather"])],
    [("mutation", "AddNote", ["addNote"])],
    [("query", None, ["notes"])],
    [("query", "Partial", ["weather", "alerts"])],
    [("query", "Bad", ["weather"])],
    [("query", "B", ["weather"])],
    [("query", "Weather", ["weather"]), ("query", "Notes", ["notes"])],
    [(None, None, None)],  # a hash alone: no document to read
    [("query", "Weather", ["weather"])],
    [(None, None, None)],
    [(None, None, None)],
]


@functools.cache
def calls() -> tuple[dict[str, Json], list[Call]]:
    truth = json.loads((FOLDER / "truth.json").read_text())
    collected = Collected([str(FOLDER / "capture.pcap")], Options(calls=True))
    order = {x.id: x.request.started or 0 for x in collected.exchanges if x.request}
    return truth, sorted(collected.calls, key=lambda c: order[c.exchange_id])


def test_every_exchange_is_one_complete_graphql_call() -> None:
    truth, found = calls()
    assert len(found) == len(truth["exchanges"]) == len(EXPECTED)
    assert {c.api for c in found} == {"graphql"}
    assert all(c.complete for c in found), [c.diagnostics for c in found if not c.complete]
    assert not [d for c in found for d in c.diagnostics]


@pytest.mark.parametrize("n", range(len(EXPECTED)))
def test_operations_as_sent_and_answered(n: int) -> None:
    truth, found = calls()
    sent, call = truth["exchanges"][n], found[n]
    ops = operations_of(call)
    assert [(o.get("type"), o.get("name"), o.get("root_fields")) for o in ops] == EXPECTED[n]
    requests = _sent_items(sent)
    answers = sent["response_json"]
    answers = answers if isinstance(answers, list) else [answers]
    assert len(ops) == len(requests) == len(answers)
    for op, req, answer in zip(ops, requests, answers, strict=True):
        assert op.get("variables") == req.get("variables")
        assert op.get("document") == req.get("query")
        assert ("data" in op, op.get("data")) == ("data" in answer, answer.get("data"))
        assert ("errors" in op, op.get("errors")) == ("errors" in answer, answer.get("errors"))
        assert op["partial"] is (bool(answer.get("errors")) and answer.get("data") is not None)
        hashed = (req.get("extensions") or {}).get("persistedQuery", {}).get("sha256Hash")
        assert op.get("persisted_query") == hashed
    info = call.extras["graphql"]
    assert info["transport"] == ("get" if sent["method"] == "GET" else "post-json")
    assert info["batch"] is isinstance(sent["request_json"], list)
    assert info["response_media_type"] == sent["response_content_type"]
    assert call.operation == ("batch" if info["batch"] else EXPECTED[n][0][0])


def _sent_items(sent: dict[str, Json]) -> list[dict[str, Json]]:
    if sent["method"] == "GET":
        from urllib.parse import parse_qs

        params = {k: v[0] for k, v in parse_qs(sent["query"]).items()}
        return [
            {k: json.loads(v) if k in ("variables", "extensions") else v for k, v in params.items()}
        ]
    body = sent["request_json"]
    return body if isinstance(body, list) else [body]


def test_errors_and_partial_results() -> None:
    _, found = calls()
    partial, invalid, missing = found[3], found[4], found[7]
    assert partial.error is not None and partial.error.type == "graphql"
    assert partial.error.message == "the alert service for Oslo is down"
    assert operations_of(partial)[0]["errors"][0]["path"] == ["alerts"]
    assert operations_of(partial)[0]["data"] == {"weather": {"city": "Oslo"}, "alerts": None}
    assert invalid.error is not None and operations_of(invalid)[0]["data"] is None
    assert missing.error is not None and missing.error.code == "PERSISTED_QUERY_NOT_FOUND"
    assert operations_of(missing)[0]["persisted_query"].startswith(SHA)
    assert "data" not in operations_of(missing)[0]  # not sent: absent, not None
    ok = [c for n, c in enumerate(found) if n not in (3, 4, 7)]
    assert all(c.error is None for c in ok)
