"""Secrets a stream split across its events: the deltas of a streamed reply, read together.

A model streams its text, reasoning and tool arguments in deltas of a few characters: a key in
the reply comes as ``"sk-pr"``, ``"oj-Ab3d"``, ``"Ef6h…"``, and no single event has its shape.
:func:`redact_split` joins the delta strings of a response's events in order (the values of
:data:`DELTA_KEYS` at any depth of each event's JSON data), finds credentials in the joined
text with the one policy of :mod:`agentshark.output.redact`, and replaces every piece of a
secret that spans two or more events: the first piece with the secret's mark, the others with
``[REDACTED …]``. Only those events' ``data`` is written again (as orjson writes JSON); the
others are untouched. A secret inside one event is left to the per-event redaction. A shape
has no end mark: a key at the end of one delta takes the word characters that open the next
one with it (``…xyZ01`` + ``2345 done`` redacts ``2345`` too), an over-redaction, never a leak.
"""

from __future__ import annotations

import bisect
from typing import Any

import orjson

from agentshark.output import redact

DELTA_KEYS = frozenset(
    {"text", "partial_json", "arguments", "content", "delta", "thinking", "refusal"}
)
_CONTINUED = "[REDACTED …]"

Path = tuple[Any, ...]


def redact_split(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (report dicts with a ``data`` string) with split secrets redacted."""
    parsed: dict[int, Any] = {}
    pieces: list[tuple[int, Path, str]] = []
    for i, event in enumerate(events):
        data = event.get("data")
        if type(data) is not str or not data.startswith("{"):
            continue
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        parsed[i] = value
        pieces += [(i, path, text) for path, text in _deltas(value, ())]
    if len({p[0] for p in pieces}) < 2:
        return events
    joined = "".join(text for _, _, text in pieces)
    if redact.REDACTION.text(joined) == joined:
        return events
    starts = []
    at = 0
    for _, _, text in pieces:
        starts.append(at)
        at += len(text)
    edits: dict[int, list[tuple[int, int, str]]] = {}  # piece -> (start, end, replacement)
    for start, end, secret in _secrets(joined):
        first = bisect.bisect_right(starts, start) - 1
        last = bisect.bisect_right(starts, end - 1) - 1
        if pieces[first][0] == pieces[last][0]:
            continue  # within one event: the event's own redaction finds it
        for n in range(first, last + 1):
            lo = max(start, starts[n]) - starts[n]
            hi = min(end, starts[n] + len(pieces[n][2])) - starts[n]
            edits.setdefault(n, []).append((lo, hi, secret if n == first else _CONTINUED))
    if not edits:
        return events
    out = list(events)
    touched: set[int] = set()
    for n, cuts in edits.items():
        i, path, text = pieces[n]
        for lo, hi, replacement in sorted(cuts, reverse=True):
            text = text[:lo] + replacement + text[hi:]
        _set(parsed[i], path, text)
        touched.add(i)
    for i in touched:
        out[i] = {**events[i], "data": orjson.dumps(parsed[i]).decode()}
    return out


def _deltas(value: Any, path: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and k in DELTA_KEYS:
                found.append(((*path, k), v))
            elif isinstance(v, dict | list):
                found += _deltas(v, (*path, k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            found += _deltas(v, (*path, n))
    return found


def _set(value: Any, path: Path, text: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


def _secrets(joined: str) -> list[tuple[int, int, str]]:
    """(start, end, mark) of each credential the policy finds in ``joined``: the span of the
    secret itself (a scheme word or label before it stays)."""
    found = []
    for m in redact.TEXT_PATTERN.finditer(joined):
        replaced = redact.replace_match(m)
        if replaced == m.group():
            continue
        # the changed middle of the match is the secret; what is kept around it stays
        head = 0
        while (
            head < len(replaced)
            and m.start() + head < m.end()
            and replaced[head] == joined[m.start() + head]
        ):
            head += 1
        tail = 0
        while (
            tail < len(replaced) - head
            and replaced[-1 - tail] == joined[m.end() - 1 - tail]
            and m.end() - 1 - tail > m.start() + head
        ):
            tail += 1
        found.append((m.start() + head, m.end() - tail, replaced[head : len(replaced) - tail]))
    return found
