"""MCP stdio transcripts in the pipeline: one session per transcript, or per pair of files.

A merged transcript (``transcript.jsonl`` with direction and time) or a goose replay
(``STDIN:``/``STDOUT:``/``STDERR:`` lines) is one MCP session: its exchanges have transport
``stdio`` and the connection ``<prefix>stdio<n>``.

A file of plain JSON-RPC lines holds one direction. Which one is read from its name first
(``c2s``, ``stdin``, ``client``, ``in`` ... against ``s2c``, ``stdout``, ``server``, ``out``
as words of the file name), else from its content (an ``initialize`` request says client
to server, an ``initialize`` result server to client, else more requests than responses
says client to server); an ``info`` diagnostic says what was decided and why. Two such files
given one after the other, one per direction, are one session: with no times, their lines
are merged in an order that respects cause (a response after its request, whichever side
asked). A file whose partner never comes is a session of its own, with a diagnostic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath

import orjson

from agentshark.errors import Diagnostic
from agentshark.jsonrpc import id_key, message_kind
from agentshark.model import Exchange
from agentshark.pipeline.reports import SourceReport
from agentshark.sources.stdio import (
    StdioFormat,
    StdioLine,
    loads_line,
    read_stdio,
    stdio_exchanges,
)

Emitted = Exchange | SourceReport

_CLIENT_WORDS = frozenset({"c2s", "stdin", "client", "in", "input", "request", "requests", "sent"})
_SERVER_WORDS = frozenset(
    {"s2c", "stdout", "server", "out", "output", "response", "responses", "received"}
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(slots=True)
class _Half:
    report: SourceReport
    lines: list[StdioLine]
    direction: str


class StdioSessions:
    """Turns stdio transcripts into exchanges; holds a one-direction file for its partner."""

    def __init__(self, next_id: Callable[[], str], prefix: str) -> None:
        self._next_id = next_id
        self._prefix = prefix
        self._sessions = 0
        self._half: _Half | None = None

    def holding(self, report: SourceReport) -> bool:
        """Whether ``report``'s file waits for its other direction (report it later)."""
        return self._half is not None and self._half.report is report

    def document(self, data: bytes, fmt: StdioFormat, report: SourceReport) -> Iterator[Emitted]:
        """The exchanges of one transcript (and of a held partner, with its report)."""
        report.format = "stdio"
        name = report.path
        if fmt != "stdio-jsonrpc":
            yield from self.flush()
            yield from self._session(read_stdio(data, name), report, report)
            return
        direction, why = _direction(data, name)
        report.diagnostics.append(
            Diagnostic(
                code="stdio.direction",
                message=f"{name} read as {_SIDES[direction]} ({why})",
                location=name,
                severity="info",
            )
        )
        lines: list[StdioLine] = []
        for item in read_stdio(data, name, direction=direction):
            if isinstance(item, Diagnostic):
                report.diagnostics.append(item)
            else:
                lines.append(item)
        half = self._half
        if half is not None and half.direction != direction:
            self._half = None
            c2s, s2c = (half, _Half(report, lines, direction))
            if direction == "c2s":
                c2s, s2c = s2c, c2s
            merged = interleave(c2s.lines, s2c.lines)
            yield from self._session(iter(merged), c2s.report, half.report, report)
            yield half.report
            return
        yield from self.flush()
        self._half = _Half(report, lines, direction)

    def flush(self) -> Iterator[Emitted]:
        """A held one-direction file as a session of its own, then its report."""
        half, self._half = self._half, None
        if half is None:
            return
        half.report.diagnostics.append(one_direction(half.report.path, half.direction))
        yield from self._session(iter(half.lines), half.report, half.report)
        yield half.report

    def new_connection(self) -> str:
        """The connection id of the next session (``stdio1``, ``stdio2``...)."""
        self._sessions += 1
        return f"{self._prefix}stdio{self._sessions}"

    def _session(
        self,
        lines: Iterator[StdioLine | Diagnostic],
        owner: SourceReport,
        *reports: SourceReport,
    ) -> Iterator[Exchange]:
        connection = self.new_connection()
        url = "stdio:" + PurePath(owner.path).name
        only_lines: list[StdioLine] = []
        for item in lines:
            if isinstance(item, Diagnostic):
                owner.diagnostics.append(item)
            else:
                only_lines.append(item)
        by_name = {r.path: r for r in reports}
        for found in stdio_exchanges(
            only_lines, source=owner.index, connection=connection, url=url, next_id=self._next_id
        ):
            if isinstance(found, Diagnostic):
                owner.diagnostics.append(found)
                continue
            where = str(found.extras.get("request_line") or found.extras.get("response_line", ""))
            report = by_name.get(where.rsplit(" line ", 1)[0], owner)
            found.source = report.index
            report.exchanges += 1
            yield found


