"""Run agentshark on a clean and a faulted capture and classify every exchange and call.

An exchange is compared as the JSON report renders it (``output.report.exchange_json`` with
stream events, nothing redacted) plus a SHA-256 of each body, minus what legitimately differs
between two runs: ids and connection ids (numbering), the HTTP/1 ``stream`` (a request's place
on its connection) and diagnostics (compared as evidence, not as content). A call likewise
(``call_json`` minus ``id``, ``exchange_id``, diagnostics).

Exchanges of the two runs are matched by connection (its two endpoints, whatever the roles)
and, for HTTP/2, the stream id, for HTTP/1 the request's first-byte time (the n-th of equal
times with the n-th); left-overs are then matched by the response's first-byte time. Calls
follow their exchange (the n-th call of an exchange with the n-th).

A clean exchange is *affected* when a touched packet's byte range (``inject.Touch``) overlaps
the TCP bytes of its request or response, or the bytes of its connection before the first
message of a direction (TLS handshake, HTTP/2 preface and settings; for the HTTP/2 exchanges
of an h2c upgrade, before their own first message: the 101 and the server's SETTINGS that
follow it; for the exchanges read inside a TLS session that a STARTTLS answer began, such as
PostgreSQL's ``S``, before their own first message: the handshake after that answer), or
when one of its HTTP/2 header blocks depends, through the connection's HPACK dynamic table,
on the header block of a touched message (:func:`state_flags`: read from the clean run's
bytes with the ``hpack`` library's Decoder and a scan of the representations in
:mod:`tests.faults.hpack_deps`, not with agentshark's HPACK code; a block depends on one when
it references an entry that block inserted, or an older entry: the lost block's insertions
would have moved it; touched bytes of that direction that are in no message count as a block
lost at their time stamp; a touched message's blocks all count as lost, even when only its
body was touched); or when client bytes were lost while its HTTP/2 stream was open
(:func:`reset_flags`: they may have held a RST_STREAM for it). Such an
exchange is *affected only through state* (``Verdict.via``: ``hpack`` or ``reset``) when its
own bytes were not touched; the report counts those apart. A message's bytes are its
direction's data segments time-stamped between its first and last byte; over TLS the range
starts 16 KiB + 512 earlier, since a record's first segments come before the time stamp of
its first plaintext byte. So "affected" errs towards too many, never too few.

Verdicts: ``identical``; ``facts_unknown`` (different only in TLS session facts that the
faulted run lists in ``tls.unknown``: a lost hello carried them, ``tls.trial``);
``incomplete`` (different, and says ``complete: false``);
``absent_diag`` (gone, and the faulted run has a new diagnostic or gap on its connection or
source); and the violations ``wrong`` (complete and different), ``absent_silent`` (gone with
no new evidence), ``extra_complete`` (an exchange or call the clean run does not have, marked
complete). ``extra_incomplete`` is an incomplete left-over of the faulted run (allowed).

Over QUIC, faults touch datagrams, not TCP bytes: an exchange of a QUIC connection is
affected when a datagram of its connection was touched before it ended
(:func:`datagram_flags`: the suite does not decrypt QUIC, so what a datagram held is not
known); a lost datagram of a capture with real retransmissions (``Input.resends``) may
have its bytes in a later copy, so a difference in times alone is ``retimed`` there.

A call is affected when one of the exchanges it names is (its own; an MCP session's, that
carried its messages), or the exchange of a call it names (an MCP stream message answering a
call: the link is known only if that call is).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, call_json, exchange_json
from agentshark.pipeline import Options
from agentshark.pipeline.connection import HttpSession
from tests.faults.hpack_deps import Times, header_blocks, state_dependent
from tests.faults.inject import FAULTS, Conn, Pkt, Touch, conn_of, index_packets, inject
from tests.faults.pcapfile import Capture, Flow, read_capture
from tests.helpers import Collected

RENDER = RenderOptions(redact=False, events=True)
TLS_RECORD_REACH = 16384 + 512
VIOLATIONS = frozenset({"wrong", "absent_silent", "extra_complete"})
EPS = 2e-6
# a string naming an exchange or a call (MCP sessions link calls and the exchanges that carried
# their messages): ids are numbered in order, so they are compared through the matching
EXCHANGE_REF = re.compile(r'(?<=")((?:s\d+\.)?(?:e|call)\d+)(?=[ "])')


@dataclass(slots=True, kw_only=True)
class Item:
    """One exchange or call of a run, ready to compare."""

    kind: str  # "exchange" or "call"
    conn: Conn | None
    key: tuple[Any, ...]
    complete: bool
    content: str  # the normalized JSON
    diagnostics: list[str]
    exchange: Exchange | None = None
    call: Call | None = None
    tags: tuple[str, ...] = ()

    @property
    def exchange_id(self) -> str:
        assert self.exchange is not None
        return self.exchange.id


@dataclass(slots=True, kw_only=True)
class Run:
    exchanges: list[Item]
    calls: list[Item]
    evidence: dict[Conn | None, set[str]]  # diagnostics and gaps, per connection (None: source)
    collected: Collected
    # the clean run's HTTP/2 connections: the bytes each direction's session received
    # (``tapped``), and the connections whose sessions saw a gap (their HPACK state is not
    # followed: no connection of the suite's clean captures has one)
    h2_bytes: dict[Conn, tuple[bytes, bytes]] = field(default_factory=dict)
    h2_times: dict[Conn, tuple[Times, Times]] = field(default_factory=dict)
    h2_client: dict[Conn, Flow] = field(default_factory=dict)  # the client's direction
    h2_gapped: set[Conn] = field(default_factory=set)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    kind: str
    outcome: str
    affected: bool
    tags: tuple[str, ...]
    what: str  # the clean item's summary, for messages
    diff: str = ""
    # what it is affected through when its own bytes were not touched: "hpack" (its header
    # blocks depend on a touched one's), "reset" (a lost client frame may have reset it)
    via: str = ""

    @property
    def via_state(self) -> bool:
        return self.via == "hpack"

    @property
    def violation(self) -> bool:
        return self.outcome in VIOLATIONS


@dataclass(slots=True, kw_only=True)
class Result:
    input: str
    fault: str
    seed: int
    verdicts: list[Verdict] = field(default_factory=list)
    touches: list[Touch] = field(default_factory=list)
    faulted: Run | None = None

    def violations(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.violation]


# -- running agentshark -----------------------------------------------------------------------


def analyze(path: Path, keylog: Path | None, *, tap: bool = False) -> Run:
    """agentshark's run on ``path``; ``tap``: also keep what each HTTP/2 session received."""
    options = Options(calls=True, keylogs=[str(keylog)] if keylog else [])
    if tap:
        with tapped() as taps:
            got = Collected([str(path)], options)
    else:
        got, taps = Collected([str(path)], options), {}
    ends = {
        c.connection.id: conn_of((*c.connection.client, *c.connection.server))
        for c in got.connections
    }
    h2_bytes: dict[Conn, tuple[bytes, bytes]] = {}
    h2_times: dict[Conn, tuple[Times, Times]] = {}
    h2_client: dict[Conn, Flow] = {}
    h2_gapped: set[Conn] = set()
    clients = {
        c.connection.id: (*c.connection.client, *c.connection.server) for c in got.connections
    }
    for cid, pieces in taps.items():
        conn = ends[cid]
        sides = [[(p, ts) for d, p, ts in pieces if d == side and p] for side in (0, 1)]
        h2_bytes[conn] = (b"".join(p for p, _ in sides[0]), b"".join(p for p, _ in sides[1]))
        h2_times[conn] = (_marks(sides[0]), _marks(sides[1]))
        h2_client[conn] = clients[cid]
        if any(p is None for _, p, _ in pieces):
            h2_gapped.add(conn)
    exchanges = [_exchange_item(ex, ends.get(ex.connection or "")) for ex in got.exchanges]
    by_id = {it.exchange.id: it for it in exchanges if it.exchange is not None}
    calls = _call_items(got.calls, by_id)
    evidence: dict[Conn | None, set[str]] = defaultdict(set)
    for c in got.connections:
        conn = ends[c.connection.id]
        evidence[conn] |= {f"{d.code}: {d.message}" for d in c.diagnostics}
        evidence[conn] |= {f"gap {i} {n}" for i, n in enumerate(c.connection.gaps) if n}
    for it in exchanges:
        evidence[it.conn] |= set(it.diagnostics)
    for s in got.sources:
        evidence[None] |= {f"{d.code}: {d.message}" for d in s.diagnostics}
    return Run(
        exchanges=exchanges,
        calls=calls,
        evidence=evidence,
        collected=got,
        h2_bytes=h2_bytes,
        h2_times=h2_times,
        h2_client=h2_client,
        h2_gapped=h2_gapped,
    )


