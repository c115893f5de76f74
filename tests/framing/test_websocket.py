"""WebSocket frames read passively, checked against frames that wsproto (an independent
implementation of RFC 6455 and RFC 7692) writes."""

from __future__ import annotations

import dataclasses
import pickle
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import FrameProtocol

from agentshark.errors import Diagnostic
from agentshark.framing.websocket import (
    BINARY,
    CLOSE,
    PING,
    TEXT,
    Deflate,
    WsDirection,
    WsMessage,
    parse_deflate,
)
from agentshark.model import WsRecord


def writer(client: bool, deflate: str | None = None) -> FrameProtocol:
    """wsproto's frame writer for one side; ``deflate`` the server's accepted extension
    parameters (``permessage-deflate; ...``) when compression is on."""
    extensions: list[Extension] = []
    if deflate is not None:
        ext = PerMessageDeflate()
        if client:
            ext.finalize(deflate)
        else:
            ext.accept(deflate)
        extensions.append(ext)
    return FrameProtocol(client=client, extensions=extensions)


def read(
    data: bytes, direction: int, *, chunks: int = 1, seed: int = 0, **kw: object
) -> tuple[list[WsMessage], list[Diagnostic]]:
    reader = WsDirection(direction, **kw)  # type: ignore[arg-type]
    rng = random.Random(seed)
    cuts = (
        sorted(rng.sample(range(1, len(data)), min(chunks - 1, len(data) - 1)))
        if chunks > 1
        else []
    )
    out: list[WsMessage | Diagnostic] = []
    last = 0
    for n, cut in enumerate([*cuts, len(data)]):
        out += reader.feed(data[last:cut], float(n))
        last = cut
    out += reader.close(99.0)
    return [m for m in out if isinstance(m, WsMessage)], [
        d for d in out if isinstance(d, Diagnostic)
    ]


def conversation(w: FrameProtocol) -> bytes:
    data = bytearray()
    data += w.send_data("hello, world")
    data += w.send_data(b"\x00\x01binary" * 50)
    data += w.send_data("frag-1 ", fin=False)
    data += w.ping(b"are you there")
    data += w.send_data("frag-2 ", fin=False)
    data += w.send_data("frag-3", fin=True)
    data += w.send_data("x" * 70000)  # a 64-bit length
    data += w.send_data("é" * 200)  # a 16-bit length, multi-byte UTF-8
    data += w.close(1000, "bye")
    return bytes(data)


EXPECTED = [
    (TEXT, b"hello, world"),
    (BINARY, b"\x00\x01binary" * 50),
    (PING, b"are you there"),
    (TEXT, b"frag-1 frag-2 frag-3"),
    (TEXT, b"x" * 70000),
    (TEXT, ("é" * 200).encode()),
    (CLOSE, b"\x03\xe8bye"),
]


def test_client_and_server_frames_in_any_split() -> None:
    for client in (True, False):
        data = conversation(writer(client))
        for chunks, seed in ((1, 0), (7, 1), (300, 2), (len(data), 3)):
            messages, diags = read(data, 0 if client else 1, chunks=chunks, seed=seed)
            assert [(m.opcode, m.payload) for m in messages] == EXPECTED
            assert diags == []
            assert all(m.complete and not m.truncated for m in messages)
    messages, _ = read(conversation(writer(True)), 0)
    fragmented = messages[3]
    assert fragmented.frames == 3 and fragmented.wire_size == 20
    assert messages[-1].close_code == 1000 and messages[-1].close_reason == "bye"
    assert messages[0].offset == 0 and messages[1].offset == 2 + 4 + 12


def test_times_are_the_first_and_last_frame_arrivals() -> None:
    w = writer(False)
    reader = WsDirection(1)
    assert reader.feed(bytes(w.send_data("a", fin=False)), 1.0) == []
    assert reader.feed(bytes(w.send_data("b", fin=False)), 2.0) == []
    (m,) = reader.feed(bytes(w.send_data("c")), 3.0)
    assert isinstance(m, WsMessage) and (m.first_ts, m.last_ts, m.payload) == (1.0, 3.0, b"abc")


