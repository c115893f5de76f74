"""TlsConnection after a capture gap: which keys to try, and what to report once the search
of :mod:`agentshark.tls.resync` ends (a record found, the stream's end, the search's limit).

A gap in a direction being decrypted starts a search; what it finds fixes the record
boundary, the sequence number and the keys (the direction's own, or those after a key change
the gap swallowed). The plaintext lost comes out as a ``TlsGap`` with a ``tls.resynced``
diagnostic (records and bytes lost, where decryption resumed, whether the size is exact).
A gap during the handshake before a ServerHello names the suite is searched past under the
suites the ClientHello offered (TLS 1.3, ``tls.trial``); otherwise ``tls.gap`` says what was
lost. A gap in the client's stream before its ClientHello was read holds its bytes until
``tls.trial`` names the session.
"""

from __future__ import annotations

from agentshark.tls import handshake as hs
from agentshark.tls.direction import Direction, Mode
from agentshark.tls.events import TlsEvent, TlsGap, TlsPlaintext
from agentshark.tls.host import Host, Out
from agentshark.tls.keylog import TLS12_LABEL
from agentshark.tls.keyschedule import next_traffic_secret, tls12_key_block
from agentshark.tls.records import DecryptError, Tls12Protection, Tls13Protection
from agentshark.tls.resync import (
    MAX_KEY_UPDATES,
    Keys,
    Resumed,
    Resync,
    lost_plaintext,
    smallest_record,
)

__all__ = ["GapRecovery"]


