"""The terminal view: one line per exchange as it finishes, then connections and sources.

Columns are cut to their width only when ``wide`` is off (the CLI turns it on with
``--wide`` and whenever the output is not a terminal). The view builds its rows and lines once;
a :class:`~agentshark.output.screen.Screen` draws them, plain or with ``rich``: STATUS green
for 2xx and red for 4xx/5xx, COMPLETE green or yellow, diagnostics by severity.

COMPLETE says whether the whole exchange was seen, never whether it succeeded (that is
STATUS); an exchange that is not complete is followed by the reasons the JSON report gives
(its diagnostics, those of its decoded bodies), or a line saying which part is missing when
none was recorded.
"""

from __future__ import annotations

import time
from typing import TextIO

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.net.events import format_endpoint
from agentshark.output.census import Census, plural
from agentshark.output.report import RenderOptions, view_body
from agentshark.output.screen import Column, PlainScreen, Screen, Seg, Table, Tone, severity_tone
from agentshark.pipeline import ConnectionReport, Item, SourceReport

TABLE = Table(
    columns=(
        Column(name="TIME", width=12, keep=True),
        Column(name="CONN", width=6),
        Column(name="METHOD", width=7),
        Column(name="URL", width=44, grow=True),
        Column(name="STATUS", width=6),
        Column(name="TYPE", width=26),
        Column(name="REQ", width=8),
        Column(name="RESP", width=8),
        Column(name="MS", width=8),
        Column(name="COMPLETE", width=8),
    )
)
LEGEND = (
    "COMPLETE: yes when the whole exchange was seen (request and response ended, no gap); "
    "it says nothing of success, see STATUS"
)


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    if n < 10_000:
        return str(n)
    if n < 10_000_000:
        return f"{n / 1024:.0f}K"
    return f"{n / 1048576:.0f}M"


def _status_tone(status: int | None) -> Tone | None:
    if not status:
        return None
    return "ok" if 200 <= status < 300 else "error" if status >= 400 else None