def _marks(pieces: list[tuple[bytes, float]]) -> Times:
    """(end offset, time stamp) of each piece."""
    out, end = [], 0
    for data, ts in pieces:
        end += len(data)
        out.append((end, ts))
    return out


@contextmanager
def tapped() -> Iterator[dict[str, list[tuple[int, bytes | None, float]]]]:
    """While open, every byte an HTTP/2 session is fed, per connection id: (direction,
    bytes, time stamp), or (direction, None, time stamp) for a gap. Only the bytes: what
    the session makes of them is not looked at (:mod:`tests.faults.hpack_deps` reads them
    on its own)."""
    taps: dict[str, list[tuple[int, bytes | None, float]]] = defaultdict(list)
    feed, gap = HttpSession.feed, HttpSession.gap

    def tap_feed(
        self: HttpSession, direction: int, data: bytes, ts: float, acked: int = -1
    ) -> list[Exchange]:
        if self._h2 is not None:
            taps[self._assembler._connection or ""].append((direction, bytes(data), ts))
        return feed(self, direction, data, ts, acked)

    def tap_gap(self: HttpSession, direction: int, size: int, ts: float) -> list[Exchange]:
        if self._h2 is not None:
            taps[self._assembler._connection or ""].append((direction, None, ts))
        return gap(self, direction, size, ts)

    HttpSession.feed = tap_feed  # type: ignore[method-assign]
    HttpSession.gap = tap_gap  # type: ignore[method-assign]
    try:
        yield taps
    finally:
        HttpSession.feed = feed  # type: ignore[method-assign]
        HttpSession.gap = gap  # type: ignore[method-assign]


