"""One QUIC connection, both directions: datagrams -> packets -> frames -> events.

A datagram holds one or more packets (RFC 9000 §12.2): long-header packets end at their
Length, a short-header packet runs to the end of the datagram. Each packet is opened with
the keys of its space and direction (:mod:`agentshark.quic.keys`), its packet number
recovered from the largest one seen in the space (RFC 9000 §A.3), its frames read
(:mod:`agentshark.quic.frames`). CRYPTO bytes are reassembled per space and direction into
TLS handshake messages (RFC 9001 §4: the messages without TLS records): the ClientHello gives
the client random, SNI and the ALPN offered, the ServerHello the suite, EncryptedExtensions
the ALPN chosen. STREAM bytes are reassembled per stream and direction and handed up in order.
A packet that cannot be opened is counted by space and direction; the report says why.
"""

from __future__ import annotations

from agentshark.errors import Diagnostic, Severity
from agentshark.quic import frames as qf
from agentshark.quic.events import (
    QuicClosed,
    QuicDatagram,
    QuicEvent,
    QuicStreamData,
    QuicStreamGap,
    QuicStreamReset,
)
from agentshark.quic.keys import APP, EARLY_LABEL, HANDSHAKE, INITIAL, SECRET_LABELS, KeyRing
from agentshark.quic.protection import PacketKeys, decode_packet_number, retry_tag_valid
from agentshark.quic.streams import Reassembly
from agentshark.quic.trial import Opened, Trial
from agentshark.quic.wire import (
    KNOWN_VERSIONS,
    LongHeader,
    WireError,
    parse_long_header,
    version_name,
)
from agentshark.tls.handshake import (
    CLIENT_HELLO,
    ENCRYPTED_EXTENSIONS,
    SERVER_HELLO,
    HandshakeError,
    HandshakeReader,
    parse_client_hello,
    parse_encrypted_extensions,
    parse_server_hello,
)
from agentshark.tls.info import TlsInfo
from agentshark.tls.info import version_name as tls_version_name
from agentshark.tls.keylog import KeyLog
from agentshark.tls.keyschedule import SUITES, suite_name

__all__ = ["MAX_DETAILED", "QuicConnection"]

MAX_DETAILED = 5  # detailed diagnostics per code and connection; the rest are counted
_SPACE_NAMES = ("Initial", "Handshake", "1-RTT")
_PN_WINDOW = 4096  # packet numbers remembered below the largest, per space and direction
_WHO = ("client", "server")


class _Stream:
    __slots__ = ("fin_at", "flow")

    def __init__(self) -> None:
        self.flow = Reassembly()
        self.fin_at = -1


