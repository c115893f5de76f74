"""Input files -> :class:`~agentshark.output.viewer_data.ViewerData`: the analyze report,
built as ``agentshark analyze --format json --events`` builds it, then projected.

The report is written by :class:`~agentshark.output.jsonreport.JsonReportWriter` (the same
writer, the same redaction) into a spooled file and read back; nothing is analyzed twice.
Alongside, the first :data:`RAW_LIMIT` bytes of each request and response body are kept for
the viewer's raw view: decoded from their content coding as the report decodes them, a JSON
body walked by :meth:`Redactor.json <agentshark.output.redact.Redactor.json>`, any other text
by :meth:`Redactor.text <agentshark.output.redact.Redactor.text>`, data (not UTF-8) only sized.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentshark.apis.view import shared_decode
from agentshark.model import Body, Exchange, Headers, header
from agentshark.output.census import Census
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.redact import Redactor
from agentshark.output.report import RenderOptions
from agentshark.output.viewer_data import ViewerData, project
from agentshark.pipeline import Item, Options, SourceReport, run
from agentshark.trace.collect import Analysis

RAW_LIMIT = 32 << 10  # bytes of each body kept for the raw view


@dataclass(slots=True, kw_only=True)
class Built:
    data: ViewerData
    failures: list[str] = field(default_factory=list)  # unreadable inputs, redacted


def build(
    files: Sequence[str],
    *,
    keylogs: Sequence[str] = (),
    max_body: int = Options().max_body,
    redact: bool = True,
) -> Built:
    """Analyze ``files`` once and project the report for the viewer."""
    render = RenderOptions(redact=redact, events=True, max_body=max_body)
    options = Options(max_body=max_body, keylogs=list(keylogs), calls=True)
    census = Census(len(files))
    analysis = Analysis()
    raw = RawBodies(render.redactor, max_body=max_body)
    failures: list[str] = []
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as spool:
        writer = JsonReportWriter(spool, render, calls=True)  # type: ignore[arg-type]
        for item in raw.watch(analysis.watch(census.watch(run(list(files), options)))):
            writer.write(item)
            failures += _failures(item, render.redactor)
        analysis.finish()
        sections: list[tuple[str, Iterable[Any]]] = [
            ("not_parsed", census.not_parsed()),
            ("traces", (t.to_json() for t in analysis.traces)),
            ("incidents", (i.to_json() for i in analysis.incidents)),
        ]
        writer.close(sections)
        spool.seek(0)
        report = orjson.loads(spool.read())
    return Built(data=project(report, raw.bodies), failures=failures)


def _failures(item: Item, redact: Redactor) -> list[str]:
    if not isinstance(item, SourceReport):
        return []
    return [redact.text(d.message) for d in item.diagnostics if d.code.startswith("source.")]


class RawBodies:
    """Keeps the head of every body, redacted, by exchange id."""

    def __init__(self, redact: Redactor, *, max_body: int, limit: int = RAW_LIMIT) -> None:
        self.bodies: dict[str, dict[str, Any]] = {}
        self._redact = redact
        self._max_body = max_body
        self._limit = limit

    def watch(self, items: Iterator[Item]) -> Iterator[Item]:
        for item in items:
            if type(item) is Exchange:
                self.keep(item)
            yield item

    def keep(self, ex: Exchange) -> None:
        out: dict[str, Any] = {}
        if ex.request is not None:
            out["request"] = self._body(ex.request.body, ex.request.headers, f"{ex.id} request")
        if ex.response is not None:
            out["response"] = self._body(ex.response.body, ex.response.headers, f"{ex.id} response")
        self.bodies[ex.id] = out

    def _body(self, body: Body, headers: Headers, where: str) -> dict[str, Any]:
        coding = header(headers, "content-encoding")
        decoded = shared_decode(body, coding, limit=self._max_body, location=f"{where} body")
        head = bytearray()
        for _, piece in decoded.pieces:
            head += piece[: self._limit - len(head)]
            if len(head) >= self._limit:
                break
        size = decoded.size
        out: dict[str, Any] = {"bytes": size, "shown": len(head), "decoded": decoded.decoded}
        text = _utf8(bytes(head), cut=len(head) < size)
        if text is None:  # data, not text: only sized
            out["text"] = None
            return out
        out["text"] = self._redacted(text, whole=len(head) == size)
        return out

    def _redacted(self, text: str, *, whole: bool) -> str:
        if whole and text[:1] in ("{", "["):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                pass
            else:
                return orjson.dumps(self._redact.json(value), option=orjson.OPT_INDENT_2).decode()
        return self._redact.text(text)


def _utf8(data: bytes, *, cut: bool) -> str | None:
    """``data`` as UTF-8 text, or None; a head cut through a character loses that piece."""
    for drop in range(4 if cut else 1):
        try:
            return data[: len(data) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None
