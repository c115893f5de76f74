"""What a lost message costs the later calls of a WebSocket session (Realtime, Live).

A session's calls are built from the messages since the previous call, and from state the
client set earlier: the session configuration (Realtime ``session.update``, Gemini Live
``setup``: model, instructions, tools, voice, modalities) and the handshake's URL (model,
provider). A lost message costs its own call, as every family says, and more:

* a client message lost while a call is open was sent after that call started: it is an
  input or a setting of the next call, not of the open one (whose output the server's
  events say);
* a lost client message (or one on an HTTP/2 stream that lost frames at an unknown place)
  may have changed the configuration: every later call's configuration is uncertain until the
  server states the whole configuration in force again (Realtime's ``session.created`` and
  ``session.updated`` carry the whole session; Gemini Live never does);
* a handshake the capture holds but cut (its request or its 101 response not whole) leaves
  what it names uncertain for every call. A message log (no handshake at all) is not cut.

These reasons join the call's ``call.evidence_incomplete`` diagnostic and make it incomplete.

Where: the ``ws.gap`` diagnostic of lost bytes rides on the next message of their direction,
which may come long after (a lost ``response.create`` shows on the client's close frame at the
end). The bytes were sent after the direction's previous message, so :func:`loss_points`
declares the loss right after that one, before the calls that the lost message may have
started or configured.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentshark.model import Exchange, WsRecord

__all__ = ["CONFIG_LOST", "handshake_cut", "loss_points"]

CONFIG_LOST = (
    "a client message lost at byte {offset} may have changed the session configuration "
    "in force (instructions, tools, voice, modalities)"
)


def handshake_cut(ex: Exchange) -> str | None:
    """Why the handshake the capture holds is not whole, or None."""
    if ex.request is not None and not ex.request.complete:
        return "the WebSocket handshake's request was cut: the URL and host it names may be wrong"
    if ex.response is not None and not ex.response.complete:
        return "the WebSocket handshake's response was cut"
    return None


def loss_points(records: Sequence[WsRecord]) -> dict[int, list[int]]:
    """Index -> the records whose lost bytes (``ws.gap``) lie right after that index's
    message: the previous message of the same direction (-1: before the first)."""
    points: dict[int, list[int]] = {}
    last = [-1, -1]  # the latest record index of each direction
    for i, record in enumerate(records):
        direction = record.message.direction
        if any(d.code == "ws.gap" for d in record.diagnostics):
            points.setdefault(last[direction], []).append(i)
        last[direction] = i
    return points
