"""What a lost message or a cut handshake costs the later calls of a WebSocket session
(found by the fault suite: a lost ``session.update`` or ``response.create`` left later
Realtime calls complete with another configuration or start time)."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentshark.apis.gemini.live import live_calls
from agentshark.apis.openai.realtime import session_calls
from agentshark.apis.session_evidence import loss_points
from agentshark.errors import Diagnostic
from agentshark.framing.websocket import CLOSE, WsMessage
from agentshark.model import Exchange, WsRecord
from tests.apis.openai.test_realtime import CREATED, ids, session

UPDATE = (0, {"type": "session.update", "session": {"output_modalities": ["audio"]}})
UPDATED = (1, {"type": "session.updated", "session": {"output_modalities": ["audio"]}})


def response(n: int) -> list[tuple[int, dict[str, Any]]]:
    return [
        (0, {"type": "response.create"}),
        (1, {"type": "response.created", "response": {"id": f"r{n}"}}),
        (1, {"type": "response.done", "response": {"id": f"r{n}", "status": "completed"}}),
    ]


def reasons(call: Any) -> str:
    return " ".join(d.message for d in call.diagnostics if d.code == "call.evidence_incomplete")


def test_a_lost_client_message_leaves_every_later_configuration_uncertain() -> None:
    ex = session(CREATED, UPDATE, *response(1), *response(2), cut=1)
    first, second = session_calls(ex, ids())
    assert not first.complete and not second.complete
    assert "may have changed the session configuration" in reasons(second)


def test_until_the_server_states_the_whole_session_again() -> None:
    ex = session(CREATED, UPDATE, UPDATED, *response(1), *response(2), cut=1)
    first, second = session_calls(ex, ids())
    assert not first.complete  # the loss came before it
    assert second.complete and second.request_params == {"output_modalities": ["audio"]}


def test_a_lost_server_delta_costs_only_its_own_call() -> None:
    events = [CREATED, *response(1), *response(2)]
    events.insert(3, (1, {"type": "response.output_text.delta", "item_id": "i", "delta": "x"}))
    first, second = session_calls(session(*events, cut=3), ids())
    assert not first.complete and second.complete


def with_close_gap(ex: Exchange, lost_after: int) -> Exchange:
    """Drop the client message at ``lost_after + 1``; its gap rides on a close frame at the
    end, as the WebSocket reader reports it on the next message of the direction."""
    records = list(ex.messages or [])
    del records[lost_after + 1]
    close = WsMessage(
        direction=0,
        opcode=CLOSE,
        payload=b"\x03\xe8",
        size=2,
        wire_size=2,
        frames=1,
        first_ts=99.0,
        last_ts=99.0,
        offset=9999,
    )
    gap = Diagnostic(code="ws.gap", message="39 bytes were lost here")
    records.append(WsRecord(message=close, diagnostics=[gap]))
    return dataclasses.replace(ex, messages=records)


def test_a_gap_noticed_at_the_close_counts_where_the_bytes_were_sent() -> None:
    ex = session(CREATED, *response(1), *response(2))  # the 2nd response.create is index 4
    first, second = session_calls(with_close_gap(ex, 3), ids())
    assert first.complete
    assert not second.complete and "were lost in a capture gap" in reasons(second)


def test_loss_points_name_the_previous_message_of_the_direction() -> None:
    ex = with_close_gap(session(CREATED, *response(1), *response(2)), 3)
    assert loss_points(ex.messages or []) == {1: [6]}  # the client sent 1, then the lost one


def test_a_cut_handshake_makes_every_call_incomplete() -> None:
    ex = session(CREATED, *response(1))
    assert ex.request is not None
    cut = dataclasses.replace(ex, request=dataclasses.replace(ex.request, complete=False))
    (call,) = session_calls(cut, ids())
    assert not call.complete and "handshake's request was cut" in reasons(call)


def test_gemini_live_a_lost_setup_leaves_every_turn_uncertain() -> None:
    setup: tuple[int, dict[str, Any]] = (0, {"setup": {"model": "models/gemini-live-x"}})
    turn: list[tuple[int, dict[str, Any]]] = [
        (0, {"clientContent": {"turns": [], "turnComplete": True}}),
        (1, {"serverContent": {"modelTurn": {"parts": [{"text": "a"}]}}}),
        (1, {"serverContent": {"turnComplete": True}}),
    ]
    ex = session(setup, (1, {"setupComplete": {}}), *turn, *turn, cut=0)
    first, second = live_calls(ex, ids())
    assert not first.complete and not second.complete
    assert "may have changed the session configuration" in reasons(second)
    whole = live_calls(session(setup, (1, {"setupComplete": {}}), *turn, *turn), ids())
    assert [c.complete for c in whole] == [True, True]
