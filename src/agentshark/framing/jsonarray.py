"""A streamed top-level JSON array: body bytes -> one :class:`JsonDocument` per element.

Gemini ``streamGenerateContent`` without ``alt=sse`` streams one array, ``[{...},\\r\\n{...}]``,
sending each element as soon as it is generated. Each element is emitted, raw, the moment its
last byte arrives. There is no per-byte Python loop: an element that is all there is taken by
one regex match (nested brackets up to 17 deep, strings skipped whole); otherwise a scanner
jumps from bracket to bracket with compiled regexes, keeping depth and in-string state across
feeds. Both check structure, not JSON syntax (parsing is lazy, :meth:`JsonDocument.value`).

Diagnostics: ``jsonarray.not_array`` (the body does not start with ``[``: it is kept whole as
one JsonDocument at close, complete if it parses; the usual case is an error object),
``jsonarray.syntax`` (a missing or extra comma; the scan goes on), ``jsonarray.trailing_data``
(bytes after the closing ``]``, ignored), ``jsonarray.truncated`` (no closing ``]``; an element
cut short is emitted with ``complete=False``).
"""

from __future__ import annotations

import enum
import re

import orjson

from agentshark.errors import Diagnostic
from agentshark.framing.events import FramingOutput, JsonDocument, at

_NON_WS = re.compile(rb"[^ \t\r\n]")
# Inside a container element: everything up to the next bracket, whole strings included
# (possessive, so an unterminated string stops the match at its opening quote).
_SKIP = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)  # up to the closing quote


def _element_pattern(depth: int) -> re.Pattern[bytes]:
    """A whole container element nested at most ``depth + 1`` deep, or a whole string.

    Like the scanner, it pairs any closing bracket with any opening one: it checks structure,
    not JSON. One match replaces a Python step per bracket; an element it does not match
    (cut by the end of the bytes so far, or nested deeper) goes to the scanner.
    """
    string = rb'"(?:[^"\\]++|\\.)*+"'
    inner = rb'(?:[^"\[\]{}]++|' + string + rb")*+"
    for _ in range(depth):
        inner = rb'(?:[^"\[\]{}]++|' + string + rb"|[\[{]" + inner + rb"[\]}])*+"
    return re.compile(rb"[\[{]" + inner + rb"[\]}]|" + string, re.DOTALL)


_ELEMENT = _element_pattern(16)
_SCALAR_END = re.compile(rb"[ \t\r\n,\]]")

_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = frozenset(b"[{")


class _State(enum.Enum):
    START = "start"  # before the opening '['
    BEFORE_VALUE = "before value"  # after '[' or ','
    IN_VALUE = "in value"  # inside a container or string element
    IN_SCALAR = "in scalar"  # inside a number or literal element
    AFTER_VALUE = "after value"  # expecting ',' or ']'
    DONE = "done"  # after the closing ']'
    IGNORING = "ignoring"  # trailing data seen after ']': the rest is ignored
    NOT_ARRAY = "not array"  # the body is not an array: kept whole


