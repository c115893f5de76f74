"""GraphQL over HTTP -> :class:`Call` with api ``graphql``: a tool's execution, not a model call.

Recognition (:mod:`agentshark.apis.graphql.requests`): the request carries GraphQL requests
(a ``query`` that parses as a GraphQL document, or a persisted-query hash), POST JSON, GET
parameters or an ``application/graphql`` body, one or a batch. The path and host play no part.

The response (https://graphql.github.io/graphql-over-http/draft/#sec-Response), as
``application/graphql-response+json`` or ``application/json``: an object with ``data``
and/or ``errors`` (and ``extensions``), or for a batch an array of them in request order.
A response with both ``data`` and ``errors`` is a partial result
(https://spec.graphql.org/October2021/#sec-Errors): ``data`` holds what was resolved, each
error's ``path`` says which field failed.

The call:

- ``operation``: the operation type (``query``, ``mutation``, ``subscription``) of a single
  request; ``batch`` for a batch; None when it cannot be told (a persisted query sent by hash
  alone, a document whose operation the request does not select).
- ``extras["graphql"]``: ``transport`` (``post-json``, ``get``, ``post-graphql``), ``batch``,
  ``response_media_type``, and ``operations``, one per request item: ``type``, ``name`` (the
  selected operation's, else the ``operationName`` sent), ``root_fields``, ``document`` (as
  sent), ``variables``, ``persisted_query`` (the hash), ``extensions`` (the request's others),
  and from the response ``data``, ``errors`` (as sent: message, locations, path,
  extensions), ``response_extensions`` and ``partial`` (data and errors both there).
  A key is absent when the wire did not carry it (no ``data`` key is not ``data: null``).
- ``error``: ``CallError(type="graphql")`` with the first error's message and
  ``extensions.code`` when any response has errors (``source`` ``body`` or ``body[i]``);
  ``type="http"`` for an HTTP error status with no GraphQL body.
- ``complete``: every item answered with ``data`` or ``errors`` (and the exchange whole:
  the registry decides that). A streamed response (``text/event-stream`` for subscriptions,
  ``multipart/mixed`` for ``@defer``) is not read yet: ``graphql.stream_not_read``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.graphql.document import select
from agentshark.apis.graphql.requests import GqlRequest, Requests, read_requests
from agentshark.apis.model import Call, CallError, Json
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

API = "graphql"
STREAM_TYPES = ("text/event-stream", "multipart/mixed")


def operations_of(call: Call) -> list[dict[str, Json]]:
    """The ``extras["graphql"]["operations"]`` of a GraphQL call (empty for others)."""
    info = call.extras.get("graphql") if call.api == API else None
    ops = info.get("operations") if isinstance(info, dict) else None
    return [op for op in ops if isinstance(op, dict)] if isinstance(ops, list) else []


class GraphQL:
    api = API

    def __init__(self) -> None:
        # the registry asks match(view), then parse(view) of the same view: one reading
        self._last: tuple[ExchangeView, Requests | None] | None = None

    def _requests(self, view: ExchangeView) -> Requests | None:
        if self._last is None or self._last[0] is not view:
            self._last = (view, read_requests(view))
        return self._last[1]

    def match(self, view: ExchangeView) -> float:
        found = self._requests(view)
        if found is None:
            return 0.0
        parsed = all(i.document is not None for i in found.items)
        score = 0.85 if parsed else 0.7  # a hash alone says less than a document
        if view.response_content_type.startswith("application/graphql-response+json"):
            score += 0.1
        return score

    def parse(self, view: ExchangeView, call: Call) -> None:
        found = self._requests(view)
        self._last = None  # no exchange kept past its call
        assert found is not None  # match said so
        where = view.exchange.id
        ops = [_operation(item, n, found, where, call) for n, item in enumerate(found.items)]
        info: dict[str, Json] = {"transport": found.transport, "batch": found.batch}
        if view.response_content_type:
            info["response_media_type"] = view.response_content_type.split(";")[0].strip()
        info["operations"] = ops
        call.extras["graphql"] = info
        if found.batch:
            call.operation = "batch"
        else:
            kind = ops[0].get("type")
            call.operation = kind if isinstance(kind, str) else None
        call.complete = _response(view, found, ops, call)


def _operation(
    item: GqlRequest, n: int, found: Requests, where: str, call: Call
) -> dict[str, Json]:
    path = f"request body[{n}]" if found.batch else "request"
    op: dict[str, Json] = {}
    name = item.operation_name if isinstance(item.operation_name, str) else None
    if item.operation_name is not None and name is None:
        call.diagnostics.append(
            Diagnostic(
                code="graphql.bad_operation_name",
                message=f"operationName is {type(item.operation_name).__name__}, not a string",
                location=f"{where} {path}.operationName",
            )
        )
    if item.document is not None:
        chosen = select(item.document, name)
        if chosen.operation is not None:
            op["type"] = chosen.operation.type
            name = chosen.operation.name or name
            op["root_fields"] = list(chosen.operation.root_fields)
        else:
            call.diagnostics.append(
                Diagnostic(code="graphql.no_operation", message=str(chosen.problem), location=where)
            )
    elif item.document_problem is not None:
        call.diagnostics.append(
            Diagnostic(
                code="graphql.bad_document",
                message=f"the query sent with the persisted-query hash {item.document_problem}",
                location=f"{where} {path}.query",
            )
        )
    op["name"] = name
    if item.query is not None:
        op["document"] = item.query
    if item.variables is not None:
        op["variables"] = item.variables
    if item.persisted_hash is not None:
        op["persisted_query"] = item.persisted_hash
    others = (
        {k: v for k, v in item.extensions.items() if k != "persistedQuery"}
        if isinstance(item.extensions, dict)
        else item.extensions
    )
    if others:
        op["extensions"] = others
    return op


def _response(view: ExchangeView, found: Requests, ops: list[dict[str, Json]], call: Call) -> bool:
    """The response's results into ``ops``; whether every item got one."""
    where = view.exchange.id
    if any(view.response_content_type.startswith(t) for t in STREAM_TYPES):
        call.stream = True
        call.diagnostics.append(
            Diagnostic(
                code="graphql.stream_not_read",
                severity="info",
                message=f"a streamed GraphQL response ({view.response_content_type}: a "
                "subscription or incremental delivery) is not read yet",
                location=f"{where} response body",
            )
        )
        return False
    body = view.response_json
    results = body if found.batch and isinstance(body, list) else [body]
    usable = [r if _is_result(r) else None for r in results]
    if body is None or not any(usable) or len(usable) != len(ops):
        _not_graphql(view, call, body, len(ops), len(results))
        return False
    for n, (op, result) in enumerate(zip(ops, usable, strict=True)):
        if result is None:
            call.diagnostics.append(
                Diagnostic(
                    code="graphql.bad_response",
                    message="a batch's response item has neither data nor errors",
                    location=f"{where} response body[{n}]",
                )
            )
            continue
        _result(op, result, f"body[{n}]" if found.batch else "body", view.status, call)
    return all(r is not None for r in usable)