def test_permessage_deflate_with_and_without_context_takeover() -> None:
    for params in (
        "permessage-deflate",
        "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=10; client_max_window_bits=9",
    ):
        deflate = parse_deflate(params)
        assert deflate is not None
        for client in (True, False):
            data = conversation(writer(client, params))
            messages, diags = read(data, 0 if client else 1, chunks=50, deflate=deflate)
            assert [(m.opcode, m.payload) for m in messages] == EXPECTED, params
            assert diags == []
            assert messages[0].compressed and messages[4].wire_size < 1000


def test_parse_deflate() -> None:
    assert parse_deflate(None) is None and parse_deflate("x-webkit-deflate-frame") is None
    d = parse_deflate(
        "foo, permessage-deflate; server_no_context_takeover; client_max_window_bits=12"
    )
    assert d == Deflate(server_no_context_takeover=True, client_max_window_bits=12)
    assert d.takeover(0) and not d.takeover(1)


def repeated(w: FrameProtocol) -> list[bytes]:
    text = "the same long sentence comes twice, so the second refers to the first. " * 4
    return [bytes(w.send_data(text)), bytes(w.send_data(text)), bytes(w.send_data(text))]


def test_mid_connection_with_context_takeover_is_undecodable_not_garbled() -> None:
    params = "permessage-deflate"
    frames = repeated(writer(False, params))
    messages, diags = read(b"".join(frames[1:]), 1, deflate=parse_deflate(params), mid_stream=True)
    assert [m.payload for m in messages] == [None, None]
    assert [d.code for d in diags] == ["ws.undecodable"]
    assert "mid-connection" in diags[0].message
    # without context takeover, every message stands alone
    params = "permessage-deflate; server_no_context_takeover"
    frames = repeated(writer(False, params))
    messages, diags = read(b"".join(frames[1:]), 1, deflate=parse_deflate(params), mid_stream=True)
    assert all(m.payload and m.payload.startswith(b"the same") for m in messages) and not diags


def test_a_gap_costs_the_message_it_cuts() -> None:
    w = writer(True)
    frames = [bytes(w.send_data(f"message {n} " + "y" * 300)) for n in range(5)]
    reader = WsDirection(0)
    out = reader.feed(frames[0] + frames[1][:100], 1.0)
    out += reader.gap(len(frames[1]) - 100 + 40, 2.0)  # the rest of 1 and the head of 2
    out += reader.feed(frames[2][40:] + frames[3] + frames[4], 3.0)
    out += reader.close(4.0)
    messages = [m for m in out if isinstance(m, WsMessage)]
    codes = [d.code for d in out if isinstance(d, Diagnostic)]
    assert [m.complete for m in messages] == [True, False, True, True]
    assert messages[1].payload is not None and messages[1].payload.startswith(b"message 1")
    assert [m.payload for m in messages[2:]] == [
        f"message {n} ".encode() + b"y" * 300 for n in (3, 4)
    ]
    assert codes == ["ws.gap", "ws.resync"]


def test_a_gap_with_context_takeover_loses_the_window() -> None:
    params = "permessage-deflate"
    frames = repeated(writer(True, params))
    reader = WsDirection(0, deflate=parse_deflate(params))
    out = (
        reader.feed(frames[0], 1.0) + reader.gap(len(frames[1]), 2.0) + reader.feed(frames[2], 3.0)
    )
    messages = [m for m in out if isinstance(m, WsMessage)]
    assert messages[0].payload is not None and messages[1].payload is None
    assert [d.code for d in out if isinstance(d, Diagnostic)] == ["ws.gap", "ws.undecodable"]


def test_the_end_inside_a_frame() -> None:
    data = bytes(writer(False).send_data("z" * 1000))
    messages, diags = read(data[:500], 1)
    assert len(messages) == 1 and not messages[0].complete
    assert messages[0].payload == b"z" * (500 - 4)
    assert [d.code for d in diags] == ["ws.truncated"]


def test_payload_limit_keeps_the_head_and_counts_all() -> None:
    for params in (None, "permessage-deflate"):
        data = bytes(writer(True, params).send_data("q" * 100000))
        deflate = parse_deflate(params)
        messages, _ = read(data, 0, chunks=40, max_payload=1000, deflate=deflate)
        (m,) = messages
        assert m.truncated and m.payload == b"q" * 1000 and m.size == 100000