def _exchange_item(ex: Exchange, conn: Conn | None) -> Item:
    out = exchange_json(ex, RENDER)
    diags = [f"{d['code']}: {d['message']}" for d in out.pop("diagnostics")]
    for name in ("id", "connection"):
        out.pop(name)
    if ex.transport not in ("h2", "h3"):  # HTTP/2 and HTTP/3 streams have stable ids
        out.pop("stream")
        if "operation" in out:  # a wire operation's place on its connection: as ``stream``
            out["operation"].pop("index")
        key: tuple[Any, ...] = (ex.request.started if ex.request else None,)
    else:
        key = (ex.transport, ex.stream)
    for name, msg in (("request", ex.request), ("response", ex.response)):
        if msg is not None:
            out[name]["sha256"] = hashlib.sha256(msg.body.data()).hexdigest()
    return Item(
        kind="exchange",
        conn=conn,
        key=key,
        complete=ex.complete,
        content=json.dumps(out, sort_keys=True, default=str),
        diagnostics=diags,
        exchange=ex,
        tags=_tags(ex),
    )


def _tags(ex: Exchange) -> tuple[str, ...]:
    tags = [ex.transport if ex.transport in ("h2", "h3") else "http1"]
    version = str((ex.tls or {}).get("version", "")).lower().replace(" ", "").replace(".", "")
    tags.append(version.replace("tlsv", "tls") if version else "plain")
    ctype = ""
    if ex.response is not None:
        ctype = next((v for k, v in ex.response.headers if k.lower() == "content-type"), "")
    if ctype.startswith("text/event-stream"):
        tags.append("sse")
    return tuple(tags)


def _call_items(calls: list[Call], exchanges: dict[str, Item]) -> list[Item]:
    out = []
    seen: Counter[str] = Counter()
    for call in calls:
        ex = exchanges.get(call.exchange_id)
        data = call_json(call, RENDER)
        diags = [f"{d['code']}: {d['message']}" for d in data.pop("diagnostics")]
        for name in ("id", "exchange_id"):
            data.pop(name)
        n = seen[call.exchange_id]
        seen[call.exchange_id] += 1
        family = call.api.split(".")[0]
        out.append(
            Item(
                kind="call",
                conn=ex.conn if ex is not None else None,
                key=(call.exchange_id, n),  # rewritten into the exchange's match when compared
                complete=call.complete,
                content=json.dumps(data, sort_keys=True, default=str),
                diagnostics=diags,
                call=call,
                tags=(*(ex.tags if ex is not None else ()), family),
            )
        )
    return out


