"""The terminal view: one line per exchange as it finishes, then connections and sources.

Columns are cut to their width only when ``wide`` is off (the CLI turns it on with
``--wide`` and whenever the output is not a terminal). COMPLETE says whether the whole
exchange was seen, never whether it succeeded (that is STATUS); an exchange that is not
complete is followed by the reasons the JSON report gives (its diagnostics, those of its
decoded bodies), or a line saying which part is missing when none was recorded.
"""

from __future__ import annotations

import time
from typing import TextIO

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.net.events import format_endpoint
from agentshark.output.census import Census, plural
from agentshark.output.report import RenderOptions, view_body
from agentshark.pipeline import ConnectionReport, Item, SourceReport

_COLUMNS = (
    ("TIME", 12),
    ("CONN", 6),
    ("METHOD", 7),
    ("URL", 44),
    ("STATUS", 6),
    ("TYPE", 26),
    ("REQ", 8),
    ("RESP", 8),
    ("MS", 8),
    ("COMPLETE", 8),
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


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class TextWriter:
    wide = False  # never cut a cell (set by the CLI)

    def __init__(self, out: TextIO, opts: RenderOptions) -> None:
        self._out = opts.redactor.stream(out)  # every line redacted, whatever writes it
        self._redact = opts.redactor.text
        self._opts = opts
        self._header_done = False
        self._connections: list[ConnectionReport] = []
        self._non_http = 0
        self._troubled: list[ConnectionReport] = []  # with exchanges, and warnings

    def _line(self, cells: list[str]) -> None:
        # Redacted before the cut: a cut secret no longer has the shape that finds it.
        parts = [
            _clip(self._redact(c), w).ljust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)
        ]
        self._out.write(" ".join(parts).rstrip() + "\n")

    def _row(self, cells: list[str]) -> None:
        """A table line: cells cut to their column (:meth:`_line`), or whole when wide."""
        if not self.wide:
            return self._line(cells)
        parts = [c.ljust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)]
        self._out.write(" ".join(parts).rstrip() + "\n")
        return None

    def write(self, item: Item) -> None:
        if isinstance(item, Exchange):
            if not self._header_done:
                self._row([name for name, _ in _COLUMNS])
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
            if view.content_encoding:
                ctype += f" ({view.content_encoding})"
        ended = resp.ended if resp and resp.ended else None
        duration = f"{(ended - started) * 1000:.1f}" if ended and started else "-"
        ok = "yes" if ex.complete else "NO"
        self._row(
            [
                when,
                ex.connection or "-",
                method,
                url,
                status,
                ctype,
                _size(req_size),
                _size(resp_size),
                duration,
                ok,
            ]
        )
        for d in reasons:
            self._out.write(f"    ! {d.code}: {d.message}\n")
        if not ex.complete and not reasons:
            self._out.write(f"    ! incomplete: {_missing(ex)}\n")

    def _source(self, rep: SourceReport) -> None:
        out = self._out
        if self._connections:
            out.write("\nconnections without HTTP exchanges:\n")
            for c in self._connections:
                conn = c.connection
                tls = c.tls or {}
                sni = f" sni {tls['sni']}" if tls.get("sni") else ""
                out.write(
                    f"  {conn.id:6} {format_endpoint(conn.client)} -> "
                    f"{format_endpoint(conn.server)}  {c.protocol:10} "
                    f"bytes {conn.bytes[0]}/{conn.bytes[1]}{sni}\n"
                )
                for d in c.diagnostics:
                    out.write(f"    ! {d.code}: {d.message}\n")
            self._connections.clear()
        if self._troubled:
            out.write("\nproblems on connections with exchanges:\n")
            for c in self._troubled:
                for d in c.diagnostics:
                    if d.severity != "info":
                        out.write(f"  {c.connection.id:6} ! {d.code}: {d.message}\n")
            self._troubled.clear()
        detail = (
            f"{plural(rep.packets, 'packet')}, {plural(rep.connections, 'connection')}, "
            if rep.format in ("pcap", "pcapng")
            else ""
        )
        if rep.format == "keylog":
            out.write(f"{rep.path}: key log, {plural(rep.key_secrets, 'secret')} loaded\n")
        else:
            out.write(f"\n{rep.path}: {rep.format}, {detail}{plural(rep.exchanges, 'exchange')}\n")
        skipped = {k: v for k, v in rep.not_analyzed.items() if v}
        if skipped:
            out.write("  not analyzed: " + ", ".join(f"{k} {v}" for k, v in skipped.items()) + "\n")
        for d in rep.diagnostics:
            out.write(
                f"  ! {d.code}: {d.message}" + (f" ({d.location})" if d.location else "") + "\n"
            )

    def finish(self, census: Census, apis: tuple[str, ...] = ()) -> None:
        """After the last item: the COMPLETE legend, or why there was no exchange."""
        del apis
        if self._header_done:
            self._out.write(f"\n{LEGEND}\n")
        elif census.inputs_done:
            self._out.write(f"\n0 exchanges: {census.why_no_exchanges()}\n")


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
