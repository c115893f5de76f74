"""Weaviate's GraphQL ``Get`` search -> a ``retrieval`` call that is also a GraphQL call.

Weaviate (https://docs.weaviate.io/weaviate/api/graphql/search-operators) searches with a
GraphQL query ``{ Get { Class(nearText: {concepts: [...]}, limit: 3, where: {...}) { ...
_additional { id distance certainty score } } } }``; the operators are ``nearText``,
``nearVector``, ``nearObject``, ``hybrid``, ``bm25`` (and the ``nearImage``... media ones).
The request and response are GraphQL's: this family rides on the GraphQL family (its
``match`` and ``parse`` read the request and fill ``extras["graphql"]``; it is the one family
module that uses another, because a Weaviate search is a GraphQL request first), and adds the
search read from the document's ``Get`` field: the class is the data source, each object of
``data.Get.<Class>`` a document (``_additional.id`` its id, ``distance`` or ``certainty`` or
``score`` its score, the other fields its metadata). Argument values given as variables are
read from the request's ``variables``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from graphql import GraphQLError, parse
from graphql.language import DocumentNode, FieldNode, OperationDefinitionNode, ValueNode
from graphql.pyutils import Undefined
from graphql.utilities import value_from_ast_untyped

from agentshark.apis.documents import document, int_or_none, query, record
from agentshark.apis.graphql.calls import GRAPHQL
from agentshark.apis.graphql.document import MAX_DOCUMENT, MAX_TOKENS
from agentshark.apis.model import Call, GenericPart, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

OPERATORS = ("nearText", "nearVector", "nearObject", "hybrid", "bm25", "nearImage", "nearMedia")
_HEAD = 4096  # request bytes looked at for ``Get`` before the GraphQL reading


@functools.lru_cache(maxsize=16)
def _document(text: str) -> DocumentNode | None:
    """The parsed document (cached: ``match`` and ``parse`` both read it), None when it is
    not GraphQL or larger than the GraphQL family parses."""
    if len(text) > MAX_DOCUMENT:
        return None
    try:
        return parse(text, no_location=True, max_tokens=MAX_TOKENS)
    except (GraphQLError, RecursionError):
        return None


def _searches(text: str, variables: Json) -> list[tuple[str, dict[str, Json]]]:
    """``(class, arguments)`` of each ``Get`` class field that has a search operator."""
    doc = _document(text)
    if doc is None:
        return []
    out = []
    for definition in doc.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        for get in definition.selection_set.selections:
            if (
                not isinstance(get, FieldNode)
                or get.name.value != "Get"
                or get.selection_set is None
            ):
                continue
            for cls in get.selection_set.selections:
                if not isinstance(cls, FieldNode):
                    continue
                args = {a.name.value: _value(a.value, variables) for a in cls.arguments or ()}
                if any(op in args for op in OPERATORS):
                    out.append((cls.name.value, args))
    return out


def _value(node: ValueNode, variables: Json) -> Json:
    """An argument's value; a variable the request did not send is None (graphql-core's
    untyped reading: ``Undefined`` for it)."""
    value = value_from_ast_untyped(node, variables if isinstance(variables, dict) else None)
    return None if value is Undefined else value


class Weaviate:
    api = "weaviate.graphql"

    def match(self, view: ExchangeView) -> float:
        if b"Get" not in view.request_body[:_HEAD] and b"Get" not in view.query.encode():
            return 0.0
        score = GRAPHQL.match(view)
        if score <= 0:
            return 0.0
        body = view.request_json
        items = body if isinstance(body, list) else [body]
        for item in items:
            text = item.get("query") if isinstance(item, dict) else None
            if isinstance(text, str) and _searches(text, item.get("variables")):  # type: ignore[union-attr]
                return score + 0.05
        return 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        GRAPHQL.parse(view, call)
        info_gql = call.extras.get("graphql")
        found_ops = info_gql.get("operations") if isinstance(info_gql, dict) else None
        ops = [o for o in found_ops if isinstance(o, dict)] if isinstance(found_ops, list) else []
        first: dict[str, Json] = {}
        queries: list[dict[str, Json]] = []
        results: list[list[GenericPart]] = []
        classes: list[str] = []
        top_k = None
        answered = True
        for op in ops:
            text = op.get("document")
            if not isinstance(text, str):
                continue
            data = op.get("data")
            found = data.get("Get") if isinstance(data, dict) else None
            for cls, args in _searches(text, op.get("variables")):
                first = first or args
                classes.append(cls)
                queries.append(_query(args))
                top_k = top_k if top_k is not None else int_or_none(args.get("limit"))
                objects = found.get(cls) if isinstance(found, dict) else None
                if isinstance(objects, list):
                    results.append(
                        [_object(n, o) for n, o in enumerate(objects) if isinstance(o, dict)]
                    )
                else:
                    answered = False
        info: dict[str, Json] = {
            "data_source": ",".join(dict.fromkeys(classes)) or None,
            "queries": queries,
            "top_k": top_k,
            "filter": first.get("where"),
        }
        error = call.error
        record(
            call,
            role="vector_store",
            service="weaviate",
            operation="retrieval",
            info=info,
            results=results if answered and error is None else None,
        )
        call.error = error


def _query(args: dict[str, Json]) -> dict[str, Json]:
    for name in OPERATORS:
        value = args.get(name)
        if not isinstance(value, dict):
            continue
        concepts = value.get("concepts")
        text = (
            " ".join(c for c in concepts if isinstance(c, str))
            if isinstance(concepts, list)
            else value.get("query")
        )
        out = query(text=text, vector=value.get("vector"))
        out["operator"] = name
        return out
    return {}


def _object(n: int, obj: dict[str, Json]) -> GenericPart:
    extra = obj.get("_additional")
    extra = extra if isinstance(extra, dict) else {}
    score, kind = None, None
    for key, what in (
        ("distance", "distance"),
        ("certainty", "similarity"),
        ("score", "relevance"),
    ):
        if extra.get(key) is not None:
            score, kind = extra[key], what
            break
    fields = {k: v for k, v in obj.items() if k != "_additional"}
    content = next(
        (fields[k] for k in ("text", "content", "body") if isinstance(fields.get(k), str)), None
    )
    return document(
        n + 1,
        id=extra.get("id"),
        score=score,
        score_kind=kind,
        content=content,
        metadata=fields or None,
    )


WEAVIATE = Weaviate()
FAMILIES: tuple[ApiFamily, ...] = (WEAVIATE,)