# -- matching and verdicts --------------------------------------------------------------------


def match(clean: list[Item], faulted: list[Item]) -> tuple[dict[int, int], list[int], list[int]]:
    """Pairs (clean index -> faulted index), then the unmatched of each side."""
    pairs: dict[int, int] = {}
    left = set(range(len(faulted)))
    for key_of in (_first_key, _response_key):
        index: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for j in sorted(left):
            k = key_of(faulted[j])
            if k is not None:
                index[k].append(j)
        for i, it in enumerate(clean):
            k = key_of(it)
            if i in pairs or k is None or not index.get(k):
                continue
            j = index[k].pop(0)
            pairs[i] = j
            left.discard(j)
    return pairs, [i for i in range(len(clean)) if i not in pairs], sorted(left)


def _first_key(it: Item) -> tuple[Any, ...] | None:
    return (it.conn, *it.key) if it.key != (None,) else None


def _response_key(it: Item) -> tuple[Any, ...] | None:
    ex = it.exchange
    if ex is None or ex.response is None or ex.response.started is None:
        return None
    return (it.conn, "response", ex.response.started)


def judge(
    clean: Run,
    faulted: Run,
    affected: list[bool],
    recopied: list[bool] | None = None,
    state_only: list[str] | None = None,
) -> list[Verdict]:
    """A verdict per clean exchange and call, and per left-over of the faulted run.

    ``recopied``: per clean exchange, whether a touched packet of it carried bytes that
    another packet of the clean capture carries too (a real retransmission). Its bytes then
    still reach agentshark, from the other copy and at that copy's time: a difference in
    time stamps alone is then the evidence, not a fault (outcome ``retimed``).
    ``state_only``: per clean exchange, what it is affected through when its own bytes
    were not touched: ``"hpack"``, ``"reset"`` (``Verdict.via``), or "".
    """
    verdicts = []
    recopied = recopied or [False] * len(clean.exchanges)
    state_only = state_only or [""] * len(clean.exchanges)
    pairs, gone, extra = match(clean.exchanges, faulted.exchanges)
    verdicts += _verdicts(
        clean,
        faulted,
        clean.exchanges,
        faulted.exchanges,
        pairs,
        gone,
        extra,
        affected,
        recopied,
        state_only,
    )
    # calls: the n-th call of an exchange against the n-th call of its match
    ids = {
        faulted.exchanges[j].exchange_id: clean.exchanges[i].exchange_id for i, j in pairs.items()
    }
    back = {v: k for k, v in ids.items()}
    by_key = {c.key: j for j, c in enumerate(faulted.calls)}
    call_pairs: dict[int, int] = {}
    for i, c in enumerate(clean.calls):
        other = back.get(c.key[0])
        if other is not None and (other, c.key[1]) in by_key:
            call_pairs[i] = by_key[(other, c.key[1])]
    for i, j in call_pairs.items():
        ids[_call_id(faulted.calls[j])] = _call_id(clean.calls[i])
    renamed = [_rename(c, ids) for c in faulted.calls]
    call_gone = [i for i in range(len(clean.calls)) if i not in call_pairs]
    call_extra = [j for j in range(len(faulted.calls)) if j not in set(call_pairs.values())]
    ex_affected = {it.exchange_id: a for it, a in zip(clean.exchanges, affected, strict=True)}
    ex_via = {it.exchange_id: s for it, s in zip(clean.exchanges, state_only, strict=True)}
    # a call depends on the exchanges it names, and on those of the calls it names (an MCP
    # stream message that answers a call links to it only if that call is known)
    call_exchange = {_call_id(c): str(c.key[0]) for c in clean.calls}
    call_exchanges = [
        [
            call_exchange.get(x, x) if x.startswith("call") else x
            for x in {c.key[0], *EXCHANGE_REF.findall(c.content)}
        ]
        for c in clean.calls
    ]
    call_affected = [any(ex_affected.get(x, True) for x in xs) for xs in call_exchanges]
    call_state = [
        ""
        if not a or any(ex_affected.get(x, True) and not ex_via.get(x) for x in xs)
        else "reset"
        if any(ex_via.get(x) == "reset" for x in xs)
        else "hpack"
        for a, xs in zip(call_affected, call_exchanges, strict=True)
    ]
    ex_recopied = {it.exchange_id: r for it, r in zip(clean.exchanges, recopied, strict=True)}
    call_recopied = [ex_recopied.get(c.key[0], False) for c in clean.calls]
    verdicts += _verdicts(
        clean,
        faulted,
        clean.calls,
        renamed,
        call_pairs,
        call_gone,
        call_extra,
        call_affected,
        call_recopied,
        call_state,
    )
    return verdicts