def one_direction(path: str, direction: str) -> Diagnostic:
    """A file of one direction whose partner never came."""
    other = "server to client" if direction == "c2s" else "client to server"
    return Diagnostic(
        code="stdio.one_direction",
        message=f"{path} holds one direction of a stdio session and no "
        f"file of the other direction ({other}) followed it: its requests have no "
        "answers here. Give both files, one after the other",
        location=path,
    )


_SIDES = {"c2s": "client to server (the server's stdin)", "s2c": "server to client (stdout)"}


def _direction(data: bytes, name: str) -> tuple[str, str]:
    """("c2s" or "s2c", why) for a file of one direction's JSON-RPC lines."""
    words = set(_WORD.findall(PurePath(name).stem.lower()))
    client, server = bool(words & _CLIENT_WORDS), bool(words & _SERVER_WORDS)
    if client != server:
        return ("c2s", "its file name") if client else ("s2c", "its file name")
    requests = responses = 0
    for raw in data.splitlines():
        try:
            msg, _ = loads_line(raw)
        except orjson.JSONDecodeError:
            continue
        kind = message_kind(msg)
        if kind == "request" and msg.get("method") == "initialize":
            return "c2s", "it sends initialize"
        result = msg.get("result") if kind == "response" else None
        if isinstance(result, dict) and "serverInfo" in result:
            return "s2c", "it answers initialize"
        if kind in ("request", "notification"):
            requests += 1
        elif kind in ("response", "error"):
            responses += 1
    if requests > responses:
        return "c2s", "it holds more requests than responses"
    return "s2c", "it holds as many responses as requests, or more"


def interleave(c2s: list[StdioLine], s2c: list[StdioLine]) -> list[StdioLine]:
    """The lines of both directions in one order where every response follows its request:
    client lines first while they can go, a server line when the client's next line needs
    it (or when the client's lines are done)."""
    keys = {id(line): _keys(line) for line in (*c2s, *s2c)}  # each line parsed once
    sent: set[tuple[str, tuple[bool, str]]] = set()  # (direction, id) of requests placed

    def ready(line: StdioLine, other: str) -> bool:
        answers = keys[id(line)][1]
        return not answers or any((other, k) in sent for k in answers)

    out: list[StdioLine] = []
    i = j = 0
    while i < len(c2s) or j < len(s2c):
        if i < len(c2s) and (ready(c2s[i], "s2c") or j >= len(s2c) or not ready(s2c[j], "c2s")):
            line, i = c2s[i], i + 1
        else:
            line, j = s2c[j], j + 1
        out.append(line)
        sent.update((line.direction, k) for k in keys[id(line)][0])
    return out


IdKeys = list[tuple[bool, str]]


def _keys(line: StdioLine) -> tuple[IdKeys, IdKeys]:
    """(ids of the requests, ids of the responses and errors) a line holds."""
    try:
        value, _ = loads_line(line.data)
    except orjson.JSONDecodeError:
        return [], []
    requests: IdKeys = []
    answers: IdKeys = []
    for msg in value if isinstance(value, list) else [value]:
        kind = message_kind(msg)
        key = id_key(msg.get("id")) if kind is not None else None
        if key is None:
            continue
        if kind == "request":
            requests.append(key)
        elif kind in ("response", "error"):
            answers.append(key)
    return requests, answers
