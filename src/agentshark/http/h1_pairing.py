"""Which request an HTTP/1.x response answers, by order or, after a capture gap, by evidence.

HTTP/1.1 answers requests in the order they came (RFC 9112 §9.3.2,
https://www.rfc-editor.org/rfc/rfc9112#section-9.3.2): while the capture lost nothing the
oldest unanswered request is the one, as it always was. A gap breaks that: a lost response
head would make the next response look like the answer to the wrong request, a lost request
head would hand the next request its predecessor's answer. So after a gap that may hide a
message (one that made the parser resynchronize: inside a head, chunk framing, between
messages) pairing stops trusting order until the evidence settles it.

The evidence is TCP's. Each request records where it starts, where its head and body end
(client byte offsets) and ``acked``: how much of the response stream the client had received
when it sent the request's first byte. Each response head comes with its own ``offset`` in the
response stream and ``acked``: how many request bytes the server had received when it sent it.
A sequential keep-alive client (every LLM SDK) sends a request only once the previous response
has arrived, so the server answers the request it has just finished receiving: the last one
starting below the response's ``acked``. The rule pairs the response with that request ``r``
only when everything fits that picture:

* the server had ``r``'s whole head and no byte after ``r``'s end (``head_end <= acked <= end``);
* ``r`` was sent before the client saw this response (``r.acked <= offset``). When the capture
  cannot tell ``r.acked`` (the client acknowledged response bytes the capture lost, as when
  the last TLS record of the previous response is lost), ``r`` must be the oldest request
  waiting: then no other request is left for the response to answer;
* every older request left unanswered has its response in a response-direction gap: the
  client's ``acked`` grew between it and the next request (it received something), and a gap
  lies in that window of the response stream; those requests end with ``http.response_lost``.

Otherwise the response is reported unpaired (a negative stream number, as a response whose
request the capture missed): ``http.request_lost`` when the last request the server had
received lies in a client gap, ``http.unpaired_response`` when the evidence cannot decide (no
acknowledgment numbers, a pipelining client, older requests whose answers cannot be placed).
A client is taken to pipeline once a response is paired in order while a later request is
already pending. Once a response is paired by evidence, order is trusted again.
"""

from __future__ import annotations

import itertools

from agentshark.http.events import GapAffected

_KEPT_GAPS = 32  # response-direction gaps remembered for the windows of lost responses


class Pending:
    """A request waiting for its response. Plain attributes: one per request."""

    __slots__ = ("acked", "end", "head_end", "method", "start", "started", "stream")

    def __init__(
        self, stream: int, method: str, started: float, start: int, head_end: int, acked: int
    ) -> None:
        self.stream = stream
        self.method = method
        self.started = started
        self.start = start  # client byte offset of the request's first byte
        self.head_end = head_end
        self.end = -1  # offset just past its body, once it ended
        self.acked = acked  # response bytes the client had received when it sent it (-1)


class _Hole:
    """A client gap that may hide requests."""

    __slots__ = ("size", "start")

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.size = size