def _call_id(it: Item) -> str:
    assert it.call is not None
    return it.call.id


def _rename(it: Item, ids: dict[str, str]) -> Item:
    """A faulted run's call with the exchange ids it names (MCP sessions name the exchange
    that carried a response) replaced by those of the matching clean exchanges."""
    content = EXCHANGE_REF.sub(lambda m: ids.get(m.group(1), "?"), it.content)
    return replace(it, content=content) if content != it.content else it


def _verdicts(
    clean: Run,
    faulted: Run,
    before: list[Item],
    after: list[Item],
    pairs: dict[int, int],
    gone: list[int],
    extra: list[int],
    affected: list[bool],
    recopied: list[bool],
    state_only: list[str],
) -> list[Verdict]:
    out = []
    for i, j in pairs.items():
        a, b = before[i], after[j]
        if a.content == b.content:
            outcome, diff = "identical", ""
        else:
            old, new = json.loads(a.content), json.loads(b.content)
            outcome = "wrong" if b.complete else "incomplete"
            if outcome == "wrong" and recopied[i] and times_only(old, new):
                outcome = "retimed"
            elif outcome == "wrong" and unknown_only(old, new):
                outcome = "facts_unknown"
            diff = first_diff(old, new)
        out.append(
            Verdict(
                kind=a.kind,
                outcome=outcome,
                affected=affected[i],
                tags=a.tags,
                what=_what(a),
                diff=diff,
                via=state_only[i],
            )
        )
    for i in gone:
        a = before[i]
        new = (faulted.evidence.get(a.conn, set()) - clean.evidence.get(a.conn, set())) | (
            faulted.evidence.get(None, set()) - clean.evidence.get(None, set())
        )
        outcome = "absent_diag" if new else "absent_silent"
        out.append(
            Verdict(
                kind=a.kind,
                outcome=outcome,
                affected=affected[i],
                tags=a.tags,
                what=_what(a),
                via=state_only[i],
            )
        )
    for j in extra:
        b = after[j]
        out.append(
            Verdict(
                kind=b.kind,
                outcome="extra_complete" if b.complete else "extra_incomplete",
                affected=True,
                tags=b.tags,
                what=_what(b),
            )
        )
    return out


def unknown_only(clean: dict[str, Any], faulted: dict[str, Any]) -> bool:
    """Do the items differ only in TLS session facts the faulted run says it lost with a
    hello (``tls.unknown``: reported as unknown, not as values)?"""
    tls = faulted.get("tls")
    if not isinstance(tls, dict) or not tls.get("unknown"):
        return False
    a, b = json.loads(json.dumps(clean)), json.loads(json.dumps(faulted))
    for fact in [*tls["unknown"], "unknown"]:
        (a.get("tls") or {}).pop(fact, None)
        b["tls"].pop(fact, None)
    return bool(a == b)


