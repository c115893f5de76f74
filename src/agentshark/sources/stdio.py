"""MCP stdio transcripts -> :class:`StdioLine` values -> :class:`agentshark.model.Exchange` objects.

The MCP stdio transport (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio)
sends newline-delimited JSON-RPC 2.0 messages: the client writes to the server's stdin, the
server answers on its stdout ("messages are delimited by newlines, and MUST NOT contain
embedded newlines") and "MAY write UTF-8 strings to its standard error for logging". There is
no HTTP, so a transcript is a document, read in two steps:

:func:`read_stdio` turns the bytes of one transcript into :class:`StdioLine` values, one per
message or log line, in file order. Three layouts are read (:func:`sniff_stdio` tells them
apart from their first lines):

- ``stdio-merged``: one JSON record per line, ``{"seq", "t", "dir": "c2s" | "s2c" | "stderr",
  "bytes", "line", "json"}`` (a tee between client and server). ``line`` is the text as
  written; without it ``json`` is re-serialized (not byte-exact). ``t`` is epoch seconds.
- ``stdio-goose``: goose ``mcp_replays``, ``STDIN: {json}`` (client to server), ``STDOUT:
  {json}`` (server to client), ``STDERR: text`` (server logs). No times.
- ``stdio-jsonrpc``: plain JSON-RPC lines of one direction (a ``c2s.jsonl`` or ``s2c.jsonl``);
  the caller says which, since no line does.

:func:`stdio_exchanges` pairs the lines of one session into exchanges: a JSON-RPC request is
answered by the response or error with the same id (JSON value equality: ``1`` and ``"1"``
differ) coming the other way, whichever side asked (servers send ``sampling/createMessage``
and ``elicitation/create`` to the client). Each request, notification or batch line is one
exchange with transport ``"stdio"``; the JSON-RPC method stands where an HTTP method would,
the line's bytes are the body, status is 0. ``extras`` holds ``kind`` (``"request"``,
``"notification"``, ``"batch"`` or ``"orphan_response"``), ``direction`` (the request's:
``"c2s"`` or ``"s2c"``), ``request_line`` and ``response_line`` (``"<name> line <n>"``).

Completeness: :attr:`Exchange.complete` is True only for an answered request. A notification
expects no answer: its request is complete, its response None, so ``Exchange.complete`` is
False and ``extras["kind"] == "notification"`` is what says nothing is missing.

Malformed lines are :class:`Diagnostic` values (``stdio.bad_line``) and reading goes on: one
bad line costs that line. A line that is not UTF-8 (the transport's encoding) but is JSON once
its invalid bytes are replaced by U+FFFD is kept, after a ``stdio.invalid_utf8`` diagnostic
with the byte offset; the bytes of a goose or one-direction line are kept as written (the MCP
family replaces them again when it reads the body), a merged record's ``line`` is text. The
line splitter is hand-written (a dozen lines): ``framing.ndjson`` decodes HTTP bodies, a later
stage than sources. JSON-RPC shapes and ids come from :mod:`agentshark.jsonrpc`, shared with
the MCP family.
"""

from __future__ import annotations

import codecs
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from agentshark.errors import Diagnostic
from agentshark.jsonrpc import IdKey, id_key, is_jsonrpc, message_kind
from agentshark.model import Body, Exchange, Request, Response

StdioFormat = Literal["stdio-merged", "stdio-goose", "stdio-jsonrpc"]

