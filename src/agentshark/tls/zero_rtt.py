"""TlsConnection while the client may send 0-RTT data (RFC 8446 §4.2.10): trial decryption
under the early and handshake keys, and what is reported when early data ends (the state
it keeps is :class:`~agentshark.tls.early.EarlyData`)."""

from __future__ import annotations

from agentshark.errors import Severity
from agentshark.tls.direction import Direction, Mode
from agentshark.tls.early import MAX_EARLY_BYTES, MAX_EARLY_SKIPPED
from agentshark.tls.host import Host, Out
from agentshark.tls.records import APPLICATION_DATA, DecryptError

__all__ = ["ZeroRtt"]


class ZeroRtt:
    """The 0-RTT handling of TlsConnection (a mixin: see ``tls.host``)."""

    __slots__ = ()

    def _early_record(self: Host, d: Direction, rec: bytes, ts: float, out: Out) -> None:
        """A client record while it may still send early data: try the keys it may use."""
        early = d.early
        if self._suite is None:  # the ServerHello has not named the suite yet
            if not early.hold_raw(rec, ts):
                self._note(out, d, "tls.early_data_overflow", size=MAX_EARLY_BYTES)
                d.use(None, 0)
                early.clear()
            return
        for keys in (early.keys, d.protection):
            if keys is None:
                continue
            try:
                ctype, content = keys.open(rec)
            except DecryptError:
                continue
            if keys is d.protection:  # the first record under the handshake keys
                self._early_end(d, out)
                self._content(d, ctype, content, ts, out)
            elif ctype == APPLICATION_DATA:
                self.info.decrypted = True
                event = early.plaintext(content, ts)
                if event is not None:
                    out.append(event)
            else:
                self._content(d, ctype, content, ts, out)  # EndOfEarlyData, an alert
            return
        early.skipped += 1
        if early.skipped > MAX_EARLY_SKIPPED:
            self._failed(d, out)

    def _early_end(self: Host, d: Direction, out: Out, *, end_of_early_data: bool = False) -> None:
        """The client's early data is over: say what became of it, go on with handshake keys.

        It ends with EndOfEarlyData (the server accepted it, RFC 8446 §4.5), with a record
        under the handshake keys (the server rejected it: accepted data would have been
        followed by EndOfEarlyData under the early keys), or with a second ClientHello.
        """
        early = d.early
        if end_of_early_data:
            early.accepted = self.info.early_data = True
            out += early.release()
        elif early.accepted is None and early.keys is not None:
            early.reject()
        if early.dropped:
            self._note(out, d, "tls.early_data_rejected", count=early.dropped)
        if early.skipped:
            why = " (the key log has no CLIENT_EARLY_TRAFFIC_SECRET)" if early.keys is None else ""
            fate = "the server accepted them" if early.accepted else "the server did not read them"
            severity: Severity = "warning" if early.accepted else "info"
            self._note(
                out,
                d,
                "tls.early_data_skipped",
                severity=severity,
                count=early.skipped,
                why=why,
                fate=fate,
            )
        early.clear()
        early.dropped = early.skipped = 0
        if d.protection is not None:
            d.use(d.protection, 1)
        else:
            d.mode = Mode.PLAIN

    def _early_unconfirmed(self: Host, d: Direction, out: Out) -> None:
        """The stream stops during early data: report what decrypted, with a caveat."""
        if d.early.held and d.early.accepted is None:
            self._note(out, d, "tls.early_data_unconfirmed", count=len(d.early.held))
            out += d.early.release()
        self._early_end(d, out)