def times_only(a: Any, b: Any) -> bool:
    """Do ``a`` and ``b`` differ only in floating-point leaves (time stamps)?"""
    if isinstance(a, float) and isinstance(b, float):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(times_only(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(times_only(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def recopied_touches(capture: Capture, touches: list[Touch]) -> list[Touch]:
    """The touches whose bytes another data packet of the clean capture carries as well."""
    packets, _ = index_packets(capture)
    copies: dict[Flow, list[tuple[int, int, int]]] = defaultdict(list)
    for p in packets:
        if p.data and p.tcp is not None:
            copies[p.tcp.flow].append((p.start, p.end, p.index))
    out = []
    for t in touches:
        if t.end <= t.start:
            continue
        holders = {i for lo, hi, i in copies.get(t.flow, []) if lo <= t.start and hi >= t.end}
        if len(holders) > 1:
            out.append(t)
    return out


def _what(it: Item) -> str:
    if it.call is not None:
        return f"call {it.call.api} {it.call.operation} (exchange {it.call.exchange_id})"
    ex = it.exchange
    assert ex is not None
    req = f"{ex.request.method} {ex.request.target}" if ex.request else "(no request)"
    status = ex.response.status if ex.response else "-"
    return f"{ex.id} {ex.transport} {req} -> {status} at {ex.started}"


def first_diff(a: Any, b: Any, path: str = "$") -> str:
    """Where two JSON values first differ, with both values (shortened)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_diff(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_diff(x, y, f"{path}[{n}]")
    return f"{path}: {str(a)[:80]!r} -> {str(b)[:80]!r}"


# -- what a fault touched ---------------------------------------------------------------------


def affected_flags(capture: Capture, clean: Run, touches: list[Touch]) -> list[bool]:
    """For each clean exchange: does a touched range overlap its bytes (see the docstring)?"""
    return [any(h) for h in message_hits(capture, clean, touches)[0]]


Hits = list[tuple[bool, bool, bool]]


def message_hits(
    capture: Capture, clean: Run, touches: list[Touch]
) -> tuple[Hits, list[tuple[Flow, float]]]:
    """For each clean exchange: whether a touched range overlaps its request's bytes, its
    response's, its connection's bytes before the first message of a direction (an exchange
    without any bytes found counts as all three). Then the touches that lost bytes of no
    message: their direction and their packet's time stamp."""
    packets, _ = index_packets(capture)
    by_flow: dict[Flow, list[Pkt]] = defaultdict(list)
    for p in packets:
        if p.data and p.tcp is not None:
            by_flow[p.tcp.flow].append(p)
    raw = [_ranges(it, clean, by_flow) for it in clean.exchanges]
    # per direction and transport: an HTTP/2 connection's preface and SETTINGS come after
    # the 101 of an h2c upgrade, so its exchanges' set-up ends at their own first message;
    # likewise a TLS handshake after a STARTTLS answer (PostgreSQL's one-byte ``S``, the
    # first message of the server's direction): the exchanges read inside the TLS (those
    # with TLS facts) set up until their own first message
    setup: dict[tuple[Flow, bool, bool], float] = {}
    for it, rs in zip(clean.exchanges, raw, strict=True):
        key = _setup_key(it)
        for _, flow, lo, _ in rs:
            setup[(flow, *key)] = min(setup.get((flow, *key), float("inf")), lo)
    ends: dict[Flow, list[int]] = defaultdict(list)
    for rs in raw:
        for _, flow, _, hi in rs:
            ends[flow].append(hi)
    ranges = [
        [(m, f, _reach_back(lo, ends[f]), hi) for m, f, lo, hi in rs] if it.exchange.tls else rs
        for it, rs in zip(clean.exchanges, raw, strict=True)
        if it.exchange is not None
    ]
    hit = [t for t in touches if t.end > t.start]
    out = []
    for it, rs in zip(clean.exchanges, ranges, strict=True):
        if not rs:
            out.append((True, True, True))
            continue
        flows = _flows(it, clean)
        msg = [
            any(
                t.flow == f and t.start < hi and t.end > lo
                for m, f, lo, hi in rs
                if m == side
                for t in hit
            )
            for side in (0, 1)
        ]
        key = _setup_key(it)
        pre = any(t.flow in flows and t.start < setup.get((t.flow, *key), 0) for t in hit)
        out.append((msg[0], msg[1], pre))
    covered: dict[Flow, list[tuple[int, int]]] = defaultdict(list)
    for rs in ranges:
        for _, f, lo, hi in rs:
            covered[f].append((lo, hi))
    orphans = [
        (t.flow, _touch_time(t, by_flow))
        for t in hit
        if t.lost and not any(t.start < hi and t.end > lo for lo, hi in covered.get(t.flow, []))
    ]
    return out, orphans


def _setup_key(it: Item) -> tuple[bool, bool]:
    """Which of its connection's exchanges an exchange's set-up bytes end at the first
    message of: those of its transport (h2 or not), read inside TLS or not."""
    ex = it.exchange
    return (ex is not None and ex.transport == "h2", ex is not None and bool(ex.tls))


def lost_times(capture: Capture, touches: list[Touch]) -> list[tuple[Flow, float]]:
    """The direction and the packet's time stamp of every touch that lost bytes."""
    packets, _ = index_packets(capture)
    by_flow: dict[Flow, list[Pkt]] = defaultdict(list)
    for p in packets:
        if p.data and p.tcp is not None:
            by_flow[p.tcp.flow].append(p)
    return [(t.flow, _touch_time(t, by_flow)) for t in touches if t.lost and t.end > t.start]


def reset_flags(clean: Run, lost_at: list[tuple[Flow, float]]) -> list[bool]:
    """For each clean exchange: was its HTTP/2 stream open (request sent, response not
    ended) when client bytes were lost (``lost_at``: :func:`lost_times`), whatever message
    they were part of? For all an observer knows they held a RST_STREAM for it (RFC 9113
    §6.4), after which the server's frames are not the stream's."""
    lost: dict[Flow, list[float]] = defaultdict(list)
    for flow, ts in lost_at:
        lost[flow].append(ts)
    flags = []
    for it in clean.exchanges:
        ex = it.exchange
        client = clean.h2_client.get(it.conn) if it.conn is not None else None
        times = lost.get(client, []) if client is not None else []
        if ex is None or ex.transport != "h2" or not times or ex.request is None:
            flags.append(False)
            continue
        sent = ex.request.started if ex.request.started is not None else float("-inf")
        end = ex.response.ended if ex.response and ex.response.ended is not None else None
        flags.append(any(sent - EPS <= t and (end is None or t <= end + EPS) for t in times))
    return flags


def _touch_time(t: Touch, by_flow: dict[Flow, list[Pkt]]) -> float:
    """The time stamp of the clean packet that holds a touch's first byte."""
    return next((p.ts for p in by_flow.get(t.flow, []) if p.start <= t.start < p.end), 0.0)


def state_flags(clean: Run, hits: Hits, orphans: list[tuple[Flow, float]]) -> list[bool]:
    """For each clean exchange: does one of its header blocks depend, through its HTTP/2
    connection's HPACK dynamic table, on a header block of a touched message, or on touched
    lost bytes of no message (``orphans``: for all an observer knows they held a header block;
    see :func:`tests.faults.hpack_deps.state_dependent`)? Read from the clean run's bytes
    with ``hpack``'s Decoder, not with agentshark's."""
    index: dict[tuple[Conn | None, int], int] = {}
    for i, it in enumerate(clean.exchanges):
        ex = it.exchange
        if ex is not None and ex.transport == "h2" and ex.stream is not None:
            index[(it.conn, int(ex.stream))] = i
    flags = [False] * len(clean.exchanges)
    for conn, (client, server) in clean.h2_bytes.items():
        if conn in clean.h2_gapped:
            continue
        blocks = header_blocks(client, server, clean.h2_times[conn])
        owner = {b.serial: index.get((conn, b.stream)) for b in blocks}
        lost = {b.serial for b in blocks if (o := owner[b.serial]) is None or hits[o][b.side]}
        flow = clean.h2_client[conn]
        lost_at: dict[int, list[float]] = defaultdict(list)
        for f, ts in orphans:
            if f == flow or f == (*flow[2:], *flow[:2]):
                lost_at[0 if f == flow else 1].append(ts)
        for serial in state_dependent(blocks, lost, lost_at):
            if (o := owner[serial]) is not None:
                flags[o] = True
    return flags


def _reach_back(lo: int, ends: list[int]) -> int:
    """Over TLS, a message's first records may sit in segments before the time stamp of its
    first plaintext byte: its range starts up to a record earlier, but not before the end of
    the previous message of its direction."""
    before = [h for h in ends if h <= lo]
    return max(lo - TLS_RECORD_REACH, max(before, default=0))


def _flows(it: Item, run: Run) -> tuple[Flow, ...]:
    ex = it.exchange
    assert ex is not None
    for c in run.collected.connections:
        if c.connection.id == ex.connection:
            cl, sv = c.connection.client, c.connection.server
            return ((*cl, *sv), (*sv, *cl))
    return ()


def _ranges(it: Item, run: Run, by_flow: dict[Flow, list[Pkt]]) -> list[tuple[int, Flow, int, int]]:
    """(0 request or 1 response, its flow, first and last TCP offset) of each message."""
    ex = it.exchange
    assert ex is not None
    flows = _flows(it, run)
    if not flows:
        return []
    out = []
    for side, (flow, msg) in enumerate(zip(flows, (ex.request, ex.response), strict=True)):
        if msg is None or msg.started is None:
            continue
        end = msg.ended if msg.ended is not None else float("inf")
        if ex.messages is not None:  # a WebSocket session: both directions to its end
            end = float("inf")
        sel = [p for p in by_flow.get(flow, []) if msg.started - EPS <= p.ts <= end + EPS]
        if not sel:
            continue
        out.append((side, flow, min(p.start for p in sel), max(p.end for p in sel)))
    return out


def datagram_flags(run: Run, touches: list[Touch]) -> dict[int, bool]:
    """For each clean exchange of a QUIC connection (by its index): was a datagram of its
    connection touched (lost, cut, copied or moved) before the exchange ended?

    The suite does not decrypt QUIC (that would share agentshark's reading of it), so a
    datagram's frames are unknown: it may have held the handshake, the QPACK encoder stream's
    instructions a later header block refers to, the control stream's SETTINGS, or any
    stream's bytes. Every exchange still open at its time stamp, or begun after it, counts
    as affected: too many, never too few. A datagram belongs to a connection when one of its
    endpoints is the connection's server (a client that moves to a new address or port
    keeps its connection, RFC 9000 §9)."""
    servers: dict[str, tuple[str, int]] = {}
    for c in run.collected.connections:
        if c.tls is not None and "quic" in c.tls:
            servers[c.connection.id] = c.connection.server
    out: dict[int, bool] = {}
    for i, it in enumerate(run.exchanges):
        ex = it.exchange
        if ex is None or ex.connection not in servers:
            continue
        server = servers[ex.connection]
        end = _ended(ex)
        out[i] = any(
            server in ((t.flow[0], t.flow[1]), (t.flow[2], t.flow[3])) and t.ts <= end + EPS
            for t in touches
        )
    return out


def _ended(ex: Exchange) -> float:
    """The time of an exchange's last byte (infinity when it never ended)."""
    if not ex.complete or ex.messages is not None:
        return float("inf")
    times = [m.ended for m in (ex.request, ex.response) if m is not None]
    return max((t for t in times if t is not None), default=float("inf"))


# -- one case ---------------------------------------------------------------------------------


_CLEAN: dict[tuple[str, str | None], tuple[Capture, Run]] = {}


def clean_run(path: Path, keylog: Path | None) -> tuple[Capture, Run]:
    """The capture as the suite reads it, and agentshark's run on it (cached per process)."""
    key = (str(path), str(keylog) if keylog else None)
    if key not in _CLEAN:
        _CLEAN[key] = (read_capture(path), analyze(path, keylog, tap=True))
    return _CLEAN[key]


def run_case(
    name: str, path: Path, keylog: Path | None, fault: str, seed: int, *, resends: bool = False
) -> Result:
    """One fault with one seed on one capture; ``resends``: the capture holds real QUIC
    retransmissions, so a lost datagram's stream bytes may come again later (``retimed``)."""
    capture, clean = clean_run(path, keylog)
    data, touches = inject(capture, FAULTS[fault], seed)
    with tempfile.TemporaryDirectory(prefix="agentshark-faults-") as tmp:
        faulted_path = Path(tmp) / "faulted.pcap"
        faulted_path.write_bytes(data)
        faulted = analyze(faulted_path, keylog)
    segments = [t for t in touches if not t.datagram]
    hits, orphans = message_hits(capture, clean, segments)
    by_bytes = [any(h) for h in hits]
    for i, hit in datagram_flags(clean, [t for t in touches if t.datagram]).items():
        by_bytes[i] = hit
    touches_tcp = segments
    by_state = state_flags(clean, hits, orphans)
    by_reset = reset_flags(clean, lost_times(capture, touches_tcp))
    affected = [a or b or c for a, b, c in zip(by_bytes, by_state, by_reset, strict=True)]
    state_only = [
        "" if a else "hpack" if b else "reset" if c else ""
        for a, b, c in zip(by_bytes, by_state, by_reset, strict=True)
    ]
    copied = recopied_touches(capture, touches_tcp)
    recopied = affected_flags(capture, clean, copied) if copied else [False] * len(clean.exchanges)
    if resends:
        lost = [t for t in touches if t.datagram and t.lost]
        for i, hit in datagram_flags(clean, lost).items():
            recopied[i] = recopied[i] or hit
    return Result(
        input=name,
        fault=fault,
        seed=seed,
        verdicts=judge(clean, faulted, affected, recopied, state_only),
        touches=touches,
        faulted=faulted,
    )
