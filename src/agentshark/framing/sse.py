"""Server-sent events: ``text/event-stream`` body bytes -> :class:`SseEvent`, :class:`SseComment`.

Implements the WHATWG event stream interpretation
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

- Lines end at CRLF, a lone CR or a lone LF, and nowhere else (``str.splitlines`` would also
  split at U+2028, VT, FF...). A CR ending one chunk and a LF starting the next are one line
  end.
- One leading UTF-8 BOM is dropped. A line starting with ``:`` is a comment. Otherwise the
  field name runs to the first ``:``, and one space after it is dropped from the value.
- ``data`` lines are joined with LF; ``event`` sets the type (``message`` when absent);
  ``id`` sets the last event ID unless it contains NUL; ``retry`` is kept only if all ASCII
  digits; other fields are ignored (and counted in :attr:`SseDecoder.unknown_fields`).
- A blank line dispatches the event, unless no ``data`` line was seen.

Deviations, made on purpose: comments are reported (:class:`SseComment`), and an event cut by
the end of the body is reported with ``complete=False`` and an ``sse.truncated`` Diagnostic
where the spec silently drops it. Lines are parsed as bytes and values decoded as UTF-8 (the
same result: every byte the parser looks at is ASCII); bytes that are not UTF-8 are replaced
with U+FFFD and reported as ``sse.invalid_utf8``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import fields
from itertools import repeat

from agentshark.errors import Diagnostic
from agentshark.framing.events import FramingOutput, SseComment, SseEvent, at

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"(\r\n|\r|\n)")


class SseDecoder:
    """Incremental ``text/event-stream`` decoder; see the module docstring."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._buf = bytearray()  # the unterminated last line
        self._offset = 0  # body offset of self._buf[0]
        self._bom_checked = False
        self._skip_lf = False  # the last chunk ended with CR: a LF opening the next belongs to it
        # The event being assembled (WHATWG: data buffer, event type buffer).
        self._data: list[bytes] = []
        self._event = ""
        self._retry: int | None = None
        self._start = -1  # body offset of the event's first field line
        self._last_id: str | None = None  # WHATWG "last event ID buffer": persists
        self.unknown_fields = 0

    def feed(self, data: bytes, ts: float) -> list[FramingOutput]:
        if self._skip_lf and data:
            self._skip_lf = False
            if data[0] == 0x0A:
                data = data[1:]
                self._offset += 1
        if not data:
            return []
        if not self._bom_checked:
            data = self._strip_bom(data)
            if not data:
                return []
        cr = data.find(b"\r")
        if cr < 0 and not self._buf and self._start < 0 and data.endswith(b"\n\n"):
            return self._whole_events(data, ts)
        if cr < 0 and data.find(b"\n") < 0:
            self._buf += data
            return []
        if self._buf:
            self._buf += data
            data = bytes(self._buf)
            self._buf.clear()
            cr = data.find(b"\r")
        out: list[FramingOutput] = []
        if cr < 0:
            lines = data.split(b"\n")
            tail = lines.pop()
            self._lines(lines, repeat(1), ts, out)
        elif _crlf_only(lines := data.split(b"\r\n"), data):
            tail = lines.pop()
            self._lines(lines, repeat(2), ts, out)
        else:
            parts = _LINE_END.split(data)
            tail = parts.pop()
            self._lines(parts[0::2], map(len, parts[1::2]), ts, out)
            self._skip_lf = data.endswith(b"\r")
        if tail:
            self._buf += tail
        return out

    def _whole_events(self, data: bytes, ts: float) -> list[FramingOutput]:
        """A piece of whole events with LF line ends, none pending: what servers send, one
        flush per event. Split once at the blank lines; a block that is one ``data`` line,
        after an optional ``event`` line, becomes its event here, any other block goes
        through :meth:`_lines` (the same result, line by line). Saves the per-line loop on
        hundreds of thousands of events."""
        out: list[FramingOutput] = []
        pos = self._offset
        for block in data[:-2].split(b"\n\n"):
            if block.startswith(b"data:") and b"\n" not in block:
                value = block[6:] if block[5:6] == b" " else block[5:]
                text = self._text(value, pos, out)
                out.append(_new_event("message", text, self._last_id, None, ts, pos))
            elif (
                block.startswith(b"event:")
                and block.count(b"\n") == 1
                and ((line := block.partition(b"\n")[2]).startswith(b"data:"))
            ):
                raw = block[6 : len(block) - len(line) - 1]  # the event line's value
                name = self._text(raw[1:] if raw[:1] == b" " else raw, pos, out)
                value = line[6:] if line[5:6] == b" " else line[5:]
                text = self._text(value, pos, out)
                out.append(_new_event(name or "message", text, self._last_id, None, ts, pos))
            else:
                self._offset = pos
                self._lines([*block.split(b"\n"), b""], repeat(1), ts, out)
            pos += len(block) + 2
        self._offset = pos
        return out

    def _strip_bom(self, data: bytes) -> bytes:
        """Drop one leading BOM; b"" while the bytes so far could still be one."""
        self._buf += data
        if len(self._buf) < len(_BOM) and _BOM.startswith(self._buf):
            return b""
        self._bom_checked = True
        data = bytes(self._buf)
        self._buf.clear()
        if data.startswith(_BOM):
            self._offset += len(_BOM)
            return data[len(_BOM) :]
        return data

    def close(self, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        unterminated = len(self._buf)
        if unterminated:
            line = bytes(self._buf)
            self._buf.clear()
            if line[0] != 0x3A:  # a comment cut short is not worth an event
                self._lines([line], [0], ts, out)
        if self._start >= 0 or unterminated:
            start = self._start if self._start >= 0 else self._offset
            out.append(
                Diagnostic(
                    code="sse.truncated",
                    message="the body ends inside an event (no blank line after it); "
                    "it is reported incomplete",
                    location=at(self._location, start),
                )
            )
            if self._data:
                raw = b"\n".join(self._data)
                out.append(
                    _new_event(
                        self._event or "message",
                        self._text(raw, start, out),
                        self._last_id,
                        self._retry,
                        ts,
                        start,
                        complete=False,
                    )
                )
            self._data.clear()
            self._event = ""
            self._retry = None
            self._start = -1
        return out

    def _lines(
        self, lines: list[bytes], seps: Iterable[int], ts: float, out: list[FramingOutput]
    ) -> None:
        """Interpret complete lines; ``seps`` are the lengths of their line ends.

        The hot path (a ``data:`` line, then a blank line dispatching it) is inlined: a token
        stream is tens of thousands of such events.
        """
        pos = self._offset
        data = self._data
        start = self._start
        for line, sep in zip(lines, seps, strict=False):
            if not line:
                if data:
                    raw = data[0] if len(data) == 1 else b"\n".join(data)
                    try:
                        text = raw.decode()
                    except UnicodeDecodeError:
                        text = raw.decode(errors="replace")
                        out.append(_invalid_utf8(self._location, start))
                    out.append(
                        _new_event(
                            self._event or "message", text, self._last_id, self._retry, ts, start
                        )
                    )
                    data.clear()
                    self._event = ""
                    self._retry = None
                elif start >= 0:
                    self._event = ""
                    self._retry = None
                start = -1
            elif line.startswith(b"data:"):
                if start < 0:
                    start = pos
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line[0] == 0x3A:
                comment = line[2:] if line[1:2] == b" " else line[1:]
                out.append(SseComment(text=self._text(comment, pos, out), ts=ts, offset=pos))
            else:
                if start < 0:
                    start = pos
                self._field(line, pos, out)
            pos += len(line) + sep
        self._offset = pos
        self._start = start

    def _field(self, line: bytes, pos: int, out: list[FramingOutput]) -> None:
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = self._text(value, pos, out)
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = self._text(value, pos, out)
        elif name == b"retry":
            if value.isdigit():
                self._retry = int(value)
        else:
            self.unknown_fields += 1

    def _text(self, raw: bytes, pos: int, out: list[FramingOutput]) -> str:
        try:
            return raw.decode()
        except UnicodeDecodeError:
            out.append(_invalid_utf8(self._location, pos))
            return raw.decode(errors="replace")


def _crlf_only(lines: list[bytes], data: bytes) -> bool:
    """``data``, split at CRLF into ``lines``, has no lone CR or LF."""
    n = len(lines) - 1
    return data.count(b"\r") == n and data.count(b"\n") == n


def _event_setters() -> tuple[Callable[[SseEvent, object], None], ...]:
    names = tuple(f.name for f in fields(SseEvent))
    assert names == ("event", "data", "id", "retry", "ts", "offset", "complete"), names
    return tuple(getattr(SseEvent, name).__set__ for name in names)


_set_event, _set_data, _set_id, _set_retry, _set_ts, _set_offset, _set_complete = _event_setters()
_object_new = object.__new__


def _new_event(
    event: str,
    data: str,
    id: str | None,  # noqa: A002 - the field's name
    retry: int | None,
    ts: float,
    offset: int,
    complete: bool = True,
) -> SseEvent:
    """``SseEvent(...)`` at half the cost: a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``; the slot descriptors are faster, and the type stays frozen."""
    ev: SseEvent = _object_new(SseEvent)
    _set_event(ev, event)
    _set_data(ev, data)
    _set_id(ev, id)
    _set_retry(ev, retry)
    _set_ts(ev, ts)
    _set_offset(ev, offset)
    _set_complete(ev, complete)
    return ev


def _invalid_utf8(location: str, offset: int) -> Diagnostic:
    return Diagnostic(
        code="sse.invalid_utf8",
        message="bytes that are not UTF-8 were replaced with U+FFFD",
        location=at(location, offset),
    )
