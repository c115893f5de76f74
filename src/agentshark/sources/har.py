"""HAR 1.2 documents -> :class:`agentshark.model.Exchange` objects, one per ``log.entries`` item.

A HAR file holds whole messages, already taken apart by the tool that wrote it: response
``content.text`` is the *decoded* body (``Body.content_decoded=True``), request
``postData.text`` the body as sent. Timestamps come from ``startedDateTime`` and ``timings``
(http://www.softwareishard.com/blog/har-12-spec/#timings: ``ssl`` is included in
``connect``; -1 means "not applicable").

Problems with one entry never stop the file: a structurally malformed entry (a missing
``request``, a field of the wrong type) is skipped and reported as a :class:`Diagnostic`
with its JSON path; lesser problems (an unreadable timestamp, a body that was not saved)
are attached to the exchange's ``diagnostics``.

An entry's ``_agentshark`` object (written by ``agentshark proxy -w``: precise times, the
response's chunks as they arrived) refines the exchange (:mod:`agentshark.sources.har_ext`).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from agentshark.errors import Diagnostic
from agentshark.model import Body, Exchange, Headers, Request, Response, header
from agentshark.sources._fields import Fields, ItemList, MalformedError
from agentshark.sources.har_ext import EXTENSION, apply_extension
from agentshark.sources.har_ws import websocket_messages

# Timing phases before the first response byte that belong to the request side. ``ssl`` is
# part of ``connect`` and must not be added again.
_REQUEST_PHASES = ("blocked", "dns", "connect", "send")
_KEPT_FIELDS = ("serverIPAddress",)  # standard entry fields without a place in the model
_ENTRIES = ItemList("log.entries", "entry", "har.no_entries", "har.malformed_entry")


def read_har(
    doc: dict[str, Any], name: str, source: int, next_id: Callable[[], str]
) -> Iterator[Exchange | Diagnostic]:
    """Yield an exchange per entry of the HAR ``doc`` (``name`` is used in messages).

    ``next_id`` is called once per exchange yielded, never for a skipped entry.
    """
    log = doc.get("log")
    entries = log.get("entries") if isinstance(log, dict) else None
    yield from _ENTRIES.read(entries, name, lambda e, p: _exchange(e, p, name, source, next_id))


def _exchange(
    entry: object, path: str, name: str, source: int, next_id: Callable[[], str]
) -> Exchange:
    entry = _as_dict(entry, path)
    diags: list[Diagnostic] = []
    req = _as_dict(entry.get("request"), f"{path}.request")
    resp = _as_dict(entry.get("response"), f"{path}.response")
    status = _opt_int(resp, "status", f"{path}.response")
    if status is None:
        raise MalformedError(f"{path}.response.status", "is missing")

    started = _started(entry, path, name, diags)
    times = _Times.of(entry, started, path, name, diags)
    extras: dict[str, object] = {}
    request = _request(req, f"{path}.request", name, times, extras, diags)
    response: Response | None = None
    if status == 0:
        diags.append(
            Diagnostic(
                code="har.no_response",
                location=f"{path}.response.status",
                message=f"{name}: {path} has status 0: no response was recorded (aborted, "
                "blocked or still pending when the HAR was saved)",
            )
        )
    else:
        response = _response(resp, status, f"{path}.response", name, request, times, diags)

    messages = None
    if entry.get("_webSocketMessages") is not None:  # pcap2har writes null for plain HTTP
        messages = websocket_messages(
            entry["_webSocketMessages"], f"{path}._webSocketMessages", diags
        )
    for key, value in (*entry.items(), *resp.items()):
        if key in ("_webSocketMessages", EXTENSION):
            continue  # read into the exchange's messages, applied below
        kept = isinstance(key, str) and (key.startswith("_") or key in _KEPT_FIELDS)
        if kept and value is not None:
            extras.setdefault(key, value)
    connection = entry.get("connection")
    if isinstance(connection, int) and not isinstance(connection, bool):
        connection = str(connection)  # some writers store the socket id as a number
    upgrade = None
    if response is not None and response.status == 101:
        token = header(response.headers, "upgrade")
        upgrade = token.strip().lower() if token else None
    exchange = Exchange(
        id=next_id(),
        source=source,
        connection=connection if isinstance(connection, str) and connection else None,
        transport=http_transport(request.version or (response.version if response else "")),
        request=request,
        response=response,
        upgrade=upgrade,
        diagnostics=diags,
        extras=extras,
        messages=messages,
    )
    if EXTENSION in entry:
        apply_extension(exchange, entry[EXTENSION], path)
    return exchange


# --- messages ------------------------------------------------------------------------------


def _request(
    req: dict[str, Any],
    path: str,
    name: str,
    times: _Times,
    extras: dict[str, object],
    diags: list[Diagnostic],
) -> Request:
    method = _req_str(req, "method", path)
    url = _req_str(req, "url", path)
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise MalformedError(f"{path}.url", f"is not a URL ({e})") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    size = _size(req, "bodySize")
    body = Body(content_decoded=False, transfer_bytes=size)
    complete = True
    post = req.get("postData")
    post = None if post is None else _as_dict(post, f"{path}.postData")
    text = None if post is None else _opt_str(post, "text", f"{path}.postData")
    if post is not None and text is not None:
        data = _decode_text(text, post, f"{path}.postData", name, diags)
        if data is None:
            complete = False
        else:
            body.append(times.request_piece_ts, data)
    elif post is not None and post.get("params"):
        extras["har_post_params"] = post["params"]
        complete = not size  # a body was sent, and only its params are here
        diags.append(
            Diagnostic(
                code="har.post_params",
                location=f"{path}.postData.params",
                message=f"{name}: {path}.postData has params but no text: the request "
                "body is not available byte for byte; the params are kept in "
                "extras['har_post_params']"
                + (f"; the {size}-byte request is marked incomplete" if size else ""),
                severity="info",
            )
        )
    elif size:  # bodySize > 0 (-1 is "not known", None absent: no evidence of a body)
        complete = False
        diags.append(
            Diagnostic(
                code="har.body_not_recorded",
                location=f"{path}.postData",
                message=f"{name}: {path} had a {size}-byte body that the HAR file does not "
                "contain (postData.text absent): the request is marked incomplete",
            )
        )
    return Request(
        method=method,
        target=target,
        url=url,
        version=http_version(_opt_str(req, "httpVersion", path) or ""),
        headers=_headers(req, path),
        body=body,
        started=times.started,
        ended=times.request_ended,
        complete=complete,
    )


def _response(
    resp: dict[str, Any],
    status: int,
    path: str,
    name: str,
    request: Request,
    times: _Times,
    diags: list[Diagnostic],
) -> Response:
    content = resp.get("content")
    content = {} if content is None else _as_dict(content, f"{path}.content")
    body = Body(content_decoded=True, transfer_bytes=_transfer_bytes(resp))
    complete = True
    text = _opt_str(content, "text", f"{path}.content")
    if text is not None:
        data = _decode_text(text, content, f"{path}.content", name, diags)
        if data is None:
            complete = False
        else:
            body.append(times.response_piece_ts, data)
    else:
        size = _size(content, "size")
        if size is None:
            size = _size(resp, "bodySize") or 0
        if size > 0:
            complete = False
            diags.append(
                Diagnostic(
                    code="har.body_not_recorded",
                    location=f"{path}.content.text",
                    message=f"{name}: {path} had a {size}-byte body that the HAR file does "
                    "not contain (content.text absent): the response is marked incomplete",
                )
            )
    return Response(
        status=status,
        reason=_opt_str(resp, "statusText", path) or "",
        version=http_version(_opt_str(resp, "httpVersion", path) or "") or request.version,
        headers=_headers(resp, path),
        body=body,
        started=times.response_started,
        ended=times.response_ended,
        complete=complete,
    )


def _headers(message: dict[str, Any], path: str) -> Headers:
    raw = message.get("headers")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MalformedError(f"{path}.headers", f"is a {_kind(raw)}, expected a list")
    headers: Headers = []
    for i, item in enumerate(raw):
        hpath = f"{path}.headers[{i}]"
        item = _as_dict(item, hpath)
        headers.append((_req_str(item, "name", hpath), _req_str(item, "value", hpath)))
    return headers


def _decode_text(
    text: str, holder: dict[str, Any], path: str, name: str, diags: list[Diagnostic]
) -> bytes | None:
    """The bytes of a ``text`` field: base64-decoded when ``encoding`` says so, else UTF-8.
    None (with a diagnostic) when the base64 does not decode."""
    encoding = holder.get("encoding")
    if isinstance(encoding, str) and encoding.lower() == "base64":
        try:
            return binascii.a2b_base64(text)
        except (binascii.Error, ValueError) as e:
            diags.append(
                Diagnostic(
                    code="har.bad_base64",
                    location=f"{path}.text",
                    message=f"{name}: {path}.text is marked base64 but does not decode "
                    f"({e}): the body is left empty and marked incomplete",
                )
            )
            return None
    return text.encode("utf-8", "surrogatepass")


def _transfer_bytes(resp: dict[str, Any]) -> int | None:
    """``bodySize`` (the body as transferred); else Chrome's ``_transferSize`` minus the head."""
    body_size = _size(resp, "bodySize")
    if body_size is not None:
        return body_size
    transfer, head = _size(resp, "_transferSize"), _size(resp, "headersSize")
    if transfer is not None and head is not None and transfer >= head:
        return transfer - head
    return None


