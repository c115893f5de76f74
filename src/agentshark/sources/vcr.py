"""vcrpy cassettes -> :class:`agentshark.model.Exchange` objects, one per ``interactions`` item.

The shape vcrpy writes (``vcr/serializers``, ``vcr/request.py``)::

    interactions:
    - request:  {method, uri, headers: {name: [values]}, body: str | !!binary | null | {string}}
      response: {status: {code, message}, headers: {name: [values]}, body: {string: ...}}

plus two variants: pydantic-ai's ``parsed_body`` (the JSON body as a YAML mapping, which we
re-serialize: not byte-exact, said by an ``info`` diagnostic and ``extras["reserialized_body"]``)
and vcrpy's early httpx format (``status_code``, ``http_version``, ``content``).

Cassettes keep no times: every timestamp is None (body pieces, which need a float, carry
0.0). Whether a body is still content-encoded is unknown: vcrpy stores what the client
library returned, which is real gzip bytes for some clients and decoded text under a
``Content-Encoding: gzip`` header for others; such bodies get ``content_decoded=None`` so
the content decoder sniffs.

A malformed interaction is skipped and reported as a :class:`Diagnostic` with its path
(``interactions[5].response.status.code``); the rest of the cassette is read.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from agentshark.errors import Diagnostic
from agentshark.model import Body, Exchange, Headers, Request, Response, header
from agentshark.sources._fields import Fields, ItemList, MalformedError
from agentshark.sources.har import http_transport, http_version

_NO_TIME = 0.0  # the arrival time of body pieces: cassettes record none
_DEFAULT_VERSION = "HTTP/1.1"
_INTERACTIONS = ItemList(
    "interactions", "interaction", "vcr.no_interactions", "vcr.malformed_interaction"
)


def read_vcr(
    doc: dict[str, Any], name: str, source: int, next_id: Callable[[], str]
) -> Iterator[Exchange | Diagnostic]:
    """Yield an exchange per interaction of the cassette ``doc`` (``name`` is for messages).

    ``next_id`` is called once per exchange yielded, never for a skipped interaction.
    """
    items = doc.get("interactions")
    yield from _INTERACTIONS.read(items, name, lambda i, p: _exchange(i, p, name, source, next_id))


def _exchange(
    item: object, path: str, name: str, source: int, next_id: Callable[[], str]
) -> Exchange:
    item = _as_dict(item, path)
    req = _as_dict(item.get("request"), f"{path}.request")
    resp = _as_dict(item.get("response"), f"{path}.response")
    reserialized: list[str] = []

    method = _req_str(req, "method", f"{path}.request")
    uri = _req_str(req, "uri", f"{path}.request")
    try:
        parts = urlsplit(uri)
    except ValueError as e:
        raise MalformedError(f"{path}.request.uri", f"is not a URL ({e})") from None
    raw_version = resp.get("http_version")
    version = http_version(raw_version) if isinstance(raw_version, str) else _DEFAULT_VERSION
    req_headers = _headers(req.get("headers"), f"{path}.request.headers")
    request = Request(
        method=method,
        target=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        url=uri,
        version=version,
        headers=req_headers,
        body=_body(req, req_headers, f"{path}.request", "request", reserialized),
        started=None,
        ended=None,
        complete=True,
    )
    status, reason = _status(resp, f"{path}.response")
    resp_headers = _headers(resp.get("headers"), f"{path}.response.headers")
    response = Response(
        status=status,
        reason=reason,
        version=version,
        headers=resp_headers,
        body=_body(resp, resp_headers, f"{path}.response", "response", reserialized),
        started=None,
        ended=None,
        complete=True,
    )

    diags: list[Diagnostic] = []
    extras: dict[str, object] = {}
    if reserialized:
        extras["reserialized_body"] = reserialized
        diags.append(
            Diagnostic(
                code="vcr.reserialized_body",
                location=f"{path}.{reserialized[0]}.parsed_body",
                message=f"{name}: {path} stores the {' and '.join(reserialized)} body as "
                "parsed JSON (parsed_body): it was re-serialized, so its bytes, key order "
                "and spacing may differ from what was sent",
                severity="info",
            )
        )
    upgrade = None
    if status == 101:
        token = header(resp_headers, "upgrade")
        upgrade = token.strip().lower() if token else None
    return Exchange(
        id=next_id(),
        source=source,
        connection=None,
        transport=http_transport(version),
        request=request,
        response=response,
        upgrade=upgrade,
        diagnostics=diags,
        extras=extras,
    )


def _status(resp: dict[str, Any], path: str) -> tuple[int, str]:
    """``status: {code, message}``; early httpx cassettes have ``status_code`` instead."""
    if "status" not in resp and "status_code" in resp:
        return _code(resp["status_code"], f"{path}.status_code"), ""
    status = resp.get("status")
    if isinstance(status, int | str) and not isinstance(status, bool):
        return _code(status, f"{path}.status"), ""
    status = _as_dict(status, f"{path}.status")
    reason = _opt_str(status, "message", f"{path}.status")
    return _code(status.get("code"), f"{path}.status.code"), reason or ""


def _code(value: object, path: str) -> int:
    # ASCII digits only: str.isdigit() also takes "²⁰⁰", which int() refuses.
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 999:
        return value
    if value is None:
        raise MalformedError(path, "is missing")
    raise MalformedError(path, f"is {value!r}, expected a three-digit status code")


# --- bodies --------------------------------------------------------------------------------


def _body(
    message: dict[str, Any],
    headers: Headers,
    path: str,
    side: Literal["request", "response"],
    reserialized: list[str],
) -> Body:
    encoded = (header(headers, "content-encoding") or "identity").strip().lower() != "identity"
    if "body" in message or "parsed_body" not in message:
        key = "body" if "body" in message else "content"  # "content": early httpx cassettes
        # A body recorded as it came from the client library: maybe still encoded.
        body = Body(content_decoded=None if encoded else False)
        body.append(_NO_TIME, _raw_body(message.get(key), f"{path}.{key}"))
        return body
    try:
        data = orjson.dumps(
            message["parsed_body"], default=_json_default, option=orjson.OPT_NON_STR_KEYS
        )
    except orjson.JSONEncodeError as e:
        raise MalformedError(f"{path}.parsed_body", f"cannot be written as JSON ({e})") from None
    reserialized.append(side)
    # Built from parsed JSON: whatever the headers say, these bytes are not content-encoded.
    body = Body(content_decoded=True)
    body.append(_NO_TIME, data)
    return body


def _raw_body(value: object, path: str) -> bytes:
    """A vcrpy body: a string, ``!!binary`` bytes, null, or ``{string: <one of those>}``."""
    if isinstance(value, dict):
        path = f"{path}.string"
        value = value.get("string")
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    raise MalformedError(path, f"is a {_kind(value)}, expected a string or !!binary bytes")


def _json_default(value: object) -> object:
    """YAML values JSON has no type for: ``!!binary`` as base64, ``!!set`` as a list."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON")


# --- headers -------------------------------------------------------------------------------


def _headers(raw: object, path: str) -> Headers:
    """``{name: [values]}`` (or a single value) -> [(name, value)], one tuple per value."""
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise MalformedError(path, f"is a {_kind(raw)}, expected a mapping")
    headers: Headers = []
    for key, values in raw.items():
        name = _text(key, f"{path} (a header name)")
        for i, value in enumerate(values if isinstance(values, list) else [values]):
            where = f"{path}.{name}" + (f"[{i}]" if isinstance(values, list) else "")
            headers.append((name, _text(value, where)))
    return headers


def _text(value: object, path: str) -> str:
    """A header name or value: strings as they are, ``!!binary`` decoded, numbers spelled."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.decode("latin-1")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise MalformedError(path, f"is a {_kind(value)}, expected a string")


# --- typed access --------------------------------------------------------------------------


_FIELDS = Fields("mapping")
_kind = _FIELDS.kind
_as_dict = _FIELDS.as_dict
_opt_str = _FIELDS.opt_str
_req_str = _FIELDS.req_str