_MESSAGE_DIRECTIONS = ("c2s", "s2c")
_DIRECTIONS = frozenset({*_MESSAGE_DIRECTIONS, "stderr"})
_OTHER_SIDE = {"c2s": "s2c", "s2c": "c2s"}
_GOOSE_TAGS = ((b"STDIN:", "c2s"), (b"STDOUT:", "s2c"), (b"STDERR:", "stderr"))
_BLANK = b" \t\r"
_SNIFF_LINES = 8  # non-blank lines sniff_stdio looks at
_PREVIEW = 60  # bytes of a bad line quoted in its diagnostic
_STDERR_QUOTE = 200  # characters of the first stderr line quoted in the summary
_NO_TIME = 0.0  # the arrival time of body pieces when the transcript has none
_EXPECTED = "a JSON-RPC 2.0 message (an object with jsonrpc 2.0 and a method, result or error)"


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioLine:
    """One line of an MCP stdio session, as it was written."""

    direction: str  # "c2s" (client to server, the server's stdin), "s2c" (stdout), "stderr"
    data: bytes  # the line as written, without its line ending
    ts: float | None  # seconds since the epoch, None when the format has no times
    where: str  # "<name> line <n>" for diagnostics


# --- reading lines ---------------------------------------------------------------------------


def sniff_stdio(data: bytes) -> StdioFormat | None:
    """The stdio layout of ``data`` from its first non-blank lines, or None.

    A layout is chosen when every recognized line among the first few has it and they are
    more than half of those lines, or all of them but one: one garbled line does not hide a
    transcript, not even a transcript of two lines.
    """
    kinds = [_line_format(line) for _, line in itertools.islice(_lines(data), _SNIFF_LINES)]
    found = {k for k in kinds if k is not None}
    if len(found) != 1:
        return None
    fmt = found.pop()
    count = kinds.count(fmt)
    return fmt if 2 * count > len(kinds) or count >= len(kinds) - 1 else None


def read_stdio(
    data: bytes, name: str, *, direction: str | None = None
) -> Iterator[StdioLine | Diagnostic]:
    """Yield the lines of the transcript ``data`` (``name`` is for locations and messages).

    ``direction`` ("c2s" or "s2c") is required for a file of plain JSON-RPC lines and then
    applies to every line; a layout that names each line's direction refuses it. Raises
    ValueError (at the call, not on iteration) for a missing or refused direction.
    """
    fmt = sniff_stdio(data)
    if direction is not None:
        if direction not in _MESSAGE_DIRECTIONS:
            raise ValueError(f"direction is {direction!r}, expected 'c2s' or 's2c'")
        if fmt is not None and fmt != "stdio-jsonrpc":
            raise ValueError(
                f"{name} is a {fmt} transcript, which names each line's direction: "
                "call read_stdio without direction"
            )
        return _read(data, name, "stdio-jsonrpc", direction)
    if fmt == "stdio-jsonrpc":
        raise ValueError(
            f"{name} holds JSON-RPC lines of one direction only: pass direction='c2s' "
            "(what the client wrote to the server's stdin) or 's2c' (the server's stdout)"
        )
    if fmt is None:
        return iter([_unknown(name)])
    return _read(data, name, fmt, "")


def _unknown(name: str) -> Diagnostic:
    return Diagnostic(
        code="stdio.unknown_format",
        location=name,
        message=f"{name} is not an MCP stdio transcript: expected JSON-RPC lines, merged "
        'records {"dir", "t", "line"} or goose STDIN:/STDOUT:/STDERR: lines',
        severity="error",
    )


