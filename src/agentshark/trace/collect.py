"""The last stage: every call of the input, and the HTTP requests no family claimed, kept
until the input ends; then traces and incidents.

Traces need the whole input (a run's calls can be anywhere in it), so unlike the stages
before, this one keeps what it needs: the calls, and the first :data:`BODY_KEPT` bytes of
each unclaimed request body (to match tool executions against the arguments a model asked
for). Exchanges themselves are not kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.pipeline import Item
from agentshark.trace.build import build_traces
from agentshark.trace.history import HistoryLink, link_history
from agentshark.trace.incidents import find_incidents
from agentshark.trace.model import Incident, Trace
from agentshark.trace.spans import HttpRequest

BODY_KEPT = 4096


@dataclass(slots=True)
class Analysis:
    calls: list[Call] = field(default_factory=list)
    http: list[HttpRequest] = field(default_factory=list)  # exchanges no family claimed
    exchanges: int = 0
    traces: list[Trace] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    links: dict[str, HistoryLink] = field(default_factory=dict)

    def watch(self, items: Iterator[Item]) -> Iterator[Item]:
        """Pass ``items`` through, keeping what the traces need."""
        pending: HttpRequest | None = None
        for item in items:
            if type(item) is Exchange:
                self.exchanges += 1
                if pending is not None:
                    self.http.append(pending)
                pending = _request(item)
            elif isinstance(item, Call):
                self.calls.append(item)
                if pending is not None and pending.exchange_id == item.exchange_id:
                    pending = None
            yield item
        if pending is not None:
            self.http.append(pending)

    def finish(self) -> None:
        """Traces and incidents, once the input has ended."""
        claimed = {c.exchange_id for c in self.calls}  # MCP calls can come late
        self.http = [h for h in self.http if h.exchange_id not in claimed]
        self.links = link_history(self.calls)
        self.traces = build_traces(self.calls, self.links, self.http)
        self.incidents = find_incidents(self.calls, self.traces, self.links)


def _request(x: Exchange) -> HttpRequest | None:
    req = x.request
    if req is None:
        return None
    body = bytearray()
    for _, piece in req.body.pieces:
        body += piece[: BODY_KEPT - len(body)]
        if len(body) >= BODY_KEPT:
            break
    resp = x.response
    return HttpRequest(
        exchange_id=x.id,
        method=req.method,
        url=req.url,
        body=bytes(body),
        started=req.started,
        ended=resp.ended if resp is not None else req.ended,
        status=resp.status if resp is not None else None,
    )
