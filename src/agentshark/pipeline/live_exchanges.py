"""The pipeline over exchanges that come ready-made, one at a time (the recording gateway,
:mod:`agentshark.proxy`): exchanges in, items out. Sans-I/O.

The call stage is ``run``'s own (:func:`agentshark.pipeline._with_calls`), suspended at a
:data:`~agentshark.pipeline.PAUSE` between two exchanges, so a call's id and an MCP call held
for a later exchange of its session come out as ``run`` gives them for a file holding the
same exchanges in the same order (a HAR file the gateway wrote)::

    feed = ExchangeFeed("proxy", Options(calls=True))
    items = feed.push(exchange)    # the exchange (its id given here), then its call, if any
    items = feed.close()           # the calls still held, then the source's report
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from agentshark.model import Exchange
from agentshark.pipeline import PAUSE, Item, Options, Pause, SourceReport, _with_calls
from agentshark.pipeline.live import until_pause

__all__ = ["ExchangeFeed"]


class ExchangeFeed:
    """Exchanges of one source named ``path`` (index 0), ids ``e1``, ``e2``... in the order
    they are pushed."""

    def __init__(self, path: str, options: Options | None = None, *, fmt: str = "proxy") -> None:
        self.options = opts = options or Options(calls=True)
        self.report = SourceReport(index=0, path=path, format=fmt)
        self._inbox: deque[Item] = deque()
        self._closed = False
        self._count = 0
        chain = self._items()
        self._chain: Iterator[Item | Pause] = _with_calls(chain, opts) if opts.calls else chain

    def _items(self) -> Iterator[Item | Pause]:
        while True:
            while self._inbox:
                yield self._inbox.popleft()
            if self._closed:
                return
            yield PAUSE

    def push(self, exchange: Exchange) -> list[Item]:
        """``exchange`` ended: it gets the next id; the items that are final now."""
        if self._closed:
            raise ValueError("the feed is closed")
        self._count += 1
        exchange.id = f"e{self._count}"
        exchange.source = 0
        self.report.exchanges += 1
        self._inbox.append(exchange)
        return until_pause(self._chain)

    def close(self) -> list[Item]:
        """No more exchanges: the last items, the source's report last."""
        if self._closed:
            return []
        self._inbox.append(self.report)
        self._closed = True
        return until_pause(self._chain)