class GapRecovery:
    """The gap handling of TlsConnection (a mixin: see ``tls.host``)."""

    __slots__ = ()

    def _resync_keys(self: Host, d: Direction) -> list[Keys]:
        """The keys a record after a gap in ``d`` may be under: during the handshake, those
        the ServerHello's suite gives (or, lost, the offered suites' of ``tls.trial``)."""
        suite, p = self._suite, d.protection
        if suite is None:
            return self._suite_keys(d)
        if d.mode is Mode.TRIAL:
            return d.trial
        if d.mode is Mode.DECRYPT and p is not None:
            # nothing decrypted yet under the handshake keys: the gap may have cut only
            # records in the clear (ChangeCipherSpec), and the next record be number 0
            fresh = suite.tls13 and d.stage == 1 and p.seq == 0
            keys = [Keys(protection=p, expected=-1 if fresh else p.seq, stage=d.stage)]
            if isinstance(p, Tls13Protection) and d.stage == 1:  # the Finished may be lost
                label = "CLIENT_TRAFFIC_SECRET_0" if d.index == 0 else "SERVER_TRAFFIC_SECRET_0"
                after = self._protection13_quiet(label)
                if after is not None:
                    keys.append(Keys(protection=after, expected=0, stage=2, change="Finished"))
            elif isinstance(p, Tls13Protection):  # KeyUpdates may be lost
                secret = p.secret
                for updates in range(1, MAX_KEY_UPDATES + 1):
                    secret = next_traffic_secret(secret, suite)
                    after = Tls13Protection(suite, secret)
                    keys.append(
                        Keys(
                            protection=after,
                            expected=0,
                            stage=2,
                            change="KeyUpdate",
                            updates=updates,
                        )
                    )
            return keys
        random = self._random
        if d.mode is Mode.PLAIN and not suite.tls13 and random is not None:
            assert self._sh is not None  # the suite is set by the ServerHello
            master = self._keylog.secrets(random).get(TLS12_LABEL)
            if master is None:
                return []
            block = tls12_key_block(master, random, self._sh.random, suite)
            if d.index == 0:
                p = Tls12Protection(suite, block.client_key, block.client_iv)
            else:
                p = Tls12Protection(suite, block.server_key, block.server_iv)
            return [Keys(protection=p, expected=0, stage=1, change="ChangeCipherSpec")]
        return []

    def _handshake_lost(self: Host, d: Direction) -> str:
        """What a handshake gap in ``d`` costs, in words for ``tls.gap``."""
        if self._random is None:
            if d.index == 0 and self._sh is not None and len(self._keylog):
                return (
                    " (the ClientHello was not read, and no session of the key log decrypts "
                    "the server's records)"
                )
            return " (the ClientHello was not read: without its random no key applies)"
        if self._sh is None:
            if TLS12_LABEL in self._keylog.secrets(self._random):
                return (
                    " (the ServerHello was not read, and this TLS 1.2 session's keys are "
                    "derived from the server random that only the ServerHello carried: they "
                    "cannot be recovered)"
                )
            return " (the ServerHello was not read: the cipher suite is unknown)"
        if self._suite is not None and not self._suite.tls13:
            return f" (the key log has no {TLS12_LABEL} for this session)"
        return ""

    def _resync(self: Host, d: Direction, data: bytes, ts: float) -> list[TlsEvent]:
        """``feed`` while ``d`` looks for its records after a gap."""
        resync = d.resync
        assert resync is not None
        out: Out = []
        if resync.waiting:  # the client's, until tls.trial names the session
            resync.hold(data, ts, self._acked)
            if resync.error is not None:
                self._give_up_held(d, out)
            return out
        found = resync.feed(data)
        if found is not None:
            self._resumed(d, found, resync.gap_bytes, ts, out)
            if found.rest:  # read as after any record, with the same acknowledgment
                acked = self._acked
                out += self.feed(d.index, found.rest, ts)
                for ev in out:
                    if type(ev) is TlsPlaintext:
                        ev.acked = acked
        elif resync.error is not None:
            size = self._unresolved(d, resync, ts, out)
            why = resync.error
            self._note(
                out, d, "tls.resync_failed", every=True, gap=resync.gap_bytes, why=why, size=size
            )
            d.stop()
        return out

    def _resumed(self: Host, d: Direction, found: Resumed, gap: int, ts: float, out: Out) -> None:
        """The record ``found`` decrypted after a gap: report the loss, go on from it."""
        d.resync = None
        d.resumed += 1
        keys = found.keys
        d.use(keys.protection, keys.stage)  # its seq follows the record found
        if keys.change == "KeyUpdate":
            self.info.key_updates += keys.updates
        if keys.trial:
            self._by_trial(d, keys, out)
        d.handshakes = hs.HandshakeReader()  # a message cut by the gap is lost
        self.info.records[d.index] += 1
        suite = keys.protection.suite
        smallest = smallest_record(suite.tls13, suite.aead == "CHACHA20-POLY1305")
        records, size, exact = lost_plaintext(found, smallest)
        start = d.rec_end + found.lost  # the TCP offset of the record found
        if size:
            out.append(TlsGap(direction=d.index, size=size, ts=ts))
        d.resume(start, d.plain + size)
        searched = (
            f", {found.searched} of them searched past after the gap" if found.searched else ""
        )
        change = f" (under the keys after a lost {keys.change})" if keys.change else ""
        self._note(
            out,
            d,
            "tls.resynced",
            every=True,
            gap=gap,
            records=("" if not keys.change else "at least ") + _plural(records, "record"),
            lost=found.lost,
            searched=searched,
            size=size if exact else f"at most {size}",
            offset=start,
            seq=found.seq,
            keys=change,
        )
        d.rec_end = start + found.record
        self._content(d, found.ctype, found.content, ts, out)
        if keys.trial:
            self._after_trial(d, keys, out)

    def _finished_unseen(self: Host, d: Direction, rec: bytes, ts: float, out: Out) -> bool:
        """After a gap in a TLS 1.3 handshake, a record that fails under the handshake keys
        may be the first under the application keys (the Finished was cut by the gap, or
        its message was lost with one cut before it): True if it decrypts under those."""
        p = d.protection
        if not d.resumed or d.stage != 1 or not isinstance(p, Tls13Protection):
            return False
        label = "CLIENT_TRAFFIC_SECRET_0" if d.index == 0 else "SERVER_TRAFFIC_SECRET_0"
        after = self._protection13_quiet(label)
        if after is None:
            return False
        try:
            ctype, content = after.open(rec)
        except DecryptError:
            return False
        d.use(after, 2)
        d.handshakes = hs.HandshakeReader()
        self._note(out, d, "tls.finished_unseen", per_direction=True)
        self._content(d, ctype, content, ts, out)
        return True

    def _unresolved(self: Host, d: Direction, resync: Resync, ts: float, out: Out) -> int:
        """A gap after which no record decrypted: the plaintext lost (a bound) as a TlsGap."""
        suite = d.protection.suite if d.protection is not None else self._suite
        tls13 = suite is not None and suite.tls13
        chacha = suite is not None and suite.aead == "CHACHA20-POLY1305"
        size = max(0, resync.lost + resync.buffered - smallest_record(tls13, chacha))
        d.resync = None
        if size:
            out.append(TlsGap(direction=d.index, size=size, ts=ts))
            d.plain += size
        return size


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
