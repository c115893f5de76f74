"""The request side of GraphQL over HTTP: which GraphQL requests an HTTP request carries.

From the GraphQL-over-HTTP specification (https://graphql.github.io/graphql-over-http/draft/):

- ``POST`` with a JSON body (``application/json``): an object with ``query`` (the document),
  ``operationName``, ``variables`` (an object) and ``extensions`` (an object).
- ``GET`` with the same names as URL query parameters, ``variables`` and ``extensions``
  JSON-encoded (https://graphql.github.io/graphql-over-http/draft/#sec-GET).
- ``POST`` with an ``application/graphql`` body, the document alone (older servers and
  clients still send it; the draft dropped it).

Two common extensions are read too: batching, a JSON array of such objects answered by an
array of responses in the same order (Apollo Server, graphql-ws's HTTP siblings); and
persisted queries (Apollo's "automatic persisted queries",
https://github.com/apollographql/apollo-link-persisted-queries#protocol):
``extensions.persistedQuery = {"version": 1, "sha256Hash": ...}``, the document absent when
the client hopes the server knows the hash.

Recognition is by schema, never by path or host: an item is a GraphQL request when its
``query`` parses as a GraphQL executable document, or when it carries a persisted-query hash
(a hex SHA-256). A body some items of which are not GraphQL requests is not claimed.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from urllib.parse import parse_qs

import orjson

from agentshark.apis.graphql.document import Document, parse_document
from agentshark.apis.model import Json
from agentshark.apis.view import ExchangeView
from agentshark.model import header

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
MAX_BATCH = 1000  # items of a batched body looked at; more is not a GraphQL batch we claim


@dataclass(frozen=True, slots=True, kw_only=True)
class GqlRequest:
    """One GraphQL request as sent, with its parsed document (or why it did not parse)."""

    query: str | None
    document: Document | None
    document_problem: str | None  # why ``query`` is not a document (None: it is, or none)
    operation_name: Json  # as sent: a string, None, or a value of another type
    variables: Json
    extensions: Json
    persisted_hash: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Requests:
    transport: str  # "post-json", "get", "post-graphql"
    items: tuple[GqlRequest, ...]
    batch: bool


def read_requests(view: ExchangeView) -> Requests | None:
    """The GraphQL requests of ``view``'s HTTP request, or None when it carries none."""
    method = view.method.upper()
    if method == "GET":
        item = _from_query(view.query)
        return Requests(transport="get", items=(item,), batch=False) if item else None
    if method != "POST":
        return None
    req = view.exchange.request
    ctype = (header(req.headers, "content-type") or "").lower() if req is not None else ""
    if ctype.startswith("application/graphql") and "json" not in ctype:
        text = view.request_body.decode("utf-8", "replace")
        doc = parse_document(text)
        if not isinstance(doc, Document):
            return None
        item = GqlRequest(
            query=text,
            document=doc,
            document_problem=None,
            operation_name=None,
            variables=None,
            extensions=None,
            persisted_hash=None,
        )
        return Requests(transport="post-graphql", items=(item,), batch=False)
    body = view.request_json
    if isinstance(body, dict):
        found = _item(body)
        return Requests(transport="post-json", items=(found,), batch=False) if found else None
    if isinstance(body, list) and 0 < len(body) <= MAX_BATCH:
        items = [_item(x) if isinstance(x, dict) else None for x in body]
        if all(i is not None for i in items):
            return Requests(transport="post-json", items=tuple(filter(None, items)), batch=True)
    return None


def _from_query(query: str) -> GqlRequest | None:
    """A GET request's parameters: ``variables`` and ``extensions`` as JSON texts; one that
    is not JSON is kept as the text sent (the server answers it with a request error)."""
    if "query" not in query and "extensions" not in query:
        return None  # the common case: a GET of something else
    params = parse_qs(query, keep_blank_values=True)
    item: dict[str, Json] = {}
    for key in ("query", "operationName", "variables", "extensions"):
        values = params.get(key)
        if not values:
            continue
        value: Json = values[0]
        if key in ("variables", "extensions"):
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(value)
        item[key] = value
    return _item(item)


def _item(body: dict[str, Json]) -> GqlRequest | None:
    """One request object, or None when it is not a GraphQL request."""
    query = body.get("query")
    extensions = body.get("extensions")
    persisted = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
    sha = persisted.get("sha256Hash") if isinstance(persisted, dict) else None
    persisted_hash = sha if isinstance(sha, str) and _SHA256.fullmatch(sha) else None
    document: Document | None = None
    problem: str | None = None
    if isinstance(query, str):
        parsed = parse_document(query)
        if isinstance(parsed, Document):
            document = parsed
        else:
            problem = parsed
    if document is None and persisted_hash is None:
        return None  # a "query" that is not GraphQL (a search API's query text...)
    return GqlRequest(
        query=query if isinstance(query, str) else None,
        document=document,
        document_problem=problem,
        operation_name=body.get("operationName"),
        variables=body.get("variables"),
        extensions=extensions,
        persisted_hash=persisted_hash,
    )