class TextWriter:
    wide = False  # never cut a cell (set by the CLI)

    def __init__(self, out: TextIO, opts: RenderOptions, screen: Screen | None = None) -> None:
        self._screen = screen if screen is not None else PlainScreen(out, opts.redactor)
        self._opts = opts
        self._header_done = False
        self._connections: list[ConnectionReport] = []
        self._non_http = 0
        self._troubled: list[ConnectionReport] = []  # with exchanges, and warnings

    def _diagnostic(self, indent: str, d: Diagnostic, where: str = "") -> None:
        self._screen.line((indent, None), (f"! {d.code}: {d.message}{where}", _tone(d)))

    def write(self, item: Item) -> None:
        if isinstance(item, Exchange):
            if not self._header_done:
                self._screen.header(TABLE, wide=self.wide)
                self._header_done = True
            self._exchange(item)
        elif isinstance(item, ConnectionReport):
            if item.exchanges == 0:
                self._connections.append(item)
            elif any(d.severity != "info" for d in item.diagnostics):
                self._troubled.append(item)
        elif isinstance(item, SourceReport):
            self._source(item)

    def _exchange(self, ex: Exchange) -> None:
        req, resp = ex.request, ex.response
        started = ex.started
        when = (
            time.strftime("%H:%M:%S", time.gmtime(started)) + f".{started % 1:.3f}"[2:]
            if started
            else "-"
        )
        method = req.method if req else "?"
        url = req.url if req else "?"
        if ex.operation is not None:  # a SQL statement, a command: what it asked
            url = f"{url} {ex.operation.summary()}"
        status = str(resp.status) if resp and resp.status else "-"
        ctype = "-"
        req_size = resp_size = None
        reasons: list[Diagnostic] = list(ex.diagnostics)
        if req is not None:
            req_view = view_body(
                req.body,
                req.headers,
                max_body=self._opts.max_body,
                streaming_hint=False,
                location=f"{ex.id} request body",
            )
            req_size = req_view.decoded.size
            reasons += req_view.decoded.diagnostics
        if resp is not None:
            view = view_body(
                resp.body,
                resp.headers,
                max_body=self._opts.max_body,
                streaming_hint=False,
                location=f"{ex.id} response body",
            )
            resp_size = view.decoded.size
            reasons += view.decoded.diagnostics
            ctype = (view.content_type or "-").split(";")[0]
            if ex.operation is not None:  # the result: a command tag, an error
                ctype = resp.reason or "-"
            if view.content_encoding:
                ctype += f" ({view.content_encoding})"
        ended = resp.ended if resp and resp.ended else None
        duration = f"{(ended - started) * 1000:.1f}" if ended and started else "-"
        cells: list[Seg] = [
            (when, "dim"),
            (ex.connection or "-", "dim"),
            (method, None),
            (url, None),
            (status, _status_tone(resp.status if resp else None)),
            (ctype, None),
            (_size(req_size), None),
            (_size(resp_size), None),
            (duration, None),
            ("yes", "ok") if ex.complete else ("NO", "incomplete"),
        ]
        self._screen.row(TABLE, cells, wide=self.wide)
        for d in reasons:
            self._diagnostic("    ", d)
        if not ex.complete and not reasons:
            self._screen.line(("    ", None), (f"! incomplete: {_missing(ex)}", "incomplete"))

    def _source(self, rep: SourceReport) -> None:
        line = self._screen.line
        if self._connections:
            line()
            line(("connections without HTTP exchanges:", "head"))
            for c in self._connections:
                conn = c.connection
                tls = c.tls or {}
                sni = f" sni {tls['sni']}" if tls.get("sni") else ""
                line(
                    (f"  {conn.id:6} ", "dim"),
                    (
                        f"{format_endpoint(conn.client)} -> {format_endpoint(conn.server)}  "
                        f"{c.protocol:10} bytes {conn.bytes[0]}/{conn.bytes[1]}{sni}",
                        None,
                    ),
                )
                for d in c.diagnostics:
                    self._diagnostic("    ", d)
            self._connections.clear()
        if self._troubled:
            line()
            line(("problems on connections with exchanges:", "head"))
            for c in self._troubled:
                for d in c.diagnostics:
                    if d.severity != "info":
                        self._diagnostic(f"  {c.connection.id:6} ", d)
            self._troubled.clear()
        detail = (
            f"{plural(rep.packets, 'packet')}, {plural(rep.connections, 'connection')}, "
            if rep.format in ("pcap", "pcapng")
            else ""
        )
        if rep.format == "keylog":
            line(
                (f"{rep.path}: ", "head"),
                (f"key log, {plural(rep.key_secrets, 'secret')} loaded", None),
            )
        else:
            line()
            counts = f"{rep.format}, {detail}{plural(rep.exchanges, 'exchange')}"
            line((f"{rep.path}: ", "head"), (counts, None))
        skipped = {k: v for k, v in rep.not_analyzed.items() if v}
        if skipped:
            line(("  not analyzed: " + ", ".join(f"{k} {v}" for k, v in skipped.items()), "dim"))
        for d in rep.diagnostics:
            self._diagnostic("  ", d, f" ({d.location})" if d.location else "")

    def finish(self, census: Census, apis: tuple[str, ...] = ()) -> None:
        """After the last item: the COMPLETE legend, or why there was no exchange."""
        del apis
        if self._header_done:
            self._screen.line()
            self._screen.line((LEGEND, "dim"))
        elif census.inputs_done:
            self._screen.line()
            self._screen.line((f"0 exchanges: {census.why_no_exchanges()}", "incomplete"))
        self._screen.flush()


def _tone(d: Diagnostic) -> Tone:
    return severity_tone(d.severity)


def _missing(ex: Exchange) -> str:
    """Which part of an incomplete exchange was not seen, when no diagnostic says why."""
    req, resp = ex.request, ex.response
    if req is None:
        return "the request was not captured"
    if not req.complete:
        return "the request did not end in the capture"
    if resp is None:
        return "no response in the capture"
    if not resp.complete:
        return "the response did not end in the capture"
    return "not every byte of it was captured"
