"""Reading a capture's QUIC connections for tests: datagrams -> QuicDemux -> stream bytes."""

from __future__ import annotations

from pathlib import Path

from agentshark.net.packet import PacketDecoder
from agentshark.net.segment import UdpDatagram
from agentshark.quic.demux import QuicDemux
from agentshark.quic.events import QuicEvent, QuicStreamData, QuicStreamGap
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import DecryptionSecrets, Packet
from agentshark.tls.keylog import KeyLog

from ..helpers import CORPUS, ROOT

OWN = ("h3_openai", "h3_v2_chacha_keyupdate", "h3_lossy", "h3_version_negotiation")
FEATURES = ("h3_push_ws_datagram",)  # push, WebSocket over HTTP/3, HTTP datagrams
CAPTURES = ROOT / "tests" / "data" / "captures"
FILES: dict[str, tuple[Path, Path | None]] = {
    "http3-connection7": (
        CORPUS / "mikekap__pcap2har/tests/resources/http3-connection7.pcap",
        None,
    ),
    "chrome-cloudflare-quic": (
        CORPUS / "FoxIO-LLC__ja4/pcap/chrome-cloudflare-quic-with-secrets.pcapng",
        None,
    ),
    **{
        name: (CAPTURES / name / "capture.pcap", CAPTURES / name / "keys.log")
        for name in (*OWN, *FEATURES)
    },
}


def read_quic(
    pcap: Path, keys: Path | None, *, keylog: bool = True
) -> tuple[QuicDemux, list[tuple[str, QuicEvent]]]:
    """Every QUIC event of the capture with its connection id, and the demultiplexer."""
    log = KeyLog()
    if keys is not None and keylog:
        log.add_text(keys.read_bytes(), str(keys))
    demux = QuicDemux(log, pcap.name, "q")
    events: list[tuple[str, QuicEvent]] = []

    def take(dg: UdpDatagram) -> bool:
        found = demux.feed(dg)
        if found is None:
            return False
        flow, got = found
        if flow is not None:  # None: a datagram of a connection seen mid-way (no events)
            events.extend((flow.conn.id, ev) for ev in got)
        return True

    decoder = PacketDecoder(source_name=pcap.name, udp=take)
    with pcap.open("rb") as f:
        head = f.read(4)
        f.seek(0)
        reader = (
            read_pcapng(f, pcap.name) if head == b"\x0a\x0d\x0d\x0a" else read_pcap(f, pcap.name)
        )
        for item in reader:
            if isinstance(item, Packet):
                decoder.decode(item)
            elif isinstance(item, DecryptionSecrets) and keylog:
                log.add_text(item.data, "dsb")
    for flow in demux.flows:
        events.extend((flow.conn.id, ev) for ev in flow.quic.close(0.0))
    return demux, events


def stream_bytes(
    events: list[tuple[str, QuicEvent]], conn: str
) -> tuple[dict[tuple[int, int], bytes], int]:
    """The bytes of each (direction, stream) of one connection, and the gaps' bytes."""
    out: dict[tuple[int, int], bytearray] = {}
    gaps = 0
    for cid, ev in events:
        if cid != conn:
            continue
        if isinstance(ev, QuicStreamData):
            out.setdefault((ev.direction, ev.stream_id), bytearray()).extend(ev.data)
        elif isinstance(ev, QuicStreamGap):
            gaps += ev.size
    return {k: bytes(v) for k, v in out.items()}, gaps
