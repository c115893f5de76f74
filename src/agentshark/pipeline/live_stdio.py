"""An MCP stdio transcript that is still being written, line by line (sans-I/O).

Lines end at LF as in :mod:`agentshark.sources.stdio` (a CR before it dropped, blank lines
skipped but counted, a UTF-8 BOM at the start skipped); a line without its LF yet is held
until it has one, or until the input ends. Each whole line is read by that module's own
per-layout functions and paired by its own session (:class:`~agentshark.sources.stdio`
``_Session``): an exchange comes out as soon as it and every exchange before it are
answered, which is when :func:`~agentshark.sources.stdio.stdio_exchanges` yields it.

The layout is decided from the first whole lines (:func:`sniff_lines`). A file of plain
JSON-RPC lines holds one direction: which one is decided by its name, else by the lines
there when it is decided (an ``initialize`` request or result, usually its first line), and
it is a session of its own (two such files followed at once are not merged into one session,
as ``run`` merges two given one after the other). Its diagnostics end in ``run``'s order:
the lines' own, then the pairing's.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import PurePath

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.pipeline.reports import SourceReport
from agentshark.pipeline.stdio import _SIDES, StdioSessions, _direction, one_direction
from agentshark.sources.stdio import (
    StdioFormat,
    StdioLine,
    _checked,
    _goose,
    _merged,
    _Session,
    sniff_stdio,
)

__all__ = ["StdioFollow", "sniff_lines"]

_BLANK = b" \t\r"


def sniff_lines(head: bytes) -> StdioFormat | None:
    """The stdio layout of the whole lines of ``head`` (None until one is whole)."""
    end = head.rfind(b"\n")
    return sniff_stdio(head[: end + 1]) if end >= 0 else None


class StdioFollow:
    """One transcript: bytes pushed, exchanges out as their sessions make them final."""

    def __init__(
        self,
        report: SourceReport,
        fmt: StdioFormat,
        sessions: StdioSessions,
        next_id: Callable[[], str],
    ) -> None:
        report.format = "stdio"
        self._next_id = next_id
        self._report = report
        self._fmt = fmt
        self._direction = ""
        self._sessions = sessions
        self._session: _Session | None = None
        self._held = b""
        self._lineno = 0
        self._start = True
        self._pairing: list[Diagnostic] = []

    def push(self, data: bytes) -> list[Exchange]:
        buf = self._held + data
        if self._start:
            if len(buf) < len(codecs.BOM_UTF8) and codecs.BOM_UTF8.startswith(buf):
                self._held = buf
                return []
            buf = buf.removeprefix(codecs.BOM_UTF8)
            self._start = False
        end = buf.rfind(b"\n")
        if end < 0:
            self._held = buf
            return []
        self._held = buf[end + 1 :]
        if self._session is None:
            self._open(buf[: end + 1])
        out: list[Exchange] = []
        for raw in buf[:end].split(b"\n"):
            self._line(raw, out)
        return out

    def end(self) -> list[Exchange]:
        out: list[Exchange] = []
        held, self._held = self._held, b""
        if self._session is None:
            self._open(held)
        if held:
            self._line(held, out)
        assert self._session is not None
        for item in self._session.close():
            self._take(item, out)
        report = self._report
        if self._fmt == "stdio-jsonrpc":
            report.diagnostics.append(one_direction(report.path, self._direction))
        # run's order: the lines' diagnostics, then (one direction's,) the pairing's
        pairing = {id(d) for d in self._pairing}
        report.diagnostics.sort(key=lambda d: id(d) in pairing)
        return out

    def _open(self, lines: bytes) -> None:
        report = self._report
        if self._fmt == "stdio-jsonrpc":
            self._direction, why = _direction(lines, report.path)
            report.diagnostics.append(
                Diagnostic(
                    code="stdio.direction",
                    message=f"{report.path} read as {_SIDES[self._direction]} ({why})",
                    location=report.path,
                    severity="info",
                )
            )
        self._session = _Session(
            source=report.index,
            connection=self._sessions.new_connection(),
            url="stdio:" + PurePath(report.path).name,
            next_id=self._next_id,
        )

    def _line(self, raw: bytes, out: list[Exchange]) -> None:
        self._lineno += 1
        line = raw.removesuffix(b"\r")
        if not line.strip(_BLANK):
            return
        where = f"{self._report.path} line {self._lineno}"
        if self._fmt == "stdio-merged":
            read = _merged(line, where)
        elif self._fmt == "stdio-goose":
            read = _goose(line, where)
        else:
            read = _checked(StdioLine(direction=self._direction, data=line, ts=None, where=where))
        assert self._session is not None
        for item in read:
            if isinstance(item, Diagnostic):
                self._report.diagnostics.append(item)
            else:
                for found in self._session.line(item):
                    self._take(found, out)

    def _take(self, item: Exchange | Diagnostic, out: list[Exchange]) -> None:
        if isinstance(item, Diagnostic):
            self._pairing.append(item)
            self._report.diagnostics.append(item)
            return
        item.source = self._report.index
        self._report.exchanges += 1
        out.append(item)
