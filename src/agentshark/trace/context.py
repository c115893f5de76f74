"""W3C Trace Context and W3C Baggage header values: ``str`` -> parsed value or error text.

Each parser takes one header value (several ``tracestate`` or ``baggage`` fields are joined
with ``","`` first, RFC 9110 §5.3) and returns either the parsed value or a sentence saying
exactly what is wrong. Nothing here raises: a malformed header is a fact about the capture.

- ``traceparent``: Trace Context Level 2, https://w3c.github.io/trace-context/#traceparent-header
  (``w3c/trace-context`` ``spec/20-http_request_header_format.md``). Level 2 adds the
  ``random`` flag (0x02) to Level 1's ``sampled`` (0x01).
- ``tracestate``: https://w3c.github.io/trace-context/#tracestate-header, with the Level 2
  key grammar (``[a-z0-9]`` then up to 255 of ``[a-z0-9_-*/@]``; Level 1's
  ``tenant@system`` split is gone).
- ``baggage``: https://www.w3.org/TR/baggage/#header-content (``w3c/baggage``
  ``baggage/HTTP_HEADER_FORMAT.md``).

Optional whitespace (OWS, space or tab) around a whole value is allowed everywhere: the
Trace Context test suite (``test/test.py`` ``test_traceparent_ows_handling``) sends
``"\\t 00-…-01 \\t"`` and expects it accepted, and RFC 9110 §5.5 excludes it from the field
value anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

OWS = " \t"

_HEX = frozenset("0123456789abcdefABCDEF")
_UPPER_HEX = frozenset("ABCDEF")

# Trace Context Level 2, tracestate: key = ( lcalpha / DIGIT ) 0*255 ( keychar )
_TRACESTATE_KEY = re.compile(r"[a-z0-9][a-z0-9_\-*/@]{0,255}")
# value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E
_TRACESTATE_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
TRACESTATE_MAX_MEMBERS = 32

# RFC 9110 §5.6.2 token: 1*tchar
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E
_BAGGAGE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
BAGGAGE_MAX_MEMBERS = 64
BAGGAGE_MAX_BYTES = 8192

FLAG_SAMPLED = 0x01
FLAG_RANDOM = 0x02


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceParent:
    """A valid ``traceparent``: lowercase hex ids, never all zeros, ``version`` never ``ff``.

    ``flags`` is the whole byte: read bits with the properties, never by value (``09`` is
    sampled too). For a version above ``00``, fields after the flags were ignored, as the
    spec requires; re-emitted, the header would be version ``00``.
    """

    version: str
    trace_id: str
    parent_id: str
    flags: int

    @property
    def sampled(self) -> bool:
        """The caller may have recorded trace data (bit 0x01)."""
        return bool(self.flags & FLAG_SAMPLED)

    @property
    def random(self) -> bool:
        """The caller says the trace-id's right 7 bytes are random (bit 0x02, Level 2)."""
        return bool(self.flags & FLAG_RANDOM)


@dataclass(frozen=True, slots=True, kw_only=True)
class BaggageMember:
    """One ``key=value`` of ``baggage``: ``value`` percent-decoded as UTF-8 (bad bytes become
    U+FFFD), ``properties`` as written (``"k"`` or ``"k=v"``, OWS trimmed, not decoded: the
    spec calls them opaque)."""

    key: str
    value: str
    properties: tuple[str, ...] = ()


def parse_traceparent(value: str) -> TraceParent | str:
    """The parsed ``traceparent``, or what is wrong with it.

    Version ``00`` must be exactly ``version-trace-id-parent-id-flags`` (55 characters).
    A higher version is read by the forward-compatible rules: at least 55 characters,
    the same three fields, and the flags followed by the end of the value or ``-``.
    """
    v = value.strip(OWS)
    if not v:
        return "traceparent is empty"
    fields = v.split("-")
    version = fields[0]
    if problem := _hex_problem("version", version, 2):
        return problem
    if version == "ff":
        return "version ff is invalid (reserved by the spec)"
    if len(fields) < 4:
        return (
            f"traceparent has {len(fields)} '-'-separated fields, expected 4 "
            "(version-trace-id-parent-id-trace-flags)"
        )
    if version == "00" and len(fields) > 4:
        return (
            f"version 00 has {len(fields)} '-'-separated fields, expected 4: "
            f"{'-'.join(fields[4:])!r} follows the trace-flags"
        )
    if version != "00" and len(v) < 55:
        return f"version {version} traceparent has {len(v)} characters, fewer than 55"
    trace_id, parent_id, flags = fields[1:4]
    for name, text, size in (
        ("trace-id", trace_id, 32),
        ("parent-id", parent_id, 16),
        ("trace-flags", flags, 2),
    ):
        if problem := _hex_problem(name, text, size):
            return problem
    if trace_id == "0" * 32:
        return "trace-id is all zeros"
    if parent_id == "0" * 16:
        return "parent-id is all zeros"
    return TraceParent(
        version=version, trace_id=trace_id, parent_id=parent_id, flags=int(flags, 16)
    )


