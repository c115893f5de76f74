"""The key gate on a real capture: the openai SDK's TLS 1.3 traffic
(``../shared/captures/llm_sdk_openai``) replayed as if live, its key log arriving only after
the packets. The pcapng the gate writes must give the calls that the capture and its key log
give together, hold nothing once the secrets came, and carry only the secrets it used."""

from __future__ import annotations

from pathlib import Path

from agentshark.apis.model import Call
from agentshark.pipeline import Options, run
from agentshark.pipeline.keygate import KeyGate, client_random, complete
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.pcapng_write import TLS_KEY_LOG, epb, idb, shb
from agentshark.sources.records import DecryptionSecrets, Interface, Packet

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "captures" / "llm_sdk_openai"
CAPTURE, KEYLOG = SHARED / "capture.pcap", SHARED / "keylog.txt"


def _packets() -> tuple[Interface, list[Packet]]:
    with CAPTURE.open("rb") as f:
        items = list(read_pcap(f, "capture.pcap"))
    (interface,) = [i for i in items if isinstance(i, Interface)]
    return interface, [p for p in items if isinstance(p, Packet)]


def _calls(path: Path, keylogs: tuple[str, ...] = ()) -> list[tuple[str, str | None, bool]]:
    items = run([str(path)], Options(calls=True, keylogs=keylogs))
    return [(c.api, c.response_model, c.complete) for c in items if isinstance(c, Call)]


def _gated(gate: KeyGate, keys_at: int | None, tmp: Path) -> Path:
    """The capture through ``gate``, the key log given after packet ``keys_at`` (never
    when None); the pcapng written."""
    interface, packets = _packets()
    blocks = [shb(), idb(interface.linktype, interface.snaplen, "lo")]
    for n, pkt in enumerate(packets, 1):
        block = epb(0, round(pkt.ts * 1_000_000), pkt.data, pkt.orig_len)
        blocks += gate.packet(pkt, block, now=float(n))
        if n == keys_at:
            gate.add_keys(str(KEYLOG), KEYLOG.read_bytes())
        blocks += gate.due(now=float(n))
    blocks += gate.flush()
    out = tmp / "gated.pcapng"
    out.write_bytes(b"".join(blocks))
    return out


def test_secrets_that_come_after_the_packets_still_decrypt(tmp_path: Path) -> None:
    expected = _calls(CAPTURE, (str(KEYLOG),))
    assert len(expected) == 5 and all(complete for _, _, complete in expected)
    _, packets = _packets()
    gate = KeyGate(wait=1e9)
    out = _gated(gate, keys_at=len(packets) - 1, tmp=tmp_path)  # nearly everything held
    assert gate.sessions >= 1 and gate.released_without == 0 and gate.holding == 0
    assert _calls(out) == expected  # without the key log: the DSBs carry the secrets
    with out.open("rb") as f:
        items = list(read_pcapng(f, "gated.pcapng"))
    secrets = [i for i in items if isinstance(i, DecryptionSecrets)]
    assert {s.secrets_type for s in secrets} == {TLS_KEY_LOG}
    lines = b"".join(s.data for s in secrets).splitlines()
    assert len(lines) == gate.secrets_written == 5 * gate.sessions
    assert set(lines) <= set(KEYLOG.read_bytes().splitlines())  # the log's own lines
    # the DSBs come before the packets of the sessions they decrypt
    first_dsb = next(i for i, x in enumerate(items) if isinstance(x, DecryptionSecrets))
    hellos = [
        i for i, x in enumerate(items) if isinstance(x, Packet) and _hello(x.data) is not None
    ]
    assert first_dsb < hellos[0]
    assert sum(isinstance(x, Packet) for x in items) == len(packets)  # nothing lost


def _hello(frame: bytes) -> bytes | None:
    ihl = (frame[14] & 0x0F) * 4
    start = 14 + ihl + (frame[14 + ihl + 12] >> 4) * 4
    return client_random(frame[start:])


def test_only_the_secrets_of_the_sessions_seen_are_written(tmp_path: Path) -> None:
    gate = KeyGate(wait=1e9)
    other = "CLIENT_RANDOM " + "ab" * 32 + " " + "cd" * 48 + "\n"
    gate.add_keys("keys.log", other.encode())
    out = _gated(gate, keys_at=3, tmp=tmp_path)
    data = out.read_bytes()
    assert ("ab" * 32).encode() not in data
    assert gate.secrets_written == 5 * gate.sessions


def test_a_connection_waits_at_most_wait_seconds(tmp_path: Path) -> None:
    gate = KeyGate(wait=5.0)  # "seconds" are packet numbers in _gated
    _, packets = _packets()
    out = _gated(gate, keys_at=None, tmp=tmp_path)
    assert gate.released_without == gate.sessions >= 1
    assert gate.secrets_written == 0
    assert _calls(out) == []  # encrypted, as without a key log
    with out.open("rb") as f:
        count = sum(isinstance(x, Packet) for x in read_pcapng(f, "gated.pcapng"))
    assert count == len(packets)


def test_complete_and_client_random() -> None:
    assert complete({"CLIENT_RANDOM": b"x"})
    assert not complete({"CLIENT_HANDSHAKE_TRAFFIC_SECRET": b"x"})
    assert complete(
        dict.fromkeys(
            (
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
                "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                "CLIENT_TRAFFIC_SECRET_0",
                "SERVER_TRAFFIC_SECRET_0",
            ),
            b"x",
        )
    )
    hello = bytes([22, 3, 1, 0, 200, 1, 0, 0, 196, 3, 3]) + bytes(range(32)) + b"\0" * 10
    assert client_random(hello) == bytes(range(32))
    assert client_random(hello[:42]) is None
    assert client_random(bytes([23]) + hello[1:]) is None  # application data
    assert client_random(hello[:5] + bytes([2]) + hello[6:]) is None  # a ServerHello


def test_key_log_lines_are_read_whole(tmp_path: Path) -> None:
    gate = KeyGate()
    text = KEYLOG.read_bytes()
    for i in range(0, len(text), 7):  # in pieces that cut lines anywhere
        assert gate.add_keys("k", text[i : i + 7]) == []
    assert gate.end_keys("k") == []
    reference = KeyGate()
    reference.add_keys("k", text)
    assert len(gate.keylog) == len(reference.keylog) >= 1
    (bad,) = gate.add_keys("k", b"CLIENT_RANDOM 00\n")
    assert bad.code == "keylog.malformed_line"
