"""Test helper: a capture file -> TCP events per connection, key log text, and TLS decryption."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.net.events import (
    ConnectionOpened,
    StreamData,
    StreamEnded,
    StreamGap,
    TcpEvent,
)
from agentshark.net.packet import PacketDecoder
from agentshark.net.tcp import TcpReassembler
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import SHB_MAGIC, read_pcapng
from agentshark.sources.records import DecryptionSecrets, Packet
from agentshark.tls import KeyLog, TlsAlert, TlsConnection, TlsEvent, TlsPlaintext
from agentshark.tls.events import TlsGap

TLSK = 0x544C534B  # pcapng Decryption Secrets Block type: TLS key log


@dataclass
class Capture:
    """What a capture holds, read once: TCP events by connection id, in order."""

    events: dict[str, list[TcpEvent]] = field(default_factory=dict)
    secrets: list[bytes] = field(default_factory=list)  # DSB key logs, in file order
    servers: dict[str, tuple[str, int]] = field(default_factory=dict)


def read_capture(path: Path) -> Capture:
    cap = Capture()
    with path.open("rb") as f:
        reader: Iterator[Any]
        if f.read(4) == SHB_MAGIC:
            f.seek(0)
            reader = read_pcapng(f, str(path))
        else:
            f.seek(0)
            reader = read_pcap(f, str(path))
        decoder = PacketDecoder(source_name=path.name)
        tcp = TcpReassembler(source_name=path.name)
        for item in reader:
            if isinstance(item, Packet):
                seg = decoder.decode(item)
                if seg is not None:
                    _keep(cap, tcp.feed(seg))
            elif isinstance(item, DecryptionSecrets) and item.secrets_type == TLSK:
                cap.secrets.append(item.data)
        _keep(cap, tcp.close())
    return cap


def _keep(cap: Capture, events: list[TcpEvent]) -> None:
    for ev in events:
        if isinstance(ev, ConnectionOpened):
            cap.servers[ev.connection.id] = ev.connection.server
        if isinstance(ev, StreamData):
            # StreamData objects are reused by nobody, but copy the bytes to be safe
            ev = StreamData(
                connection=ev.connection,
                direction=ev.direction,
                data=bytes(ev.data),
                ts=ev.ts,
                offset=ev.offset,
            )
        cap.events.setdefault(ev.connection.id, []).append(ev)


@dataclass
class Decrypted:
    """The outcome of one connection: plaintext per direction, alerts, diagnostics."""

    tls: TlsConnection
    plaintext: list[bytearray] = field(default_factory=lambda: [bytearray(), bytearray()])
    alerts: list[TlsAlert] = field(default_factory=list)
    gaps: list[TlsGap] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    events: list[TlsEvent] = field(default_factory=list)


def decrypt(events: list[TcpEvent], keylog: KeyLog, location: str = "") -> Decrypted:
    out = Decrypted(TlsConnection(keylog, location=location))
    tls = out.tls
    for ev in events:
        if isinstance(ev, StreamData):
            found = tls.feed(ev.direction, ev.data, ev.ts)
        elif isinstance(ev, StreamGap):
            found = tls.gap(ev.direction, ev.size, ev.ts)
        elif isinstance(ev, StreamEnded):
            found = tls.end(ev.direction, ev.ts)
        else:
            continue
        for item in found:
            out.events.append(item)
            if isinstance(item, TlsPlaintext):
                out.plaintext[item.direction] += item.data
            elif isinstance(item, TlsAlert):
                out.alerts.append(item)
            elif isinstance(item, TlsGap):
                out.gaps.append(item)
            else:
                out.diagnostics.append(item)
    return out
