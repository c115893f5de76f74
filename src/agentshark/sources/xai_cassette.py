"""pydantic-ai's xAI gRPC cassettes (``*.xai.yaml``) -> one gRPC :class:`Exchange` per call.

pydantic-ai records the ``xai_sdk`` client's calls (``tests/models/xai`` of pydantic-ai)
instead of HTTP traffic, one ``interactions`` item per call::

    - request_sample: {json, raw}       # chat.sample(): xai_api.Chat/GetCompletion
      response_sample: {json, raw}      # one GetChatCompletionResponse
    - request_stream: {json, raw}       # chat.stream(): xai_api.Chat/GetCompletionChunk
      response_stream: {chunks_json: [{chunk: ...}], chunks_raw: [bytes]}
    - collections_method: {method, response_proto_type, request_json, response_json,
                           response_raw}   # the Collections API (files for search tools)

``raw`` is the protobuf message the SDK sent or parsed (``!!binary``); ``json`` is its
``MessageToDict`` view, which agentshark does not read (the bytes are the evidence). A chat
interaction becomes the gRPC exchange it stands for, so the one ``xai.chat`` family reads it
as it reads a capture: ``POST /xai_api.Chat/GetCompletion`` (``GetCompletionChunk`` for a
stream; the methods ``chat.sample()`` and ``chat.stream()`` call), ``content-type:
application/grpc``, each body the messages in gRPC's length-prefixed framing
(https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md), uncompressed. What the
cassette does not hold stays absent: no host (the URL is the method path), no time, no
``grpc-status`` (the SDK got its messages, but the status is not recorded), no metadata.
``extras["xai_cassette"]`` says the exchange was rebuilt this way.

A ``collections_method`` item is not a chat call and no family reads it: it is reported as
an ``xai.collections_method`` info diagnostic naming the method. A malformed item (no raw
bytes, a raw that is not bytes) is skipped with an error diagnostic; the rest are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.model import Body, Exchange, Request, Response
from agentshark.sources._fields import MalformedError

__all__ = ["is_xai_cassette", "read_xai_cassette"]

SERVICE = "/xai_api.Chat/"
_NO_TIME = 0.0
_GRPC = [("content-type", "application/grpc")]


def is_xai_cassette(items: list[Any]) -> bool:
    """Whether an ``interactions`` list is pydantic-ai's xAI shape."""
    keys = {k for x in items if isinstance(x, dict) for k in x}
    return bool(keys) and any(
        k in ("request_sample", "request_stream", "collections_method") for k in keys
    )


def read_xai_cassette(
    doc: dict[str, Any], name: str, source: int, next_id: Callable[[], str]
) -> Iterator[Exchange | Diagnostic]:
    items = doc.get("interactions")
    if not isinstance(items, list):
        yield Diagnostic(
            code="xai.no_interactions",
            location="interactions",
            message=f"{name}: interactions is missing or not a list: no exchanges read",
            severity="error",
        )
        return
    for i, item in enumerate(items):
        path = f"interactions[{i}]"
        try:
            if isinstance(item, dict) and "collections_method" in item:
                yield _collections(item["collections_method"], path, name)
            else:
                yield _exchange(item, path, source, next_id)
        except MalformedError as e:
            yield Diagnostic(
                code="xai.malformed_interaction",
                location=e.path,
                message=f"{name}: {e.path} {e.problem}: interaction skipped",
                severity="error",
            )


def _exchange(item: object, path: str, source: int, next_id: Callable[[], str]) -> Exchange:
    if not isinstance(item, dict):
        raise MalformedError(path, f"is a {type(item).__name__}, not a mapping")
    stream = "request_stream" in item
    req_key = "request_stream" if stream else "request_sample"
    resp_key = "response_stream" if stream else "response_sample"
    request_raw = _raw(item.get(req_key), "raw", f"{path}.{req_key}")
    response = item.get(resp_key)
    if stream:
        chunks = response.get("chunks_raw") if isinstance(response, dict) else None
        if not isinstance(chunks, list):
            raise MalformedError(f"{path}.{resp_key}.chunks_raw", "is missing or not a list")
        messages = [_bytes(c, f"{path}.{resp_key}.chunks_raw[{n}]") for n, c in enumerate(chunks)]
    else:
        messages = [_raw(response, "raw", f"{path}.{resp_key}")]
    method = "GetCompletionChunk" if stream else "GetCompletion"
    target = SERVICE + method
    return Exchange(
        id=next_id(),
        source=source,
        connection=None,
        transport="h2",
        request=Request(
            method="POST",
            target=target,
            url=target,
            version="HTTP/2",
            headers=list(_GRPC),
            body=Body(pieces=[(_NO_TIME, _frame(request_raw))], content_decoded=True),
            started=None,
            ended=None,
            complete=True,
        ),
        response=Response(
            status=200,
            reason="",
            version="HTTP/2",
            headers=list(_GRPC),
            body=Body(pieces=[(_NO_TIME, _frame(m)) for m in messages], content_decoded=True),
            started=None,
            ended=None,
            complete=True,
        ),
        extras={"xai_cassette": {"from": f"{path}.{req_key}", "method": method}},
    )


def _collections(value: object, path: str, name: str) -> Diagnostic:
    method = value.get("method") if isinstance(value, dict) else None
    return Diagnostic(
        code="xai.collections_method",
        location=f"{path}.collections_method",
        message=f"{name}: {path} records a Collections API call ({method!r}), not a chat "
        "call: no family reads it",
        severity="info",
    )


def _raw(obj: object, key: str, path: str) -> bytes:
    if not isinstance(obj, dict):
        raise MalformedError(path, "is missing or not a mapping")
    return _bytes(obj.get(key), f"{path}.{key}")


def _bytes(value: object, path: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if value is None:
        raise MalformedError(path, "is missing: the protobuf bytes are what is read")
    raise MalformedError(path, f"is a {type(value).__name__}, not !!binary bytes")


def _frame(message: bytes) -> bytes:
    """One gRPC length-prefixed message: flag 0 (not compressed), 4-byte length, bytes."""
    return b"\x00" + len(message).to_bytes(4, "big") + message