def _is_result(value: Json) -> bool:
    return isinstance(value, dict) and ("data" in value or "errors" in value)


def _not_graphql(view: ExchangeView, call: Call, body: Json, asked: int, got: int) -> None:
    status = view.status
    if status is not None and status >= 400:
        call.error = CallError(
            status=status, type="http", code=str(status), message=None, source="http"
        )
    if body is None and not view.response_body.strip():
        return  # no body at all: the cut or the status says it
    why = (
        f"{got} results for {asked} batched requests"
        if isinstance(body, list) and got != asked
        else "no GraphQL result (an object with data or errors)"
    )
    call.diagnostics.append(
        Diagnostic(
            code="graphql.bad_response",
            message=f"the response body holds {why}",
            location=f"{view.exchange.id} response body",
        )
    )


def _result(
    op: dict[str, Json], result: dict[str, Json], source: str, status: int | None, call: Call
) -> None:
    if "data" in result:
        op["data"] = result["data"]
    errors = result.get("errors")
    if "errors" in result:
        op["errors"] = errors
    if "extensions" in result:
        op["response_extensions"] = result["extensions"]
    has_errors = isinstance(errors, list) and bool(errors)
    op["partial"] = has_errors and result.get("data") is not None
    if errors is not None and not isinstance(errors, list):
        call.diagnostics.append(
            Diagnostic(
                code="graphql.bad_errors",
                message=f"errors is {type(errors).__name__}, not a list",
                location=f"{call.exchange_id} response {source}.errors",
            )
        )
    if isinstance(errors, list) and errors and call.error is None:
        first = errors[0] if isinstance(errors[0], dict) else {}
        ext = first.get("extensions")
        code = ext.get("code") if isinstance(ext, dict) else None
        message = first.get("message")
        call.error = CallError(
            status=status,
            type="graphql",
            code=str(code) if code is not None else None,
            message=message if isinstance(message, str) else None,
            source=source,
        )


GRAPHQL = GraphQL()
FAMILIES: tuple[ApiFamily, ...] = (GRAPHQL,)