class JsonArrayDecoder:
    """Incremental streamed-JSON-array decoder; see the module docstring."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._state = _State.START
        self._buf = bytearray()
        self._base = 0  # body offset of self._buf[0]
        self._scan = 0  # where scanning resumes in self._buf (may pass its end after '\')
        self._elem = -1  # start of the current element in self._buf
        self._depth = 0  # open brackets inside the current element
        self._in_string = False
        self._after_comma = False

    def feed(self, data: bytes, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        if self._state is _State.IGNORING:
            return out
        self._buf += data
        self._run(ts, out)
        self._compact()
        return out

    def close(self, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        state = self._state
        if state is _State.NOT_ARRAY:
            raw = bytes(self._buf[self._elem :]).rstrip(b" \t\r\n")
            out.append(
                JsonDocument(raw=raw, ts=ts, offset=self._base + self._elem, complete=_parses(raw))
            )
        elif state in (_State.IN_VALUE, _State.IN_SCALAR, _State.BEFORE_VALUE, _State.AFTER_VALUE):
            out.append(
                self._diag(
                    "jsonarray.truncated",
                    "the body ends before the array's closing ']'",
                    len(self._buf),
                )
            )
            if state in (_State.IN_VALUE, _State.IN_SCALAR):
                raw = bytes(self._buf[self._elem :])
                offset = self._base + self._elem
                out.append(JsonDocument(raw=raw, ts=ts, offset=offset, complete=False))
        self._buf.clear()
        self._state = _State.DONE
        return out

    def _run(self, ts: float, out: list[FramingOutput]) -> None:
        buf = self._buf
        i = self._scan
        while True:
            state = self._state
            if state is _State.IN_VALUE:
                i, starved = self._in_value(i, ts, out)
                if starved:
                    break
            elif state is _State.IN_SCALAR:
                m = _SCALAR_END.search(buf, i)
                if m is None:
                    i = len(buf)
                    break
                i = m.start()
                self._emit(i, ts, out)
            elif state is _State.NOT_ARRAY or state is _State.IGNORING:
                i = len(buf)
                break
            else:
                m = _NON_WS.search(buf, i)
                if m is None:
                    i = len(buf)
                    break
                i = self._between(m.start(), ts, out)
        self._scan = i

    def _in_value(self, i: int, ts: float, out: list[FramingOutput]) -> tuple[int, bool]:
        """Scan a container or string element from ``i`` past its next bracket or quote;
        return where to go on, and whether more bytes are needed first.

        ``_SKIP`` jumps over everything that is not a bracket, whole strings included, in one
        regex match; only an unterminated string (the end of the bytes so far) puts the
        scanner in the in-string state.
        """
        buf = self._buf
        if self._in_string:
            m = _STRING_BODY.match(buf, i)
            assert m is not None  # the pattern matches the empty string
            j = m.end()
            if j >= len(buf) or buf[j] == _BACKSLASH:
                return j, True  # a final '\\' waits for the byte it escapes
            self._in_string = False  # buf[j] is the closing quote
            if self._depth == 0:
                self._emit(j + 1, ts, out)
            return j + 1, False
        m = _SKIP.match(buf, i)
        assert m is not None  # the pattern matches the empty string
        j = m.end()
        if j >= len(buf):
            return j, True
        c = buf[j]
        if c == _QUOTE:
            self._in_string = True
        elif c in _OPEN:
            self._depth += 1
        else:
            self._depth -= 1
            if self._depth == 0:
                self._emit(j + 1, ts, out)
        return j + 1, False

    def _between(self, i: int, ts: float, out: list[FramingOutput]) -> int:
        """Handle the significant byte at ``i`` outside elements; return where to go on."""
        c = self._buf[i]
        state = self._state
        if state is _State.START:
            if c == 0x5B:  # '['
                self._state = _State.BEFORE_VALUE
                self._after_comma = False
                return i + 1
            self._state = _State.NOT_ARRAY
            self._elem = i
            out.append(
                self._diag(
                    "jsonarray.not_array",
                    f"the body starts with {bytes([c])!r}, not '[': it is kept as one document",
                    i,
                )
            )
            return i
        if state is _State.BEFORE_VALUE:
            if c == 0x5D:  # ']'
                if self._after_comma:
                    out.append(self._diag("jsonarray.syntax", "a ',' before ']'", i))
                self._state = _State.DONE
                return i + 1
            if c == 0x2C:  # ','
                out.append(self._diag("jsonarray.syntax", "an empty element (',,')", i))
                return i + 1
            self._elem = i
            self._depth = 0
            if c in _OPEN or c == _QUOTE:
                whole = _ELEMENT.match(self._buf, i)
                if whole is not None:  # the usual case: the element is all here
                    self._emit(whole.end(), ts, out)
                    return whole.end()
            if c in _OPEN:
                self._state = _State.IN_VALUE
                self._depth = 1
            elif c == _QUOTE:
                self._state = _State.IN_VALUE
                self._in_string = True
            else:
                self._state = _State.IN_SCALAR
            return i + 1
        if state is _State.AFTER_VALUE:
            if c == 0x2C:
                self._state = _State.BEFORE_VALUE
                self._after_comma = True
                return i + 1
            if c == 0x5D:
                self._state = _State.DONE
                return i + 1
            out.append(self._diag("jsonarray.syntax", "a missing ',' between elements", i))
            self._state = _State.BEFORE_VALUE
            self._after_comma = False
            return i
        # DONE: something after the closing ']'
        out.append(self._diag("jsonarray.trailing_data", "bytes after the array's closing ']'", i))
        self._state = _State.IGNORING
        return len(self._buf)

    def _emit(self, end: int, ts: float, out: list[FramingOutput]) -> None:
        raw = bytes(self._buf[self._elem : end])
        out.append(JsonDocument(raw=raw, ts=ts, offset=self._base + self._elem))
        self._elem = -1
        self._state = _State.AFTER_VALUE

    def _compact(self) -> None:
        """Drop the bytes no element needs any more (once per feed, not per element)."""
        keep = self._elem if self._elem >= 0 else min(self._scan, len(self._buf))
        if keep:
            del self._buf[:keep]
            self._base += keep
            self._scan -= keep
            if self._elem >= 0:
                self._elem = 0

    def _diag(self, code: str, message: str, index: int) -> Diagnostic:
        return Diagnostic(
            code=code, message=message, location=at(self._location, self._base + index)
        )


def _parses(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True