def _hex_problem(name: str, text: str, size: int) -> str | None:
    """What keeps ``text`` from being ``size`` lowercase hex digits, or None."""
    bad = next((c for c in text if c not in _HEX), None)
    if bad is not None:
        return f"{name} {text!r} has {bad!r}, which is not a hex digit"
    if any(c in _UPPER_HEX for c in text):
        return f"{name} {text!r} has uppercase hex (only lowercase is valid)"
    if len(text) != size:
        return f"{name} has {len(text)} hex digits, expected {size}"
    return None


def parse_tracestate(value: str) -> list[tuple[str, str]] | str:
    """The ``(key, value)`` members of ``tracestate`` in order, or what is wrong with it.

    Empty and whitespace-only members are allowed and skipped (they appear when several
    fields are joined); they do not count toward the limit of 32. A repeated key is an
    error: the spec allows one entry per key. A value keeps its leading spaces.
    """
    members: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, raw in enumerate(value.split(","), start=1):
        member = raw.strip(OWS)
        if not member:
            continue
        key, eq, val = member.partition("=")
        where = f"tracestate member {n} ({member!r})"
        if not eq:
            return f"{where} has no '='"
        if not _TRACESTATE_KEY.fullmatch(key):
            return (
                f"{where}: key {key!r} is not 1-256 of a-z 0-9 _ - * / @ starting with a-z or 0-9"
            )
        if not _TRACESTATE_VALUE.fullmatch(val):
            return (
                f"{where}: value {val!r} is not 1-256 printable ASCII characters "
                "without ',' or '=' and ending in a non-space"
            )
        if key in seen:
            return f"{where}: key {key!r} appears more than once"
        seen.add(key)
        members.append((key, val))
    if len(members) > TRACESTATE_MAX_MEMBERS:
        return f"tracestate has {len(members)} members, more than {TRACESTATE_MAX_MEMBERS}"
    return members


def parse_baggage(value: str) -> list[BaggageMember] | str:
    """The members of ``baggage`` in order (duplicate keys kept), or what is wrong with it.

    An empty or whitespace-only value is no baggage (``[]``). Beyond 64 members or 8192
    bytes the spec lets a platform drop members; this reports it as an error rather than
    picking which to drop.
    """
    if not value.strip(OWS):
        return []
    size = len(value.encode("utf-8", "replace"))
    if size > BAGGAGE_MAX_BYTES:
        return f"baggage is {size} bytes, more than {BAGGAGE_MAX_BYTES}"
    raws = value.split(",")
    if len(raws) > BAGGAGE_MAX_MEMBERS:
        return f"baggage has {len(raws)} members, more than {BAGGAGE_MAX_MEMBERS}"
    members: list[BaggageMember] = []
    for n, raw in enumerate(raws, start=1):
        member = _baggage_member(raw)
        if isinstance(member, str):
            return f"baggage member {n} ({raw.strip(OWS)!r}): {member}"
        members.append(member)
    return members


def _baggage_member(raw: str) -> BaggageMember | str:
    head, *props = raw.split(";")
    pair = _baggage_pair(head)
    if isinstance(pair, str):
        return pair
    key, encoded = pair
    if encoded is None:
        return f"key {key!r} has no '=value'"
    properties: list[str] = []
    for prop in props:
        parsed = _baggage_pair(prop)
        if isinstance(parsed, str):
            return f"property: {parsed}"
        pkey, pvalue = parsed
        properties.append(pkey if pvalue is None else f"{pkey}={pvalue}")
    value = unquote_to_bytes(encoded).decode("utf-8", "replace")
    return BaggageMember(key=key, value=value, properties=tuple(properties))


def _baggage_pair(text: str) -> tuple[str, str | None] | str:
    """``key OWS "=" OWS value`` as (key, value), a bare ``key`` as (key, None), or a problem."""
    key, eq, val = text.partition("=")
    key, val = key.strip(OWS), val.strip(OWS)
    if not key:
        return "empty" if not eq and not val else f"no key before '=' in {text.strip(OWS)!r}"
    if not _TOKEN.fullmatch(key):
        return f"key {key!r} is not an HTTP token"
    if not eq:
        return key, None
    if not _BAGGAGE_VALUE.fullmatch(val):
        bad = next(c for c in val if not _BAGGAGE_VALUE.fullmatch(c))
        return f"value of {key!r} has {bad!r}, which must be percent-encoded"
    return key, val
