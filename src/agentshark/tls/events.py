"""Events of a TLS connection: decrypted application data, alerts, and diagnostics.

Direction 0 is client -> server, 1 is server -> client, as in ``net.events``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.errors import Diagnostic

__all__ = ["ALERT_NAMES", "TlsAlert", "TlsEvent", "TlsGap", "TlsPlaintext", "alert_name"]


@dataclass(slots=True)
class TlsPlaintext:
    """Decrypted application data of one direction, in order.

    ``ts`` is the time of the TCP data that completed the record. Consecutive records
    completed by the same TCP data come as one event. Not frozen, unlike the other events,
    for the reason ``net.events.StreamData`` gives: one is built per data segment, and a
    frozen dataclass's ``__init__`` costs twice as much. Treat it as immutable all the same.
    Not keyword-only either, for the same reason: the per-record path builds it with
    positional arguments, which bind in half the time.

    ``acked`` is the acknowledgment the TCP data carried, translated into the OTHER
    direction's plaintext offsets: the plaintext bytes of the peer's records that lie wholly
    below the acknowledged TCP offset (lost plaintext, see :class:`TlsGap`, counted at its
    reported size), or -1 when unknown (no ACK, or one that falls in bytes not decrypted).
    """

    direction: int
    data: bytes
    ts: float
    acked: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsGap:
    """``size`` plaintext bytes of ``direction`` were lost to a capture gap.

    Plaintext (if any) resumes after them, at the plaintext offset those bytes reach. The size
    is exact when the record layer allows it (TLS 1.2: the lost ciphertext less the overhead of
    the records skipped, counted by the jump of the sequence number); otherwise it is an upper
    bound (TLS 1.3 may pad records, RFC 8446 §5.4; a key change inside the gap), and the
    diagnostic that comes with it says which.
    """

    direction: int
    size: int
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsAlert:
    """An alert record (RFC 8446 §6, RFC 5246 §7.2): ``level`` 1 warning, 2 fatal.

    ``encrypted`` tells whether it was sent under record protection (and so was decrypted
    to be read) or in the clear, as during a failed handshake.
    """

    direction: int
    level: int
    description: int
    ts: float
    encrypted: bool

    @property
    def name(self) -> str:
        return alert_name(self.description)


TlsEvent = TlsPlaintext | TlsGap | TlsAlert | Diagnostic

# AlertDescription values (RFC 8446 §6, RFC 5246 §7.2, RFC 7301 §3.2).
ALERT_NAMES = {
    0: "close_notify",
    10: "unexpected_message",
    20: "bad_record_mac",
    21: "decryption_failed",
    22: "record_overflow",
    30: "decompression_failure",
    40: "handshake_failure",
    41: "no_certificate",
    42: "bad_certificate",
    43: "unsupported_certificate",
    44: "certificate_revoked",
    45: "certificate_expired",
    46: "certificate_unknown",
    47: "illegal_parameter",
    48: "unknown_ca",
    49: "access_denied",
    50: "decode_error",
    51: "decrypt_error",
    60: "export_restriction",
    70: "protocol_version",
    71: "insufficient_security",
    80: "internal_error",
    86: "inappropriate_fallback",
    90: "user_canceled",
    100: "no_renegotiation",
    109: "missing_extension",
    110: "unsupported_extension",
    111: "certificate_unobtainable",
    112: "unrecognized_name",
    113: "bad_certificate_status_response",
    114: "bad_certificate_hash_value",
    115: "unknown_psk_identity",
    116: "certificate_required",
    120: "no_application_protocol",
    121: "ech_required",
}


def alert_name(description: int) -> str:
    return ALERT_NAMES.get(description, f"alert {description}")
