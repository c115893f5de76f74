"""One TLS connection, both directions: TCP bytes + key log -> plaintext, alerts, diagnostics.

:class:`TlsConnection` follows a connection as a passive reader. Each direction is in one of
the modes of :class:`~agentshark.tls.direction.Mode`; what a record does depends on that mode,
and the table ``_RECORD_HANDLERS`` is the whole record-level state machine. Keys change at
the points RFC 8446 and RFC 5246 fix:

TLS 1.3 (RFC 8446 §2, §7.3)
    The ServerHello switches the server to its handshake traffic keys, and the client too:
    its next protected records follow its reading of the ServerHello (a compatibility
    ChangeCipherSpec in between is skipped, §D.4). Each side's Finished switches it to its
    application traffic keys; a KeyUpdate moves one side to its next secret (§4.6.3). A
    HelloRetryRequest changes nothing but the ClientHello that follows it. 0-RTT data
    (§4.2.10) is tried under CLIENT_EARLY_TRAFFIC_SECRET and the client's handshake keys: see
    ``tls.early`` for what is reported when.
TLS 1.2 (RFC 5246 §7.1)
    Each side's ChangeCipherSpec starts its protection with the key block derived from the
    master secret, for full and abbreviated (resumed) handshakes alike.

When the capture lost the ClientHello or the ServerHello, ``tls.trial`` finds the keys by
trial decryption, a record's AEAD tag as the proof.

Secrets are looked up in the :class:`~agentshark.tls.keylog.KeyLog` when they are needed, so
secrets added while a capture is read (pcapng Decryption Secrets Blocks) apply to the
connections that need them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.errors import Severity
from agentshark.tls import handshake as hs
from agentshark.tls.diagnostics import diagnostic
from agentshark.tls.direction import Direction, Mode
from agentshark.tls.events import TlsAlert, TlsEvent, TlsPlaintext
from agentshark.tls.hellos import HelloSteps
from agentshark.tls.info import TlsInfo
from agentshark.tls.keylog import KeyLog
from agentshark.tls.keyschedule import (
    CipherSuite,
    next_traffic_secret,
)
from agentshark.tls.lost import GapRecovery
from agentshark.tls.records import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    HANDSHAKE,
    HEARTBEAT,
    DecryptError,
    RecordReader,
    Tls13Protection,
)
from agentshark.tls.resync import Resync, smallest_record
from agentshark.tls.trial import KeyTrial
from agentshark.tls.zero_rtt import ZeroRtt

__all__ = ["TlsConnection"]

TLS12, TLS13 = 0x0303, 0x0304
_DECRYPT = Mode.DECRYPT  # a module global is read faster than an enum attribute
Out = list[TlsEvent]


class TlsConnection(HelloSteps, GapRecovery, KeyTrial, ZeroRtt):
    """Decrypts one TLS connection observed from outside (sans-I/O).

    ``location`` prefixes diagnostic locations (a capture name and connection id).
    ``feed``, ``gap`` and ``end`` take one direction's TCP events in order (0 client ->
    server, 1 server -> client) and return :data:`~agentshark.tls.events.TlsEvent` values;
    ``feed``'s ``acked`` is the acknowledgment the data's TCP segment carried, in the other
    direction's TCP offsets (-1 for none), given back translated in ``TlsPlaintext.acked``.
    After a gap, decryption resumes at the first record whose tag verifies (``tls.resync``);
    a :class:`~agentshark.tls.events.TlsGap` says how much plaintext was lost.
    ``info`` tells what the handshake said, and is complete (ALPN included) by the time the
    first plaintext is returned. Nothing raises: bytes that are not TLS, records that do not
    decrypt and missing keys are diagnostics, and records are still counted where they can
    be framed.
    """

    __slots__ = (
        "_acked",
        "_ch",
        "_dirs",
        "_hello_done",
        "_keylog",
        "_location",
        "_noted",
        "_random",
        "_sh",
        "_suite",
        "info",
    )

    def __init__(self, keylog: KeyLog, *, location: str = "") -> None:
        self._keylog = keylog
        self._location = location
        self.info = TlsInfo()
        self._dirs = (Direction(0), Direction(1))
        self._ch: hs.ClientHello | None = None
        self._sh: hs.ServerHello | None = None
        self._random: bytes | None = None  # the session's: the ClientHello's, or by trial
        self._suite: CipherSuite | None = None  # set while the connection can be decrypted
        self._noted: set[str] = set()
        self._hello_done = False  # a TLS 1.2 ServerHelloDone was read: a full handshake
        self._acked = -1  # the translated acknowledgment of the data being fed

    def __repr__(self) -> str:
        return f"TlsConnection({self._location!r}, {self.info.version}, {self.info.cipher_suite})"

    # -- TCP events -------------------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[TlsEvent]:
        d = self._dirs[direction]
        if acked >= 0:
            acked = self._dirs[1 - direction].translate(acked)
        if d.resync is not None:
            self._acked = acked
            return self._resync(d, data, ts)
        reader = d.reader
        records = reader.feed(data)
        if not records:
            return self._lost(d) if reader.error is not None else []
        if len(records) == 1 and d.mode is _DECRYPT and reader.error is None:
            rec = records[0]
            if rec[0] == APPLICATION_DATA:
                return self._one_record(d, rec, ts, acked)
        self._acked = acked
        out: Out = []
        chunks: list[bytes] = []  # consecutive application data, joined into one event
        counts = self.info.records
        end = d.rec_end  # the TCP offset of each record's end
        for rec in records:
            counts[direction] += 1
            end += len(rec)
            if d.mode is _DECRYPT and rec[0] == APPLICATION_DATA:  # the hot path
                try:
                    ctype, content = d.open(rec)
                except DecryptError:
                    self._flush(direction, chunks, ts, out)
                    d.rec_end = end
                    if not self._finished_unseen(d, rec, ts, out):
                        self._failed(d, out)
                    continue
                if ctype == APPLICATION_DATA:
                    if content:
                        chunks.append(content)
                        before = d.plain
                        d.plain = plain = before + len(content)
                        d.marks.append((end, before, plain))
                    continue
                self._flush(direction, chunks, ts, out)
                d.rec_end = end
                self._content(d, ctype, content, ts, out)
            else:
                self._flush(direction, chunks, ts, out)
                d.rec_end = end
                _RECORD_HANDLERS[d.mode](self, d, rec, ts, out)
        d.rec_end = end
        self._flush(direction, chunks, ts, out)
        if reader.error is not None:
            out += self._lost(d)
        return out

    def _one_record(self, d: Direction, rec: bytes, ts: float, acked: int) -> list[TlsEvent]:
        """``feed`` for the usual segment: it completes one protected application data
        record. Does what the loop in ``feed`` does for it, without the loop's list of
        chunks and flushes (most records of a bulk transfer come one per segment)."""
        info = self.info
        info.records[d.index] += 1
        end = d.rec_end = d.rec_end + len(rec)
        try:
            ctype, content = d.open(rec)
        except DecryptError:
            ctype, content = -1, b""
        if ctype == APPLICATION_DATA:
            if content:
                info.decrypted = True
                before = d.plain
                d.plain = plain = before + len(content)
                d.marks.append((end, before, plain))
                return [TlsPlaintext(d.index, content, ts, acked)]  # positional: see it
            return []
        out: Out = []
        self._acked = acked  # for the plaintext _content may report
        if ctype < 0:
            if not self._finished_unseen(d, rec, ts, out):
                self._failed(d, out)
        else:
            self._content(d, ctype, content, ts, out)
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[TlsEvent]:
        """``size`` bytes were never captured: look for the records after them (``resync``).

        During the handshake, before keys prove records, the direction is not read further.
        """
        d = self._dirs[direction]
        out: Out = []
        resync = d.resync
        if resync is not None:
            resync.gap(size)
            return out
        if d.mode is Mode.EARLY:
            self._early_unconfirmed(d, out)
        keys = self._resync_keys(d)
        if keys:
            suite = keys[0].protection.suite
            smallest = smallest_record(suite.tls13, suite.aead == "CHACHA20-POLY1305")
            buffered = d.reader.buffered
            d.lose(d.rec_end + 1)
            d.resync = Resync(
                keys, tls13=suite.tls13, smallest=smallest, lost=buffered + size, gap=size
            )
            d.reader = RecordReader()
            return out
        if self._hold_client(d, size):
            return out
        if d.mode not in (Mode.OPAQUE, Mode.LOST):
            what = self._handshake_lost(d)
            self._note(out, d, "tls.gap", per_direction=True, size=size, what=what)
        d.stop()
        return out

    def end(self, direction: int, ts: float) -> list[TlsEvent]:
        """No more bytes come in this direction."""
        d = self._dirs[direction]
        out: Out = []
        resync = d.resync
        if resync is not None and resync.waiting:
            self._give_up_held(d, out)
        elif resync is not None:
            size = self._unresolved(d, resync, ts, out)
            later = resync.searched + resync.buffered
            after = f"{later} bytes later" if later else "right after"
            self._note(
                out,
                d,
                "tls.gap_unresolved",
                every=True,
                gap=resync.gap_bytes,
                after=after,
                size=size,
            )
        if d.mode is Mode.EARLY:
            self._early_unconfirmed(d, out)
        if d.mode is not Mode.LOST and d.reader.buffered:
            self._note(out, d, "tls.truncated_record", per_direction=True, size=d.reader.buffered)
        d.stop()
        return out

    def _lost(self, d: Direction) -> Out:
        out: Out = []
        if d.mode is not Mode.LOST:
            self._note(out, d, "tls.bad_record", per_direction=True, why=d.reader.error)
            d.stop()
        return out

    # -- records by mode --------------------------------------------------------------------

    def _plain_record(self, d: Direction, rec: bytes, ts: float, out: Out) -> None:
        ctype = rec[0]
        if ctype == HANDSHAKE:
            self._handshake(d, rec[5:], ts, out)
        elif ctype == ALERT:
            self._alert(d, rec[5:], ts, out, encrypted=False)
        elif ctype == CHANGE_CIPHER_SPEC:
            if self._sh is not None and self._sh.version == TLS12:
                self._tls12_start(d, out)
            elif self._ch is None:
                self._no_handshake(d, out)
            # else TLS 1.3 middlebox compatibility (RFC 8446 §D.4): skipped
        elif ctype == APPLICATION_DATA:
            if d.mode is Mode.EARLY:
                self._early_record(d, rec, ts, out)
            elif self._ch is None:
                self._no_handshake(d, out)
            elif self._sh is None and (keys := self._suite_keys(d)):
                d.mode, d.trial = Mode.TRIAL, keys  # the ServerHello was lost
                self._trial_record(d, rec, ts, out)
            else:
                self._note(out, d, "tls.unexpected_record", what="protected data before keys")
                d.use(None, d.stage)

    def _decrypt_record(self, d: Direction, rec: bytes, ts: float, out: Out) -> None:
        ctype = rec[0]
        tls13 = self._suite is not None and self._suite.tls13
        if ctype == CHANGE_CIPHER_SPEC:
            if not tls13:  # a second one in TLS 1.2: renegotiation
                self._note(out, d, "tls.renegotiation")
                d.use(None, d.stage)
        elif tls13 and ctype == ALERT:  # RFC 8446 §5: only application_data is protected
            self._alert(d, rec[5:], ts, out, encrypted=False)
        elif tls13 and ctype != APPLICATION_DATA:
            what = f"a record of type {ctype} in the clear after keys were set"
            self._note(out, d, "tls.unexpected_record", per_direction=True, what=what)
        else:
            try:
                ctype, content = d.open(rec)
            except DecryptError:
                if not self._finished_unseen(d, rec, ts, out):
                    self._failed(d, out)
                return
            self._content(d, ctype, content, ts, out)

    def _opaque_record(self, d: Direction, rec: bytes, ts: float, out: Out) -> None:
        pass  # counted by feed

    # -- record contents --------------------------------------------------------------------

    def _content(self, d: Direction, ctype: int, content: bytes, ts: float, out: Out) -> None:
        self.info.decrypted = True
        if ctype == APPLICATION_DATA:
            if content:
                before = d.plain
                d.plain = plain = before + len(content)
                d.marks.append((d.rec_end, before, plain))
                out.append(TlsPlaintext(d.index, content, ts, self._acked))
        elif ctype == HANDSHAKE:
            self._handshake(d, content, ts, out)
        elif ctype == ALERT:
            self._alert(d, content, ts, out, encrypted=True)
        elif ctype != HEARTBEAT:
            what = f"a decrypted record of content type {ctype}"
            self._note(out, d, "tls.unexpected_record", per_direction=True, what=what)

    def _alert(self, d: Direction, content: bytes, ts: float, out: Out, *, encrypted: bool) -> None:
        if len(content) != 2:
            self._note(out, d, "tls.malformed_alert", per_direction=True, size=len(content))
            return
        level, description = content
        out.append(
            TlsAlert(
                direction=d.index, level=level, description=description, ts=ts, encrypted=encrypted
            )
        )

    def _handshake(self, d: Direction, fragment: bytes, ts: float, out: Out) -> None:
        try:
            for msg_type, body in d.handshakes.feed(fragment):
                self._message(d, msg_type, body, out)
        except hs.HandshakeError as exc:
            d.handshakes = hs.HandshakeReader()
            if d.resumed:  # a message cut by a gap: its rest is not a message
                self._note(out, d, "tls.handshake_cut", per_direction=True)
                return
            self._note(out, d, "tls.malformed_handshake", why=exc)
            self._set_opaque()

    def _message(self, d: Direction, msg_type: int, body: bytes, out: Out) -> None:
        client = d.index == 0
        protection = d.protection
        if msg_type == hs.CLIENT_HELLO and client and d.mode is not Mode.DECRYPT:
            self._client_hello(d, hs.parse_client_hello(body), out)
        elif msg_type == hs.SERVER_HELLO and not client and d.mode is Mode.PLAIN:
            self._server_hello(hs.parse_server_hello(body), out)
        elif msg_type in (hs.CLIENT_HELLO, hs.SERVER_HELLO):
            if d.mode is not Mode.DECRYPT:  # (encrypted: TLS 1.2 renegotiation, see CCS)
                message = "ServerHello" if client else "ClientHello"
                self._note(out, d, "tls.unexpected_message", message=message)
                self._set_opaque()
        elif msg_type == hs.SERVER_HELLO_DONE and not client:
            self._hello_done = True
        elif msg_type == hs.ENCRYPTED_EXTENSIONS and not client:
            self._encrypted_extensions(hs.parse_encrypted_extensions(body), out)
        elif msg_type == hs.FINISHED and d.stage == 1 and isinstance(protection, Tls13Protection):
            label = "CLIENT_TRAFFIC_SECRET_0" if client else "SERVER_TRAFFIC_SECRET_0"
            d.use(self._protection13(label, d, out), 2)
        elif msg_type == hs.END_OF_EARLY_DATA and client and d.mode is Mode.EARLY:
            self._early_end(d, out, end_of_early_data=True)
        elif msg_type == hs.KEY_UPDATE and d.stage == 2 and isinstance(protection, Tls13Protection):
            hs.parse_key_update(body)  # update_requested: the peer's own KeyUpdate follows
            suite = protection.suite
            d.use(Tls13Protection(suite, next_traffic_secret(protection.secret, suite)), 2)
            self.info.key_updates += 1
        # Certificate, NewSessionTicket and the rest tell a reader nothing it needs.

    def _set_opaque(self) -> None:
        """The connection cannot be decrypted: no direction tries any more."""
        self._suite = None
        for d in self._dirs:
            if d.mode is not Mode.LOST:
                d.use(None, d.stage)
                d.early.clear()
                d.trial = []

    # -- reporting --------------------------------------------------------------------------

    def _flush(self, direction: int, chunks: list[bytes], ts: float, out: Out) -> None:
        if chunks:
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            out.append(TlsPlaintext(direction, data, ts, self._acked))
            chunks.clear()
            self.info.decrypted = True

    def _failed(self, d: Direction, out: Out) -> None:
        self._note(out, d, "tls.decrypt_failed", per_direction=True)
        d.use(None, d.stage)
        d.early.clear()

    def _no_handshake(self, d: Direction, out: Out) -> None:
        self._note(out, d, "tls.no_handshake")
        self._set_opaque()

    def _note(
        self,
        out: Out,
        d: Direction,
        code: str,
        *,
        per_direction: bool = False,
        every: bool = False,
        connection: bool = False,
        severity: Severity | None = None,
        **fields: object,
    ) -> None:
        """Append the diagnostic ``code``: at most once per connection (or direction), or
        ``every`` time (one per gap). Its location is the record that caused it, or the
        ``connection``."""
        if not every:
            key = code.partition("/")[0]
            key = f"{key}/{d.index}" if per_direction else key
            if key in self._noted:
                return
            self._noted.add(key)
        where = f"{d.who} record {self.info.records[d.index]}"
        location = f"{self._location} {where}" if self._location else where
        if connection:
            location = self._location or "the connection"
        out.append(diagnostic(code, location, severity=severity, who=d.who, **fields))


_RecordHandler = Callable[[TlsConnection, Direction, bytes, float, Out], None]

# The record-level state machine: what a record does in each mode of its direction.
_RECORD_HANDLERS: dict[Mode, _RecordHandler] = {
    Mode.PLAIN: TlsConnection._plain_record,
    Mode.EARLY: TlsConnection._plain_record,  # application_data goes to _early_record
    Mode.DECRYPT: TlsConnection._decrypt_record,
    Mode.TRIAL: TlsConnection._trial_record,
    Mode.OPAQUE: TlsConnection._opaque_record,
    Mode.LOST: TlsConnection._opaque_record,
}
