"""The API families that ride on a WebSocket session: which one a session is, and its calls
message by message (sans-I/O: :class:`SessionCalls`, records in, calls out).

A session is told from its handshake and first messages, in this order:

1. OpenAI Realtime when the handshake went to ``…/realtime``, Gemini Live when it went to
   ``…BidiGenerateContent`` (:func:`~agentshark.apis.gemini.live.is_live_path`);
2. Gemini Live when the client's first message is a ``setup``, or, in a session seen from its
   middle (no handshake), when the first client message or the first server data message
   (Live sends JSON in binary frames too) holds only Live message fields
   (:func:`~agentshark.apis.gemini.live.is_live_message`; its calls then lack the setup:
   each is incomplete);
3. OpenAI Realtime when the server's first text message is ``session.created``
   (:func:`~agentshark.apis.openai.realtime.is_realtime`), or, in a session seen from its
   middle (no handshake: no request), any Realtime server event (its first call is then
   incomplete: the session's start is not seen);
4. no family otherwise (its messages stay in the exchange).

Until the first client message and the first server text message are both seen, the
records are held (the session may still be either); the calls of the family then come as
its reader makes them final (:class:`~agentshark.apis.openai.realtime.RealtimeCalls`,
:class:`~agentshark.apis.gemini.live.LiveCalls`), so a session's calls are the same fed
all at once or message by message as the capture grows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import orjson

from agentshark.apis.gemini.live import LiveCalls, is_live, is_live_message, is_live_path
from agentshark.apis.model import Call
from agentshark.apis.openai.realtime import RealtimeCalls, is_realtime, is_realtime_event
from agentshark.apis.session_evidence import SessionItem
from agentshark.framing.websocket import BINARY, TEXT
from agentshark.model import Exchange, WsLoss, WsRecord

__all__ = ["SessionCalls"]

_Reader = RealtimeCalls | LiveCalls


class SessionCalls:
    """The calls of one WebSocket session, its handshake exchange given first."""

    __slots__ = (
        "_client",
        "_data",
        "_exchange",
        "_held",
        "_next_id",
        "_reader",
        "_server",
        "decided",
    )

    def __init__(self, exchange: Exchange, next_id: Callable[[], str]) -> None:
        self._exchange = exchange
        self._next_id = next_id
        self._reader: _Reader | None = None
        self._held: list[SessionItem] = []
        self._client: WsRecord | None = None  # the first client message
        self._server: WsRecord | None = None  # the first server text message
        self._data: WsRecord | None = None  # the first server data message (text or binary)
        self.decided = False
        req = exchange.request
        path = urlsplit(req.url).path.rstrip("/") if req is not None else ""
        if path.endswith("/realtime"):
            self._decide(RealtimeCalls(exchange, next_id))
        elif is_live_path(path):
            self._decide(LiveCalls(exchange, next_id))

    def feed(self, records: Iterable[SessionItem]) -> list[Call]:
        """Records (and losses) in the order they were read: the calls they make final."""
        reader = self._reader
        if reader is None and self.decided:
            return []  # no family: nothing to read
        if reader is not None:
            return [call for record in records for call in reader.feed(record)]
        for record in records:
            self._held.append(record)
            if isinstance(record, WsLoss):
                continue
            m = record.message
            if m.direction == 0 and self._client is None:
                self._client = record
            elif m.direction == 1 and m.opcode in (TEXT, BINARY):
                if self._data is None:
                    self._data = record
                if m.opcode == TEXT and self._server is None:
                    self._server = record
        both = self._client is not None and self._server is not None
        if not both and not self._says_live() and not self._live_midway():
            return []  # either family may still be the one
        return self._choose()

    def close(self) -> list[Call]:
        """The session ended: the calls still open (a family decided with what was seen)."""
        out = self._choose() if not self.decided else []
        if self._reader is not None:
            out.extend(self._reader.close())
        return out

    def _says_live(self) -> bool:
        return self._client is not None and is_live(self._probe([self._client]))

    def _live_midway(self) -> bool:
        """A session seen from its middle whose first client or server data message is a
        Live message."""
        if self._exchange.request is not None:
            return False
        return any(r is not None and is_live_message(r) for r in (self._client, self._data))

    def _choose(self) -> list[Call]:
        ex = self._exchange
        if self._says_live():
            self._decide(LiveCalls(ex, self._next_id))
        elif self._live_midway():
            self._decide(LiveCalls(ex, self._next_id, from_middle=True))
        elif self._server is not None and is_realtime(self._probe([self._server])):
            self._decide(RealtimeCalls(ex, self._next_id))
        elif self._server is not None and ex.request is None and self._midway():
            self._decide(RealtimeCalls(ex, self._next_id, from_middle=True))
        else:
            self._decide(None)
        held, self._held = self._held, []
        return self.feed(held)

    def _midway(self) -> bool:
        """The first server text message of a session seen from its middle: a Realtime
        server event?"""
        assert self._server is not None
        payload = self._server.message.payload
        try:
            event = orjson.loads(payload) if payload is not None else None
        except orjson.JSONDecodeError:
            return False
        return isinstance(event, dict) and is_realtime_event(event)

    def _decide(self, reader: _Reader | None) -> None:
        self._reader = reader
        self.decided = True

    def _probe(self, records: list[WsRecord]) -> Exchange:
        """An exchange with just ``records`` (what the family tests read)."""
        ex = self._exchange
        return Exchange(
            id=ex.id,
            source=ex.source,
            connection=ex.connection,
            transport=ex.transport,
            request=None,
            response=None,
            messages=records,
        )
