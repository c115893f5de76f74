"""Hold a live TLS connection's packets until the key log has its secrets (sans-I/O).

A client writes its SSLKEYLOGFILE lines while it does the handshake, after the packets that
carry it were on the wire: a live capture sees the ServerHello (where agentshark's TLS layer
looks the session's secrets up, :mod:`agentshark.tls.session`) a few milliseconds before
the line that decrypts it is in the file. :class:`KeyGate` sits between the capture tool and
the pipeline and orders the two: a connection whose client sent a ClientHello (RFC 8446
§4.1.2, RFC 5246 §7.4.1.2: a handshake record whose first message is type 1; its random is
the 32 bytes after the legacy version) is held, its packets in their order, until the key
log has its secrets, and those secrets then go out first as a pcapng Decryption Secrets
Block (:func:`agentshark.sources.pcapng_write.dsb`), followed by the held packets. The
pipeline reads the block as it reads any DSB, so the connection decrypts, and the file
written holds the same blocks: it decrypts without the key log, in agentshark and Wireshark.

A session's secrets are there once the key log has ``CLIENT_RANDOM`` (TLS 1.2) or the four
TLS 1.3 traffic secrets (client and server, handshake and application: RFC 9850 §3). A
connection waits at most ``wait`` seconds for them; then it goes on without (its session
stays encrypted, and the TLS layer says why). Secrets that come later are still written
(Wireshark's two-pass reading, ``tshark -2``, uses them). Only the secrets of the sessions
seen are written, never the rest of the key log. Connections without a ClientHello (plain
HTTP, or TLS whose handshake the capture missed) are never held.

Cost: one decode (:class:`~agentshark.net.packet.PacketDecoder`) and one dict lookup per
packet; nothing when no key log is followed (the caller then does not use a gate).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.net.packet import PacketDecoder
from agentshark.sources.pcapng_write import dsb
from agentshark.sources.records import Packet
from agentshark.tls.keylog import TLS12_LABEL, KeyLog

__all__ = ["KEY_WAIT", "KeyGate"]

KEY_WAIT = 2.0  # seconds a connection waits for its secrets
_TLS13_NEEDED = (
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
)

Conn = tuple[bytes, int, bytes, int]


@dataclass(slots=True)
class _Held:
    random: bytes
    since: float
    blocks: list[bytes] = field(default_factory=list)


def client_random(payload: bytes) -> bytes | None:
    """The random of the ClientHello that ``payload`` starts with, else None: a TLS
    handshake record (type 22, version 3.x) whose first message is a ClientHello (1)."""
    if len(payload) < 43 or payload[0] != 22 or payload[1] != 3 or payload[5] != 1:
        return None
    return payload[11:43]


def complete(secrets: dict[str, bytes]) -> bool:
    """Whether ``secrets`` decrypt a whole session (TLS 1.2, or TLS 1.3's four)."""
    return TLS12_LABEL in secrets or all(label in secrets for label in _TLS13_NEEDED)


class KeyGate:
    """Packets in (with their pcapng blocks), blocks out in an order that decrypts."""

    def __init__(self, *, wait: float = KEY_WAIT) -> None:
        self.keylog = KeyLog()
        self.wait = wait
        self.secrets_written = 0  # key log lines written as DSBs
        self.sessions = 0  # ClientHellos seen
        self.released_without = 0  # connections that went on without their secrets
        self._decoder = PacketDecoder("key gate")  # its diagnostics are the pipeline's too
        self._held: dict[Conn, _Held] = {}
        self._order: deque[Conn] = deque()  # held connections, oldest first
        self._late: set[bytes] = set()  # sessions that went on without all their secrets
        self._fresh = False  # whether the key log grew since the last due()
        self._written: set[tuple[bytes, str]] = set()
        self._partial: dict[str, bytes] = {}  # per key log: a line without its LF yet
        self._lines: dict[str, int] = {}  # per key log: number of the next line

    def add_keys(self, source: str, data: bytes) -> list[Diagnostic]:
        """Bytes appended to the key log ``source``: its whole lines are read."""
        buf = self._partial.get(source, b"") + data
        end = buf.rfind(b"\n") + 1
        self._partial[source] = buf[end:]
        if not end:
            return []
        first = self._lines.get(source, 1)
        self._lines[source] = first + buf[:end].count(b"\n")
        self._fresh = True
        return self.keylog.add_text(buf[:end], source, first)

    def end_keys(self, source: str) -> list[Diagnostic]:
        """The key log ``source`` ends: a last line without its LF is read."""
        held = self._partial.pop(source, b"")
        self._fresh = True
        return self.keylog.add_text(held, source, self._lines.get(source, 1)) if held else []

    def packet(self, pkt: Packet, block: bytes, now: float) -> list[bytes]:
        """The blocks to write now for ``pkt`` (``block``: its EPB), held or not."""
        seg = self._decoder.decode(pkt)
        if seg is None:
            return [block]
        key: Conn = (
            (seg.src, seg.sport, seg.dst, seg.dport)
            if (seg.src, seg.sport) < (seg.dst, seg.dport)
            else (seg.dst, seg.dport, seg.src, seg.sport)
        )
        held = self._held.get(key)
        if held is not None:
            held.blocks.append(block)
            return []
        random = client_random(seg.payload) if seg.payload else None
        if random is None:
            return [block]
        self.sessions += 1
        out = self._secrets(random)
        if complete(self.keylog.secrets(random)):
            return [*out, block]
        self._held[key] = _Held(random=random, since=now, blocks=[block])
        self._order.append(key)
        return out

    def due(self, now: float) -> list[bytes]:
        """The blocks of the connections whose secrets came, or whose wait is over; and the
        secrets that came for sessions which went on without them."""
        out: list[bytes] = []
        for key in list(self._order):
            held = self._held[key]
            if complete(self.keylog.secrets(held.random)):
                out.extend(self._release(key))
            elif now - held.since >= self.wait:
                self.released_without += 1
                self._late.add(held.random)
                out.extend(self._release(key))
        if self._fresh and self._late:
            for random in list(self._late):
                out.extend(self._secrets(random))
                if complete(self.keylog.secrets(random)):
                    self._late.discard(random)
        self._fresh = False
        return out

    def flush(self) -> list[bytes]:
        """Every held connection, at the end of the capture (after the last key log read)."""
        out: list[bytes] = []
        for key in list(self._order):
            if not complete(self.keylog.secrets(self._held[key].random)):
                self.released_without += 1
            out.extend(self._release(key))
        for random in self._late:
            out.extend(self._secrets(random))
        self._late.clear()
        return out

    @property
    def holding(self) -> int:
        """Packets held now."""
        return sum(len(h.blocks) for h in self._held.values())

    def _release(self, key: Conn) -> list[bytes]:
        held = self._held.pop(key)
        self._order.remove(key)
        return [*self._secrets(held.random), *held.blocks]

    def _secrets(self, random: bytes) -> list[bytes]:
        """A DSB with the secrets of ``random`` not written yet (none: no block)."""
        lines = [
            f"{label} {random.hex()} {secret.hex()}\n"
            for label, secret in self.keylog.secrets(random).items()
            if (random, label) not in self._written
        ]
        if not lines:
            return []
        for line in lines:
            self._written.add((random, line.split(" ", 1)[0]))
        self.secrets_written += len(lines)
        return [dsb("".join(lines).encode())]