def test_protocol_mistakes_are_noted_and_reading_goes_on() -> None:
    server = writer(False)
    unmasked_client = bytes(server.send_data("not masked"))  # a server frame sent by a client
    reserved = b"\x83\x80\x00\x00\x00\x00"  # opcode 3, masked, empty
    orphan = b"\x80\x80\x00\x00\x00\x00"  # a continuation with no message
    bad_text = bytes(writer(True).send_data(b"\xff\xfe not utf-8"))
    bad_text = bad_text[:1].replace(b"\x82", b"\x81") + bad_text[1:]  # binary -> text
    tail = bytes(writer(True).send_data("after"))
    messages, diags = read(unmasked_client + reserved + orphan + bad_text + tail, 0)
    assert [m.payload for m in messages] == [b"not masked", b"\xff\xfe not utf-8", b"after"]
    assert [d.code for d in diags] == [
        "ws.mask",
        "ws.reserved_opcode",
        "ws.orphan_continuation",
        "ws.invalid_utf8",
    ]


def test_rsv1_without_negotiation_is_inflated_on_trial() -> None:
    data = bytes(writer(False, "permessage-deflate").send_data("compressed"))
    messages, diags = read(data, 1)
    assert messages[0].payload == b"compressed"
    assert {d.code for d in diags} == {"ws.reserved_bits", "ws.deflate_unnegotiated"}


def test_unmasking_matches_the_definition() -> None:
    from agentshark.framing.websocket import _unmask

    key = bytes([1, 2, 3, 250])
    data = bytes(range(256)) * 3
    for start in range(5):
        expected = bytes(b ^ key[(start + i) % 4] for i, b in enumerate(data))
        assert _unmask(data, key, start) == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 1), st.booleans(), st.integers(1, 20))
def test_any_bytes_give_events_never_an_exception(
    data: bytes, direction: int, deflate: bool, n: int
) -> None:
    reader = WsDirection(direction, deflate=Deflate() if deflate else None, max_payload=64)
    step = max(1, len(data) // n)
    for i in range(0, len(data), step):
        reader.feed(data[i : i + step], float(i))
        if i % 3 == 2:
            reader.gap(5, float(i))
    reader.close(1.0)


def test_raw_deflate_oracle() -> None:
    """The tail rule, checked against zlib itself: a sync-flushed raw stream minus 00 00 ff ff."""
    c = zlib.compressobj(wbits=-15)
    body = c.compress(b"plain zlib") + c.flush(zlib.Z_SYNC_FLUSH)
    assert body.endswith(b"\x00\x00\xff\xff")
    frame = bytes([0xC1, len(body) - 4]) + body[:-4]
    (m,), _ = read(frame, 1, deflate=Deflate())
    assert m.payload == b"plain zlib"


@settings(max_examples=200, deadline=None)
@given(
    st.builds(
        WsMessage,
        direction=st.integers(0, 1),
        opcode=st.sampled_from([TEXT, BINARY, CLOSE, PING, 0, 3]),
        payload=st.none() | st.binary(max_size=40),
        size=st.integers(0, 1 << 40),
        wire_size=st.integers(0, 1 << 40),
        frames=st.integers(1, 9),
        first_ts=st.floats(allow_nan=False) | st.integers(0, 9),
        last_ts=st.floats(allow_nan=False),
        offset=st.integers(0, 1 << 40),
        compressed=st.booleans(),
        complete=st.booleans(),
        truncated=st.booleans(),
        close_code=st.none() | st.integers(0, 4999),
        close_reason=st.none() | st.text(max_size=8),
    )
)
def test_a_pickled_message_and_record_come_back_the_same(message: WsMessage) -> None:
    """The workers of a shared run pickle every message (``WsMessage.__reduce__``, by field
    values; ``WsRecord`` too): each field comes back, of the same type, still frozen."""
    note = Diagnostic(code="ws.x", message="m", location="e1 websocket")
    for record in (WsRecord(message=message), WsRecord(message=message, diagnostics=[note])):
        back = pickle.loads(pickle.dumps([record, record], pickle.HIGHEST_PROTOCOL))
        assert back[0] is back[1]  # shared, as pickled
        assert back[0] == record
        for f in dataclasses.fields(WsMessage):
            value = getattr(back[0].message, f.name)
            assert type(value) is type(getattr(message, f.name)), f.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            back[0].message.size = 1
