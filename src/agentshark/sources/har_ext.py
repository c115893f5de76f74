"""A HAR entry's ``_agentshark`` object: what ``agentshark proxy -w`` records beyond HAR 1.2.

HAR keeps times to the millisecond (``startedDateTime``, ``timings``) and a body whole, so a
stream's pacing, its time to first token and the gaps between chunks would be lost. The
recorder adds (custom fields start with ``_``, http://www.softwareishard.com/blog/har-12-spec/#custom-fields)::

    "_agentshark": {
      "version": 1,
      "request":  {"started": 1733072400.123456, "ended": 1733072400.1241, "complete": true},
      "response": {"started": 1733072400.5012, "ended": 1733072401.9, "complete": true,
                   "content_decoded": true,
                   "chunks": [[1733072400.5013, 112], [1733072400.5402, 98], ...]},
      "session_complete": true,
      "diagnostics": [{"code": "mitm.flow_error", "severity": "error", "location": ...,
                       "message": ...}]
    }

Times are epoch seconds at full precision. ``chunks`` are the arrival time and size of each
piece of the response body as the proxy received it, sizes counted in the bytes of
``content.text`` (decoded, base64 undone), so they add up to it. ``content_decoded`` false
says ``content.text`` kept the body content-coded (it did not decode). ``complete`` false:
the message was cut (an error, the client went away); ``session_complete`` false: a WebSocket
session that had not closed when it was recorded. ``diagnostics`` are the recorder's
own findings about the exchange.

Applied to the exchange read from the standard fields (:func:`apply_extension`); a field
of the wrong shape is ignored with one ``har.bad_extension`` diagnostic naming it.
"""

from __future__ import annotations

from typing import Any

from agentshark.errors import Diagnostic
from agentshark.model import Body, Exchange

__all__ = ["EXTENSION", "apply_extension"]

EXTENSION = "_agentshark"


def apply_extension(exchange: Exchange, ext: object, path: str) -> None:
    """Refine ``exchange`` (read from the standard fields of the entry at ``path``) with its
    ``_agentshark`` object ``ext``."""
    where = f"{path}.{EXTENSION}"
    bad: list[str] = []
    if not isinstance(ext, dict):
        bad.append(where)
        ext = {}
    req, resp = ext.get("request"), ext.get("response")
    if exchange.request is not None and isinstance(req, dict):
        message = exchange.request
        message.started = _time(req, "started", message.started, f"{where}.request", bad)
        message.ended = _time(req, "ended", message.ended, f"{where}.request", bad)
        _retime(message.body, message.started)
        message.complete = message.complete and req.get("complete") is not False
    if exchange.response is not None and isinstance(resp, dict):
        r = exchange.response
        r.started = _time(resp, "started", r.started, f"{where}.response", bad)
        r.ended = _time(resp, "ended", r.ended, f"{where}.response", bad)
        r.complete = r.complete and resp.get("complete") is not False
        if resp.get("content_decoded") is False:
            r.body.content_decoded = False
        if "chunks" in resp:
            if not _split(r.body, resp["chunks"]):
                bad.append(f"{where}.response.chunks")
                _retime(r.body, r.started)
        else:
            _retime(r.body, r.started)
    if ext.get("session_complete") is False:
        exchange.session_complete = False
    for i, d in enumerate(ext.get("diagnostics") or ()):
        diagnostic = _diagnostic(d)
        if diagnostic is None:
            bad.append(f"{where}.diagnostics[{i}]")
        else:
            exchange.diagnostics.append(diagnostic)
    if bad:
        exchange.diagnostics.append(
            Diagnostic(
                code="har.bad_extension",
                location=bad[0],
                message=f"{', '.join(bad)}: not of the shape agentshark proxy writes; ignored "
                "(the standard HAR fields are used)",
                severity="warning",
            )
        )


def _time(
    obj: dict[str, Any], key: str, default: float | None, path: str, bad: list[str]
) -> float | None:
    value = obj.get(key)
    if value is None:
        return default if key not in obj else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    bad.append(f"{path}.{key}")
    return default


def _retime(body: Body, ts: float | None) -> None:
    """A body kept whole (one piece) arrived at ``ts``."""
    if ts is not None and len(body.pieces) == 1:
        body.pieces[0] = (ts, body.pieces[0][1])


def _split(body: Body, chunks: object) -> bool:
    """``body`` cut into the recorded chunks; False (body untouched) when they are not a
    list of [time, size] adding up to it."""
    if not isinstance(chunks, list):
        return False
    sizes: list[tuple[float, int]] = []
    for chunk in chunks:
        if not (isinstance(chunk, list) and len(chunk) == 2):
            return False
        ts, size = chunk
        if not isinstance(ts, int | float) or not isinstance(size, int) or size < 0:
            return False
        sizes.append((float(ts), size))
    data = body.data()
    if sum(size for _, size in sizes) != len(data):
        return False
    body.pieces.clear()
    body.size = 0
    offset = 0
    for ts, size in sizes:
        body.append(ts, data[offset : offset + size])
        offset += size
    return True


def _diagnostic(d: object) -> Diagnostic | None:
    if not isinstance(d, dict):
        return None
    code, message, location = d.get("code"), d.get("message"), d.get("location")
    severity = d.get("severity", "warning")
    if not (isinstance(code, str) and isinstance(message, str)):
        return None
    if severity not in ("error", "warning", "info"):
        return None
    return Diagnostic(
        code=code,
        message=message,
        location=location if isinstance(location, str) else "",
        severity=severity,
    )
