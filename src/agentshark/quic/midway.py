"""QUIC connections whose start the capture does not hold: told apart from other UDP, named.

Without the client's first Initial there is no ClientHello, so no client random to find the
connection's secrets in a key log (RFC 9001 §5, SSLKEYLOGFILE), and no connection ID length
for short headers: such a connection's packets cannot be opened here. What can be said is
that the datagrams are QUIC, when the evidence shows it:

- a long header of a known version (a Handshake, 0-RTT or server Initial packet) names its
  path as QUIC (RFC 9000 §17.2: version and connection IDs are in the clear);
- or short-header datagrams (fixed bit set, §17.3) of one direction that begin with the same
  bytes after the first: the destination connection ID, which stays put until the endpoint
  moves to a new one. ``SAME_PREFIX`` bytes alike over ``SAME_DATAGRAMS`` datagrams is a
  chance of 2**-32 each for random UDP.

The datagrams of such a path are taken (not counted as UDP) and reported as one connection
seen mid-way, with a diagnostic saying what was seen and what to do. The datagrams a path
had before its evidence came stay counted as UDP (their number is said). Roles are guessed
from the ports (443, else the lower one serves), and said to be a guess.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.errors import Diagnostic
from agentshark.net.events import Connection, format_endpoint
from agentshark.quic.wire import KNOWN_VERSIONS, version_name

__all__ = ["MAX_PATHS", "Midway", "MidwayPaths"]

SAME_PREFIX = 4
SAME_DATAGRAMS = 3
HELD = 8  # datagrams a path keeps, with a key log, for a connection opened by trial
MAX_PATHS = 4096  # undecided paths followed at once (the oldest is forgotten past it)

_Endpoint = tuple[str, int]
_Ends = tuple[_Endpoint, _Endpoint]


class Midway:
    """One path's datagrams: counts, the first bytes per direction, what told QUIC."""

    __slots__ = ("conn", "evidence", "heads", "held", "prefix", "seen", "untaken", "versions")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        # (sender, datagram, time, taken: False when it was left to be counted as UDP)
        self.held: list[tuple[_Endpoint, bytes, float, bool]] = []
        self.heads: list[bytes | None] = [None, None]  # bytes 1..21 of a direction's first
        self.prefix = [21, 21]  # the bytes all of a direction's short headers share so far
        self.seen = [0, 0]  # short-header datagrams per direction
        self.evidence = ""
        self.untaken = 0  # datagrams counted as UDP before the evidence came
        self.versions: set[int] = set()

    def diagnostic(self) -> Diagnostic:
        c = self.conn
        total = sum(c.packets)
        before = f"; the {self.untaken} before that are counted as UDP" if self.untaken else ""
        return Diagnostic(
            code="quic.midway",
            severity="warning",
            location=f"{c.id} {format_endpoint(c.client)} <-> {format_endpoint(c.server)}",
            message=f"{total} datagrams ({sum(c.bytes)} bytes) are a QUIC connection seen "
            f"mid-way ({self.evidence}{before}): the capture does not hold its first "
            "Initial, whose ClientHello random finds its secrets in a key log, so its "
            "packets stay encrypted and its requests unread (client and server guessed "
            "from the ports). Start the capture before the client connects, or make the "
            "client open a new connection while capturing",
        )


class MidwayPaths:
    """Paths of datagrams no known connection took; ``found`` lists those shown QUIC."""

    def __init__(self, prefix: str, next_number: Callable[[], int]) -> None:
        self._prefix = prefix
        self._next_number = next_number
        self._paths: dict[_Ends, Midway] = {}
        self.found: list[Midway] = []

    def datagram(
        self, src: _Endpoint, dst: _Endpoint, data: bytes, ts: float, *, hold: bool = False
    ) -> bool:
        """Take the datagram when its path is (or now shows itself) QUIC; ``hold``: keep
        the path's first ``HELD`` datagrams, so that a connection opened by trial later
        (:meth:`forget`) reads them too."""
        ends = (src, dst) if src <= dst else (dst, src)
        m = self._paths.get(ends)
        if m is None:
            if len(self._paths) >= MAX_PATHS:  # forget the oldest undecided path
                old = next((k for k, v in self._paths.items() if not v.evidence), None)
                if old is not None:
                    del self._paths[old]
            m = self._paths[ends] = Midway(_connection(ends, ts))
        d = 0 if src == m.conn.client else 1
        keep = hold and len(m.held) < HELD
        if not m.evidence:
            self._weigh(m, d, data)
            if not m.evidence:
                m.untaken += 1
                if keep:
                    m.held.append((src, data, ts, False))
                return False
            m.conn.id = f"{self._prefix}{self._next_number()}"
            self.found.append(m)
        if keep:
            m.held.append((src, data, ts, True))
        c = m.conn
        c.last_ts = ts
        c.bytes[d] += len(data)
        c.packets[d] += 1
        return True

    def forget(
        self, src: _Endpoint, dst: _Endpoint
    ) -> tuple[list[tuple[_Endpoint, bytes, float, bool]], int, str]:
        """The path is a connection opened after all (``agentshark.quic.trial``): it is no
        longer one seen mid-way; the datagrams it held, how many it had (taken or counted
        as UDP, the held ones among them), the connection id it was given ("" if none)."""
        ends = (src, dst) if src <= dst else (dst, src)
        m = self._paths.pop(ends, None)
        if m is None:
            return [], 0, ""
        if m in self.found:
            self.found.remove(m)
        return m.held, sum(m.conn.packets) + m.untaken, m.conn.id

    def _weigh(self, m: Midway, d: int, data: bytes) -> None:
        if data[0] & 0x80:
            version = int.from_bytes(data[1:5], "big")
            if version in KNOWN_VERSIONS:
                m.versions.add(version)
                m.evidence = f"a long header of QUIC version {version_name(version)}"
            return
        head = data[1:22]
        first = m.heads[d]
        m.seen[d] += 1
        if first is None:
            m.heads[d] = head
            return
        same = 0
        for a, b in zip(first, head, strict=False):  # at most 21 bytes, once per datagram
            if a != b:
                break
            same += 1
        m.prefix[d] = min(m.prefix[d], same)
        if m.seen[d] >= SAME_DATAGRAMS and m.prefix[d] >= SAME_PREFIX:
            who = "client" if d == 0 else "server"
            m.evidence = (
                f"{m.seen[d]} short headers of the {who} begin with the same "
                f"{m.prefix[d]} bytes, a destination connection ID"
            )


def _connection(ends: _Ends, ts: float) -> Connection:
    a, b = ends
    server_first = a[1] == 443 or (b[1] != 443 and a[1] < b[1])
    client, server = (b, a) if server_first else (a, b)
    return Connection(
        id="",
        client=client,
        server=server,
        serial=0,
        handshake_seen=False,
        first_ts=ts,
        last_ts=ts,
    )