# --- time ----------------------------------------------------------------------------------


def _started(entry: dict[str, Any], path: str, name: str, diags: list[Diagnostic]) -> float | None:
    raw = entry.get("startedDateTime")
    if not isinstance(raw, str):
        problem = "is missing" if raw is None else f"is a {_kind(raw)}, not a string"
    else:
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            problem = f"{raw!r} is not an ISO 8601 date"
        else:
            if when.tzinfo is None:
                diags.append(
                    Diagnostic(
                        code="har.naive_timestamp",
                        location=f"{path}.startedDateTime",
                        message=f"{name}: {path}.startedDateTime {raw!r} has no UTC offset: "
                        "read as UTC",
                        severity="info",
                    )
                )
                when = when.replace(tzinfo=UTC)
            return when.timestamp()
    diags.append(
        Diagnostic(
            code="har.bad_timestamp",
            location=f"{path}.startedDateTime",
            message=f"{name}: {path}.startedDateTime {problem}: the exchange has no timestamps",
        )
    )
    return None


@dataclass(slots=True)
class _Times:
    """Epoch seconds of an entry's milestones, from ``startedDateTime`` and ``timings``."""

    started: float | None
    request_ended: float | None = None
    response_started: float | None = None
    response_ended: float | None = None

    @property
    def request_piece_ts(self) -> float:
        """The arrival time of the request body (a float is needed: 0.0 when unknown)."""
        return self.started if self.started is not None else 0.0

    @property
    def response_piece_ts(self) -> float:
        if self.response_started is not None:
            return self.response_started
        return self.request_piece_ts

    @classmethod
    def of(
        cls,
        entry: dict[str, Any],
        started: float | None,
        path: str,
        name: str,
        diags: list[Diagnostic],
    ) -> _Times:
        if started is None:
            return cls(None)
        times = cls(started)
        timings = entry.get("timings")
        if isinstance(timings, dict):
            ms = {k: _ms(timings.get(k)) for k in (*_REQUEST_PHASES, "wait", "receive")}
            times.request_ended = started + sum(ms[k] or 0.0 for k in _REQUEST_PHASES) / 1000
            wait, receive = ms["wait"], ms["receive"]
            if wait is not None:
                times.response_started = times.request_ended + wait / 1000
                if receive is not None:
                    times.response_ended = times.response_started + receive / 1000
        elif timings is not None:
            diags.append(
                Diagnostic(
                    code="har.bad_timings",
                    location=f"{path}.timings",
                    message=f"{name}: {path}.timings is a {_kind(timings)}, not an object: ignored",
                )
            )
        total = _ms(entry.get("time"))
        if times.response_ended is None and total is not None:
            times.response_ended = started + total / 1000
        return times