def _read(
    data: bytes, name: str, fmt: StdioFormat, direction: str
) -> Iterator[StdioLine | Diagnostic]:
    for lineno, line in _lines(data):
        where = f"{name} line {lineno}"
        if fmt == "stdio-merged":
            yield from _merged(line, where)
        elif fmt == "stdio-goose":
            yield from _goose(line, where)
        else:
            yield from _checked(StdioLine(direction=direction, data=line, ts=None, where=where))


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for each non-blank line: ends at LF, a CR before it is
    dropped, a missing final newline is fine, a UTF-8 BOM at the start is skipped."""
    pos = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    for lineno in itertools.count(1):
        if pos >= len(data):
            return
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        line = data[pos:end].removesuffix(b"\r")
        pos = end + 1
        if line.strip(_BLANK):
            yield lineno, line


def _line_format(line: bytes) -> StdioFormat | None:
    if _goose_split(line) is not None:
        return "stdio-goose"
    if line.lstrip(_BLANK)[:1] not in (b"{", b"["):
        return None
    try:
        value, _ = loads_line(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and value.get("dir") in _DIRECTIONS:
        return "stdio-merged"
    return "stdio-jsonrpc" if is_jsonrpc(value) else None


def _merged(line: bytes, where: str) -> list[StdioLine | Diagnostic]:
    expected = 'a record {"dir": "c2s"|"s2c"|"stderr", "t": seconds, "line": text}'
    try:
        record, invalid = loads_line(line)
    except orjson.JSONDecodeError as e:
        return [_bad(where, f"is not JSON ({e})", expected, line)]
    if not isinstance(record, dict):
        return [_bad(where, f"is a JSON {_kind(record)}", expected, line)]
    direction = record.get("dir")
    if direction not in _DIRECTIONS:
        return [_bad(where, f'has "dir" {direction!r}', expected, line)]
    t = record.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        return [_bad(where, f'has "t" {t!r}', expected, line)]
    text = record.get("line")
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    elif "json" in record:
        try:
            data = orjson.dumps(record["json"])
        except orjson.JSONEncodeError as e:  # pragma: no cover - orjson writes what it read
            return [_bad(where, f'has a "json" that cannot be written back ({e})', expected, line)]
    else:
        return [_bad(where, 'has neither "line" (a string) nor "json"', expected, line)]
    ts = None if t is None else float(t)
    checked = _checked(StdioLine(direction=direction, data=data, ts=ts, where=where))
    return checked if invalid is None else [_invalid_utf8(where, line, invalid), *checked]


def _goose(line: bytes, where: str) -> list[StdioLine | Diagnostic]:
    split = _goose_split(line)
    if split is None:
        return [
            _bad(where, "has no known prefix", "a line starting STDIN:, STDOUT: or STDERR:", line)
        ]
    direction, data = split
    return _checked(StdioLine(direction=direction, data=data, ts=None, where=where))


def _goose_split(line: bytes) -> tuple[str, bytes] | None:
    for tag, direction in _GOOSE_TAGS:
        if line.startswith(tag):
            rest = line[len(tag) :]
            return direction, rest.removeprefix(b" ")
    return None


def _checked(line: StdioLine) -> list[StdioLine | Diagnostic]:
    """``[line]`` when it is a log line or holds a JSON-RPC message (or batch), after a
    diagnostic when it does only with bytes that are not UTF-8 replaced; else why not."""
    if line.direction == "stderr":
        return [line]
    try:
        value, invalid = loads_line(line.data)
    except orjson.JSONDecodeError as e:
        return [_bad(line.where, f"is not JSON ({e})", _EXPECTED, line.data)]
    if not is_jsonrpc(value):
        return [_bad(line.where, "is JSON but not a JSON-RPC 2.0 message", _EXPECTED, line.data)]
    return [line] if invalid is None else [_invalid_utf8(line.where, line.data, invalid), line]


def loads_line(data: bytes) -> tuple[Any, int | None]:
    """``data`` parsed as JSON, and None; or, when ``data`` is not UTF-8 (which MCP stdio
    messages must be) and parses only with its invalid bytes replaced by U+FFFD, that value
    and the offset of the first invalid byte. Raises ``orjson.JSONDecodeError`` when it is
    not JSON either way. A line that is UTF-8 is parsed once."""
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError:
        try:
            data.decode()
        except UnicodeDecodeError as exc:
            return orjson.loads(data.decode(errors="replace")), exc.start
        raise


def _invalid_utf8(where: str, line: bytes, offset: int) -> Diagnostic:
    return Diagnostic(
        code="stdio.invalid_utf8",
        location=where,
        message=f"{where} is not UTF-8 at byte {offset} ({line[offset : offset + 4]!r}...): "
        "read with the invalid bytes replaced by U+FFFD, the rest as written",
    )


def _bad(where: str, problem: str, expected: str, line: bytes) -> Diagnostic:
    preview = line[:_PREVIEW].decode("utf-8", "replace")
    more = "..." if len(line) > _PREVIEW else ""
    return Diagnostic(
        code="stdio.bad_line",
        location=where,
        message=f"{where} {problem}: expected {expected}; line skipped ({preview!r}{more})",
    )


# --- JSON-RPC shapes --------------------------------------------------------------------------


def _kind(value: object) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


# --- pairing ---------------------------------------------------------------------------------


def stdio_exchanges(
    lines: Iterable[StdioLine],
    *,
    source: int,
    connection: str,
    url: str,
    next_id: Callable[[], str],
) -> Iterator[Exchange | Diagnostic]:
    """Pair the lines of one session into exchanges, yielded in the order of their first line.

    An exchange waits for its answer, and every later one waits behind it; whatever is still
    unanswered at the end is yielded then, with response None. ``next_id`` is called once per
    exchange, in yield order.
    """
    session = _Session(source=source, connection=connection, url=url, next_id=next_id)
    for line in lines:
        yield from session.line(line)
    yield from session.close()


@dataclass(slots=True, eq=False)
class _Entry:
    """An exchange (or diagnostic) in request order; ``keys`` are the ids it still awaits."""

    item: Exchange | Diagnostic
    keys: tuple[IdKey, ...] = ()

    @property
    def done(self) -> bool:
        return not self.keys

    @property
    def where(self) -> str:
        if isinstance(self.item, Exchange):
            return str(self.item.extras.get("request_line", ""))
        return self.item.location


@dataclass(slots=True)
class _Session:
    source: int
    connection: str
    url: str
    next_id: Callable[[], str]
    _order: deque[_Entry] = field(default_factory=deque)
    # request direction -> id -> entries awaiting an answer to that id (oldest first)
    _pending: dict[str, dict[IdKey, deque[_Entry]]] = field(
        default_factory=lambda: {d: {} for d in _MESSAGE_DIRECTIONS}
    )
    _stderr_count: int = 0
    _stderr_where: str = ""  # the first stderr line
    _stderr_text: bytes = b""  # the first stderr line with more than blanks

    def line(self, line: StdioLine) -> Iterator[Exchange | Diagnostic]:
        self._take(line)
        while self._order and self._order[0].done:
            yield self._order.popleft().item

    def close(self) -> Iterator[Exchange | Diagnostic]:
        for entry in self._order:
            yield entry.item
        self._order.clear()
        for table in self._pending.values():
            table.clear()
        if self._stderr_where:
            text = self._stderr_text.decode("utf-8", "replace")
            quote = text[:_STDERR_QUOTE] + ("..." if len(text) > _STDERR_QUOTE else "")
            yield Diagnostic(
                code="stdio.stderr",
                location=self._stderr_where,
                message=f"{self._stderr_count} stderr line(s) seen, the first at "
                f"{self._stderr_where}: server logs, not analyzed (first non-blank: {quote!r})",
                severity="info",
            )

    def _take(self, line: StdioLine) -> None:
        if line.direction == "stderr":
            self._stderr_count += 1
            self._stderr_where = self._stderr_where or line.where
            if not self._stderr_text:
                self._stderr_text = line.data.strip()
            return
        if line.direction not in _MESSAGE_DIRECTIONS:
            self._add(
                _bad(
                    line.where, f"has direction {line.direction!r}", "c2s, s2c or stderr", line.data
                )
            )
            return
        try:
            value, _ = loads_line(line.data)  # a line not UTF-8 was said when it was read
        except orjson.JSONDecodeError as e:
            self._add(_bad(line.where, f"is not JSON ({e})", _EXPECTED, line.data))
            return
        messages = value if isinstance(value, list) else [value]
        kinds = [message_kind(m) for m in messages]
        if not messages or None in kinds:
            self._add(
                _bad(line.where, "is JSON but not a JSON-RPC 2.0 message", _EXPECTED, line.data)
            )
        elif all(k in ("response", "error") for k in kinds):
            self._answer(line, [m.get("id") for m in messages])
        else:
            self._ask(line, messages, kinds, batch=isinstance(value, list))

    def _ask(
        self, line: StdioLine, messages: list[Any], kinds: list[str | None], *, batch: bool
    ) -> None:
        method = next(
            str(m["method"])
            for m, k in zip(messages, kinds, strict=True)
            if k in ("request", "notification")
        )
        ids = [m.get("id") for m, k in zip(messages, kinds, strict=True) if k == "request"]
        kind = "batch" if batch else kinds[0] or ""
        exchange = self._exchange(line, method, kind)
        keys = tuple(dict.fromkeys(k for k in map(id_key, ids) if k is not None))
        if any(id_key(i) is None for i in ids):
            exchange.diagnostics.append(
                Diagnostic(
                    code="stdio.bad_id",
                    location=line.where,
                    message=f"{line.where} is a request whose id is not a string or number: "
                    "no response can be matched to it",
                )
            )
        entry = _Entry(exchange, keys)
        table = self._pending[line.direction]
        for key in keys:
            waiting = table.setdefault(key, deque())
            if waiting:
                exchange.diagnostics.append(
                    Diagnostic(
                        code="stdio.duplicate_id",
                        location=line.where,
                        message=f"{line.where} reuses id {key[1]!r} while the request at "
                        f"{waiting[0].where} still awaits its answer: the first answer goes "
                        "to the earlier request",
                    )
                )
            waiting.append(entry)
        self._add(entry)

    def _answer(self, line: StdioLine, ids: list[object]) -> None:
        table = self._pending[_OTHER_SIDE[line.direction]]
        entry = next((table[k][0] for k in map(id_key, ids) if k is not None and k in table), None)
        if entry is None:
            self._orphan(line, ids)
            return
        for key in entry.keys:
            waiting = table[key]
            waiting.remove(entry)
            if not waiting:
                del table[key]
        entry.keys = ()
        exchange = entry.item
        assert isinstance(exchange, Exchange)
        exchange.response = self._response(line)
        exchange.extras["response_line"] = line.where

    def _orphan(self, line: StdioLine, ids: list[object]) -> None:
        exchange = Exchange(
            id=self.next_id(),
            source=self.source,
            connection=self.connection,
            transport="stdio",
            request=None,
            response=self._response(line),
            extras={
                "kind": "orphan_response",
                "direction": _OTHER_SIDE[line.direction],
                "response_line": line.where,
            },
        )
        self._add(exchange)
        shown = ", ".join(orjson.dumps(i).decode() for i in ids[:5]) + (
            ", ..." if len(ids) > 5 else ""
        )
        self._add(
            Diagnostic(
                code="stdio.orphan_response",
                location=line.where,
                message=f"{line.where} answers id {shown}, but no request with that id awaits an "
                f"answer from the other side ({_OTHER_SIDE[line.direction]}): the transcript "
                "may have started late, or the id was already answered",
            )
        )

    def _add(self, item: Exchange | Diagnostic | _Entry) -> None:
        self._order.append(item if isinstance(item, _Entry) else _Entry(item))

    def _exchange(self, line: StdioLine, method: str, kind: str) -> Exchange:
        return Exchange(
            id=self.next_id(),
            source=self.source,
            connection=self.connection,
            transport="stdio",
            request=Request(
                method=method,
                target="",
                url=self.url,
                version="stdio",
                headers=[],
                body=_body(line),
                started=line.ts,
                ended=line.ts,
                complete=True,
            ),
            response=None,
            extras={"kind": kind, "direction": line.direction, "request_line": line.where},
        )

    @staticmethod
    def _response(line: StdioLine) -> Response:
        return Response(
            status=0,
            reason="",
            version="stdio",
            headers=[],
            body=_body(line),
            started=line.ts,
            ended=line.ts,
            complete=True,
        )


def _body(line: StdioLine) -> Body:
    body = Body()
    body.append(_NO_TIME if line.ts is None else line.ts, line.data)
    return body