class Pairing:
    """The requests of one connection waiting for responses, and how to pair them."""

    __slots__ = ("_gaps", "_orphans", "_pending", "_pipelined", "_uncertain")

    def __init__(self) -> None:
        # Lists, not deques: short (one entry unless requests are pipelined), and an empty
        # deque costs 600 bytes a connection.
        self._pending: list[Pending | _Hole] = []
        self._gaps: list[tuple[int, int]] = []  # (offset, size) response gaps since
        self._uncertain = False  # a response gap may hide responses since the last pairing
        self._pipelined = False
        self._orphans = 0

    # -- what the parser saw ----------------------------------------------------------------

    def request(self, entry: Pending) -> None:
        self._pending.append(entry)

    def client_gap(self, offset: int, size: int) -> None:
        """A client gap of ``size`` bytes at ``offset`` may hide whole requests."""
        self._pending.append(_Hole(offset, size))

    def response_gap(self, offset: int, size: int) -> None:
        """A response gap at ``offset`` may hide whole responses."""
        self._gaps.append((offset, size))
        if len(self._gaps) > _KEPT_GAPS:
            del self._gaps[0]
        self._uncertain = True

    def interim_stream(self) -> int:
        """The stream a 1xx response belongs to (-1 when it cannot be told)."""
        head = self._pending[0] if self._pending else None
        return head.stream if isinstance(head, Pending) and not self._uncertain else -1

    def server_ended(self, ts: float, out: list[GapAffected]) -> None:
        """No more responses: the waiting requests sent before a response gap lost their
        response in it (the others simply have none in the capture)."""
        entries = list(self._pending)
        for e in entries:
            if isinstance(e, Pending) and self._gap_within(e.acked, 1 << 62):
                out.append(
                    GapAffected(
                        stream=e.stream,
                        response=True,
                        code="http.response_lost",
                        message=f"its response was lost in {self._gap_text(e, entries)}",
                        ts=ts,
                        final=True,
                    )
                )
                self._pending.remove(e)

    # -- answering --------------------------------------------------------------------------

    def answer(
        self, started: float, offset: int, acked: int, ts: float, out: list[GapAffected]
    ) -> tuple[int, str]:
        """The stream and method of the request a response head answers; notes about the
        exchanges a gap touched go to ``out``. ``offset``/``acked``: see the module doc."""
        pending = self._pending
        head = pending[0] if pending else None
        if not self._uncertain and (head is None or isinstance(head, Pending)):
            if head is not None and head.started <= started:
                del pending[0]
                if any(isinstance(e, Pending) for e in pending):
                    self._pipelined = True
                return head.stream, head.method
            return self._orphan(), "GET"
        return self._by_evidence(offset, acked, ts, out)

    def _by_evidence(
        self, offset: int, acked: int, ts: float, out: list[GapAffected]
    ) -> tuple[int, str]:
        entries = list(self._pending)
        why = self._unfit(entries, offset, acked)
        if isinstance(why, str):
            return self._unpaired("http.unpaired_response", why, ts, out)
        if isinstance(why, _Hole):
            where = f"client byte {why.start} ({why.size} bytes)"
            return self._unpaired(
                "http.request_lost",
                f"it answers a request lost in the capture gap at {where}: the server had "
                f"received {acked} request bytes when it sent it",
                ts,
                out,
            )
        k = why
        r = entries[k]
        assert isinstance(r, Pending)
        out.extend(
            GapAffected(
                stream=e.stream,
                response=True,
                code="http.response_lost",
                message=f"its response was lost in {self._gap_text(e, entries)}; a "
                f"later response answers request {r.stream}",
                ts=ts,
                final=True,
            )
            for e in entries[:k]
            if isinstance(e, Pending)
        )
        for _ in range(k + 1):
            del self._pending[0]
        self._uncertain = False
        self._gaps.clear()
        return r.stream, r.method

    def _unfit(self, entries: list[Pending | _Hole], offset: int, acked: int) -> str | _Hole | int:
        """The index of the request the evidence names, or why there is none (a reason, or
        the client gap holding it)."""
        if acked < 0:
            return "no TCP acknowledgment number tells which request it answers"
        if self._pipelined:
            return "the client pipelines requests, so acknowledgment numbers cannot tell"
        k = -1
        for i, e in enumerate(entries):
            if e.start < acked:
                k = i
        if k < 0:
            return f"the server had received none of the {len(entries)} waiting requests"
        r = entries[k]
        if isinstance(r, _Hole):
            return r
        if acked < r.head_end or (r.end >= 0 and acked > r.end):
            return (
                f"the server had received {acked} request bytes, which does not end within "
                f"request {r.stream} (bytes {r.start}..{r.end if r.end >= 0 else '?'})"
            )
        if r.acked > offset or (r.acked < 0 and k > 0):
            return f"request {r.stream} was not sent before this response arrived"
        older = [e for e in entries[:k] if isinstance(e, Pending)] + [r]
        for q, nxt in itertools.pairwise(older):
            if q.acked < 0 or nxt.acked <= q.acked or not self._gap_within(q.acked, nxt.acked):
                return f"no capture gap can hold the response to request {q.stream}"
        return k

    def _gap_within(self, lo: int, hi: int) -> bool:
        return any(off < hi and off + size > lo for off, size in self._gaps)

    def _gap_text(self, e: Pending, entries: list[Pending | _Hole]) -> str:
        later = [x for x in entries if isinstance(x, Pending) and x.start > e.start]
        hi = later[0].acked if later and later[0].acked >= 0 else 1 << 62
        for off, size in self._gaps:
            if off < hi and off + size > e.acked:
                return f"the capture gap at server byte {off} ({size} bytes)"
        return "a capture gap of the server's stream"  # pragma: no cover - checked by _unfit

    def _unpaired(self, code: str, why: str, ts: float, out: list[GapAffected]) -> tuple[int, str]:
        stream = self._orphan()
        gap = self._gaps[-1] if self._gaps else None
        after = (
            f" (after the capture gap at server byte {gap[0]}, {gap[1]} bytes)"
            if gap is not None and code != "http.request_lost"
            else ""
        )
        out.append(
            GapAffected(
                stream=stream,
                response=True,
                code=code,
                message=f"response not paired with a request{after}: {why}",
                ts=ts,
            )
        )
        return stream, "GET"

    def _orphan(self) -> int:
        self._orphans += 1
        return -self._orphans