def _ms(value: object) -> float | None:
    """A timing in milliseconds; None for -1 (not applicable), negatives and non-numbers."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


# --- versions ------------------------------------------------------------------------------

_TRANSPORTS = {
    "http/1.1": "http/1.1",
    "http/1.0": "http/1.0",
    "h2": "h2",
    "http/2": "h2",
    "http/2.0": "h2",
    "h3": "h3",
    "http/3": "h3",
    "http/3.0": "h3",
}
_VERSIONS = {"http/1.1": "HTTP/1.1", "http/1.0": "HTTP/1.0", "h2": "HTTP/2", "h3": "HTTP/3"}


def http_transport(version: str) -> str:
    """The exchange transport for an ``httpVersion`` ("HTTP/2.0" -> "h2")."""
    v = version.strip().lower()
    return _TRANSPORTS.get(v, v or "unknown")


def http_version(version: str) -> str:
    """The message version in the model's spelling ("h2", "http/2.0" -> "HTTP/2")."""
    v = version.strip()
    return _VERSIONS.get(_TRANSPORTS.get(v.lower(), ""), v)


# --- typed access --------------------------------------------------------------------------


_FIELDS = Fields("object")
_kind = _FIELDS.kind
_as_dict = _FIELDS.as_dict
_opt_str = _FIELDS.opt_str
_req_str = _FIELDS.req_str
_opt_int = _FIELDS.opt_int


def _size(obj: dict[str, Any], key: str) -> int | None:
    """A size field: None when absent, -1 (unknown) or not an integer."""
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
