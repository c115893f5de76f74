"""MCP stdio traffic -> a merged transcript, the ``stdio-merged`` layout that
:mod:`agentshark.sources.stdio` reads (sans-I/O: bytes in, transcript lines out).

What ``agentshark mcp-tap`` writes as it passes a server's pipes through. Each direction's
bytes are cut at LF (the MCP stdio transport delimits messages by newlines:
https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio); each
whole line becomes one record, one JSON object per line::

    {"seq": 1, "t": 1795976778.82, "dir": "c2s", "bytes": 179, "line": "{\\"jsonrpc\\"...}"}

``seq`` counts the records from 1, ``t`` is the epoch time the bytes were read, ``dir`` is
``c2s`` (the client's writes to the server's stdin), ``s2c`` (the server's stdout) or
``stderr`` (its log), ``bytes`` the size of the line on the pipe with its LF, ``line`` its
text without the LF. The text is the bytes as written: nothing is parsed, re-serialized or
dropped (a CR before the LF stays, a blank line is a record). A line that is not UTF-8 has
its invalid bytes as U+FFFD in ``line`` and all its bytes, exact, in ``b64`` (base64). A
line without its LF when the pipe closed is kept, with ``"partial": true``.

Redaction (``redact``): the transcript is evidence, so it keeps the raw bytes unless asked;
given a function (``agentshark mcp-tap --redact`` gives one made of
:class:`agentshark.output.redact.Redactor`), each line's text goes through it, the record
says ``"redacted": true``, and no ``b64`` is written.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Literal

import orjson

__all__ = ["Direction", "TranscriptRecorder"]

Direction = Literal["c2s", "s2c", "stderr"]


class TranscriptRecorder:
    """Bytes of each direction in, transcript lines (bytes, LF-ended) out."""

    def __init__(self, redact: Callable[[str], str] | None = None) -> None:
        self.records = 0
        self._redact = redact
        self._held: dict[str, bytes] = {"c2s": b"", "s2c": b"", "stderr": b""}

    def feed(self, direction: Direction, data: bytes, t: float) -> bytes:
        """``data`` read from ``direction`` at ``t``: the records of its whole lines."""
        buf = self._held[direction] + data
        end = buf.rfind(b"\n") + 1
        self._held[direction] = buf[end:]
        if not end:
            return b""
        lines = buf[:end].split(b"\n")[:-1]
        return b"".join(self._record(direction, line, t) for line in lines)

    def close(self, direction: Direction, t: float) -> bytes:
        """``direction``'s pipe closed: its last line without an LF, if any."""
        held, self._held[direction] = self._held[direction], b""
        return self._record(direction, held, t, partial=True) if held else b""

    def _record(self, direction: str, line: bytes, t: float, *, partial: bool = False) -> bytes:
        self.records += 1
        record: dict[str, object] = {
            "seq": self.records,
            "t": t,
            "dir": direction,
            "bytes": len(line) + (0 if partial else 1),
        }
        try:
            text = line.decode()
            exact = True
        except UnicodeDecodeError:
            text = line.decode(errors="replace")
            exact = False
        if self._redact is not None:
            record["line"] = self._redact(text)
            record["redacted"] = True
        else:
            record["line"] = text
            if not exact:
                record["b64"] = base64.b64encode(line).decode()
        if partial:
            record["partial"] = True
        return orjson.dumps(record) + b"\n"