class QuicConnection:
    """The packets of one connection, fed a datagram at a time (``direction`` 0: client).

    ``info`` holds the handshake facts; ``version`` the QUIC version of the first Initial;
    ``packets`` and ``opened`` count packets per direction (seen, decrypted), ``unopened``
    the ones not decrypted by (space, direction); ``new_cids`` collects the connection IDs
    the endpoints issued (NEW_CONNECTION_ID), for the demultiplexer, with the direction of
    the packets that will carry them; ``skipped`` counts the frames read past by name."""

    def __init__(self, keylog: KeyLog, odcid: bytes, version: int, location: str) -> None:
        self.keys = KeyRing(keylog, odcid)
        self.version = version
        self.location = location
        self.info = TlsInfo(version=tls_version_name(0x0304))
        self.cid_len = [len(odcid), 0]  # the DCID length of short headers, per direction
        self.packets = [0, 0]
        self.opened = [0, 0]
        self.unopened: dict[tuple[int, int], int] = {}
        self.new_cids: list[tuple[bytes, int]] = []
        self.skipped: dict[str, int] = {}
        self.diagnostics: list[Diagnostic] = []
        self.retries = 0
        self.truncated = 0  # datagrams the capture cut short (their last packet is not read)
        self.datagrams = 0  # DATAGRAM frames (RFC 9221), also handed up (QuicDatagram)
        self.closed: QuicClosed | None = None
        # Version Negotiation: the version the client started in, the versions offered
        self.negotiation: tuple[int, list[int]] | None = None
        self._largest = [[-1, -1], [-1, -1], [-1, -1]]
        self._pns: list[list[set[int]]] = [[set(), set()] for _ in range(3)]  # opened numbers
        self.duplicates = 0  # packets opened twice (copies of a datagram), not read again
        self._holes: list[dict[int, float]] = [{}, {}]  # 1-RTT numbers missing: when seen so
        self._crypto = [[Reassembly(), Reassembly()] for _ in range(3)]
        self._readers = [[HandshakeReader(), HandshakeReader()] for _ in range(3)]
        self._streams: dict[tuple[int, int], _Stream] = {}
        self._done: set[tuple[int, int]] = set()
        self._seen: dict[str, int] = {}
        self._scid_seen = [False, False]
        self._hello_taken = False  # the ClientHello of the current attempt was read
        self._server_read = [False, False]  # the ServerHello, the EncryptedExtensions read
        self.midway = False  # opened by trial: the capture does not hold its first Initial
        self.app_midway = False  # ... and from a 1-RTT packet: streams may predate the capture
        self._trial: Trial | None = None  # a midway connection's: finds the other side's keys
        self._before: set[tuple[int, int]] = set()  # streams begun before the capture
        self._before_bytes = 0
        self._untaken = 0  # a midway connection's datagrams before the one that opened
        self._facts_checked = False  # the facts of server messages not read are unknown

    @classmethod
    def opened_midway(
        cls,
        keylog: KeyLog,
        opened: Opened,
        trial: Trial,
        sender: int,
        location: str,
        *,
        untaken: int = 0,
    ) -> QuicConnection:
        """A connection whose start the capture does not hold, found by ``trial``: the
        packet ``sender`` (0: the client) sent opened with ``opened``'s keys. Its handshake
        facts are unknown (``tls.unknown``) but the session's client random; the keys of
        the other direction are found by trying that session's secrets on its first packet;
        Initial packets cannot be opened (their keys come from the lost first Initial)."""
        conn = cls(keylog, b"", opened.version, location)
        conn.midway = True
        conn.app_midway = opened.space == APP
        conn._trial = trial
        conn._untaken = untaken
        ring = conn.keys
        ring.client_random = opened.client_random
        ring.suite = opened.keys.suite
        info = conn.info
        info.client_random = opened.client_random.hex()
        info.cipher_suite = opened.keys.suite.name
        info.unknown = ["alpn", "early_data", "resumed", "sni"]
        conn.cid_len = [-1, -1]
        conn._midway_keys(sender, opened)
        return conn

    def _midway_keys(self, d: int, opened: Opened) -> None:
        """``opened`` opened a packet ``d`` sent: its keys, DCID length and packet number
        become the direction's (the next number decoded is that one)."""
        if opened.cid_len >= 0:
            self.cid_len[d] = opened.cid_len
        if opened.space == APP:
            self.keys.set_app(d, opened.keys, phase=opened.updates & 1, updates=opened.updates)
            self._largest[APP][d] = opened.pn - 1
        else:  # a Handshake packet's keys
            self.keys.set_handshake(d, opened.keys)
            self._largest[HANDSHAKE][d] = opened.pn - 1

    # -- datagrams ------------------------------------------------------------------------

    def datagram(self, direction: int, data: bytes, ts: float, missing: int = 0) -> list[QuicEvent]:
        """The events of one datagram's packets; ``missing``: bytes of it on the wire that
        the capture did not keep (a snap length below its size)."""
        out: list[QuicEvent] = []
        if missing:
            self.truncated += 1
            self._note(
                "quic.truncated",
                f"a datagram of the {_WHO[direction]} was captured {len(data)} of "
                f"{len(data) + missing} bytes (the capture's snap length): the packet it cuts "
                f"is not read, and the frames it held are missing (capture with -s 0)",
            )
            data = self._whole_packets(data)
        pos = 0
        while pos < len(data):
            first = data[pos]
            if not first:  # zero bytes after the packets: padding (RFC 9000 §12.2)
                break
            if not first & 0x80:
                if first & 0x40 and self.cid_len[direction] < 0:  # midway: keys not found yet
                    self._midway_short(direction, data[pos:], ts, out)
                elif first & 0x40:  # short header (§17.3): to the end of the datagram
                    self._packet(
                        APP, direction, data[pos:], 1 + self.cid_len[direction], False, ts, out
                    )
                else:
                    self._note(
                        "quic.malformed",
                        f"a packet of the {_WHO[direction]} has the fixed bit clear; the rest of "
                        f"its datagram is skipped",
                    )
                break
            try:
                hdr = parse_long_header(data, pos)
            except WireError as exc:
                self._note(
                    "quic.malformed",
                    f"a long header of the {_WHO[direction]} does not parse ({exc}); the rest of "
                    f"its datagram is skipped",
                )
                break
            if not self._long(direction, hdr, data, pos, ts, out):
                break
            pos = hdr.end
        return out

    def _midway_short(self, d: int, pkt: bytes, ts: float, out: list[QuicEvent]) -> None:
        """The first short-header packet of a direction of a midway connection: its DCID
        length and keys are found by trying the session's secrets of that direction."""
        assert self._trial is not None and self.keys.client_random is not None
        opened = self._trial.short(pkt, sides=(d,), only=self.keys.client_random)
        if opened is None:
            self.packets[d] += 1
            self.unopened[(APP, d)] = self.unopened.get((APP, d), 0) + 1
            return
        self._midway_keys(d, opened)
        self.new_cids.append((pkt[1 : 1 + opened.cid_len], d))
        self._packet(APP, d, pkt, 1 + opened.cid_len, False, ts, out)

    @staticmethod
    def _whole_packets(data: bytes) -> bytes:
        """The long-header packets a cut datagram holds whole (a short-header packet runs to
        the datagram's end, so it is never whole in one)."""
        pos = 0
        while pos < len(data) and data[pos] & 0x80:
            try:
                hdr = parse_long_header(data, pos)
            except WireError:
                break
            if hdr.kind is None or hdr.kind == "retry":
                break
            pos = hdr.end
        return data[:pos]

    def _long(
        self,
        direction: int,
        hdr: LongHeader,
        data: bytes,
        pos: int,
        ts: float,
        out: list[QuicEvent],
    ) -> bool:
        """One long-header packet; False when the rest of the datagram is not packets."""
        if hdr.kind is None:
            versions = ", ".join(version_name(v) for v in hdr.versions)
            self._note(
                "quic.version_negotiation",
                f"the server answered version {version_name(self.version)} with Version "
                f"Negotiation, offering versions {versions}",
                severity="info",
            )
            if self.negotiation is None:
                self.negotiation = (self.version, list(hdr.versions))
            return False
        if hdr.version not in KNOWN_VERSIONS:
            self._note(
                "quic.unknown_version",
                f"a packet of QUIC version {version_name(hdr.version)} is not read (agentshark "
                f"reads versions 1 and 2)",
            )
            return False
        if not self._scid_seen[direction]:
            self._scid_seen[direction] = True
            self.cid_len[1 - direction] = len(hdr.scid)
        if hdr.kind == "retry":
            self._retry(hdr, data[pos:])
            return False
        if (
            direction == 0
            and hdr.kind == "initial"
            and self.negotiation is not None
            and hdr.version != self.version
            and hdr.version in self.negotiation[1]
        ):
            self._negotiated(hdr.version)
        if direction == 0 and hdr.kind == "initial" and not self._scid_seen[1]:
            self.cid_len[0] = len(hdr.dcid)
        space = {"initial": INITIAL, "handshake": HANDSHAKE, "0rtt": APP}[hdr.kind]
        self._packet(
            space,
            direction,
            data[pos : hdr.end],
            hdr.pn_offset - pos,
            True,
            ts,
            out,
            hdr.version,
            hdr.kind == "0rtt",
        )
        return True

    def _retry(self, hdr: LongHeader, packet: bytes) -> None:
        """RFC 9000 §17.2.5: the client must start again toward the Retry's SCID."""
        if not retry_tag_valid(packet, self.keys.odcid, hdr.version):
            self._note(
                "quic.retry_invalid",
                "a Retry's integrity tag does not verify against the client's DCID (RFC 9001 "
                "§5.8): it is ignored",
            )
            return
        self.retries += 1
        self.keys.retry(hdr.scid)
        # the client starts its handshake again (a new ClientHello from offset 0)
        self._crypto[INITIAL][0] = Reassembly()
        self._readers[INITIAL][0] = HandshakeReader()
        self._hello_taken = False
        self.cid_len[0] = len(hdr.scid)
        self.new_cids.append((hdr.scid, 0))

    def _negotiated(self, version: int) -> None:
        """After Version Negotiation the client starts again in a version the server offered
        (RFC 9000 §6.2, RFC 9368 §2.2): a new ClientHello, packet numbers from 0, the
        connection's version from now on."""
        self.version = version
        for d in (0, 1):
            self._crypto[INITIAL][d] = Reassembly()
            self._readers[INITIAL][d] = HandshakeReader()
            self._largest[INITIAL][d] = -1
            self._pns[INITIAL][d] = set()
        self._hello_taken = False

    # -- packets --------------------------------------------------------------------------

    def _packet(
        self,
        space: int,
        d: int,
        pkt: bytes,
        pn_offset: int,
        long: bool,
        ts: float,
        out: list[QuicEvent],
        version: int = 0,
        early: bool = False,
    ) -> None:
        self.packets[d] += 1
        if len(pkt) < pn_offset + 20:
            self._note(
                "quic.malformed",
                f"a {_SPACE_NAMES[space]} packet of the {_WHO[d]} is too short for its header "
                f"protection sample",
            )
            return
        version = version or self.version
        sample = pkt[pn_offset + 4 : pn_offset + 20]
        tries, app_mask = self._tries(space, d, version, early, pkt[0], sample)
        if not tries:
            self.unopened[(space, d)] = self.unopened.get((space, d), 0) + 1
            return
        for keys, phase in tries:
            mask = app_mask or keys.mask(sample)
            first = pkt[0] ^ (mask[0] & (0x0F if long else 0x1F))
            if phase >= 0 and (first >> 2) & 1 != phase:
                continue
            size = (first & 3) + 1
            truncated = int.from_bytes(pkt[pn_offset : pn_offset + size], "big") ^ int.from_bytes(
                mask[1 : 1 + size], "big"
            )
            header = bytes((first,)) + pkt[1:pn_offset] + truncated.to_bytes(size, "big")
            largest = self._largest[space][d]
            pn = decode_packet_number(largest, truncated, 8 * size)
            plain = keys.open(pn, header, pkt[pn_offset + size :])
            if plain is None:
                continue
            self._accepted(space, d, keys, phase, early)
            if self._repeated(space, d, pn):
                return
            if space == APP:
                self._follow_holes(d, largest, pn, ts)
            if pn > largest:
                self._largest[space][d] = pn
            self.opened[d] += 1
            self._frames(space, d, plain, ts, out)
            return
        self.unopened[(space, d)] = self.unopened.get((space, d), 0) + 1
        self._note(
            "quic.decrypt_failed",
            f"a {_SPACE_NAMES[space]} packet of the {_WHO[d]} does not decrypt with its keys (a "
            f"key log entry of another session, or a damaged capture)",
        )

    def _repeated(self, space: int, d: int, pn: int) -> bool:
        """A packet number already opened in its space: a copy of a datagram (a network's or
        a capture's duplicate; QUIC never sends a packet number twice, RFC 9000 §12.3). Its
        frames were read with the first copy: read again, a DATAGRAM frame (never
        retransmitted, so never deduplicated by offset) would count twice. Numbers more
        than ``_PN_WINDOW`` below the largest are forgotten."""
        seen = self._pns[space][d]
        if pn in seen:
            self.duplicates += 1
            return True
        seen.add(pn)
        if len(seen) > 2 * _PN_WINDOW:
            floor = max(self._largest[space][d], pn) - _PN_WINDOW
            self._pns[space][d] = {n for n in seen if n >= floor}
        return False

    def _follow_holes(self, d: int, largest: int, pn: int, ts: float) -> None:
        """1-RTT packet numbers not seen (yet): a jump past the largest opens a hole (noted
        with its time), a late packet closes one. Endpoints number their packets one by one
        (RFC 9000 §12.3 lets them skip, which reads as a loss: too careful, never too
        little). Holes of more than ``_PN_WINDOW`` numbers count as one."""
        holes = self._holes[d]
        if pn > largest + 1 and largest >= 0:
            for n in range(max(largest + 1, pn - _PN_WINDOW), pn):
                holes[n] = ts
        else:
            holes.pop(pn, None)

    def holes_since(self, ts: float) -> int:
        """1-RTT packet numbers of either direction missing, whose hole opened at ``ts`` or
        later: packets the capture lost, or has not shown yet."""
        return sum(1 for holes in self._holes for t in holes.values() if t >= ts)

    def _tries(
        self, space: int, d: int, version: int, early: bool, first: int, sample: bytes
    ) -> tuple[list[tuple[PacketKeys, int]], bytes]:
        """The keys to try, each with the key phase it is for (-1: any), and the header
        protection mask when it is known already (1-RTT: the same for every key tried; else
        empty, each key makes its own)."""
        keys = self.keys
        if space == INITIAL:
            if self.midway:  # its keys come from the first Initial's DCID, not captured
                return [], b""
            return [(keys.initial(d, version), -1)], b""
        if space == HANDSHAKE:
            known = keys.handshake(d)
            if known is not None:
                return [(known, -1)], b""
            label = SECRET_LABELS[(HANDSHAKE, d)]
            return [(k, -1) for k in keys.candidates(label, version)], b""
        if early:
            found = keys.early()
            if found is not None:
                return [(found, -1)], b""
            return [(k, -1) for k in keys.candidates(EARLY_LABEL, version)], b""
        if not keys.app(d, 0):
            choices = keys.candidates(SECRET_LABELS[(APP, d)], version)
            if not choices:
                return [], b""
            if len(choices) == 1:
                keys.set_app(d, choices[0])
            else:
                return [(k, -1) for k in choices], b""
        # the phase bit is under header protection, the same key in every phase: unmask once
        mask = keys.app(d, 0)[0].mask(sample)
        phase = (first ^ mask[0]) >> 2 & 1
        return [(k, phase) for k in keys.app(d, phase)], mask

    def _accepted(self, space: int, d: int, keys: PacketKeys, phase: int, early: bool) -> None:
        ring = self.keys
        if space == HANDSHAKE and ring.handshake(d) is None:
            ring.set_handshake(d, keys)
        elif space == APP and early and ring.early() is None:
            ring.set_early(keys)
        elif space == APP and not early:
            if not ring.app(d, 0):
                ring.set_app(d, keys)
            elif phase >= 0:
                ring.opened(d, phase, keys)
        if space == APP and not early and not self._facts_checked:
            self._facts_checked = True  # after the first 1-RTT packet, a no-op till the end
            self._unknown_facts()
        if space != INITIAL:
            self.info.decrypted = True
            if ring.suite is None:
                ring.suite = keys.suite
                self.info.cipher_suite = keys.suite.name

    def _unknown_facts(self) -> None:
        """1-RTT packets open: the facts of a server handshake message not read by now are
        unknown, not absent (its packet was not captured, or not decrypted): ``tls.unknown``
        names them until the message comes (RFC 9001 §4.1.1: 1-RTT keys follow both)."""
        info = self.info
        for read, facts in zip(
            self._server_read, (("resumed",), ("alpn", "early_data")), strict=True
        ):
            if not read:
                info.unknown.extend(f for f in facts if f not in info.unknown)

    def _known(self, *facts: str) -> None:
        self.info.unknown = [f for f in self.info.unknown if f not in facts]

    # -- frames ---------------------------------------------------------------------------

    def _frames(self, space: int, d: int, plain: bytes, ts: float, out: list[QuicEvent]) -> None:
        try:
            found = qf.parse_frames(plain, self.skipped)
        except WireError as exc:
            found = exc.args[1] if len(exc.args) > 1 else []
            self._note(
                "quic.bad_frame",
                f"in a {_SPACE_NAMES[space]} packet of the {_WHO[d]}: {exc.args[0]}",
            )
        for f in found:
            if type(f) is qf.Stream:
                self._stream(d, f, ts, out)
            elif type(f) is qf.Crypto:
                self._crypto_frame(space, d, f)
            elif type(f) is qf.Ack or type(f) is qf.StopSending:
                name = "ACK" if type(f) is qf.Ack else "STOP_SENDING"
                self.skipped[name] = self.skipped.get(name, 0) + 1
            elif type(f) is qf.ResetStream:
                self._reset(d, f, ts, out)
            elif type(f) is qf.ConnectionClose:
                self._close_frame(d, f, ts, out)
            elif type(f) is qf.NewConnectionId:
                self.new_cids.append((f.cid, 1 - d))  # the peer sends to it
            elif type(f) is qf.Datagram:
                self.datagrams += 1
                out.append(QuicDatagram(direction=d, data=f.data, ts=ts))
            elif type(f) is qf.RetireConnectionId:
                self.skipped["RETIRE_CONNECTION_ID"] = (
                    self.skipped.get("RETIRE_CONNECTION_ID", 0) + 1
                )

    def _stream(self, d: int, f: qf.Stream, ts: float, out: list[QuicEvent]) -> None:
        key = (d, f.stream_id)
        st = self._streams.get(key)
        if st is None:
            if key in self._done:
                return  # a retransmission after the stream ended
            if self.app_midway and (f.offset > 0 or key in self._before):
                self._before.add(key)  # begun before the capture: its start is not here
                self._before_bytes += len(f.data)
                return
            st = self._streams[key] = _Stream()
        if f.fin:
            st.fin_at = f.offset + len(f.data)
        start = st.flow.delivered
        pieces = st.flow.add(f.offset, f.data, ts)
        fin = st.fin_at >= 0 and st.flow.delivered == st.fin_at
        if not pieces and fin and f.fin:
            pieces = [(b"", ts)]
        last = len(pieces) - 1
        for n, (data, when) in enumerate(pieces):
            out.append(
                QuicStreamData(
                    stream_id=f.stream_id,
                    direction=d,
                    data=data,
                    offset=start,
                    fin=fin and n == last,
                    ts=when,
                )
            )
            start += len(data)
        if fin:
            del self._streams[key]
            self._done.add(key)

    def _reset(self, d: int, f: qf.ResetStream, ts: float, out: list[QuicEvent]) -> None:
        key = (d, f.stream_id)
        if key in self._done:
            return
        st = self._streams.pop(key, None)
        if st is not None:
            self._flush(key, st, out)
        self._done.add(key)
        out.append(
            QuicStreamReset(
                stream_id=f.stream_id,
                direction=d,
                error_code=f.error_code,
                final_size=f.final_size,
                ts=ts,
            )
        )

    def _close_frame(self, d: int, f: qf.ConnectionClose, ts: float, out: list[QuicEvent]) -> None:
        ev = QuicClosed(
            direction=d,
            error_code=f.error_code,
            frame_type=f.frame_type,
            reason=f.reason.decode("utf-8", "replace"),
            ts=ts,
        )
        if self.closed is None:
            self.closed = ev
            out.append(ev)

    def _crypto_frame(self, space: int, d: int, f: qf.Crypto) -> None:
        data = b"".join(p for p, _ in self._crypto[space][d].add(f.offset, f.data))
        if not data:
            return
        try:
            messages = self._readers[space][d].feed(data)
        except HandshakeError as exc:
            self._note(
                "quic.handshake_error", f"the {_WHO[d]}'s TLS handshake does not parse: {exc}"
            )
            return
        for msg_type, body in messages:
            try:
                self._handshake_message(msg_type, body)
            except HandshakeError as exc:
                self._note(
                    "quic.handshake_error", f"the {_WHO[d]}'s TLS handshake does not parse: {exc}"
                )

    def _handshake_message(self, msg_type: int, body: bytes) -> None:
        info = self.info
        if msg_type == CLIENT_HELLO and not self._hello_taken:
            self._hello_taken = True
            hello = parse_client_hello(body)
            self.keys.client_random = hello.random
            info.client_random = hello.random.hex()
            info.sni = hello.server_name
            info.alpn_offered = list(hello.alpn)
            info.resumed = hello.psk or None
        elif msg_type == SERVER_HELLO:
            server = parse_server_hello(body)
            if server.retry:
                info.hello_retry = True
                return
            self._server_read[0] = True
            self._known("resumed")
            info.version = tls_version_name(server.version)
            info.cipher_suite = suite_name(server.cipher_suite)
            info.resumed = server.psk
            suite = SUITES.get(server.cipher_suite)
            if suite is not None and suite.tls13:
                self.keys.suite = suite
            else:
                self._note(
                    "quic.unsupported_suite",
                    f"the server chose {info.cipher_suite}, which agentshark does not decrypt in "
                    f"QUIC (AES-GCM and ChaCha20-Poly1305 are read)",
                )
        elif msg_type == ENCRYPTED_EXTENSIONS:
            ext = parse_encrypted_extensions(body)
            info.alpn = ext.alpn
            info.early_data = ext.early_data
            self._server_read[1] = True
            self._known("alpn", "early_data")

    # -- the end --------------------------------------------------------------------------

    def close(self, ts: float) -> list[QuicEvent]:
        """The capture ended: the held bytes after each hole, named as gaps; the reasons
        packets were not opened."""
        out: list[QuicEvent] = []
        for key, st in list(self._streams.items()):
            self._flush(key, st, out)
        self._streams.clear()
        self.info.key_updates = sum(self.keys.key_updates)
        self.info.records = list(self.packets)
        self._summarize()
        if self.midway:
            self.diagnostics.append(self._midway_note())
        return out

    def _midway_note(self) -> Diagnostic:
        first = "1-RTT" if self.app_midway else "Handshake"
        opened = (
            f"its {first} packets were opened by trying the key log's secrets (the session "
            f"of client random {(self.info.client_random or '')[:16]}…)"
        )
        unknown = ", ".join(sorted(self.info.unknown)) or "nothing else"
        before = (
            f"; {len(self._before)} streams began before the capture: their "
            f"{self._before_bytes} bytes are not read (their start is missing)"
            if self._before
            else ""
        )
        if self._untaken:
            before += f"; the {self._untaken} datagrams before the first one opened are not read"
        return Diagnostic(
            code="quic.midway_opened",
            severity="info",
            location=self.location,
            message=f"the capture starts after this connection's first Initial: {opened}; "
            f"unknown: {unknown}; its Initial packets cannot be opened"
            + (
                "; read as HTTP/3 (the ALPN is not in the capture)"
                if "alpn" in self.info.unknown
                else ""
            )
            + ("; QPACK state sent before the capture is missing" if self.app_midway else "")
            + before,
        )

    def _flush(self, key: tuple[int, int], st: _Stream, out: list[QuicEvent]) -> None:
        d, sid = key
        for offset, size, data, when in st.flow.holes():
            if size:
                out.append(
                    QuicStreamGap(stream_id=sid, direction=d, offset=offset, size=size, ts=when)
                )
            fin = st.fin_at >= 0 and offset + size + len(data) == st.fin_at
            out.append(
                QuicStreamData(
                    stream_id=sid, direction=d, data=data, offset=offset + size, fin=fin, ts=when
                )
            )

    def _summarize(self) -> None:
        for code, count in self._seen.items():
            if count > MAX_DETAILED:
                self.diagnostics.append(
                    Diagnostic(
                        code=code,
                        location=self.location,
                        message=f"{count} times in all; only the first {MAX_DETAILED} are listed",
                    )
                )
        if not self.unopened:
            return
        lost = sum(n for (space, _), n in self.unopened.items() if space != INITIAL)
        if lost:
            self.diagnostics.append(self._no_keys(lost))

    def _no_keys(self, lost: int) -> Diagnostic:
        info = self.info
        offered = ", ".join(info.alpn_offered) or "none"
        what = (
            f"the QUIC connection to {info.sni or 'a server without SNI'} (ALPN offered: {offered})"
        )
        keylog = self.keys.keylog
        random = (info.client_random or "")[:16]
        if self.keys.client_random is None:
            why = (
                "the capture has no ClientHello for it (it starts later), so no key log entry "
                "can be found"
            )
        elif not len(keylog) and not keylog.sources:
            why = (
                "no key log was given: set SSLKEYLOGFILE=keys.log before the client starts and "
                f"pass --keylog keys.log (client random {random}…)"
            )
        elif not keylog.secrets(self.keys.client_random):
            why = (
                f"the key log has no secret for client random {random}… (was SSLKEYLOGFILE set "
                "before the client started?)"
            )
        else:
            why = "the key log's secrets for it do not open its packets"
        return Diagnostic(
            code="quic.no_keys",
            severity="warning",
            location=self.location,
            message=f"{lost} Handshake and 1-RTT packets of {what} stay encrypted: {why}",
        )

    def _note(self, code: str, message: str, severity: Severity = "warning") -> None:
        count = self._seen[code] = self._seen.get(code, 0) + 1
        if count <= MAX_DETAILED:
            self.diagnostics.append(
                Diagnostic(code=code, severity=severity, location=self.location, message=message)
            )
