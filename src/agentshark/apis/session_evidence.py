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
end). So the call readers take a :class:`~agentshark.model.WsLoss` where the loss happened:
the WebSocket session puts one in its progress when the frame reader reports the gap (TCP
gives a hole up before the peer's data that acknowledges it), and for a session read whole
:func:`with_losses` puts one right after the direction's previous message (the bytes were
sent after it), before the calls the lost message may have started or configured. The
message that later carries the same ``ws.gap`` is not counted again.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentshark.model import Exchange, WsLoss, WsRecord

__all__ = [
    "CONFIG_LOST",
    "UNKNOWN_YET",
    "SessionItem",
    "handshake_cut",
    "loss_points",
    "loss_text",
    "with_losses",
]

SessionItem = WsRecord | WsLoss

CONFIG_LOST = (
    "a client message lost {where} may have changed the session configuration "
    "in force (instructions, tools, voice, modalities)"
)
UNKNOWN_YET = 1 << 62  # where the message that shows a loss is: not read yet


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


def with_losses(records: Sequence[WsRecord]) -> list[SessionItem]:
    """A whole session's records with a :class:`WsLoss` right after the message each loss
    followed (:func:`loss_points`)."""
    points = loss_points(records)
    out: list[SessionItem] = [_loss(records[j]) for j in points.get(-1, ())]
    for i, record in enumerate(records):
        out.append(record)
        out.extend(_loss(records[j]) for j in points.get(i, ()))
    return out


def _loss(record: WsRecord) -> WsLoss:
    gap = next(d for d in record.diagnostics if d.code == "ws.gap")
    return WsLoss(direction=record.message.direction, diagnostic=gap)


def loss_text(loss: WsLoss) -> str:
    """What a :class:`WsLoss` says in a call's ``call.evidence_incomplete``."""
    who = "client" if loss.direction == 0 else "server"
    where = loss.diagnostic.location
    return f"{who} bytes were lost in a capture gap" + (f" ({where})" if where else "")
