"""Newline-delimited JSON: body bytes -> one :class:`JsonDocument` per line.

Serves ``application/x-ndjson`` (Ollama's native API), ``application/jsonl`` and MCP stdio
transcripts, and RFC 7464 ``application/json-seq`` as far as one record per line goes: a
leading RS (0x1E) is dropped from each line. Lines end at LF, with an optional CR before it;
blank lines are skipped. Documents are kept raw (parsing is lazy); a line that cannot start a
JSON text gets an ``ndjson.not_json`` Diagnostic and is still emitted. Many servers omit the
final newline: an unterminated last line is complete if it parses, else it is emitted with
``complete=False`` and an ``ndjson.truncated`` Diagnostic.
"""

from __future__ import annotations

import orjson

from agentshark.errors import Diagnostic
from agentshark.framing.events import FramingOutput, JsonDocument, at

_JSON_START = frozenset(b'{["-0123456789tfn')
_WHITESPACE = b" \t\r\n"


class NdjsonDecoder:
    """Incremental NDJSON decoder; see the module docstring."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._buf = bytearray()  # the unterminated last line
        self._offset = 0  # body offset of self._buf[0]

    def feed(self, data: bytes, ts: float) -> list[FramingOutput]:
        if data.find(b"\n") < 0:
            self._buf += data
            return []
        if self._buf:
            self._buf += data
            data = bytes(self._buf)
            self._buf.clear()
        lines = data.split(b"\n")
        tail = lines.pop()
        out: list[FramingOutput] = []
        pos = self._offset
        for line in lines:
            end = len(line) - 1 if line.endswith(b"\r") else len(line)
            self._line(line, end, pos, ts, out, complete=True)
            pos += len(line) + 1
        self._offset = pos
        if tail:
            self._buf += tail
        return out

    def close(self, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        if self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._line(line, len(line), self._offset, ts, out, complete=False)
            self._offset += len(line)
        return out

    def _line(
        self,
        line: bytes,
        end: int,
        pos: int,
        ts: float,
        out: list[FramingOutput],
        *,
        complete: bool,
    ) -> None:
        """Emit ``line[:end]`` unless blank. ``complete`` False: the line had no newline, so
        it is complete only if it parses."""
        begin = 1 if line[:1] == b"\x1e" else 0
        doc = line[begin:end] if begin or end < len(line) else line
        stripped = doc.lstrip(_WHITESPACE)
        if not stripped.rstrip(_WHITESPACE):
            return
        offset = pos + begin
        if stripped[0] not in _JSON_START:
            out.append(
                Diagnostic(
                    code="ndjson.not_json",
                    message=f"a line starts with {stripped[:1]!r}, which cannot start a JSON text",
                    location=at(self._location, offset),
                )
            )
        if not complete:
            try:
                orjson.loads(doc)
            except orjson.JSONDecodeError as exc:
                out.append(
                    Diagnostic(
                        code="ndjson.truncated",
                        message=f"the body ends inside a line that is not JSON ({exc}); "
                        "it is reported incomplete",
                        location=at(self._location, offset),
                    )
                )
            else:
                complete = True
        out.append(JsonDocument(raw=doc, ts=ts, offset=offset, complete=complete))
